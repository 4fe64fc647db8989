//===- FoldEmptyTensors.cpp - values without elements before bufferization ===//
//
// The `dtensor-fold-empty-tensors` pass: a tensor with a static size-0
// dimension holds no elements, so every such value may be a tensor.empty;
// bufferizing it instead slices or copies a size-0 dimension, which MLIR's
// verifiers reject. Runs in addBufferizationPasses, before one-shot-bufferize.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/Passes.h"
#include "dtensor/Target/Target.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_FOLDEMPTYTENSORSPASS
#include "dtensor/Target/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

/// True if `type` is a ranked tensor with a static dimension of size 0.
static bool hasNoElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && llvm::is_contained(tensor.getShape(), 0);
}

/// The dynamic sizes of `op`'s result `index` as values, reified from the
/// op; failure where the op cannot say.
static FailureOr<SmallVector<Value>>
getDynamicResultSizes(RewriterBase &rewriter, Operation *op, unsigned index) {
  auto type = cast<RankedTensorType>(op->getResult(index).getType());
  if (type.hasStaticShape())
    return SmallVector<Value>();
  Location loc = op->getLoc();
  SmallVector<OpFoldResult> sizes;
  if (auto cast = dyn_cast<tensor::CastOp>(op)) {
    for (int64_t d = 0, e = type.getRank(); d < e; ++d)
      sizes.push_back(tensor::getMixedSize(rewriter, loc, cast.getSource(), d));
  } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    sizes = expand.getMixedOutputShape();
  } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    // A collapsed dim is the product of its group (reshapes implement
    // reification only through external models, which not every tool
    // registers).
    for (const ReassociationIndices &group :
         collapse.getReassociationIndices()) {
      Value product = arith::ConstantIndexOp::create(rewriter, loc, 1);
      for (int64_t d : group)
        product = arith::MulIOp::create(
            rewriter, loc, product,
            getValueOrCreateConstantIndexOp(
                rewriter, loc,
                tensor::getMixedSize(rewriter, loc, collapse.getSrc(), d)));
      sizes.push_back(product);
    }
  } else {
    ReifiedRankedShapedTypeDims reified;
    if (failed(reifyResultShapes(rewriter, op, reified)))
      return failure();
    sizes = reified[index];
  }
  SmallVector<Value> dynamic;
  for (auto [d, size] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(size))
      dynamic.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, sizes[d]));
  return dynamic;
}

/// Replaces the uses of result `index` of `op` by a tensor.empty of its
/// type.
static LogicalResult replaceByEmpty(PatternRewriter &rewriter, Operation *op,
                                    unsigned index) {
  rewriter.setInsertionPoint(op);
  FailureOr<SmallVector<Value>> dynamic =
      getDynamicResultSizes(rewriter, op, index);
  if (failed(dynamic))
    return rewriter.notifyMatchFailure(op, "cannot reify the result's sizes");
  Value result = op->getResult(index);
  Value empty = tensor::EmptyOp::create(
      rewriter, op->getLoc(), cast<RankedTensorType>(result.getType()),
      *dynamic);
  rewriter.replaceAllUsesWith(result, empty);
  return success();
}

namespace {

/// Rule 1: a side-effect-free op's used result without elements.
struct EmptyResult : RewritePattern {
  EmptyResult(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (isa<tensor::EmptyOp>(op) || !isMemoryEffectFree(op))
      return failure();
    for (OpResult result : op->getResults())
      if (hasNoElements(result.getType()) && !result.use_empty())
        return replaceByEmpty(rewriter, op, result.getResultNumber());
    return failure();
  }
};

/// Rule 2: a view or reshape of a source without elements has none either
/// (a collapse of tensor<0x?xf32> into tensor<?xf32> is not typed empty);
/// the source is operand 0 of each.
template <typename OpTy>
struct EmptySourceView : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!hasNoElements(op->getOperand(0).getType()) ||
        op.getResult().use_empty())
      return failure();
    return replaceByEmpty(rewriter, op, 0);
  }
};

/// Rule 3: every element of a pad of an empty source is padding (a source
/// the padding alone fills the result with counts as empty).
struct PadOfEmptySource : OpRewritePattern<tensor::PadOp> {
  using OpRewritePattern::OpRewritePattern;

  /// True if the pad's source has no elements: a static size-0 dim, or a
  /// dynamic dim whose static low and high padding already fill the static
  /// result dim (so the source dim is 0 at run time; bufferized, the copy
  /// of the source would slice the result at offset `low` = its size).
  static bool padsNothing(tensor::PadOp op) {
    if (hasNoElements(op.getSourceType()))
      return true;
    RankedTensorType result = op.getResultType();
    for (int64_t d = 0, e = result.getRank(); d < e; ++d) {
      std::optional<int64_t> low = getConstantIntValue(op.getMixedLowPad()[d]);
      std::optional<int64_t> high =
          getConstantIntValue(op.getMixedHighPad()[d]);
      if (low && high && !result.isDynamicDim(d) &&
          result.getDimSize(d) == *low + *high)
        return true;
    }
    return false;
  }

  LogicalResult matchAndRewrite(tensor::PadOp op,
                                PatternRewriter &rewriter) const override {
    if (!padsNothing(op))
      return failure();
    FailureOr<SmallVector<Value>> dynamic =
        getDynamicResultSizes(rewriter, op, 0);
    if (failed(dynamic))
      return rewriter.notifyMatchFailure(op, "cannot reify the pad's sizes");
    auto generate = tensor::GenerateOp::create(
        rewriter, op.getLoc(), op.getResultType(), *dynamic);
    rewriter.inlineRegionBefore(op.getRegion(), generate.getBody(),
                                generate.getBody().end());
    rewriter.replaceOp(op, generate.getResult());
    return success();
  }
};

/// Rule 4: inserting nothing leaves the destination.
struct InsertEmptySource : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::InsertSliceOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasNoElements(op.getSourceType()))
      return failure();
    rewriter.replaceOp(op, op.getDest());
    return success();
  }
};

struct FoldEmptyTensorsPass
    : dtensor::impl::FoldEmptyTensorsPassBase<FoldEmptyTensorsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<EmptyResult, EmptySourceView<tensor::ExtractSliceOp>,
                 EmptySourceView<tensor::CollapseShapeOp>,
                 EmptySourceView<tensor::ExpandShapeOp>,
                 EmptySourceView<tensor::CastOp>, PadOfEmptySource,
                 InsertEmptySource>(context);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
