//===- VectorizeElementwise.cpp - elementwise kernels on vectors ----------===//
//
// An elementwise linalg op on dense device buffers as a flat loop over
// chunks of `vector-bytes`, one chunk per thread: vector loads and stores
// (16 bytes: ld.global.v4.b32), the body applied to vectors, bias and
// per-row operands read by their indexing maps. The warp reductions reuse
// the chunk emission for the elementwise op fused after a reduction.
//
//===----------------------------------------------------------------------===//

#include "MapToGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::dtensor;
using namespace mlir::dtensor::cuda;

std::optional<Access> cuda::classifyAccess(AffineMap map,
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

std::optional<int64_t> cuda::vectorLanes(linalg::LinalgOp op,
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
        classifyAccess(op.getMatchingIndexingMap(&operand), loops);
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
      if (classifyAccess(op.getMatchingIndexingMap(&operand), loops)->kind ==
          Access::Leading)
        divisors.push_back(
            classifyAccess(op.getMatchingIndexingMap(&operand), loops)
                ->divisor);
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

SmallVector<Value> cuda::flatOperands(IRRewriter &rewriter,
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

void cuda::emitVectorChunk(IRRewriter &rewriter, linalg::LinalgOp op,
                           int64_t lanes, ArrayRef<Value> flat, Value index,
                           function_ref<Value(OpOperand &)> given) {
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
    Access access = *classifyAccess(op.getMatchingIndexingMap(&operand), loops);
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

void cuda::vectorizeElementwise(IRRewriter &rewriter, linalg::LinalgOp op,
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
