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

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
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

/// Whether `op` is reduced by serialReduce: on buffers, parallel loops
/// (at least one) and reduction loops (at least one), in any order, every
/// output indexed by the parallel loops only (as a reduction's are) and no
/// view of an input (its values kept in registers until the end).
static bool serialReducible(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumParallelLoops() == 0 ||
      op.getNumReductionLoops() == 0 || !op.getBlock())
    return false;
  SmallVector<utils::IteratorType> types = op.getIteratorTypesArray();
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (!isa<MemRefType>(init.get().getType()))
      return false;
    AffineMap map = op.getMatchingIndexingMap(&init);
    for (auto [d, type] : llvm::enumerate(types))
      if (type != utils::IteratorType::parallel && map.isFunctionOfDim(d))
        return false;
    Value root = getRootBuffer(init.get());
    for (OpOperand *input : op.getDpsInputOperands())
      if (isa<MemRefType>(input->get().getType()) &&
          getRootBuffer(input->get()) == root)
        return false;
  }
  return true;
}

/// `op` (serialReducible) as a parallel loop over its parallel dims, each
/// iteration folding the reduction dims (in their order) in scf.for loops
/// with the outputs' values carried in registers (iter_args): loaded once
/// (or `start`, a fill's value folded in, for a single output) and stored
/// once. linalg's own loops would load and store the output at every step,
/// which the GPU cannot keep in a register (the output may alias an input
/// as far as LLVM knows): a read-modify-write of global memory per element
/// reduced.
static void serialReduce(RewriterBase &rewriter, linalg::LinalgOp op,
                         Value start) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  SmallVector<Range> ranges = op.createLoopRanges(rewriter, loc);
  SmallVector<unsigned> parallelDims, reductionDims;
  for (auto [d, type] : llvm::enumerate(op.getIteratorTypesArray()))
    (type == utils::IteratorType::parallel ? parallelDims : reductionDims)
        .push_back(d);
  auto bounds = [&](ArrayRef<unsigned> dims, SmallVector<Value> &lbs,
                    SmallVector<Value> &ubs, SmallVector<Value> &steps) {
    for (unsigned d : dims) {
      lbs.push_back(getValueOrCreateConstantIndexOp(rewriter, loc,
                                                    ranges[d].offset));
      ubs.push_back(
          getValueOrCreateConstantIndexOp(rewriter, loc, ranges[d].size));
      steps.push_back(
          getValueOrCreateConstantIndexOp(rewriter, loc, ranges[d].stride));
    }
  };
  SmallVector<Value> lbs, ubs, steps;
  bounds(parallelDims, lbs, ubs, steps);
  auto loop = scf::ParallelOp::create(rewriter, loc, lbs, ubs, steps);
  rewriter.setInsertionPoint(loop.getBody()->getTerminator());
  // The loop indices in the op's order; the reduction dims' set per step
  // (0 for the outputs, which never read them).
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  SmallVector<Value> at(op.getNumLoops(), zero);
  for (auto [d, iv] : llvm::zip(parallelDims, loop.getInductionVars()))
    at[d] = iv;
  // The element of `operand` at the loop indices `indices`.
  auto indicesOf = [&](OpBuilder &builder, OpOperand &operand,
                       ValueRange indices) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<Value> result;
    for (unsigned r = 0; r < map.getNumResults(); ++r)
      result.push_back(affine::AffineApplyOp::create(
          builder, loc, map.getSubMap({r}), indices));
    return result;
  };
  SmallVector<Value> inits;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (start) {
      inits.push_back(start);
      continue;
    }
    inits.push_back(memref::LoadOp::create(rewriter, loc, init.get(),
                                           indicesOf(rewriter, init, at)));
  }
  SmallVector<Value> rlbs, rubs, rsteps;
  bounds(reductionDims, rlbs, rubs, rsteps);
  Block *body = op.getBlock();
  scf::LoopNest nest = scf::buildLoopNest(
      rewriter, loc, rlbs, rubs, rsteps, inits,
      [&](OpBuilder &builder, Location, ValueRange reduced,
          ValueRange accs) -> scf::ValueVector {
        SmallVector<Value> all(at);
        for (auto [d, iv] : llvm::zip(reductionDims, reduced))
          all[d] = iv;
        IRMapping mapping;
        for (OpOperand *input : op.getDpsInputOperands()) {
          BlockArgument arg = body->getArgument(input->getOperandNumber());
          if (!isa<MemRefType>(input->get().getType())) {
            mapping.map(arg, input->get());
            continue;
          }
          mapping.map(arg,
                      memref::LoadOp::create(builder, loc, input->get(),
                                             indicesOf(builder, *input, all)));
        }
        for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
          mapping.map(body->getArgument(init.getOperandNumber()), accs[i]);
        for (Operation &nested : body->without_terminator()) {
          if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
            mapping.map(index.getResult(), all[index.getDim()]);
            continue;
          }
          builder.clone(nested, mapping);
        }
        return llvm::map_to_vector(
            body->getTerminator()->getOperands(),
            [&](Value v) { return mapping.lookupOrDefault(v); });
      });
  for (auto [init, result] :
       llvm::zip(op.getDpsInitsMutable(), nest.results))
    memref::StoreOp::create(rewriter, loc, result, init.get(),
                            indicesOf(rewriter, init, at));
  rewriter.eraseOp(op);
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
    //    Likewise for a reduction of one output that each thread folds
    //    alone (serialReduce).
    llvm::DenseMap<Operation *, Value> startValues;
    SmallVector<linalg::FillOp> folded;
    func.walk([&](linalg::LinalgOp op) {
      if (op->getParentOfType<scf::ParallelOp>() ||
          (!warpReducible(op, blockSize) &&
           !(serialReducible(op) && op.getNumDpsInits() == 1)))
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
      // A reduction each thread folds for its outputs, in registers.
      if (serialReducible(op)) {
        serialReduce(rewriter, op, startValues.lookup(op));
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
