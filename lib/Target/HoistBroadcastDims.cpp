//===- HoistBroadcastDims.cpp - reductions computed once, then broadcast --===//
//
// The `dtensor-hoist-broadcast-dims` pass: a reduction whose result does
// not depend on one of its parallel loop dims (no input reads it) computes
// the same values once per index of that dim. Computing it without the dim
// and broadcasting the result does the reduction once.
//
// Such reductions come from contractions with a constant operand, which
// upstream elementwise fusion folds away: the gradient of `sum(x @ w)`
// seeds the backward with a fill of ones, so `ones @ w^T` becomes a
// generic that reads only `w` and reduces it again for every row. As a
// contraction it would have been one cuBLAS call; as a generated kernel it
// costs rows x the reduction.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/SmallBitVector.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_HOISTBROADCASTDIMSPASS
#include "dtensor/Target/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// The loop dims of `op` that may be hoisted: parallel, read by no input,
/// a plain result of every output map, with every output's initial value
/// the same along them (not read, or a fill).
static llvm::SmallBitVector getBroadcastDims(linalg::GenericOp op) {
  unsigned numLoops = op.getNumLoops();
  llvm::SmallBitVector dims(numLoops);
  if (!op.hasPureTensorSemantics() || op.getNumReductionLoops() == 0 ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return dims;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (op.payloadUsesValueFromOperand(&init) &&
        !init.get().getDefiningOp<linalg::FillOp>())
      return dims;
  }
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < numLoops; ++d) {
    if (iterators[d] != utils::IteratorType::parallel)
      continue;
    bool readByInput = llvm::any_of(op.getDpsInputOperands(), [&](auto *in) {
      return op.getMatchingIndexingMap(in).isFunctionOfDim(d);
    });
    if (readByInput)
      continue;
    bool plainInEveryOutput =
        llvm::all_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
          AffineMap map = op.getMatchingIndexingMap(&init);
          return map.getResultPosition(getAffineDimExpr(d, op.getContext()))
              .has_value();
        });
    if (plainInEveryOutput)
      dims.set(d);
  }
  return dims;
}

/// The sizes of an output's initial value: those of the tensor.empty it
/// fills where it is one (no tensor.dim of the fill), else tensor.dim's.
static SmallVector<OpFoldResult> getSizes(OpBuilder &builder, Location loc,
                                          Value value) {
  if (auto fill = value.getDefiningOp<linalg::FillOp>())
    value = fill.getDpsInits()[0];
  if (auto empty = value.getDefiningOp<tensor::EmptyOp>())
    return empty.getMixedSizes();
  return tensor::getMixedSizes(builder, loc, value);
}

/// The sizes of `value` without the dims at `dropped`, for a tensor.empty.
static SmallVector<OpFoldResult> sizesWithout(OpBuilder &builder, Location loc,
                                              Value value,
                                              const llvm::SmallBitVector &dropped) {
  SmallVector<OpFoldResult> sizes = getSizes(builder, loc, value);
  SmallVector<OpFoldResult> kept;
  for (auto [i, size] : llvm::enumerate(sizes))
    if (!dropped.test(i))
      kept.push_back(size);
  return kept;
}

/// The `arith.addf` that output `index` of `op` accumulates with, where
/// the body yields `out + x` (either order) and reads `out` nowhere else.
static arith::AddFOp getAccumulatingAdd(linalg::GenericOp op, unsigned index) {
  Block *body = op.getBody();
  BlockArgument out = body->getArgument(op.getNumDpsInputs() + index);
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getOperand(index).getDefiningOp<arith::AddFOp>();
  if (!add || !out.hasOneUse() || !add->hasOneUse() ||
      (add.getLhs() != out && add.getRhs() != out))
    return nullptr;
  return add;
}

/// Whether output `index` of `op` is a sum in a float narrower than f32:
/// what a contraction of bf16 or f16 data becomes, which the reduction
/// accumulates in f32 (as the matmul library would have) and rounds once.
static bool isNarrowSum(linalg::GenericOp op, unsigned index) {
  auto type = dyn_cast<FloatType>(
      getElementTypeOrSelf(op.getDpsInits()[index].getType()));
  return type && type.getWidth() < 32 && getAccumulatingAdd(op, index);
}

/// generic(reduce over k, d unread) -> broadcast(generic without d).
struct HoistBroadcastDims : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    llvm::SmallBitVector dims = getBroadcastDims(op);
    if (dims.none())
      return rewriter.notifyMatchFailure(op, "no loop dim to hoist");
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type f32 = rewriter.getF32Type();

    SmallVector<AffineMap> maps;
    for (OpOperand *input : op.getDpsInputOperands())
      maps.push_back(compressDims(op.getMatchingIndexingMap(input), dims));
    // Per output: which of its result positions are hoisted dims, and
    // whether its sum is widened to f32.
    SmallVector<llvm::SmallBitVector> droppedResults;
    SmallVector<bool> widened;
    SmallVector<Value> inits;
    SmallVector<Type> types;
    for (auto [index, init] : llvm::enumerate(op.getDpsInitsMutable())) {
      AffineMap map = op.getMatchingIndexingMap(&init);
      llvm::SmallBitVector dropped(map.getNumResults());
      for (int d : dims.set_bits())
        dropped.set(*map.getResultPosition(getAffineDimExpr(d, ctx)));
      maps.push_back(compressDims(map.dropResults(dropped), dims));
      bool widen = isNarrowSum(op, index);
      Type element = widen ? f32 : getElementTypeOrSelf(init.get().getType());
      Value smaller = tensor::EmptyOp::create(
          rewriter, loc, sizesWithout(rewriter, loc, init.get(), dropped),
          element);
      if (auto fill = init.get().getDefiningOp<linalg::FillOp>()) {
        Value value = fill.getInputs()[0];
        if (widen)
          value = arith::ExtFOp::create(rewriter, loc, f32, value);
        smaller =
            linalg::FillOp::create(rewriter, loc, value, smaller).getResult(0);
      }
      inits.push_back(smaller);
      types.push_back(smaller.getType());
      droppedResults.push_back(std::move(dropped));
      widened.push_back(widen);
    }
    SmallVector<utils::IteratorType> iterators;
    for (auto [d, kind] : llvm::enumerate(op.getIteratorTypesArray()))
      if (!dims.test(d))
        iterators.push_back(kind);

    auto reduced = linalg::GenericOp::create(rewriter, loc, types,
                                             op.getDpsInputs(), inits, maps,
                                             iterators);
    rewriter.cloneRegionBefore(op.getRegion(), reduced.getRegion(),
                               reduced.getRegion().begin());
    reduced->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    // Widened sums: out (now f32) + extf(x), yielded in f32.
    for (auto [index, widen] : llvm::enumerate(widened)) {
      if (!widen)
        continue;
      arith::AddFOp add = getAccumulatingAdd(reduced, index);
      BlockArgument out =
          reduced.getBody()->getArgument(reduced.getNumDpsInputs() + index);
      Value x = add.getLhs() == out ? add.getRhs() : add.getLhs();
      rewriter.modifyOpInPlace(reduced, [&] { out.setType(f32); });
      rewriter.setInsertionPoint(add);
      Value wide = arith::ExtFOp::create(rewriter, add.getLoc(), f32, x);
      Value sum = arith::AddFOp::create(rewriter, add.getLoc(), out, wide,
                                        add.getFastmathAttr());
      rewriter.replaceOp(add, sum);
    }
    rewriter.setInsertionPointAfter(reduced);

    SmallVector<Value> results;
    for (auto [i, init] : llvm::enumerate(op.getDpsInits())) {
      auto type = cast<RankedTensorType>(init.getType());
      Value full = tensor::EmptyOp::create(
          rewriter, loc, getSizes(rewriter, loc, init), type.getElementType());
      Value value = reduced.getResult(i);
      if (!widened[i]) {
        SmallVector<int64_t> broadcastDims;
        for (int pos : droppedResults[i].set_bits())
          broadcastDims.push_back(pos);
        results.push_back(
            linalg::BroadcastOp::create(rewriter, loc, value, full,
                                        broadcastDims)
                ->getResult(0));
        continue;
      }
      // Broadcast and round the f32 sum to the result's type in one op.
      unsigned rank = type.getRank();
      SmallVector<AffineExpr> kept;
      for (unsigned d = 0; d < rank; ++d)
        if (!droppedResults[i].test(d))
          kept.push_back(getAffineDimExpr(d, ctx));
      SmallVector<AffineMap> broadcastMaps = {
          AffineMap::get(rank, 0, kept, ctx),
          AffineMap::getMultiDimIdentityMap(rank, ctx)};
      SmallVector<utils::IteratorType> parallel(rank,
                                                utils::IteratorType::parallel);
      auto round = linalg::GenericOp::create(
          rewriter, loc, TypeRange{type}, ValueRange{value}, ValueRange{full},
          broadcastMaps, parallel,
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value narrow =
                arith::TruncFOp::create(b, l, type.getElementType(), args[0]);
            linalg::YieldOp::create(b, l, narrow);
          });
      results.push_back(round.getResult(0));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct HoistBroadcastDimsPass
    : dtensor::impl::HoistBroadcastDimsPassBase<HoistBroadcastDimsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<HoistBroadcastDims>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
