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
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "mlir/IR/IRMapping.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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
    patterns.add<FoldTransposeIntoContraction>(ctx);
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      Operation *consumer = fused->getOwner();
      return !isContraction(producer) && !isContraction(consumer) &&
             !isa_and_nonnull<linalg::FillOp>(producer);
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    splitSharedFills(getOperation());
  }
};

} // namespace
