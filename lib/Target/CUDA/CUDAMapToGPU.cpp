//===- CUDAMapToGPU.cpp - linalg on device buffers to mapped loops --------===//
//
// Each linalg op left after the matmul rewrite is one kernel: its loop nest
// becomes one flat parallel loop, tiled by the block size and mapped to a
// 1-D grid of blocks x threads. Flattening first keeps every block full
// whatever the shape (mapping a 2-D nest directly gives a block per row and
// idle threads when rows are short); one thread per element or per output
// row of a reduction. A reduction a warp can compute takes one warp per
// row, and the elementwise op that consumes its rows right after it (an
// RMSNorm's scaling, a softmax's division) runs in the same kernel: one
// pass over memory instead of two.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "dtensor/Conversion/DTensorToRuntime/Buffers.h"
#include "dtensor/Dialect/DTensor/DTensorAttrNames.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>
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

static std::optional<Access> classify(AffineMap map, ArrayRef<int64_t> loops) {
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
  bool indexed = false;
  for (Operation &nested : op.getBlock()->without_terminator()) {
    indexed |= isa<linalg::IndexOp>(nested);
    if (nested.getNumRegions() ||
        (nested.getNumOperands() &&
         !OpTrait::hasElementwiseMappableTraits(&nested)) ||
        (!nested.getNumOperands() &&
         !nested.hasTrait<OpTrait::ConstantLike>() &&
         !isa<linalg::IndexOp>(nested)))
      return std::nullopt;
  }
  // linalg.index: a chunk must not cross the innermost loop, so that every
  // outer index is the same for its lanes and the innermost one is the
  // chunk's start + (0, 1, ...).
  if (indexed && loops.back() % lanes)
    return std::nullopt;
  return lanes;
}

/// `op`'s buffer operands viewed as 1-D (collapse_shape before the
/// insertion point), its scalar operands as they are.
static SmallVector<Value> flatOperands(IRRewriter &rewriter,
                                       linalg::LinalgOp op) {
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
    flat.push_back(memref::CollapseShapeOp::create(rewriter, op.getLoc(),
                                                   operand.get(), {all}));
  }
  return flat;
}

/// `bf16s` (a vector of bf16) as f32, exactly extf's values, by bits:
/// bitcast to i16, zero-extend to i32, shift left by 16, bitcast to f32.
static Value widenBF16Bits(IRRewriter &rewriter, Location loc, Value bf16s) {
  auto type = cast<VectorType>(bf16s.getType());
  auto ints = [&](unsigned width) {
    return type.clone(rewriter.getIntegerType(width));
  };
  Value bits = vector::BitCastOp::create(rewriter, loc, ints(16), bf16s);
  Value wide = arith::ExtUIOp::create(rewriter, loc, ints(32), bits);
  Value sixteen = arith::ConstantOp::create(
      rewriter, loc,
      DenseElementsAttr::get(ints(32),
                             rewriter.getI32IntegerAttr(16).getValue()));
  Value shifted = arith::ShLIOp::create(rewriter, loc, wide, sixteen);
  return vector::BitCastOp::create(rewriter, loc,
                                   type.clone(rewriter.getF32Type()), shifted);
}

/// The chunk of `lanes` elements of `op`'s loop space that starts at flat
/// index `index`, at the insertion point: vector.load / vector.store of the
/// 1-D views `flat` (flatOperands) aligned to the access size, the body
/// applied to vectors. `given` may supply an input operand's value (a
/// scalar, broadcast to the chunk, or the chunk's vector) instead of a
/// load.
static void emitVectorChunk(IRRewriter &rewriter, linalg::LinalgOp op,
                            int64_t lanes, ArrayRef<Value> flat, Value index,
                            function_ref<Value(OpOperand &)> given = nullptr) {
  Location loc = op.getLoc();
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
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
  // Body arguments given as vectors held in registers (a resident row).
  llvm::SmallPtrSet<Value, 4> givenVectors;
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = body->getArgument(operand.getOperandNumber());
    Value buffer = flat[operand.getOperandNumber()];
    if (Value value = given ? given(operand) : Value()) {
      if (isa<VectorType>(value.getType()))
        givenVectors.insert(arg);
      mapping.map(arg,
                  isa<VectorType>(value.getType()) ? value : broadcast(value));
      continue;
    }
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
      mapping.map(arg,
                  broadcast(memref::LoadOp::create(rewriter, loc, buffer, at)));
      continue;
    }
    Value at =
        access.kind == Access::Full
            ? index
            : arith::RemUIOp::create(rewriter, loc, index, divisor).getResult();
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
  // The loop indices of the chunk (linalg.index), when the body asks.
  SmallVector<Value> indices;
  if (llvm::any_of(body->getOperations(),
                   [](Operation &o) { return isa<linalg::IndexOp>(o); })) {
    Value linear = index;
    for (int64_t size : llvm::reverse(loops)) {
      Value c = arith::ConstantIndexOp::create(rewriter, loc, size);
      indices.push_back(arith::RemUIOp::create(rewriter, loc, linear, c));
      linear = arith::DivUIOp::create(rewriter, loc, linear, c);
    }
    std::reverse(indices.begin(), indices.end());
    for (Value &i : indices)
      i = broadcast(i);
    SmallVector<Attribute> steps;
    for (int64_t l = 0; l < lanes; ++l)
      steps.push_back(rewriter.getIndexAttr(l));
    Value step = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(vectorOf(rewriter.getIndexType()), steps));
    indices.back() = arith::AddIOp::create(rewriter, loc, indices.back(), step);
  }
  for (Operation &nested : body->without_terminator()) {
    if (auto indexOp = dyn_cast<linalg::IndexOp>(nested)) {
      mapping.map(indexOp.getResult(), indices[indexOp.getDim()]);
      continue;
    }
    if (!nested.getNumOperands()) {
      rewriter.clone(nested, mapping); // a scalar constant
      continue;
    }
    // A given bf16 vector widened to f32 by its bits (bf16 is the high
    // half of an f32): the reduction that loaded it widened the same
    // elements with extf, and an identical extf here would be merged with
    // those, keeping the row in registers as f32 (twice the registers of
    // the bf16 row: 197 a thread for a 4096-wide RMSNorm, few warps per SM).
    if (auto ext = dyn_cast<arith::ExtFOp>(nested);
        ext && givenVectors.contains(ext.getIn()) &&
        ext.getIn().getType().isBF16() && ext.getType().isF32()) {
      mapping.map(ext.getResult(),
                  widenBF16Bits(rewriter, loc, mapping.lookup(ext.getIn())));
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
}

/// `op` as a parallel loop over chunks of `lanes` elements of its loop
/// space (emitVectorChunk).
static void vectorize(IRRewriter &rewriter, linalg::LinalgOp op,
                      int64_t lanes) {
  Location loc = op.getLoc();
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  rewriter.setInsertionPoint(op);
  SmallVector<Value> flat = flatOperands(rewriter, op);
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
  emitVectorChunk(rewriter, op, lanes, flat, index);
  rewriter.eraseOp(op);
}

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

/// The lanes of a warp: a row reduction is spread over one warp.
constexpr int64_t kWarp = 32;
/// The most chunks per lane a fused row reduction keeps in registers for
/// its consumer (16 for a 4096-wide bf16 row in 16-byte chunks).
constexpr int64_t kMaxResidentChunks = 16;
/// Threads per block of a kernel that keeps rows in registers: such a
/// kernel needs many registers a thread (about 200 for a 4096-wide bf16
/// RMSNorm), so blocks of 256 threads run one at a time per SM, each
/// loading, then reducing, then writing; small blocks let several run and
/// overlap one's loads with another's stores.
constexpr int64_t kResidentBlockSize = 64;

/// The value `kind` starts a reduction from, if `combiner` is an arith op
/// this lowering knows the identity of.
static std::optional<TypedAttr> identityOf(Operation *combiner) {
  Type type = combiner->getResult(0).getType();
  auto floatType = dyn_cast<FloatType>(type);
  auto intType = dyn_cast<IntegerType>(type);
  auto real = [&](double value) -> std::optional<TypedAttr> {
    if (!floatType)
      return std::nullopt;
    return TypedAttr(FloatAttr::get(floatType, value));
  };
  auto integer = [&](APInt value) -> std::optional<TypedAttr> {
    if (!intType)
      return std::nullopt;
    return TypedAttr(IntegerAttr::get(intType, value));
  };
  unsigned width = type.getIntOrFloatBitWidth();
  double inf = std::numeric_limits<double>::infinity();
  return llvm::TypeSwitch<Operation *, std::optional<TypedAttr>>(combiner)
      .Case<arith::AddFOp>([&](auto) { return real(0.0); })
      .Case<arith::MulFOp>([&](auto) { return real(1.0); })
      .Case<arith::MaximumFOp, arith::MaxNumFOp>(
          [&](auto) { return real(-inf); })
      .Case<arith::MinimumFOp, arith::MinNumFOp>(
          [&](auto) { return real(inf); })
      .Case<arith::AddIOp, arith::OrIOp, arith::XOrIOp>(
          [&](auto) { return integer(APInt::getZero(width)); })
      .Case<arith::MulIOp>([&](auto) { return integer(APInt(width, 1)); })
      .Case<arith::AndIOp>(
          [&](auto) { return integer(APInt::getAllOnes(width)); })
      .Case<arith::MaxSIOp>(
          [&](auto) { return integer(APInt::getSignedMinValue(width)); })
      .Case<arith::MinSIOp>(
          [&](auto) { return integer(APInt::getSignedMaxValue(width)); })
      .Default([](Operation *) { return std::nullopt; });
}

/// The combiner of a row reduction that one warp can compute, if `op` is
/// one: a single output on buffers indexed by the leading (parallel) loops
/// in order, all reduction loops trailing, static sizes with at least a
/// warp's worth of elements per row, and a body `yield combiner(acc, f(ins))`
/// whose accumulator (32 bits, a shuffle's width) is used by the combiner
/// only, the combiner an associative and commutative arith op.
static Operation *warpReducible(linalg::LinalgOp op, int64_t blockSize) {
  if (blockSize % kWarp || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() == 0 || !op.hasPureBufferSemantics())
    return nullptr;
  unsigned parallel = op.getNumParallelLoops();
  for (auto [i, type] : llvm::enumerate(op.getIteratorTypesArray()))
    if ((i < parallel) != (type == utils::IteratorType::parallel))
      return nullptr;
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  if (llvm::any_of(loops, ShapedType::isDynamic))
    return nullptr;
  int64_t reduced = 1;
  for (int64_t size : ArrayRef(loops).drop_front(parallel))
    reduced *= size;
  if (reduced < 2 * kWarp)
    return nullptr;
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap initMap = op.getMatchingIndexingMap(init);
  if (!isa<MemRefType>(init->get().getType()) ||
      initMap.getNumResults() != parallel)
    return nullptr;
  for (unsigned i = 0; i < parallel; ++i)
    if (initMap.getResult(i) != getAffineDimExpr(i, op.getContext()))
      return nullptr;
  Block *body = op.getBlock();
  BlockArgument acc = body->getArgument(init->getOperandNumber());
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  if (yield.getNumOperands() != 1 || !acc.hasOneUse())
    return nullptr;
  Operation *combiner = yield.getOperand(0).getDefiningOp();
  if (!combiner || combiner->getBlock() != body ||
      combiner->getNumOperands() != 2 || combiner->getNumResults() != 1 ||
      *acc.getUsers().begin() != combiner ||
      combiner->getResult(0).getType() != acc.getType() ||
      !acc.getType().isIntOrFloat() ||
      acc.getType().getIntOrFloatBitWidth() != 32 || !identityOf(combiner))
    return nullptr;
  for (Operation &nested : body->without_terminator())
    if (nested.getNumRegions())
      return nullptr;
  return combiner;
}

/// How many consecutive elements a lane of a warp reduction loads at once
/// (`vectorBytes` of the widest input), or 1: every buffer input either
/// reads along the innermost loop (its last index exactly that loop, no
/// other index using it; identity layout and static shape, so a chunk is
/// aligned) or does not see it (one scalar for the chunk), and the
/// innermost loop is a multiple of the chunk.
static int64_t reductionLanes(linalg::LinalgOp op, int64_t vectorBytes) {
  if (vectorBytes <= 0)
    return 1;
  unsigned last = op.getNumLoops() - 1;
  int64_t widest = 0;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isFunctionOfDim(last))
      continue;
    auto lastIndex = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (!lastIndex || lastIndex.getPosition() != last ||
        llvm::any_of(map.getResults().drop_back(),
                     [&](AffineExpr e) { return e.isFunctionOfDim(last); }) ||
        !type.hasStaticShape() || !type.getLayout().isIdentity() ||
        !type.getElementType().isIntOrFloat() ||
        type.getElementType().getIntOrFloatBitWidth() % 8)
      return 1;
    widest = std::max<int64_t>(
        widest, type.getElementType().getIntOrFloatBitWidth() / 8);
  }
  if (widest == 0 || vectorBytes % widest)
    return 1;
  int64_t lanes = vectorBytes / widest;
  if (lanes < 2 || op.getStaticLoopRanges()[last] % lanes)
    return 1;
  return lanes;
}

/// The elementwise op that can run in `op`'s kernel, each warp applying it
/// to its row right after reducing the row (RMSNorm's scaling after its sum
/// of squares): the next op after `op` that touches memory (only
/// allocations, views and constants in between), parallel over exactly
/// `op`'s loops (the rows, then `op`'s one reduced dim), vectorizable
/// (`lanes` elements per chunk, a chunk within a row), reading `op`'s result
/// by row (taken from registers) and writing no buffer that a warp of
/// another row reads: its outputs are not `op`'s result nor any buffer
/// either op reads other than element by element.
static linalg::LinalgOp rowConsumer(linalg::LinalgOp op, int64_t vectorBytes,
                                    int64_t &lanes) {
  if (op.getNumReductionLoops() != 1)
    return nullptr;
  Operation *next = op->getNextNode();
  while (next && (isa<gpu::AllocOp, memref::CastOp>(next) ||
                  isa<ViewLikeOpInterface>(next) ||
                  next->hasTrait<OpTrait::ConstantLike>()))
    next = next->getNextNode();
  auto consumer = dyn_cast_or_null<linalg::LinalgOp>(next);
  if (!consumer || !consumer.hasPureBufferSemantics() ||
      consumer.getNumLoops() != op.getNumLoops() ||
      consumer.getNumParallelLoops() != consumer.getNumLoops())
    return nullptr;
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  if (consumer.getStaticLoopRanges() != loops)
    return nullptr;
  std::optional<int64_t> chunk = vectorLanes(consumer, vectorBytes);
  if (!chunk || loops.back() % *chunk)
    return nullptr;
  Value result = op.getDpsInitOperand(0)->get();
  Value resultRoot = getRootBuffer(result);
  bool readsResult = false;
  for (OpOperand *input : consumer.getDpsInputOperands()) {
    if (getRootBuffer(input->get()) != resultRoot)
      continue;
    std::optional<Access> access =
        classify(consumer.getMatchingIndexingMap(input), loops);
    if (input->get() != result || !access || access->kind != Access::Leading ||
        access->divisor != loops.back())
      return nullptr;
    readsResult = true;
  }
  if (!readsResult)
    return nullptr;
  for (OpOperand &output : consumer.getDpsInitsMutable()) {
    Value root = getRootBuffer(output.get());
    if (root == resultRoot)
      return nullptr;
    for (OpOperand *input : op.getDpsInputOperands())
      if (getRootBuffer(input->get()) == root &&
          !op.getMatchingIndexingMap(input).isIdentity())
        return nullptr;
    for (OpOperand *input : consumer.getDpsInputOperands())
      if (getRootBuffer(input->get()) == root &&
          classify(consumer.getMatchingIndexingMap(input), loops)->kind !=
              Access::Full)
        return nullptr;
  }
  lanes = *chunk;
  return consumer;
}

/// `op` as a flat parallel loop over rows x 32 lanes: lane l of a row folds
/// the row's elements l, l + 32, ... (consecutive lanes read consecutive
/// elements: coalesced), the warp combines its lanes with shuffles, and
/// lane 0 folds the result into the output element (into `start` instead of
/// the element's old value when given: a folded fill). Rows never straddle a
/// warp (blocks are whole warps), so every shuffle sees its 32 lanes.
static void warpReduce(IRRewriter &rewriter, linalg::LinalgOp op,
                       Operation *combiner, int64_t lanes, Value start,
                       linalg::LinalgOp consumer = nullptr,
                       int64_t consumerLanes = 0) {
  Location loc = op.getLoc();
  // With a consumer, the kernel takes the consumer's place: its output
  // buffers may be allocated after `op` (nothing in between touches
  // memory, rowConsumer).
  rewriter.setInsertionPoint(consumer ? consumer.getOperation()
                                      : op.getOperation());
  SmallVector<Value> consumerFlat;
  if (consumer)
    consumerFlat = flatOperands(rewriter, consumer);
  SmallVector<int64_t> loops = op.getStaticLoopRanges();
  unsigned parallel = op.getNumParallelLoops();
  int64_t rows = 1, reduced = 1;
  for (auto [i, size] : llvm::enumerate(loops))
    (i < parallel ? rows : reduced) *= size;
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  // Splits `linear` into indices over `sizes` (row-major).
  auto delinearize = [&](Value linear, ArrayRef<int64_t> sizes,
                         SmallVectorImpl<Value> &out) {
    SmallVector<Value> reversed;
    for (int64_t size : llvm::reverse(sizes)) {
      Value c = constant(size);
      reversed.push_back(arith::RemUIOp::create(rewriter, loc, linear, c));
      linear = arith::DivUIOp::create(rewriter, loc, linear, c);
    }
    out.append(reversed.rbegin(), reversed.rend());
  };
  Value zero = constant(0), one = constant(1), warp = constant(kWarp);
  auto loop =
      scf::ParallelOp::create(rewriter, loc, zero, constant(rows * kWarp), one);
  rewriter.setInsertionPoint(loop.getBody()->getTerminator());
  Value flat = loop.getInductionVars()[0];
  Value row = arith::DivUIOp::create(rewriter, loc, flat, warp);
  Value lane = arith::RemUIOp::create(rewriter, loc, flat, warp);
  SmallVector<Value> rowIndices;
  delinearize(row, ArrayRef(loops).take_front(parallel), rowIndices);
  Value identity =
      arith::ConstantOp::create(rewriter, loc, *identityOf(combiner));
  unsigned last = op.getNumLoops() - 1;
  Block *body = op.getBlock();
  // Folds the chunk of `lanes` elements at reduced index `start` into
  // `acc`, at the insertion point; `loaded` receives, per input operand
  // number, the vector of the chunk (inputs read along the innermost loop)
  // or its scalar.
  auto foldChunk = [&](Value start, Value acc,
                       SmallVector<Value> &loaded) -> Value {
    SmallVector<Value> indices(rowIndices);
    delinearize(start, ArrayRef(loops).drop_front(parallel), indices);
    loaded.assign(body->getNumArguments(), Value());
    for (OpOperand *input : op.getDpsInputOperands()) {
      unsigned number = input->getOperandNumber();
      auto type = dyn_cast<MemRefType>(input->get().getType());
      if (!type) {
        loaded[number] = input->get();
        continue;
      }
      AffineMap map = op.getMatchingIndexingMap(input);
      SmallVector<Value> at;
      for (unsigned r = 0; r < map.getNumResults(); ++r)
        at.push_back(affine::AffineApplyOp::create(
            rewriter, loc, map.getSubMap({r}), indices));
      if (lanes > 1 && map.isFunctionOfDim(last)) {
        Type element = type.getElementType();
        loaded[number] = vector::LoadOp::create(
            rewriter, loc, VectorType::get({lanes}, element), input->get(), at,
            /*nontemporal=*/false,
            rewriter.getI64IntegerAttr(lanes *
                                       (element.getIntOrFloatBitWidth() / 8)));
      } else {
        loaded[number] =
            memref::LoadOp::create(rewriter, loc, input->get(), at);
      }
    }
    // The body once per element of the chunk, in order.
    for (int64_t j = 0; j < lanes; ++j) {
      IRMapping mapping;
      for (OpOperand *input : op.getDpsInputOperands()) {
        unsigned number = input->getOperandNumber();
        Value value = loaded[number];
        if (isa<VectorType>(value.getType()))
          value = vector::ExtractOp::create(rewriter, loc, value,
                                            ArrayRef<int64_t>{j});
        mapping.map(body->getArgument(number), value);
      }
      mapping.map(
          body->getArgument(op.getDpsInitOperand(0)->getOperandNumber()), acc);
      for (Operation &nested : body->without_terminator()) {
        if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
          Value at = indices[index.getDim()];
          if (index.getDim() == last && j > 0)
            at = arith::AddIOp::create(rewriter, loc, at, constant(j));
          mapping.map(index.getResult(), at);
          continue;
        }
        rewriter.clone(nested, mapping);
      }
      acc = mapping.lookup(combiner->getResult(0));
    }
    return acc;
  };
  // Lane l folds chunks of `lanes` consecutive elements starting at
  // l * lanes, 32 * lanes apart. With a consumer over the same chunks and
  // few of them per lane, the chunks are unrolled and stay in registers
  // for the consumer: the row is read from memory once (re-reading it
  // misses the caches: a wave has every row of the tensor in flight).
  Value laneStart = arith::MulIOp::create(rewriter, loc, lane, constant(lanes));
  int64_t stride = kWarp * lanes;
  bool resident = consumer && lanes > 1 && consumerLanes == lanes &&
                  op.getNumReductionLoops() == 1 && reduced % stride == 0 &&
                  reduced / stride <= kMaxResidentChunks;
  SmallVector<SmallVector<Value>> kept;
  Value partial;
  if (resident) {
    loop->setAttr(kBlockSizeAttrName,
                  rewriter.getI64IntegerAttr(kResidentBlockSize));
    partial = identity;
    kept.resize(reduced / stride);
    for (int64_t k = 0; k < reduced / stride; ++k) {
      Value start =
          arith::AddIOp::create(rewriter, loc, laneStart, constant(k * stride));
      partial = foldChunk(start, partial, kept[k]);
    }
  } else {
    Value end = constant(reduced), step = constant(stride);
    auto fold = scf::ForOp::create(rewriter, loc, laneStart, end, step,
                                   ValueRange{identity});
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(fold.getBody());
    SmallVector<Value> loaded;
    Value acc =
        foldChunk(fold.getInductionVar(), fold.getRegionIterArgs()[0], loaded);
    scf::YieldOp::create(rewriter, loc, acc);
    partial = fold.getResult(0);
  }
  // Combines `a` and `b` with the combiner (commutative: order is free).
  auto combine = [&](Value a, Value b) -> Value {
    IRMapping m;
    m.map(combiner->getOperand(0), a);
    m.map(combiner->getOperand(1), b);
    return rewriter.clone(*combiner, m)->getResult(0);
  };
  Value out = op.getDpsInitOperand(0)->get();
  // With a consumer every lane needs the row's result: each loads the old
  // value before the shuffles (which lane 0's store follows).
  // With a start value (a fill folded into this kernel), nothing is loaded.
  Value old =
      start ? start
      : consumer
          ? memref::LoadOp::create(rewriter, loc, out, rowIndices).getResult()
          : Value();
  Value width = arith::ConstantIntOp::create(rewriter, loc, kWarp, 32);
  for (int64_t offset = kWarp / 2; offset > 0; offset /= 2) {
    Value other = gpu::ShuffleOp::create(
                      rewriter, loc, partial,
                      arith::ConstantIntOp::create(rewriter, loc, offset, 32),
                      width, gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    partial = combine(partial, other);
  }
  Value total = consumer ? combine(old, partial) : Value();
  Value first = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                      lane, zero);
  auto write =
      scf::IfOp::create(rewriter, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(write.thenBlock()->getTerminator());
    if (!old)
      old = memref::LoadOp::create(rewriter, loc, out, rowIndices);
    memref::StoreOp::create(rewriter, loc,
                            consumer ? total : combine(old, partial), out,
                            rowIndices);
  }
  rewriter.eraseOp(op);
  if (!consumer)
    return;
  // The consumer over the row: lane l takes chunks of `consumerLanes`
  // elements starting at l * consumerLanes, 32 chunks apart; reading a
  // reduction input element by element (the same buffer and map), a
  // resident chunk is taken from registers.
  int64_t cols = loops.back();
  Value rowStart = arith::MulIOp::create(rewriter, loc, row, constant(cols));
  auto given = [&](ArrayRef<Value> chunk) {
    return [&, chunk](OpOperand &operand) -> Value {
      if (!consumer.isDpsInput(&operand))
        return Value();
      if (operand.get() == out)
        return total;
      if (chunk.empty() ||
          !consumer.getMatchingIndexingMap(&operand).isIdentity())
        return Value();
      for (OpOperand *input : op.getDpsInputOperands())
        if (input->get() == operand.get() &&
            op.getMatchingIndexingMap(input).isIdentity() &&
            chunk[input->getOperandNumber()] &&
            isa<VectorType>(chunk[input->getOperandNumber()].getType()))
          return chunk[input->getOperandNumber()];
      return Value();
    };
  };
  if (resident) {
    for (auto [k, chunk] : llvm::enumerate(kept)) {
      Value index =
          arith::AddIOp::create(rewriter, loc, rowStart,
                                arith::AddIOp::create(rewriter, loc, laneStart,
                                                      constant(k * stride)));
      emitVectorChunk(rewriter, consumer, consumerLanes, consumerFlat, index,
                      given(chunk));
    }
  } else {
    auto apply = scf::ForOp::create(
        rewriter, loc,
        arith::MulIOp::create(rewriter, loc, lane, constant(consumerLanes)),
        constant(cols), constant(kWarp * consumerLanes));
    rewriter.setInsertionPoint(apply.getBody()->getTerminator());
    Value index =
        arith::AddIOp::create(rewriter, loc, rowStart, apply.getInductionVar());
    emitVectorChunk(rewriter, consumer, consumerLanes, consumerFlat, index,
                    given({}));
  }
  rewriter.eraseOp(consumer);
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
