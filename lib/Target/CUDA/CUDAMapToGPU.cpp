//===- CUDAMapToGPU.cpp - linalg on device buffers to mapped loops --------===//
//
// Each linalg op left after the matmul rewrite is one kernel: its loop nest
// becomes one flat parallel loop, tiled by the block size and mapped to a
// 1-D grid of blocks x threads. Flattening first keeps every block full
// whatever the shape (mapping a 2-D nest directly gives a block per row and
// idle threads when rows are short); one thread per element or per output
// row of a reduction.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDAMAPTOGPUPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

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

    // 1. linalg -> parallel loops; ops without a parallel dimension get a
    //    one-iteration parallel loop around them so that they run on the
    //    device too.
    SmallVector<linalg::LinalgOp> linalgOps;
    func.walk([&](linalg::LinalgOp op) { linalgOps.push_back(op); });
    for (linalg::LinalgOp op : linalgOps) {
      if (!op.hasPureBufferSemantics()) {
        op->emitOpError("cannot map this op to GPU loops: it is not on "
                      "buffers (bufferize first)");
        return signalPassFailure();
      }
      if (op->getParentOfType<scf::ParallelOp>())
        continue; // lowered with its enclosing kernel below
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
      return gpu::ParallelLoopDimMappingAttr::get(
          ctx, processor, rewriter.getDimIdentityMap(),
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
      auto [blocks, threads] =
          scf::tileParallelLoop(loop, {blockSize}, /*noMinMaxBounds=*/true);
      // Everything nested inside a thread runs sequentially.
      threads.walk([&](scf::ParallelOp nested) {
        if (nested == threads)
          return;
        SmallVector<gpu::ParallelLoopDimMappingAttr> seq(
            nested.getNumLoops(), mapping(gpu::Processor::Sequential));
        (void)gpu::setMappingAttr(nested, seq);
      });
      if (failed(gpu::setMappingAttr(blocks,
                                     {mapping(gpu::Processor::BlockX)})) ||
          failed(gpu::setMappingAttr(threads,
                                     {mapping(gpu::Processor::ThreadX)}))) {
        loop.emitOpError("cannot map this parallel loop to the GPU");
        return signalPassFailure();
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
