//===- PerRankBuilder.cpp - per-rank index arithmetic and slicing ---------===//
//
// The index arithmetic of this process's chunk of a dimension (torch.chunk
// semantics: chunks of ceil(L/n), the last ones shorter or empty) and the
// padding and slicing along one dimension that the partition pass builds.
//
// The OpFoldResult arithmetic is hand-written. Upstream's folded affine
// helpers (affine::makeComposedFoldedAffineApply and
// makeComposedFoldedAffineMin) give the same attributes where every operand
// is constant but build affine.apply and affine.min where one is not, which
// would change the per-rank program (test/Partitioning/Partition.mlir checks
// the arith.muli/minsi/addi/subi of uneven chunks); ArithBuilder
// (Arith/Utils) builds arith on Values but folds nothing and has no min or
// ceildiv.
//
//===----------------------------------------------------------------------===//

#include "Partitioning.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::dtensor;

LayoutAttr PerRankBuilder::layoutOf(Value global) {
  LayoutAttr layout = getLayoutOf(global);
  return layout ? layout : getReplicatedLayout(mesh);
}

RankedTensorType PerRankBuilder::localType(Value global) {
  return getLocalType(cast<RankedTensorType>(global.getType()),
                      layoutOf(global), mesh);
}

Value PerRankBuilder::coord(int64_t axis) {
  if (Value cached = coords.lookup(axis))
    return cached;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(entry);
  Value value = CoordOp::create(builder, coordLoc, mesh.getSymName(),
                                builder.getDenseI64ArrayAttr({axis}));
  coords[axis] = value;
  return value;
}

OpFoldResult PerRankBuilder::add(OpFoldResult a, OpFoldResult b) {
  std::optional<int64_t> ca = getConstantIntValue(a),
                         cb = getConstantIntValue(b);
  if (ca && cb)
    return constant(*ca + *cb);
  if (cb == 0)
    return a;
  if (ca == 0)
    return b;
  return arith::AddIOp::create(
             builder, currentLoc,
             getValueOrCreateConstantIndexOp(builder, currentLoc, a),
             getValueOrCreateConstantIndexOp(builder, currentLoc, b))
      .getResult();
}

OpFoldResult PerRankBuilder::sub(OpFoldResult a, OpFoldResult b) {
  std::optional<int64_t> ca = getConstantIntValue(a),
                         cb = getConstantIntValue(b);
  if (ca && cb)
    return constant(*ca - *cb);
  if (cb == 0)
    return a;
  return arith::SubIOp::create(
             builder, currentLoc,
             getValueOrCreateConstantIndexOp(builder, currentLoc, a),
             getValueOrCreateConstantIndexOp(builder, currentLoc, b))
      .getResult();
}

OpFoldResult PerRankBuilder::mul(OpFoldResult a, int64_t b) {
  if (std::optional<int64_t> ca = getConstantIntValue(a))
    return constant(*ca * b);
  if (b == 1)
    return a;
  return arith::MulIOp::create(
             builder, currentLoc,
             getValueOrCreateConstantIndexOp(builder, currentLoc, a),
             arith::ConstantIndexOp::create(builder, currentLoc, b))
      .getResult();
}

OpFoldResult PerRankBuilder::min(OpFoldResult a, OpFoldResult b) {
  std::optional<int64_t> ca = getConstantIntValue(a),
                         cb = getConstantIntValue(b);
  if (ca && cb)
    return constant(std::min(*ca, *cb));
  return arith::MinSIOp::create(
             builder, currentLoc,
             getValueOrCreateConstantIndexOp(builder, currentLoc, a),
             getValueOrCreateConstantIndexOp(builder, currentLoc, b))
      .getResult();
}

OpFoldResult PerRankBuilder::ceilDiv(OpFoldResult a, int64_t b) {
  if (std::optional<int64_t> ca = getConstantIntValue(a))
    return constant((*ca + b - 1) / b);
  return arith::CeilDivUIOp::create(
             builder, currentLoc,
             getValueOrCreateConstantIndexOp(builder, currentLoc, a),
             arith::ConstantIndexOp::create(builder, currentLoc, b))
      .getResult();
}

std::pair<OpFoldResult, OpFoldResult> PerRankBuilder::chunk(OpFoldResult length,
                                                            int64_t axis) {
  int64_t n = mesh.getShape()[axis];
  Value index = coord(axis);
  std::optional<int64_t> staticLength = getConstantIntValue(length);
  if (staticLength && *staticLength % n == 0) {
    int64_t size = *staticLength / n;
    return {mul(index, size), constant(size)};
  }
  OpFoldResult full = ceilDiv(length, n);
  Value fullValue = getValueOrCreateConstantIndexOp(builder, currentLoc, full);
  OpFoldResult begin = min(
      length,
      arith::MulIOp::create(builder, currentLoc, fullValue, index).getResult());
  OpFoldResult end = min(length, add(begin, full));
  return {begin, sub(end, begin)};
}

std::pair<OpFoldResult, OpFoldResult>
PerRankBuilder::localExtent(RankedTensorType global, LayoutAttr layout,
                            int64_t dim, std::optional<size_t> numAxes) {
  SmallVector<SmallVector<int64_t>> axes =
      shardingAxesPerDim(layout, global.getRank());
  OpFoldResult offset = constant(0);
  OpFoldResult size = constant(global.getDimSize(dim));
  size_t count = numAxes.value_or(axes[dim].size());
  for (int64_t axis : ArrayRef<int64_t>(axes[dim]).take_front(count)) {
    auto [chunkOffset, chunkSize] = chunk(size, axis);
    offset = add(offset, chunkOffset);
    size = chunkSize;
  }
  return {offset, size};
}

Value PerRankBuilder::zeroOf(Type elementType) {
  return arith::ConstantOp::create(builder, currentLoc,
                                   builder.getZeroAttr(elementType));
}

Value PerRankBuilder::emptyAlong(Value value, int64_t dim, OpFoldResult size) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!llvm::is_contained(type.getShape(), 0))
    return nullptr;
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(builder, currentLoc, value);
  sizes[dim] = size;
  return tensor::EmptyOp::create(builder, currentLoc, sizes,
                                 type.getElementType());
}

Value PerRankBuilder::padAlong(Value value, int64_t dim, OpFoldResult to) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(builder, currentLoc, value);
  OpFoldResult high = sub(to, sizes[dim]);
  if (getConstantIntValue(high) == 0)
    return value;
  if (Value empty = emptyAlong(value, dim, to))
    return empty;
  SmallVector<OpFoldResult> low(type.getRank(), constant(0));
  SmallVector<OpFoldResult> highs(type.getRank(), constant(0));
  highs[dim] = high;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = getConstantIntValue(to).value_or(ShapedType::kDynamic);
  auto padded = RankedTensorType::get(shape, type.getElementType());
  return tensor::PadOp::create(builder, currentLoc, padded, value, low, highs,
                               zeroOf(type.getElementType()));
}

Value PerRankBuilder::sliceAlong(Value value, int64_t dim, OpFoldResult offset,
                                 OpFoldResult size) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(builder, currentLoc, value);
  if (getConstantIntValue(offset) == 0 &&
      isEqualConstantIntOrValue(size, sizes[dim]))
    return value;
  if (Value empty = emptyAlong(value, dim, size))
    return empty;
  SmallVector<OpFoldResult> offsets(type.getRank(), constant(0));
  SmallVector<OpFoldResult> strides(type.getRank(), constant(1));
  offsets[dim] = offset;
  sizes[dim] = size;
  return tensor::ExtractSliceOp::create(builder, currentLoc, value, offsets,
                                        sizes, strides);
}

Value PerRankBuilder::castTo(Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(builder, currentLoc, type, value);
}
