//===- CUDAMapToGPU.cpp - linalg on device buffers to mapped loops --------===//
//
// Each linalg op left after the matmul rewrite is one kernel: its loop nest
// (parallel loops first) becomes one flat parallel loop, tiled by the block size and mapped to a
// 1-D grid of blocks x threads. Flattening first keeps every block full
// whatever the shape (mapping a 2-D nest directly gives a block per row and
// idle threads when rows are short); one thread per element or per output
// row of a reduction. A reduction a warp can compute takes one warp per
// row, and the elementwise op that consumes its rows right after it (an
// RMSNorm's scaling, a softmax's division) runs in the same kernel: one
// pass over memory instead of two (WarpReductions.cpp); an elementwise op on
// dense buffers moves 16-byte vectors (VectorizeElementwise.cpp).
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "MapToGPU.h"

#include "dtensor/Conversion/DTensorToRuntime/Buffers.h"
#include "dtensor/Dialect/DTensor/DTensorAttrNames.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <numeric>

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDAMAPTOGPUPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;
using namespace mlir::dtensor::cuda;

namespace {

/// Replaces `loop` (without reductions) by a nest of scf.for loops over the
/// same bounds, running its body in order.
static LogicalResult parallelToFor(RewriterBase &rewriter,
                                   scf::ParallelOp loop) {
  if (loop.getNumReductions() != 0)
    return failure();
  rewriter.setInsertionPoint(loop);
  scf::LoopNest nest =
      scf::buildLoopNest(rewriter, loop.getLoc(), loop.getLowerBound(),
                         loop.getUpperBound(), loop.getStep());
  SmallVector<Value> ivs = llvm::map_to_vector(
      nest.loops, [](scf::ForOp f) { return f.getInductionVar(); });
  Block *inner = nest.loops.back().getBody();
  rewriter.eraseOp(loop.getBody()->getTerminator());
  rewriter.inlineBlockBefore(loop.getBody(), inner->getTerminator(), ivs);
  rewriter.eraseOp(loop);
  return success();
}

/// The linalg.fill of exactly `output` before `op` in its block, with no op
/// in between using `output` or any view of it.
static linalg::FillOp fillRightBefore(Operation *op, Value output) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(getLastUserBefore(op, output));
  if (fill && fill.hasPureBufferSemantics() &&
      fill.getOutputs().front() == output)
    return fill;
  return nullptr;
}

struct CUDAMapToGPUPass
    : dtensor::impl::CUDAMapToGPUPassBase<CUDAMapToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (blockSize <= 0 || blockSize > 1024) {
      func.emitError("dtensor-cuda-map-to-gpu: block-size must be in "
                     "[1, 1024], got ")
          << blockSize;
      return signalPassFailure();
    }
    IRRewriter rewriter(func.getContext());

    // Parallel loops first: a generic that iterates a reduction dim outside
    // a parallel one would otherwise become a host loop launching one kernel
    // per reduction index (a column sum: thousands of launches); with the
    // reduction innermost it is one kernel, and a warp reduction where a
    // warp can compute it. Each output element still sums in the same
    // order.
    SmallVector<linalg::GenericOp> generics;
    func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      SmallVector<unsigned> order;
      for (auto [d, kind] : llvm::enumerate(iterators))
        if (kind == utils::IteratorType::parallel)
          order.push_back(d);
      for (auto [d, kind] : llvm::enumerate(iterators))
        if (kind != utils::IteratorType::parallel)
          order.push_back(d);
      if (llvm::equal(order, llvm::seq<unsigned>(0, iterators.size())))
        continue;
      rewriter.setInsertionPoint(op);
      if (failed(linalg::interchangeGenericOp(rewriter, op, order))) {
        op->emitOpError("cannot move this op's parallel loops outside its "
                        "reduction loops for the CUDA target");
        return signalPassFailure();
      }
    }

    // 0. The fill of a warp reduction's output right before it (the
    //    reduction's start value, an RMSNorm's or softmax's zero) is folded
    //    into the reduction's kernel: the kernel writes every element of
    //    the output, so the fill's kernel and the reduction's load of the
    //    old value both go.
    llvm::DenseMap<Operation *, Value> startValues;
    SmallVector<linalg::FillOp> folded;
    func.walk([&](linalg::LinalgOp op) {
      if (!warpReducible(op, blockSize))
        return;
      if (linalg::FillOp fill =
              fillRightBefore(op, op.getDpsInitOperand(0)->get())) {
        startValues[op] = fill.getInputs().front();
        folded.push_back(fill);
      }
    });
    for (linalg::FillOp fill : folded)
      rewriter.eraseOp(fill);

    // 1. linalg -> parallel loops; ops without a parallel dimension get a
    //    one-iteration parallel loop around them so that they run on the
    //    device too.
    SmallVector<linalg::LinalgOp> linalgOps;
    func.walk([&](linalg::LinalgOp op) { linalgOps.push_back(op); });
    llvm::SmallPtrSet<Operation *, 8> fused; // erased with a reduction
    for (linalg::LinalgOp op : linalgOps) {
      if (fused.contains(op.getOperation()))
        continue;
      if (!op.hasPureBufferSemantics()) {
        op->emitOpError("cannot map this op to GPU loops: it is not on "
                        "buffers (bufferize first)");
        return signalPassFailure();
      }
      if (op->getParentOfType<scf::ParallelOp>())
        continue; // lowered with its enclosing kernel below
      if (Operation *combiner = warpReducible(op, blockSize)) {
        int64_t consumerLanes = 0;
        linalg::LinalgOp consumer = rowConsumer(op, vectorBytes, consumerLanes);
        warpReduce(rewriter, op, combiner, reductionLanes(op, vectorBytes),
                   startValues.lookup(op), consumer, consumerLanes);
        if (consumer)
          fused.insert(consumer.getOperation());
        continue;
      }
      if (std::optional<int64_t> lanes = vectorLanes(op, vectorBytes)) {
        vectorizeElementwise(rewriter, op, *lanes);
        continue;
      }
      rewriter.setInsertionPoint(op);
      if (op.getNumParallelLoops() == 0) {
        Location loc = op.getLoc();
        Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
        Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
        auto wrapper = scf::ParallelOp::create(rewriter, loc, zero, one, one);
        rewriter.moveOpBefore(op, wrapper.getBody()->getTerminator());
        rewriter.setInsertionPoint(op);
      }
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
        op->emitOpError("cannot lower this op to parallel loops for the CUDA "
                        "target");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }
    // Linalg ops nested in the wrappers, now inside a parallel loop.
    linalgOps.clear();
    func.walk([&](linalg::LinalgOp op) { linalgOps.push_back(op); });
    for (linalg::LinalgOp op : linalgOps) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::linalgOpToLoops(rewriter, op))) {
        op->emitOpError("cannot lower this op to loops for the CUDA target");
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
    }

    // 2. Flatten, tile and map every outermost parallel loop.
    SmallVector<scf::ParallelOp> outermost;
    func.walk([&](scf::ParallelOp op) {
      if (!op->getParentOfType<scf::ParallelOp>() &&
          !op->getParentOfType<gpu::LaunchOp>())
        outermost.push_back(op);
    });
    MLIRContext *ctx = func.getContext();
    auto mapping = [&](gpu::Processor processor) {
      return gpu::ParallelLoopDimMappingAttr::get(ctx, processor,
                                                  rewriter.getDimIdentityMap(),
                                                  rewriter.getDimIdentityMap());
    };
    for (scf::ParallelOp loop : outermost) {
      if (loop.getNumLoops() > 1) {
        std::vector<unsigned> all(loop.getNumLoops());
        std::iota(all.begin(), all.end(), 0u);
        rewriter.setInsertionPoint(loop);
        // Replaces `loop`; the new loops are collected again below.
        collapseParallelLoops(rewriter, loop, {all});
      }
    }
    outermost.clear();
    func.walk([&](scf::ParallelOp op) {
      if (!op->getParentOfType<scf::ParallelOp>() &&
          !op->getParentOfType<gpu::LaunchOp>())
        outermost.push_back(op);
    });
    for (scf::ParallelOp loop : outermost) {
      if (loop.getNumLoops() != 1) {
        loop.emitOpError("cannot flatten this parallel loop for the CUDA "
                         "target");
        return signalPassFailure();
      }
      int64_t size = blockSize;
      if (auto asked = loop->getAttrOfType<IntegerAttr>(kBlockSizeAttrName)) {
        size = std::min<int64_t>(size, asked.getInt());
        loop->removeAttr(kBlockSizeAttrName);
      }
      auto [blocks, threads] =
          scf::tileParallelLoop(loop, {size}, /*noMinMaxBounds=*/true);
      // Everything nested inside a thread runs sequentially: nested parallel
      // loops become scf.for nests (innermost first). Marking them
      // `sequential` instead is not enough: convert-parallel-loops-to-gpu
      // takes a sequential parallel loop only directly in the mapped body,
      // and silently leaves the whole nest on the host when one sits under
      // an scf.for (the reduction loop of a [parallel, reduction, parallel]
      // generic).
      SmallVector<scf::ParallelOp> nested;
      threads.walk([&](scf::ParallelOp op) {
        if (op != threads)
          nested.push_back(op);
      });
      for (scf::ParallelOp op : nested) {
        if (failed(parallelToFor(rewriter, op))) {
          op.emitOpError("cannot run this nested parallel loop sequentially "
                         "inside a GPU thread");
          return signalPassFailure();
        }
      }
      if (failed(
              gpu::setMappingAttr(blocks, {mapping(gpu::Processor::BlockX)})) ||
          failed(gpu::setMappingAttr(threads,
                                     {mapping(gpu::Processor::ThreadX)}))) {
        blocks.emitOpError("cannot map this parallel loop to the GPU");
        return signalPassFailure();
      }
      // A launch of zero blocks is a CUDA error: a size that is not known
      // to be positive (an uneven shard may be empty on some ranks) gets a
      // guard around the kernel.
      std::optional<int64_t> lower =
          getConstantIntValue(blocks.getLowerBound()[0]);
      std::optional<int64_t> upper =
          getConstantIntValue(blocks.getUpperBound()[0]);
      if (!lower || !upper || *upper <= *lower) {
        rewriter.setInsertionPoint(blocks);
        Value nonEmpty = arith::CmpIOp::create(
            rewriter, blocks.getLoc(), arith::CmpIPredicate::sgt,
            blocks.getUpperBound()[0], blocks.getLowerBound()[0]);
        auto guard = scf::IfOp::create(rewriter, blocks.getLoc(), nonEmpty,
                                       /*withElseRegion=*/false);
        rewriter.moveOpBefore(blocks, guard.thenBlock()->getTerminator());
      }
    }

    // 3. Host code must not touch device memory.
    WalkResult host = func.walk([&](Operation *op) {
      if (!isa<memref::LoadOp, memref::StoreOp>(op))
        return WalkResult::advance();
      if (op->getParentOfType<scf::ParallelOp>() ||
          op->getParentOfType<gpu::LaunchOp>())
        return WalkResult::advance();
      op->emitOpError("cannot lower this host access to a buffer for the "
                      "CUDA target: every buffer is device memory (a scalar "
                      "read of a tensor, e.g. tensor.extract outside a "
                      "linalg op?)");
      return WalkResult::interrupt();
    });
    if (host.wasInterrupted())
      return signalPassFailure();
  }
};

} // namespace
