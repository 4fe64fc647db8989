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
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDAMAPTOGPUPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// How a vectorized op reads a buffer operand, by its indexing map over the
/// (flattened) loop space: all of it (identity map: a vector at the flat
/// index), its trailing loop dims (a bias: a vector at flat % divisor), or
/// its leading loop dims (a per-row value: one scalar at flat / divisor,
/// broadcast). `divisor` is the product of the loop sizes the operand does
/// not see at the front (trailing) or at the back (leading).
struct Access {
  enum Kind { Full, Trailing, Leading } kind = Full;
  int64_t divisor = 1;
};

static std::optional<Access> classify(AffineMap map,
                                      ArrayRef<int64_t> loops) {
  unsigned n = map.getNumDims(), r = map.getNumResults();
  if (map.isIdentity())
    return Access{Access::Full, 1};
  if (map.getNumSymbols() || r >= n)
    return std::nullopt;
  auto isDims = [&](unsigned first) {
    for (unsigned i = 0; i < r; ++i) {
      auto d = dyn_cast<AffineDimExpr>(map.getResult(i));
      if (!d || d.getPosition() != first + i)
        return false;
    }
    return true;
  };
  auto product = [&](unsigned from, unsigned to) {
    int64_t p = 1;
    for (unsigned i = from; i < to; ++i)
      p *= loops[i];
    return p;
  };
  if (r > 0 && isDims(n - r))
    return Access{Access::Trailing, product(n - r, n)};
  if (isDims(0))
    return Access{Access::Leading, product(r, n)};
  return std::nullopt;
}

/// Lanes per thread such that the widest element type moves `vectorBytes`
/// per access, if `op` is an elementwise op that can use vector accesses:
/// all loops parallel and static, every buffer of identity layout (so its
/// base is the start of an allocation, which is 16-byte aligned) read as
/// `classify` allows with the chunks of `lanes` elements never crossing a
/// row of a trailing or leading operand, the outputs written whole, scalar
/// operands otherwise, a body of elementwise-mappable ops and constants, and
/// a total size divisible by the lane count.
static std::optional<int64_t> vectorLanes(linalg::LinalgOp op,
                                          int64_t vectorBytes) {
  if (vectorBytes <= 0 || op.getNumLoops() == 0 ||
      op.getNumLoops() != op.getNumParallelLoops() || op.getNumDpsInits() < 1)
    return std::nullopt;
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  if (llvm::any_of(loops, ShapedType::isDynamic))
    return std::nullopt;
  int64_t widest = 0;
  SmallVector<int64_t> divisors;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type) {
      if (op.isDpsInit(&operand) ||
          !operand.get().getType().isIntOrIndexOrFloat())
        return std::nullopt;
      continue;
    }
    std::optional<Access> access =
        classify(op.getMatchingIndexingMap(&operand), loops);
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() || !access ||
        (op.isDpsInit(&operand) && access->kind != Access::Full))
      return std::nullopt;
    Type element = type.getElementType();
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8)
      return std::nullopt;
    if (access->kind == Access::Leading)
      continue; // scalar loads
    divisors.push_back(access->divisor);
    widest = std::max<int64_t>(widest, element.getIntOrFloatBitWidth() / 8);
  }
  for (OpOperand &operand : op->getOpOperands())
    if (isa<MemRefType>(operand.get().getType()))
      if (classify(op.getMatchingIndexingMap(&operand), loops)->kind ==
          Access::Leading)
        divisors.push_back(
            classify(op.getMatchingIndexingMap(&operand), loops)->divisor);
  if (widest == 0 || vectorBytes % widest)
    return std::nullopt;
  int64_t lanes = vectorBytes / widest;
  int64_t total = 1;
  for (int64_t size : loops)
    total *= size;
  if (lanes < 2 || total % lanes ||
      llvm::any_of(divisors, [&](int64_t d) { return d > 1 && d % lanes; }))
    return std::nullopt;
  for (Operation &nested : op.getBlock()->without_terminator())
    if (nested.getNumRegions() ||
        (nested.getNumOperands() && !OpTrait::hasElementwiseMappableTraits(
                                        &nested)) ||
        (!nested.getNumOperands() && !nested.hasTrait<OpTrait::ConstantLike>()))
      return std::nullopt;
  return lanes;
}

/// `op` as a parallel loop over chunks of `lanes` elements of its loop
/// space, buffers viewed as 1-D: vector.load / vector.store aligned to the
/// access size, the body applied to vectors.
static void vectorize(IRRewriter &rewriter, linalg::LinalgOp op,
                      int64_t lanes) {
  Location loc = op.getLoc();
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  rewriter.setInsertionPoint(op);
  SmallVector<Value> flat;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type || type.getRank() <= 1) {
      flat.push_back(operand.get());
      continue;
    }
    ReassociationIndices all;
    for (int64_t d = 0; d < type.getRank(); ++d)
      all.push_back(d);
    flat.push_back(memref::CollapseShapeOp::create(rewriter, loc,
                                                   operand.get(), {all}));
  }
  int64_t total = 1;
  for (int64_t size : loops)
    total *= size;
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value count = arith::ConstantIndexOp::create(rewriter, loc, total / lanes);
  auto loop = scf::ParallelOp::create(rewriter, loc, zero, count, one);
  rewriter.setInsertionPoint(loop.getBody()->getTerminator());
  Value index = arith::MulIOp::create(
      rewriter, loc, loop.getInductionVars()[0],
      arith::ConstantIndexOp::create(rewriter, loc, lanes));
  auto vectorOf = [&](Type scalar) { return VectorType::get({lanes}, scalar); };
  auto alignment = [&](Type scalar) {
    return rewriter.getI64IntegerAttr(lanes *
                                      (scalar.getIntOrFloatBitWidth() / 8));
  };
  IRMapping mapping;
  auto broadcast = [&](Value scalar) -> Value {
    return vector::BroadcastOp::create(rewriter, loc,
                                       vectorOf(scalar.getType()), scalar);
  };
  Block *body = op.getBlock();
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = body->getArgument(operand.getOperandNumber());
    Value buffer = flat[operand.getOperandNumber()];
    if (!isa<MemRefType>(buffer.getType())) {
      mapping.map(arg, broadcast(buffer));
      continue;
    }
    if (op.isDpsInit(&operand) && !op.payloadUsesValueFromOperand(&operand))
      continue;
    Type scalar = arg.getType();
    Access access = *classify(op.getMatchingIndexingMap(&operand), loops);
    Value divisor =
        arith::ConstantIndexOp::create(rewriter, loc, access.divisor);
    if (access.kind == Access::Leading) {
      SmallVector<Value> at;
      if (cast<MemRefType>(buffer.getType()).getRank() == 1)
        at.push_back(arith::DivUIOp::create(rewriter, loc, index, divisor));
      mapping.map(arg, broadcast(memref::LoadOp::create(rewriter, loc,
                                                        buffer, at)));
      continue;
    }
    Value at = access.kind == Access::Full
                   ? index
                   : arith::RemUIOp::create(rewriter, loc, index, divisor)
                         .getResult();
    mapping.map(arg, vector::LoadOp::create(rewriter, loc, vectorOf(scalar),
                                            buffer, ValueRange{at},
                                            /*nontemporal=*/false,
                                            alignment(scalar)));
  }
  auto lookup = [&](Value value) -> Value {
    Value mapped = mapping.lookupOrNull(value);
    if (mapped && isa<VectorType>(mapped.getType()))
      return mapped;
    return broadcast(mapped ? mapped : value);
  };
  for (Operation &nested : body->without_terminator()) {
    if (!nested.getNumOperands()) {
      rewriter.clone(nested, mapping); // a scalar constant
      continue;
    }
    OperationState state(nested.getLoc(), nested.getName());
    for (Value operand : nested.getOperands())
      state.addOperands(lookup(operand));
    for (Type type : nested.getResultTypes())
      state.addTypes(vectorOf(type));
    state.addAttributes(llvm::to_vector(nested.getDiscardableAttrs()));
    if (Attribute props = nested.getPropertiesAsAttribute())
      state.propertiesAttr = props;
    Operation *vectorOp = rewriter.create(state);
    mapping.map(nested.getResults(), vectorOp->getResults());
  }
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    Value buffer = flat[op.getNumDpsInputs() + i];
    Value vector = lookup(value);
    vector::StoreOp::create(
        rewriter, loc, vector, buffer, ValueRange{index},
        /*nontemporal=*/false,
        alignment(cast<VectorType>(vector.getType()).getElementType()));
  }
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
      if (std::optional<int64_t> lanes = vectorLanes(op, vectorBytes)) {
        vectorize(rewriter, op, *lanes);
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
