//===- CUDAFuseElementwise.cpp - one kernel per fused elementwise chain ---===//
//
// Runs on tensors, before bufferization: elementwise producers are fused
// into their elementwise consumers (upstream fusion) so that a chain like
// bias + gelu + scale is one kernel with one read and one write per element.
// Contractions are kept out of fusion so that the matmul rewrite still sees
// them, and a linalg.transpose feeding a contraction is folded into the
// contraction's indexing map (the runtime reads the transposed view in
// place; no transpose kernel). A fill used by several ops (CSE merges the
// zero inits of matmuls that share a shape) is cloned so that each user
// has its own: bufferization would otherwise write the filled buffer in
// place for one user and copy it for the others, and the matmul rewrite
// could fold none of the fills (a fill kernel, a copy kernel, and matmuls
// that accumulate onto C).
//
// Named elementwise ops (autodiff's gradient accumulations are linalg.add)
// are generalized first, so that upstream fusion, which takes generics only,
// fuses them with their producers. After producer-consumer fusion, sibling
// elementwise generics (the same loops, one input read by both, neither
// reading the other) are merged into one generic of several results: a
// backward's gradients of the inputs of one forward body (SwiGLU's
// d(x w1) and d(x w3), both from d(silu(a) * b)) are one kernel reading
// their common operands once. The elementwise consumer of a row reduction
// is moved right after it where its operands allow, so that the mapping to
// GPU kernels runs both in one kernel.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "MapToGPU.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDAFUSEELEMENTWISEPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

static bool isContraction(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  return linalgOp && linalg::isaContractionOpInterface(linalgOp);
}

/// contraction(transpose(x), ...) -> generic contraction reading x with the
/// composed indexing map.
struct FoldTransposeIntoContraction
    : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() || !isContraction(op))
      return failure();
    for (OpOperand *input : op.getDpsInputOperands()) {
      auto transpose = input->get().getDefiningOp<linalg::TransposeOp>();
      if (!transpose)
        continue;
      // result[i] = input[perm[i]]: the map of the transpose's input is
      // the operand's map with results permuted by the inverse.
      unsigned number = input->getOperandNumber();
      AffineMap map = op.getMatchingIndexingMap(input);
      ArrayRef<int64_t> perm = transpose.getPermutation();
      SmallVector<AffineExpr> exprs(perm.size());
      for (auto [i, p] : llvm::enumerate(perm))
        exprs[p] = map.getResult(i);
      AffineMap newMap = AffineMap::get(map.getNumDims(), map.getNumSymbols(),
                                        exprs, op.getContext());
      FailureOr<linalg::GenericOp> generic =
          isa<linalg::GenericOp>(op)
              ? FailureOr<linalg::GenericOp>(cast<linalg::GenericOp>(op))
              : linalg::generalizeNamedOp(rewriter, op);
      if (failed(generic))
        return failure();
      SmallVector<AffineMap> maps = generic->getIndexingMapsArray();
      maps[number] = newMap;
      rewriter.modifyOpInPlace(*generic, [&] {
        generic->setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
        generic->setOperand(number, transpose.getInput());
      });
      return success();
    }
    return failure();
  }
};

/// A named elementwise op (linalg.add, linalg.mul, ..., linalg.elementwise:
/// parallel loops, identity maps; not a fill or a copy) -> linalg.generic,
/// which upstream fusion takes.
struct GeneralizeElementwise : OpInterfaceRewritePattern<linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    if (isa<linalg::GenericOp, linalg::FillOp, linalg::CopyOp>(op) ||
        !op.hasPureTensorSemantics() || op.getNumDpsInputs() == 0 ||
        op.getNumLoops() != op.getNumParallelLoops() ||
        !llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap map) { return map.isIdentity(); }))
      return failure();
    return linalg::generalizeNamedOp(rewriter, op);
  }
};

/// Whether `op` is an elementwise generic sibling fusion may merge: on
/// tensors, parallel loops of static sizes.
static bool isSiblingCandidate(linalg::GenericOp op) {
  return op.hasPureTensorSemantics() && op.getNumLoops() > 0 &&
         op.getNumLoops() == op.getNumParallelLoops() &&
         !llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic);
}

/// Whether every operand of `op` is accessed as a vectorized kernel reads
/// and writes (cuda::classifyAccess; outputs whole): a merge of such an op
/// with one that is not would lose the vector accesses.
static bool hasVectorAccesses(linalg::GenericOp op) {
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<cuda::Access> access =
        cuda::classifyAccess(op.getMatchingIndexingMap(&operand), loops);
    if (!access || (op.isDpsInit(&operand) && access->kind != cuda::Access::Full))
      return false;
  }
  return true;
}

/// One generic in `a`'s place computing `a`'s and `b`'s results over their
/// common loops: the inputs of both (one operand per value and map), both
/// inits, the two bodies one after the other, CSE'd (what both compute of a
/// shared input is computed once).
static linalg::GenericOp mergeSiblings(RewriterBase &rewriter,
                                       linalg::GenericOp a,
                                       linalg::GenericOp b) {
  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> inputMaps, initMaps;
  // Body argument number in the merged op of each op's operands.
  SmallVector<unsigned> argOf[2];
  linalg::GenericOp ops[2] = {a, b};
  for (auto [i, op] : llvm::enumerate(ops)) {
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      unsigned at = inputs.size();
      for (unsigned j = 0; j < inputs.size(); ++j)
        if (inputs[j] == input->get() && inputMaps[j] == map)
          at = j;
      if (at == inputs.size()) {
        inputs.push_back(input->get());
        inputMaps.push_back(map);
      }
      argOf[i].push_back(at);
    }
  }
  for (auto [i, op] : llvm::enumerate(ops)) {
    for (OpOperand &init : op.getDpsInitsMutable()) {
      argOf[i].push_back(inputs.size() + inits.size());
      inits.push_back(init.get());
      initMaps.push_back(op.getMatchingIndexingMap(&init));
    }
  }
  SmallVector<AffineMap> maps(inputMaps);
  llvm::append_range(maps, initMaps);
  SmallVector<Type> resultTypes(a->getResultTypes());
  llvm::append_range(resultTypes, b->getResultTypes());
  rewriter.setInsertionPoint(a);
  auto merged = linalg::GenericOp::create(
      rewriter, a.getLoc(), resultTypes, inputs, inits, maps,
      a.getIteratorTypesArray(),
      [&](OpBuilder &builder, Location loc, ValueRange args) {
        SmallVector<Value> yielded;
        for (auto [i, op] : llvm::enumerate(ops)) {
          IRMapping mapping;
          Block *body = op.getBlock();
          for (auto [arg, number] : llvm::zip(body->getArguments(), argOf[i]))
            mapping.map(arg, args[number]);
          for (Operation &nested : body->without_terminator())
            builder.clone(nested, mapping);
          for (Value value : body->getTerminator()->getOperands())
            yielded.push_back(mapping.lookupOrDefault(value));
        }
        linalg::YieldOp::create(builder, loc, yielded);
      });
  rewriter.replaceOp(a, merged->getResults().take_front(a->getNumResults()));
  rewriter.replaceOp(b, merged->getResults().drop_front(
                            merged->getNumResults() - b->getNumResults()));
  DominanceInfo dominance(merged);
  eliminateCommonSubExpressions(rewriter, dominance, merged);
  return merged;
}

/// Merges sibling elementwise generics: two in one block with the same
/// static loops and iterator types, one input value read by both, both or
/// neither with the accesses of a vectorized kernel, every operand of the
/// later one defined before the earlier one (the merge takes the earlier
/// one's place: nothing moves later, so a consumer right after the
/// reduction it reads stays there). Returns whether anything changed.
static bool fuseSiblings(Operation *root) {
  IRRewriter rewriter(root->getContext());
  DominanceInfo dominance(root);
  SmallVector<linalg::GenericOp> candidates;
  root->walk([&](linalg::GenericOp op) {
    if (isSiblingCandidate(op))
      candidates.push_back(op);
  });
  llvm::SmallPtrSet<Operation *, 16> erased;
  bool changed = false;
  for (linalg::GenericOp a : candidates) {
    if (erased.contains(a))
      continue;
    // The first sibling of `a` after it, in block order.
    auto findSibling = [&]() -> linalg::GenericOp {
      linalg::GenericOp best;
      for (Value input : a.getDpsInputs()) {
        for (Operation *user : input.getUsers()) {
          auto b = dyn_cast<linalg::GenericOp>(user);
          if (!b || b == a || b->getBlock() != a->getBlock() ||
              !a->isBeforeInBlock(b) || erased.contains(b) ||
              !isSiblingCandidate(b) ||
              a.getStaticLoopRanges() != b.getStaticLoopRanges() ||
              a.getIteratorTypesArray() != b.getIteratorTypesArray() ||
              hasVectorAccesses(a) != hasVectorAccesses(b) ||
              (best && best->isBeforeInBlock(b)) ||
              !llvm::all_of(b->getOperands(), [&](Value v) {
                return dominance.properlyDominates(v, a);
              }))
            continue;
          best = b;
        }
      }
      return best;
    };
    while (linalg::GenericOp b = findSibling()) {
      erased.insert(a);
      erased.insert(b);
      a = mergeSiblings(rewriter, a, b);
      erased.erase(a); // (allocated where an erased op was)
      changed = true;
    }
  }
  return changed;
}

/// Moves the elementwise consumer of each row reduction (parallel loops,
/// then reduction loops; the consumer over the same loop sizes, all
/// parallel, reading the reduction's result) right after it, where the
/// consumer's operands are defined before it or are tensor.empty ops moved
/// along: dtensor-cuda-map-to-gpu runs a reduction and the consumer right
/// after it as one kernel (WarpReductions.cpp). A backward leaves other
/// work in between (an RMSNorm's gain gradient between its row reduction
/// and the input gradient that reads it).
static void hoistRowConsumers(Operation *root) {
  SmallVector<linalg::GenericOp> reductions;
  root->walk([&](linalg::GenericOp op) {
    if (!op.hasPureTensorSemantics() || op->getNumResults() != 1 ||
        op.getNumReductionLoops() == 0)
      return;
    unsigned parallel = op.getNumParallelLoops();
    for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray()))
      if ((i < parallel) != (type == utils::IteratorType::parallel))
        return;
    reductions.push_back(op);
  });
  DominanceInfo dominance(root);
  for (linalg::GenericOp reduction : reductions) {
    linalg::GenericOp consumer;
    for (Operation *user : reduction->getResult(0).getUsers()) {
      auto generic = dyn_cast<linalg::GenericOp>(user);
      if (!generic || generic->getBlock() != reduction->getBlock() ||
          generic.getNumLoops() != generic.getNumParallelLoops() ||
          generic.getStaticLoopRanges() != reduction.getStaticLoopRanges() ||
          (consumer && consumer->isBeforeInBlock(generic)))
        continue;
      consumer = generic;
    }
    if (!consumer)
      continue;
    // What moves along: operand-free tensor.empty inits.
    SmallVector<Operation *> empties;
    bool movable = true;
    for (Value operand : consumer->getOperands()) {
      if (operand == reduction->getResult(0) ||
          dominance.properlyDominates(operand, reduction))
        continue;
      auto empty = operand.getDefiningOp<tensor::EmptyOp>();
      if (!empty || empty->getNumOperands() ||
          empty->getBlock() != consumer->getBlock()) {
        movable = false;
        break;
      }
      empties.push_back(empty);
    }
    if (!movable)
      continue;
    for (Operation *empty : empties)
      empty->moveBefore(reduction);
    consumer->moveAfter(reduction);
  }
}

/// One fill (and tensor.empty under it) per user.
static void splitSharedFills(Operation *root) {
  SmallVector<linalg::FillOp> shared;
  root->walk([&](linalg::FillOp fill) {
    if (fill.hasPureTensorSemantics() && !fill->getResult(0).hasOneUse())
      shared.push_back(fill);
  });
  for (linalg::FillOp fill : shared) {
    SmallVector<OpOperand *> uses = llvm::map_to_vector(
        fill->getResult(0).getUses(), [](OpOperand &use) { return &use; });
    for (OpOperand *use : llvm::drop_begin(uses)) {
      OpBuilder builder(use->getOwner());
      IRMapping mapping;
      Value init = fill.getDpsInits()[0];
      if (auto empty = init.getDefiningOp<tensor::EmptyOp>())
        mapping.map(init, builder.clone(*empty)->getResult(0));
      use->set(builder.clone(*fill, mapping)->getResult(0));
    }
  }
}

struct CUDAFuseElementwisePass
    : dtensor::impl::CUDAFuseElementwisePassBase<CUDAFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<FoldTransposeIntoContraction, GeneralizeElementwise>(ctx);
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      Operation *consumer = fused->getOwner();
      return !isContraction(producer) && !isContraction(consumer) &&
             !isa_and_nonnull<linalg::FillOp>(producer);
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Producer-consumer fusion, then siblings; a merge may let a consumer
    // of both take them in (and the other way round), so until neither
    // changes anything.
    do {
      if (failed(applyPatternsGreedily(getOperation(), frozen)))
        return signalPassFailure();
    } while (fuseSiblings(getOperation()));
    hoistRowConsumers(getOperation());
    splitSharedFills(getOperation());
  }
};

} // namespace
