//===- CUDASplitReduction.cpp - column reductions over more threads -------===//
//
// A reduction over an outer dimension of its input (a column sum, the
// gradient of a norm's gain or a bias over the tokens) is mapped to one
// thread per output element, each folding every row in turn: with few
// outputs, a few blocks on the whole GPU. Upstream linalg::splitReduction
// splits it into partial sums over contiguous runs of rows (R times the
// threads) and a reduction of the partials, laid out last so that it is a
// row reduction (a warp per output).
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDASPLITREDUCTIONPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// Fewest elements a partial sum folds.
constexpr int64_t kMinPerPartial = 8;
/// Most partial sums per output.
constexpr int64_t kMaxPartials = 64;
/// Fewest elements reduced into each output for a split.
constexpr int64_t kMinReduced = 256;

/// How many partial sums `op` is split into (0: not split).
static int64_t partialsOf(linalg::LinalgOp op, int64_t minThreads) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
      op->getNumResults() != 1 || op.getNumReductionLoops() != 1 ||
      linalg::isaContractionOpInterface(op))
    return 0;
  SmallVector<utils::IteratorType> types = op.getIteratorTypesArray();
  // The innermost reduction is the warp reduction's (a row per warp).
  if (types.back() == utils::IteratorType::reduction)
    return 0;
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  if (llvm::any_of(loops, ShapedType::isDynamic))
    return 0;
  int64_t outputs = 1, reduced = 1;
  for (auto [size, type] : llvm::zip(loops, types))
    (type == utils::IteratorType::parallel ? outputs : reduced) *= size;
  if (outputs >= minThreads || reduced < kMinReduced)
    return 0;
  int64_t partials = 1;
  while (partials * 2 <= kMaxPartials && reduced % (partials * 2) == 0 &&
         reduced / (partials * 2) >= kMinPerPartial &&
         outputs * partials * 2 <= 4 * minThreads)
    partials *= 2;
  return partials >= 2 ? partials : 0;
}

struct CUDASplitReductionPass
    : dtensor::impl::CUDASplitReductionPassBase<CUDASplitReductionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minThreads < 1) {
      getOperation().emitError("dtensor-cuda-split-reduction: min-threads "
                               "must be positive, got ")
          << static_cast<int64_t>(minThreads);
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (partialsOf(op, minThreads))
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : candidates) {
      int64_t partials = partialsOf(op, minThreads);
      // The partials' dimension last: their reduction is a row reduction.
      auto control = [&](linalg::LinalgOp) {
        linalg::SplitReductionOptions options;
        options.ratio = partials;
        options.index = op.getNumParallelLoops();
        options.innerParallel = false;
        return options;
      };
      rewriter.setInsertionPoint(op);
      // An op upstream cannot split (no known identity, a reduced dimension
      // inside an expression) is left as it is: it still runs, one thread
      // per output.
      (void)linalg::splitReduction(rewriter, op, control);
    }
  }
};

} // namespace
