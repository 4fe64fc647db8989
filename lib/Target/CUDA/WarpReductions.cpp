//===- WarpReductions.cpp - row reductions on a warp ----------------------===//
//
// A reduction a warp can compute takes one warp per row: lanes fold strided
// chunks of the row, combine with shuffles, and lane 0 writes the row's
// result. The elementwise op that consumes the rows right after it (an
// RMSNorm's scaling, a softmax's division) runs in the same kernel, with
// the row kept in registers when it fits: one pass over memory instead of
// two.
//
//===----------------------------------------------------------------------===//

#include "MapToGPU.h"

#include "dtensor/Conversion/DTensorToRuntime/Buffers.h"
#include "dtensor/Dialect/DTensor/DTensorAttrNames.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using namespace mlir::dtensor;
using namespace mlir::dtensor::cuda;

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

Operation *cuda::warpReducible(linalg::LinalgOp op, int64_t blockSize) {
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
  // Lanes take consecutive steps of the innermost reduced loop: an input
  // read along it must have it as its last, unit-stride index, or every
  // lane of a load touches its own line (a column sum with its parallel
  // loop moved outside reads down a column: a thread per output, with
  // neighbouring threads on neighbouring columns, reads it coalesced).
  unsigned last = op.getNumLoops() - 1;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<MemRefType>(input->get().getType());
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!type || !map.isFunctionOfDim(last))
      continue;
    auto lastIndex = dyn_cast<AffineDimExpr>(map.getResults().back());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!lastIndex || lastIndex.getPosition() != last ||
        (succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() != 1))
      return nullptr;
  }
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

int64_t cuda::reductionLanes(linalg::LinalgOp op, int64_t vectorBytes) {
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

linalg::LinalgOp cuda::rowConsumer(linalg::LinalgOp op, int64_t vectorBytes,
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
        classifyAccess(consumer.getMatchingIndexingMap(input), loops);
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
          classifyAccess(consumer.getMatchingIndexingMap(input), loops)->kind !=
              Access::Full)
        return nullptr;
  }
  lanes = *chunk;
  return consumer;
}

void cuda::warpReduce(IRRewriter &rewriter, linalg::LinalgOp op,
                      Operation *combiner, int64_t lanes, Value start,
                      linalg::LinalgOp consumer, int64_t consumerLanes) {
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
  // `op` goes last: the consumer's chunks look up its inputs.
  if (!consumer) {
    rewriter.eraseOp(op);
    return;
  }
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
  rewriter.eraseOp(op);
}
