//===- FuseCollectiveMatmul.cpp - all_gather/reduce_scatter + matmul -----===//
//
// Finds, in per-rank programs, an all_gather whose result feeds matmuls as
// their row operand, and a reduce_scatter whose operand is a matmul's
// product, and replaces them with dtensor.all_gather_matmul and
// dtensor.matmul_reduce_scatter where the cost model says the chunked ring
// pipeline of those ops (lib/Overlap/DecomposeFused.cpp) beats the
// collective followed (preceded) by the whole matmul.
//
// Matching is semantic. A matmul is any linalg contraction (linalg.matmul,
// linalg.generic) that contracts the last dim of a rank-2 or rank-3 A with
// one dim of a 2-D B and keeps A's other dims as rows of the result, in
// order: C[rows..., n] = sum_k A[rows..., k] * B[k, n] (or B[n, k], which is
// transposed for the fused op), accumulating into zeros. Between the
// collective and the matmul there may be views that leave the last dim alone
// (collapse_shape, expand_shape, transpose, extract_slice, zero pad, cast):
// such a view commutes with multiplying by B on the right, so it is moved to
// the other side of the matmul (applied to the fused op's products for an
// all_gather, to A for a reduce_scatter).
//
// Every all_gather and reduce_scatter gets a remark saying whether it was
// fused and why (not).
//
//===----------------------------------------------------------------------===//

#include "RowMatmul.h"

#include "dtensor/Analysis/CostModel.h"
#include "dtensor/Target/Target.h"
#include "dtensor/Overlap/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/Format.h"

#include <algorithm>

namespace mlir::dtensor {
#define GEN_PASS_DEF_FUSECOLLECTIVEMATMULPASS
#include "dtensor/Overlap/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

//===----------------------------------------------------------------------===//
// Matmuls and views
//===----------------------------------------------------------------------===//

/// Whether `op` reshapes, permutes, slices, zero-pads or casts the dims of
/// its source (operand 0) other than the last, and keeps the last one as
/// its own last dim. Such a view V satisfies V(X) @ B = V(X @ B).
bool isRowView(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumOperands() < 1)
    return false;
  auto source = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!source || !result || source.getRank() == 0 || result.getRank() == 0)
    return false;
  int64_t sourceLast = source.getRank() - 1, resultLast = result.getRank() - 1;
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return collapse.getReassociationIndices().back() ==
           ReassociationIndices{sourceLast};
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return expand.getReassociationIndices().back() ==
           ReassociationIndices{resultLast};
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op))
    return transpose.hasPureTensorSemantics() &&
           transpose.getPermutation().back() == sourceLast;
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return source.getRank() == result.getRank() &&
           !source.isDynamicDim(sourceLast) &&
           slice.getStaticOffsets().back() == 0 &&
           slice.getStaticStrides().back() == 1 &&
           slice.getStaticSizes().back() == source.getDimSize(sourceLast);
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    Value padding = pad.getConstantPaddingValue();
    return padding && isZeroScalar(padding) &&
           pad.getStaticLow().back() == 0 && pad.getStaticHigh().back() == 0;
  }
  return isa<tensor::CastOp>(op);
}

/// Applies row view `view` to `input`, which has the shape of the view's
/// source except possibly for the last size.
Value cloneRowView(OpBuilder &b, Operation *view, Value input) {
  Location loc = view->getLoc();
  auto inputType = cast<RankedTensorType>(input.getType());
  auto viewType = cast<RankedTensorType>(view->getResult(0).getType());
  SmallVector<int64_t> shape(viewType.getShape());
  shape.back() = inputType.getShape().back();
  auto type = RankedTensorType::get(shape, inputType.getElementType());
  OpFoldResult last =
      tensor::getMixedSize(b, loc, input, inputType.getRank() - 1);
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(view))
    return tensor::CollapseShapeOp::create(b, loc, type, input,
                                           collapse.getReassociationIndices());
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(view)) {
    SmallVector<OpFoldResult> outputShape = expand.getMixedOutputShape();
    outputShape.back() = last;
    return tensor::ExpandShapeOp::create(b, loc, type, input,
                                         expand.getReassociationIndices(),
                                         outputShape);
  }
  if (auto transpose = dyn_cast<linalg::TransposeOp>(view)) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, input);
    SmallVector<OpFoldResult> permuted;
    for (int64_t dim : transpose.getPermutation())
      permuted.push_back(sizes[dim]);
    Value init = tensor::EmptyOp::create(b, loc, permuted,
                                         inputType.getElementType());
    return linalg::TransposeOp::create(b, loc, input, init,
                                       transpose.getPermutation())
        .getResult()[0];
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(view)) {
    SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
    sizes.back() = last;
    return tensor::ExtractSliceOp::create(b, loc, type, input,
                                          slice.getMixedOffsets(), sizes,
                                          slice.getMixedStrides());
  }
  if (auto pad = dyn_cast<tensor::PadOp>(view)) {
    Value zero = arith::ConstantOp::create(
        b, loc, b.getZeroAttr(inputType.getElementType()));
    return tensor::PadOp::create(b, loc, type, input, pad.getMixedLowPad(),
                                 pad.getMixedHighPad(), zero, pad.getNofold());
  }
  return tensor::CastOp::create(b, loc, type, input);
}

Value castTo(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(b, loc, type, value);
}

/// B as [k, n].
Value plainB(OpBuilder &b, const RowMatmul &matmul) {
  Value bMatrix = matmul.b->get();
  if (!matmul.transposedB)
    return bMatrix;
  Location loc = matmul.op->getLoc();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, bMatrix);
  Value init = tensor::EmptyOp::create(
      b, loc, {sizes[1], sizes[0]}, getElementTypeOrSelf(bMatrix.getType()));
  return linalg::TransposeOp::create(b, loc, bMatrix, init,
                                     ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

/// Erases a replaced view and the producers of its operands other than the
/// source (sizes, a transpose's init) that became dead; the source is
/// another view or the collective, which the caller erases.
void eraseView(Operation *view) {
  SmallVector<Value> operands(llvm::drop_begin(view->getOperands()));
  view->erase();
  eraseIfDead(operands);
}

/// Erases a replaced matmul and its init if that became dead.
void eraseMatmul(linalg::LinalgOp matmul) {
  Value init = matmul.getDpsInitOperand(0)->get();
  matmul->erase();
  eraseIfDead(init);
}

/// Whether `value` is computed from the result of `producer`.
bool dependsOn(Value value, Operation *producer) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  options.omitBlockArguments = true;
  options.omitUsesFromAbove = false;
  (void)getBackwardSlice(def, &slice, options);
  return slice.contains(producer);
}

/// The ops to move above `anchor` to make `value` available there: none if
/// it already is, else the side-effect-free ops of anchor's block after the
/// anchor that compute it, in program order; std::nullopt if that is not
/// possible.
std::optional<SmallVector<Operation *>>
opsToHoist(Value value, Operation *anchor, DominanceInfo &dominance) {
  if (dominance.properlyDominates(value, anchor))
    return SmallVector<Operation *>();
  Operation *def = value.getDefiningOp();
  Block *block = anchor->getBlock();
  if (!def || def->getBlock() != block)
    return std::nullopt;
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  options.omitBlockArguments = true;
  options.omitUsesFromAbove = false;
  options.filter = [&](Operation *op) {
    return op->getBlock() == block && anchor->isBeforeInBlock(op);
  };
  if (failed(getBackwardSlice(def, &slice, options)) ||
      !llvm::all_of(slice, isMemoryEffectFree))
    return std::nullopt;
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered,
             [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
  return ordered;
}

/// Where a collective is issued: the op itself, or its dtensor.async_start
/// when nothing runs between the start and the wait (an async collective
/// that the scheduler overlapped with other work is left alone, as PyTorch
/// leaves collectives that plain overlap hides).
struct Site {
  Operation *collective = nullptr;
  /// The op the fused op replaces, in program order.
  Operation *anchor = nullptr;
  /// The collective's result as the program sees it.
  Value result;
  WaitOp wait;
};

std::optional<Site> siteOf(Operation *collective, std::string &why) {
  Site site;
  site.collective = collective;
  auto start = dyn_cast_or_null<AsyncStartOp>(collective->getParentOp());
  if (!start) {
    site.anchor = collective;
    site.result = collective->getResult(0);
    return site;
  }
  Value future = start.getFutures().front();
  auto wait = future.hasOneUse()
                  ? dyn_cast<WaitOp>(*future.getUsers().begin())
                  : WaitOp();
  if (!wait || start->getNextNode() != wait.getOperation()) {
    why = "it is asynchronous with work between its start and its wait, "
          "overlapped by the scheduler";
    return std::nullopt;
  }
  site.anchor = start;
  site.result = wait.getResult();
  site.wait = wait;
  return site;
}

void eraseSite(Site &site) {
  if (site.wait) {
    site.wait.erase();
    site.anchor->erase();
    return;
  }
  site.collective->erase();
}

//===----------------------------------------------------------------------===//
// Cost gate
//===----------------------------------------------------------------------===//

std::string formatUs(double us) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.2f", us);
  return text;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct FuseCollectiveMatmulPass
    : dtensor::impl::FuseCollectiveMatmulPassBase<FuseCollectiveMatmulPass> {
  using Base::Base;
  void runOnOperation() override;

private:
  /// The gate's verdict on a candidate; `why` explains it for the remark.
  bool
  shouldFuse(const FusedMatmulShape &shape,
             llvm::function_ref<FusedMatmulEstimate(const FusedMatmulShape &)>
                 estimate,
             StringRef collectiveName, std::string &why);
  void visitAllGather(AllGatherOp op, DominanceInfo &dominance);
  void visitReduceScatter(ReduceScatterOp op);
  int64_t groupSizeOf(Operation *op);

  HardwareModel hw;
};

int64_t FuseCollectiveMatmulPass::groupSizeOf(Operation *op) {
  auto collective = cast<CollectiveOpInterface>(op);
  MeshOp mesh =
      lookupMesh(op, collective.getMeshAttr(), /*diagnose=*/false);
  return mesh ? mesh.getGroupSize(collective.getMeshAxes()) : 0;
}

bool FuseCollectiveMatmulPass::shouldFuse(
    const FusedMatmulShape &shape,
    llvm::function_ref<FusedMatmulEstimate(const FusedMatmulShape &)> estimate,
    StringRef collectiveName, std::string &why) {
  llvm::raw_string_ostream os(why);
  if (force) {
    os << "force=true";
    return true;
  }
  if (minRows > 0) {
    bool fuse = shape.rows >= minRows;
    os << "M = " << shape.rows << " rows " << (fuse ? ">=" : "<")
       << " min-rows " << minRows;
    return fuse;
  }
  auto pays = [&](const FusedMatmulEstimate &e) {
    return e.unfusedUs() > threshold * e.pipelinedUs();
  };
  FusedMatmulEstimate e = estimate(shape);
  bool fuse = pays(e);
  os << "modelled pipeline " << formatUs(e.pipelinedUs()) << " us "
     << (fuse ? "beats" : "does not beat") << " unfused "
     << formatUs(e.unfusedUs()) << " us (" << collectiveName << " "
     << formatUs(e.commUs) << " + matmul " << formatUs(e.matmulUs)
     << "; per step permute " << formatUs(e.stepCommUs) << ", compute "
     << formatUs(e.stepComputeUs) << ") over " << shape.groupSize
     << " ranks";
  if (threshold != 1.0)
    os << ", required speedup " << llvm::format("%g", double(threshold));
  // The break-even row count for these K and N: the smallest multiple of
  // the group size (searched by doubling, then bisection) that pays.
  FusedMatmulShape probe = shape;
  auto paysAt = [&](int64_t rows) {
    probe.rows = rows;
    return pays(estimate(probe));
  };
  constexpr int64_t kMaxRows = int64_t(1) << 32;
  int64_t n = shape.groupSize, high = n;
  while (high <= kMaxRows && !paysAt(high))
    high *= 2;
  os << "; M = " << shape.rows << " rows, ";
  if (high > kMaxRows) {
    os << "no break-even M";
  } else {
    int64_t low = high / 2; // does not pay (or is below the group size)
    while (high - low > n) {
      int64_t mid = llvm::alignDown((low + high) / 2, n);
      if (mid <= low)
        break;
      (paysAt(mid) ? high : low) = mid;
    }
    os << "break-even M >= " << high;
  }
  return fuse;
}

void FuseCollectiveMatmulPass::visitAllGather(AllGatherOp op,
                                              DominanceInfo &dominance) {
  auto notFused = [&](const Twine &why) {
    emitRemark(op.getLoc()) << "not fused: " << why;
  };
  std::string why;
  std::optional<Site> site = siteOf(op, why);
  if (!site)
    return notFused(why);
  auto shardType = cast<RankedTensorType>(op.getInput().getType());
  int64_t rank = shardType.getRank();
  if (rank != 2 && rank != 3)
    return notFused("A has rank " + Twine(rank) +
                    "; the fused op takes rank 2 or 3 (AGMM1)");
  if (static_cast<int64_t>(op.getGatherDim()) == rank - 1)
    return notFused("gather_dim " + Twine(op.getGatherDim()) +
                    " is A's last dim, which the matmul contracts (AGMM2)");
  if (!shardType.getElementType().isIntOrFloat())
    return notFused("the element type is not an integer or float");

  // The matmuls fed by the gathered A, possibly through row views.
  struct Consumer {
    SmallVector<Operation *> views; // from the gathered A to the matmul
    RowMatmul matmul;
    SmallVector<Operation *> hoist; // computing B, to move above the gather
  };
  SmallVector<Consumer> consumers;
  SmallVector<Operation *> viewOps;
  std::string rejected; // why the last rejected matmul was rejected
  unsigned numOtherUsers = 0;
  SmallVector<Operation *> chain;
  std::function<void(Value)> visit = [&](Value value) {
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      std::string whyNot;
      std::optional<RowMatmul> matmul = matchRowMatmul(user, whyNot);
      if (matmul && matmul->a == &use) {
        std::optional<SmallVector<Operation *>> hoist;
        if (dependsOn(matmul->b->get(), site->result.getDefiningOp()))
          rejected = "its B operand depends on the gathered A";
        else if (user->getBlock() != site->anchor->getBlock())
          rejected = "it is in another block than the all_gather";
        else if (!(hoist = opsToHoist(matmul->b->get(), site->anchor,
                                      dominance)))
          rejected = "its B operand is computed after the all_gather by ops "
                     "that cannot move above it";
        else {
          consumers.push_back({chain, *matmul, *hoist});
          continue;
        }
        ++numOtherUsers;
        continue;
      }
      if (use.getOperandNumber() == 0 && isRowView(user)) {
        chain.push_back(user);
        viewOps.push_back(user);
        visit(user->getResult(0));
        chain.pop_back();
        continue;
      }
      auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
      if (matmul)
        rejected = "a matmul uses the gathered A as its B operand";
      else if (linalgOp && linalg::isaContractionOpInterface(linalgOp))
        rejected = whyNot;
      ++numOtherUsers;
    }
  };
  visit(site->result);
  // One B per matmul, in program order.
  llvm::sort(consumers, [](const Consumer &x, const Consumer &y) {
    return x.matmul.op->isBeforeInBlock(y.matmul.op);
  });
  if (consumers.empty())
    return notFused(rejected.empty()
                        ? std::string("no matmul consumes the gathered A as "
                                      "its row operand")
                        : "no matmul can take the gathered A: " + rejected);

  // The cost gate.
  FusedMatmulShape shape;
  shape.groupSize = groupSizeOf(op);
  auto gatheredType = cast<RankedTensorType>(op.getResult().getType());
  bool staticShapes = gatheredType.hasStaticShape();
  shape.k = gatheredType.getShape().back();
  shape.rows = staticShapes ? gatheredType.getNumElements() / shape.k : 0;
  shape.elementBytes =
      llvm::divideCeil(gatheredType.getElementTypeBitWidth(), 8);
  for (Consumer &consumer : consumers) {
    auto bType = cast<RankedTensorType>(consumer.matmul.b->get().getType());
    int64_t n = bType.getDimSize(consumer.matmul.transposedB ? 0 : 1);
    staticShapes &= !ShapedType::isDynamic(n);
    shape.ns.push_back(n);
  }
  if (shape.groupSize < 1)
    return notFused("the mesh does not resolve");
  bool assembleGathered = numOtherUsers > 0;
  std::string verdict;
  if (!staticShapes && !force)
    return notFused("dynamic sizes, which the cost model cannot judge "
                    "(force=true fuses anyway)");
  if (!shouldFuse(
          shape,
          [&](const FusedMatmulShape &s) {
            return estimateAllGatherMatmul(hw, s, assembleGathered);
          },
          "all_gather", verdict))
    return notFused(verdict);

  // The rewrite: the fused op where the all_gather was, each matmul's
  // result rebuilt from the fused product through the same views.
  for (Consumer &consumer : consumers)
    for (Operation *hoisted : consumer.hoist)
      if (site->anchor->isBeforeInBlock(hoisted))
        hoisted->moveBefore(site->anchor);
  OpBuilder b(site->anchor);
  Location loc = op.getLoc();
  SmallVector<Value> bs;
  SmallVector<Type> resultTypes;
  for (Consumer &consumer : consumers) {
    Value bMatrix = plainB(b, consumer.matmul);
    bs.push_back(bMatrix);
    SmallVector<int64_t> shapeOfC(gatheredType.getShape());
    shapeOfC.back() = cast<RankedTensorType>(bMatrix.getType()).getDimSize(1);
    resultTypes.push_back(
        RankedTensorType::get(shapeOfC, gatheredType.getElementType()));
  }
  auto fused = AllGatherMatmulOp::create(
      b, loc, gatheredType, resultTypes, op.getInput(), bs, op.getMeshAttr(),
      op.getMeshAxesAttr(), op.getGatherDimAttr());
  emitRemark(op.getLoc()) << "fused with " << consumers.size() << " matmul"
                  << (consumers.size() == 1 ? "" : "s")
                  << " into dtensor.all_gather_matmul"
                  << (assembleGathered
                          ? " (the gathered A has other users and is "
                            "returned too)"
                          : "")
                  << ": " << verdict;
  for (auto [consumer, product] : llvm::zip(consumers, fused.getResults())) {
    Operation *matmulOp = consumer.matmul.op;
    b.setInsertionPoint(matmulOp);
    Value value = product;
    for (Operation *view : consumer.views)
      value = cloneRowView(b, view, value);
    matmulOp->getResult(0).replaceAllUsesWith(
        castTo(b, matmulOp->getLoc(), value, matmulOp->getResult(0).getType()));
    eraseMatmul(consumer.matmul.op);
  }
  site->result.replaceAllUsesWith(fused.getGathered());
  eraseSite(*site);
  for (Operation *view : llvm::reverse(viewOps))
    if (view->use_empty())
      eraseView(view);
  ++numAllGatherMatmul;
}

void FuseCollectiveMatmulPass::visitReduceScatter(ReduceScatterOp op) {
  auto notFused = [&](const Twine &why) {
    emitRemark(op.getLoc()) << "not fused: " << why;
  };
  std::string why;
  std::optional<Site> site = siteOf(op, why);
  if (!site)
    return notFused(why);
  if (op.getReduce() != ReduceKind::Sum && op.getReduce() != ReduceKind::Avg)
    return notFused("reduce = " + stringifyReduceKind(op.getReduce()) +
                    "; the fused op takes sum or avg (MMRS4)");

  // Back from the operand through single-use row views to the matmul.
  SmallVector<Operation *> views; // from the reduce_scatter to the matmul
  Value value = op.getInput();
  std::optional<RowMatmul> matmul;
  while (true) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return notFused("its operand is not produced by a matmul");
    std::string whyNot;
    matmul = matchRowMatmul(def, whyNot);
    if (matmul)
      break;
    if (!isRowView(def)) {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(def);
      return notFused(linalgOp && linalg::isaContractionOpInterface(linalgOp)
                          ? "its operand is not produced by a matmul: " +
                                whyNot
                          : std::string("its operand is not produced by a "
                                        "matmul"));
    }
    if (!value.hasOneUse())
      return notFused("a view between the matmul and the reduce_scatter has "
                      "other users");
    views.push_back(def);
    value = def->getOperand(0);
  }
  if (!value.hasOneUse())
    return notFused("the matmul's product has other users, and the fused op "
                    "does not return it");
  auto productType = cast<RankedTensorType>(op.getInput().getType());
  int64_t rank = productType.getRank();
  if (rank != 2 && rank != 3)
    return notFused("the product has rank " + Twine(rank) +
                    "; the fused op takes rank 2 or 3 (MMRS1)");

  FusedMatmulShape shape;
  shape.groupSize = groupSizeOf(op);
  if (shape.groupSize < 1)
    return notFused("the mesh does not resolve");
  int64_t scattered = productType.getDimSize(op.getScatterDim());
  if (!ShapedType::isDynamic(scattered) && scattered % shape.groupSize != 0)
    return notFused("the scattered dim's size " + Twine(scattered) +
                    " is not divisible by the group size " +
                    Twine(shape.groupSize) +
                    "; the fused op scatters evenly (MMRS3)");
  auto aType = cast<RankedTensorType>(matmul->a->get().getType());
  shape.k = aType.getShape().back();
  int64_t n = productType.getShape().back();
  shape.ns.push_back(n);
  bool staticShapes = productType.hasStaticShape() && !aType.isDynamicDim(
                                                          aType.getRank() - 1);
  shape.rows = staticShapes ? productType.getNumElements() / n : 0;
  shape.elementBytes =
      llvm::divideCeil(productType.getElementTypeBitWidth(), 8);
  if (!staticShapes && !force)
    return notFused("dynamic sizes, which the cost model cannot judge "
                    "(force=true fuses anyway)");
  bool alongColumns = static_cast<int64_t>(op.getScatterDim()) == rank - 1;
  std::string verdict;
  if (!shouldFuse(
          shape,
          [&](const FusedMatmulShape &s) {
            return estimateMatmulReduceScatter(hw, s, alongColumns);
          },
          "reduce_scatter", verdict))
    return notFused(verdict);

  // The rewrite: A through the views, then the fused op where the
  // reduce_scatter was.
  OpBuilder b(site->anchor);
  Value a = matmul->a->get();
  for (Operation *view : llvm::reverse(views))
    a = cloneRowView(b, view, a);
  auto fused = MatmulReduceScatterOp::create(
      b, op.getLoc(), op.getResult().getType(), a, plainB(b, *matmul),
      op.getMeshAttr(), op.getMeshAxesAttr(), op.getScatterDimAttr(),
      op.getReduceAttr());
  emitRemark(op.getLoc()) << "fused with its matmul into "
                     "dtensor.matmul_reduce_scatter: "
                  << verdict;
  site->result.replaceAllUsesWith(fused.getResult());
  eraseSite(*site);
  for (Operation *view : views)
    eraseView(view);
  eraseMatmul(matmul->op);
  ++numMatmulReduceScatter;
}

void FuseCollectiveMatmulPass::runOnOperation() {
  FailureOr<HardwareModel> model = getTargetHardware(getOperation());
  if (failed(model))
    return signalPassFailure();
  if (threshold <= 0 || minRows < 0) {
    getOperation().emitError(
        "threshold must be positive and min-rows non-negative");
    return signalPassFailure();
  }
  hw = *model;
  // All-gather fusions first, then reduce-scatter fusions (PyTorch's
  // order); each function in program order.
  for (auto func : getOperation().getOps<func::FuncOp>()) {
    DominanceInfo dominance(func);
    SmallVector<AllGatherOp> gathers;
    func.walk([&](AllGatherOp op) { gathers.push_back(op); });
    for (AllGatherOp op : gathers)
      visitAllGather(op, dominance);
    SmallVector<ReduceScatterOp> scatters;
    func.walk([&](ReduceScatterOp op) { scatters.push_back(op); });
    for (ReduceScatterOp op : scatters)
      visitReduceScatter(op);
  }
}

} // namespace
