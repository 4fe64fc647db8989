//===- Partition.cpp - global-view functions to per-rank programs ---------===//
//
// Rewrites each propagated, planned function into the program one process
// runs: local tensor types, the same ops on local tensors, and for every
// single-step redistribution its collective or local step. Uneven shards
// (torch.chunk semantics) are padded to ceil(L/n) around collectives and
// trimmed after, so results match the unsharded program exactly.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Partitioning/Passes.h"

#include "dtensor/Sharding/Layout.h"
#include "dtensor/Sharding/Redistribute.h"
#include "dtensor/Sharding/ShardingRules.h"
#include "dtensor/Support/ChunkMath.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <functional>

namespace mlir::dtensor {
#define GEN_PASS_DEF_PARTITIONPASS
#include "dtensor/Partitioning/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

class Partitioner {
public:
  Partitioner(func::FuncOp func, MeshOp mesh)
      : func(func), mesh(mesh), builder(func.getContext()) {}

  LogicalResult run();

private:
  Location loc() { return currentLoc; }
  LayoutAttr layoutOf(Value global) {
    LayoutAttr layout = getLayoutOf(global);
    return layout ? layout : getReplicatedLayout(mesh);
  }
  RankedTensorType localType(Value global) {
    return getLocalType(cast<RankedTensorType>(global.getType()),
                        layoutOf(global), mesh);
  }

  // Index arithmetic.
  Value coord(int64_t axis);
  OpFoldResult constant(int64_t v) { return builder.getIndexAttr(v); }
  OpFoldResult add(OpFoldResult a, OpFoldResult b);
  OpFoldResult sub(OpFoldResult a, OpFoldResult b);
  OpFoldResult mul(OpFoldResult a, int64_t b);
  OpFoldResult min(OpFoldResult a, OpFoldResult b);
  OpFoldResult ceilDiv(OpFoldResult a, int64_t b);
  /// This process's chunk [offset, offset + size) of a dim of `length`
  /// split over mesh `axis`.
  std::pair<OpFoldResult, OpFoldResult> chunk(OpFoldResult length,
                                              int64_t axis);
  /// Offset and size of this process's part of `dim` under `layout`,
  /// considering only the first `numAxes` axes that shard it.
  std::pair<OpFoldResult, OpFoldResult>
  localExtent(RankedTensorType global, LayoutAttr layout, int64_t dim,
              std::optional<size_t> numAxes = std::nullopt);

  // Tensor helpers.
  Value zeroOf(Type elementType);
  /// `value` padded with zeros along `dim` to `to` elements.
  Value padAlong(Value value, int64_t dim, OpFoldResult to);
  /// Elements [offset, offset + size) of `value` along `dim`.
  Value sliceAlong(Value value, int64_t dim, OpFoldResult offset,
                   OpFoldResult size);
  /// For padAlong and sliceAlong: if `value` has a static dim of size 0,
  /// a tensor.empty of its sizes with `dim` resized to `size` (it has no
  /// elements either); null otherwise. Upstream's slice verifiers reject
  /// every static offset into a static dim of size 0, even for a size-0
  /// slice, and bufferizing a pad slices its result.
  Value emptyAlong(Value value, int64_t dim, OpFoldResult size);
  Value castTo(Value value, Type type);

  LogicalResult emitStep(RedistributeOp op);
  LogicalResult partitionOp(Operation &op);
  LogicalResult partitionCreation(Operation &op);
  LogicalResult partitionFor(scf::ForOp op);
  LogicalResult partitionGather(tensor::GatherOp op, const ShardingSpec &spec);
  /// The expert-parallel routed matmul (experts sharded along one mesh
  /// axis): dispatch, local experts, combine. Returns failure() with
  /// `handled` false when the experts are not sharded (the op is then
  /// cloned like any other).
  LogicalResult partitionRoutedMatmul(RoutedMatmulOp op, bool &handled);
  LogicalResult checkStrategy(Operation &op, const ShardingSpec &spec);
  void fixLinalgIndices(linalg::LinalgOp local, Operation &global,
                        const ShardingSpec &spec);

  func::FuncOp func;
  MeshOp mesh;
  OpBuilder builder;
  IRMapping map;
  DenseMap<int64_t, Value> coords;
  Location currentLoc = UnknownLoc::get(func.getContext());
  Block *entry = nullptr;
};

Value Partitioner::coord(int64_t axis) {
  if (Value cached = coords.lookup(axis))
    return cached;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(entry);
  Value value =
      CoordOp::create(builder, func.getLoc(), mesh.getSymName(),
                      builder.getDenseI64ArrayAttr({axis}));
  coords[axis] = value;
  return value;
}

OpFoldResult Partitioner::add(OpFoldResult a, OpFoldResult b) {
  std::optional<int64_t> ca = getConstantIntValue(a), cb = getConstantIntValue(b);
  if (ca && cb)
    return constant(*ca + *cb);
  if (cb == 0)
    return a;
  if (ca == 0)
    return b;
  return arith::AddIOp::create(
             builder, loc(), getValueOrCreateConstantIndexOp(builder, loc(), a),
             getValueOrCreateConstantIndexOp(builder, loc(), b))
      .getResult();
}

OpFoldResult Partitioner::sub(OpFoldResult a, OpFoldResult b) {
  std::optional<int64_t> ca = getConstantIntValue(a), cb = getConstantIntValue(b);
  if (ca && cb)
    return constant(*ca - *cb);
  if (cb == 0)
    return a;
  return arith::SubIOp::create(
             builder, loc(), getValueOrCreateConstantIndexOp(builder, loc(), a),
             getValueOrCreateConstantIndexOp(builder, loc(), b))
      .getResult();
}

OpFoldResult Partitioner::mul(OpFoldResult a, int64_t b) {
  if (std::optional<int64_t> ca = getConstantIntValue(a))
    return constant(*ca * b);
  if (b == 1)
    return a;
  return arith::MulIOp::create(
             builder, loc(), getValueOrCreateConstantIndexOp(builder, loc(), a),
             arith::ConstantIndexOp::create(builder, loc(), b))
      .getResult();
}

OpFoldResult Partitioner::min(OpFoldResult a, OpFoldResult b) {
  std::optional<int64_t> ca = getConstantIntValue(a), cb = getConstantIntValue(b);
  if (ca && cb)
    return constant(std::min(*ca, *cb));
  return arith::MinSIOp::create(
             builder, loc(), getValueOrCreateConstantIndexOp(builder, loc(), a),
             getValueOrCreateConstantIndexOp(builder, loc(), b))
      .getResult();
}

OpFoldResult Partitioner::ceilDiv(OpFoldResult a, int64_t b) {
  if (std::optional<int64_t> ca = getConstantIntValue(a))
    return constant((*ca + b - 1) / b);
  return arith::CeilDivUIOp::create(
             builder, loc(), getValueOrCreateConstantIndexOp(builder, loc(), a),
             arith::ConstantIndexOp::create(builder, loc(), b))
      .getResult();
}

std::pair<OpFoldResult, OpFoldResult>
Partitioner::chunk(OpFoldResult length, int64_t axis) {
  int64_t n = mesh.getShape()[axis];
  Value index = coord(axis);
  std::optional<int64_t> staticLength = getConstantIntValue(length);
  if (staticLength && *staticLength % n == 0) {
    int64_t size = *staticLength / n;
    return {mul(index, size), constant(size)};
  }
  OpFoldResult full = ceilDiv(length, n);
  Value fullValue = getValueOrCreateConstantIndexOp(builder, loc(), full);
  OpFoldResult begin =
      min(length, arith::MulIOp::create(builder, loc(), fullValue, index)
                      .getResult());
  OpFoldResult end = min(length, add(begin, full));
  return {begin, sub(end, begin)};
}

std::pair<OpFoldResult, OpFoldResult>
Partitioner::localExtent(RankedTensorType global, LayoutAttr layout,
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

Value Partitioner::zeroOf(Type elementType) {
  return arith::ConstantOp::create(builder, loc(),
                                   builder.getZeroAttr(elementType));
}

Value Partitioner::emptyAlong(Value value, int64_t dim, OpFoldResult size) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!llvm::is_contained(type.getShape(), 0))
    return nullptr;
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(builder, loc(), value);
  sizes[dim] = size;
  return tensor::EmptyOp::create(builder, loc(), sizes,
                                 type.getElementType());
}

Value Partitioner::padAlong(Value value, int64_t dim, OpFoldResult to) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(builder, loc(), value);
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
  return tensor::PadOp::create(builder, loc(), padded, value, low, highs,
                               zeroOf(type.getElementType()));
}

Value Partitioner::sliceAlong(Value value, int64_t dim, OpFoldResult offset,
                              OpFoldResult size) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> sizes =
      tensor::getMixedSizes(builder, loc(), value);
  if (getConstantIntValue(offset) == 0 && isEqualConstantIntOrValue(size, sizes[dim]))
    return value;
  if (Value empty = emptyAlong(value, dim, size))
    return empty;
  SmallVector<OpFoldResult> offsets(type.getRank(), constant(0));
  SmallVector<OpFoldResult> strides(type.getRank(), constant(1));
  offsets[dim] = offset;
  sizes[dim] = size;
  return tensor::ExtractSliceOp::create(builder, loc(), value, offsets, sizes,
                                        strides);
}

Value Partitioner::castTo(Value value, Type type) {
  if (value.getType() == type)
    return value;
  return tensor::CastOp::create(builder, loc(), type, value);
}

LogicalResult Partitioner::emitStep(RedistributeOp op) {
  Value input = map.lookup(op.getInput());
  LayoutAttr from = *op.getFrom(), to = op.getTo();
  RankedTensorType global = op.getInput().getType();
  RankedTensorType resultType = getLocalType(global, to, mesh);
  // The one mesh axis with more than one process that changes.
  std::optional<int64_t> axis;
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(from.getPlacements(), to.getPlacements()))) {
    auto [src, dst] = pair;
    if (src == dst || mesh.getShape()[i] == 1)
      continue;
    if (axis)
      return op.emitError("redistribution changes several mesh axes; run "
                          "--dtensor-plan-redistributions first");
    axis = i;
  }
  if (!axis) {
    map.map(op.getResult(), castTo(input, resultType));
    return success();
  }
  PlacementAttr src = from.getPlacements()[*axis];
  PlacementAttr dst = to.getPlacements()[*axis];
  int64_t n = mesh.getShape()[*axis];
  auto inputType = cast<RankedTensorType>(input.getType());
  Type elementType = inputType.getElementType();
  std::string why;
  FailureOr<StepKind> kind = classifyStep(src, dst, n, &why, elementType);
  if (failed(kind))
    return op.emitError("invalid redistribution: ") << why;
  // Only the last mesh axis that shards a tensor dim may give it up or
  // take it: a later axis would otherwise split data this one moves.
  for (PlacementAttr placement : {src, dst}) {
    if (!placement.isShard())
      continue;
    for (int64_t later = *axis + 1; later < mesh.getRank(); ++later) {
      PlacementAttr other = from.getPlacements()[later];
      if (mesh.getShape()[later] > 1 && other.isShard() &&
          other.getDim() == placement.getDim())
        return op.emitError("mesh axis ")
               << *axis << " cannot change the shard of tensor dimension "
               << placement.getDim() << " before mesh axis " << later
               << " gives it up; run --dtensor-plan-redistributions first";
    }
  }
  SmallVector<int64_t> axes = {*axis};
  StringRef meshRef = from.getMesh().getValue();
  // The size of `dim` on this process before this axis splits it: the
  // extent under the axes that split `dim` before `axis`.
  auto logicalSize = [&](LayoutAttr layout, int64_t dim) {
    SmallVector<SmallVector<int64_t>> byDim =
        shardingAxesPerDim(layout, global.getRank());
    size_t before = llvm::count_if(byDim[dim],
                                   [&](int64_t a) { return a < *axis; });
    return localExtent(global, layout, dim, before).second;
  };
  auto withDim = [&](RankedTensorType type, int64_t dim, OpFoldResult size) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = getConstantIntValue(size).value_or(ShapedType::kDynamic);
    return RankedTensorType::get(shape, type.getElementType());
  };

  Value result;
  switch (*kind) {
  case StepKind::None:
    result = input;
    break;
  case StepKind::AllReduce:
    result = AllReduceOp::create(builder, loc(), inputType, input, meshRef,
                                 axes, src.getReduce());
    break;
  case StepKind::AllGather: {
    int64_t dim = src.getDim();
    OpFoldResult length = logicalSize(to, dim);
    OpFoldResult padded = ceilDiv(length, n);
    Value buffer = padAlong(input, dim, padded);
    auto bufferType = cast<RankedTensorType>(buffer.getType());
    Value gathered = AllGatherOp::create(
        builder, loc(), withDim(bufferType, dim, mul(padded, n)), buffer,
        meshRef, axes, dim);
    result = sliceAlong(gathered, dim, constant(0), length);
    break;
  }
  case StepKind::ReduceScatter: {
    int64_t dim = dst.getDim();
    OpFoldResult length = logicalSize(from, dim);
    OpFoldResult padded = ceilDiv(length, n);
    Value buffer = padAlong(input, dim, mul(padded, n));
    auto bufferType = cast<RankedTensorType>(buffer.getType());
    Value scattered = ReduceScatterOp::create(
        builder, loc(), withDim(bufferType, dim, padded), buffer, meshRef,
        axes, dim, src.getReduce());
    result = sliceAlong(scattered, dim, constant(0), chunk(length, *axis).second);
    break;
  }
  case StepKind::AllToAll: {
    int64_t gatherDim = src.getDim(), splitDim = dst.getDim();
    OpFoldResult gatherLength = logicalSize(to, gatherDim);
    OpFoldResult splitLength = logicalSize(from, splitDim);
    OpFoldResult gatherPadded = ceilDiv(gatherLength, n);
    OpFoldResult splitPadded = ceilDiv(splitLength, n);
    Value buffer = padAlong(input, gatherDim, gatherPadded);
    buffer = padAlong(buffer, splitDim, mul(splitPadded, n));
    auto bufferType = cast<RankedTensorType>(buffer.getType());
    RankedTensorType exchanged =
        withDim(withDim(bufferType, gatherDim, mul(gatherPadded, n)), splitDim,
                splitPadded);
    Value swapped = AllToAllOp::create(builder, loc(), exchanged, buffer,
                                       meshRef, axes, splitDim, gatherDim);
    swapped = sliceAlong(swapped, gatherDim, constant(0), gatherLength);
    result = sliceAlong(swapped, splitDim, constant(0),
                        chunk(splitLength, *axis).second);
    break;
  }
  case StepKind::LocalChunk: {
    int64_t dim = dst.getDim();
    auto [offset, size] = chunk(logicalSize(to, dim), *axis);
    result = sliceAlong(input, dim, offset, size);
    break;
  }
  case StepKind::LocalPartition:
  case StepKind::LocalRescale: {
    // R -> P(avg|min|max): every process keeps the value.
    if (*kind == StepKind::LocalPartition &&
        dst.getReduce() != ReduceKind::Sum) {
      result = input;
      break;
    }
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(builder, loc(), input);
    Value init = tensor::EmptyOp::create(builder, loc(), sizes, elementType);
    int64_t rank = inputType.getRank();
    SmallVector<AffineMap> maps(2, builder.getMultiDimIdentityMap(rank));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    // The part each process holds, from the value it has.
    std::function<Value(OpBuilder &, Location, Value)> part;
    bool isFloat = isa<FloatType>(elementType);
    if (*kind == StepKind::LocalRescale && dst.getReduce() == ReduceKind::Avg) {
      // P(sum) -> P(avg): the parts' mean must be their former sum.
      Value factor = arith::ConstantOp::create(
          builder, loc(),
          isFloat ? cast<TypedAttr>(builder.getFloatAttr(elementType, n))
                  : cast<TypedAttr>(builder.getIntegerAttr(elementType, n)));
      part = [factor, isFloat](OpBuilder &b, Location l, Value x) -> Value {
        if (isFloat)
          return arith::MulFOp::create(b, l, x, factor);
        return arith::MulIOp::create(b, l, x, factor);
      };
    } else if (isFloat) {
      // R -> P(sum) (as DTensor) and P(avg) -> P(sum): each process holds
      // value / n.
      Value divisor = arith::ConstantOp::create(
          builder, loc(), builder.getFloatAttr(elementType, n));
      part = [divisor](OpBuilder &b, Location l, Value x) -> Value {
        return arith::DivFOp::create(b, l, x, divisor);
      };
    } else {
      // R -> P(sum) of integers, which do not divide exactly: coordinate 0
      // of the axis holds the value and the others zero.
      Value zero = arith::ConstantOp::create(
          builder, loc(), builder.getZeroAttr(elementType));
      Value first = arith::CmpIOp::create(
          builder, loc(), arith::CmpIPredicate::eq, coord(*axis),
          arith::ConstantIndexOp::create(builder, loc(), 0));
      part = [first, zero](OpBuilder &b, Location l, Value x) -> Value {
        return arith::SelectOp::create(b, l, first, x, zero);
      };
    }
    result = linalg::GenericOp::create(
                 builder, loc(), inputType, input, init, maps, iterators,
                 [&](OpBuilder &b, Location l, ValueRange args) {
                   linalg::YieldOp::create(b, l, part(b, l, args[0]));
                 })
                 .getResult(0);
    break;
  }
  }
  map.map(op.getResult(), castTo(result, resultType));
  return success();
}

LogicalResult Partitioner::checkStrategy(Operation &op,
                                         const ShardingSpec &spec) {
  SmallVector<LayoutAttr> operands, results;
  for (auto [i, operand] : llvm::enumerate(op.getOperands()))
    operands.push_back(spec.operandIsTensor[i] ? layoutOf(operand)
                                               : LayoutAttr());
  for (Value result : op.getResults())
    results.push_back(layoutOf(result));
  for (const ShardingStrategy &strategy : enumerateStrategies(spec, mesh))
    if (strategy.operands == operands && strategy.results == results)
      return success();
  auto diag = op.emitError("the layouts of this op are not one of its "
                           "sharding strategies (operands: ");
  llvm::interleaveComma(operands, diag, [&](LayoutAttr l) {
    if (l)
      diag << l;
    else
      diag << "-";
  });
  diag << "; results: ";
  llvm::interleaveComma(results, diag, [&](LayoutAttr l) { diag << l; });
  return diag << ")";
}

LogicalResult Partitioner::partitionCreation(Operation &op) {
  Value global = op.getResult(0);
  RankedTensorType local = localType(global);
  auto globalType = cast<RankedTensorType>(global.getType());
  LayoutAttr layout = layoutOf(global);
  SmallVector<OpFoldResult> sizes;
  for (int64_t dim = 0; dim < local.getRank(); ++dim)
    sizes.push_back(localExtent(globalType, layout, dim).second);
  if (isa<tensor::EmptyOp>(op)) {
    Value empty = tensor::EmptyOp::create(builder, loc(), sizes,
                                          local.getElementType());
    map.map(global, castTo(empty, local));
    return success();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Value empty =
        tensor::EmptyOp::create(builder, loc(), sizes, local.getElementType());
    Value filled =
        linalg::FillOp::create(builder, loc(), map.lookup(fill.value()), empty)
            .getResult(0);
    map.map(global, castTo(filled, local));
    return success();
  }
  auto constant = cast<arith::ConstantOp>(op);
  auto dense = cast<DenseElementsAttr>(constant.getValue());
  if (local.hasStaticShape()) {
    map.map(global, arith::ConstantOp::create(builder, loc(),
                                              dense.resizeSplat(local)));
    return success();
  }
  Value scalar = arith::ConstantOp::create(
      builder, loc(), cast<TypedAttr>(dense.getSplatValue<Attribute>()));
  Value empty =
      tensor::EmptyOp::create(builder, loc(), sizes, local.getElementType());
  Value filled =
      linalg::FillOp::create(builder, loc(), scalar, empty).getResult(0);
  map.map(global, castTo(filled, local));
  return success();
}

void Partitioner::fixLinalgIndices(linalg::LinalgOp local, Operation &global,
                                   const ShardingSpec &spec) {
  SmallVector<linalg::IndexOp> indices;
  local->walk([&](linalg::IndexOp index) { indices.push_back(index); });
  if (indices.empty())
    return;
  // The offsets are computed before the local op, which uses them.
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(local);
  // The global offset of each loop: from any tensor whose dim it indexes.
  DenseMap<int64_t, OpFoldResult> offsets;
  auto note = [&](Value value, ArrayRef<int64_t> dims) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      return;
    for (auto [dim, loop] : llvm::enumerate(dims))
      if (loop >= 0 && !offsets.count(loop))
        offsets[loop] = localExtent(type, layoutOf(value), dim).first;
  };
  for (auto [i, operand] : llvm::enumerate(global.getOperands()))
    note(operand, spec.operandDims[i]);
  for (linalg::IndexOp index : indices) {
    OpFoldResult offset = offsets.lookup(index.getDim());
    if (!offset || getConstantIntValue(offset) == 0)
      continue;
    Value offsetValue = getValueOrCreateConstantIndexOp(builder, loc(), offset);
    OpBuilder inner(index->getContext());
    inner.setInsertionPointAfter(index);
    auto shifted = arith::AddIOp::create(inner, index.getLoc(),
                                         index.getResult(), offsetValue);
    index.getResult().replaceAllUsesExcept(shifted, shifted);
  }
}

LogicalResult Partitioner::partitionGather(tensor::GatherOp op,
                                           const ShardingSpec &spec) {
  Value table = map.lookup(op.getSource());
  Value ids = map.lookup(op.getIndices());
  RankedTensorType globalTable = op.getSourceType();
  LayoutAttr tableLayout = layoutOf(op.getSource());
  RankedTensorType resultType = localType(op.getResult());
  auto [rowOffset, rowCount] = localExtent(globalTable, tableLayout, 0);
  if (getConstantIntValue(rowOffset) == 0 &&
      isEqualConstantIntOrValue(rowCount,
                                builder.getIndexAttr(globalTable.getDimSize(0)))) {
    map.map(op.getResult(),
            tensor::GatherOp::create(builder, loc(), resultType, table, ids,
                                     op.getGatherDims(), op.getUnique()));
    return success();
  }
  // Row-sharded table: look up local rows, zero the rows of ids this
  // process does not own; the sum over processes is the full lookup.
  auto idsType = cast<RankedTensorType>(ids.getType());
  Type idType = idsType.getElementType();
  Value offset = getValueOrCreateConstantIndexOp(builder, loc(), rowOffset);
  Value count = getValueOrCreateConstantIndexOp(builder, loc(), rowCount);
  auto toIdType = [&](OpBuilder &b, Location l, Value index) -> Value {
    if (idType.isIndex())
      return index;
    return arith::IndexCastOp::create(b, l, idType, index);
  };
  auto zeroId = [&](OpBuilder &b, Location l) -> Value {
    return arith::ConstantOp::create(b, l, b.getZeroAttr(idType));
  };
  // In the bodies below: `id` relative to this process's first row, and
  // whether this process holds that row.
  auto toLocalRow = [&](OpBuilder &b, Location l,
                        Value id) -> std::pair<Value, Value> {
    Value off = toIdType(b, l, offset);
    Value cnt = toIdType(b, l, count);
    Value shifted = arith::SubIOp::create(b, l, id, off);
    Value belowCount =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, shifted, cnt);
    Value nonNegative = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                              shifted, zeroId(b, l));
    Value inRange = arith::AndIOp::create(b, l, nonNegative, belowCount);
    return {shifted, inRange};
  };
  int64_t idRank = idsType.getRank();
  SmallVector<AffineMap> idMaps(2, builder.getMultiDimIdentityMap(idRank));
  SmallVector<utils::IteratorType> idIterators(idRank,
                                               utils::IteratorType::parallel);
  Value idsInit = tensor::EmptyOp::create(
      builder, loc(), tensor::getMixedSizes(builder, loc(), ids), idType);
  Value localIds =
      linalg::GenericOp::create(
          builder, loc(), idsType, ids, idsInit, idMaps, idIterators,
          [&](OpBuilder &b, Location l, ValueRange args) {
            // Rows this process does not hold look up its row 0.
            auto [shifted, inRange] = toLocalRow(b, l, args[0]);
            linalg::YieldOp::create(
                b, l,
                arith::SelectOp::create(b, l, inRange, shifted, zeroId(b, l))
                    .getResult());
          })
          .getResult(0);
  // Where torch.chunk leaves some process no rows (3 rows over 4: 1, 1, 1,
  // 0), the table of such a process is empty and even row 0 is out of
  // bounds: the lookup reads a table padded to at least one (zero) row,
  // whose row the mask below discards.
  Value source = table;
  int64_t numRows = globalTable.getDimSize(0);
  SmallVector<int64_t> splits =
      splitsPerDim(tableLayout, mesh, globalTable.getRank())[0];
  if (ShapedType::isDynamic(numRows) || chunkSizes(numRows, splits)[0] == 0)
    source = padAlong(table, 0,
                      arith::MaxSIOp::create(
                          builder, loc(), count,
                          arith::ConstantIndexOp::create(builder, loc(), 1))
                          .getResult());
  Value rows =
      tensor::GatherOp::create(builder, loc(), resultType, source, localIds,
                               op.getGatherDims(), op.getUnique());
  // Mask: result[b..., j] = in range(ids[b..., 0]) ? rows[b..., j] : 0.
  int64_t rank = resultType.getRank();
  SmallVector<AffineExpr> idExprs;
  for (int64_t d = 0; d < idRank - 1; ++d)
    idExprs.push_back(builder.getAffineDimExpr(d));
  idExprs.push_back(builder.getAffineConstantExpr(0));
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank, 0, idExprs, builder.getContext()),
      builder.getMultiDimIdentityMap(rank),
      builder.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Value init = tensor::EmptyOp::create(
      builder, loc(), tensor::getMixedSizes(builder, loc(), rows),
      resultType.getElementType());
  Value masked =
      linalg::GenericOp::create(
          builder, loc(), resultType, ValueRange{ids, rows}, init, maps,
          iterators,
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value inRange = toLocalRow(b, l, args[0]).second;
            Value fzero = arith::ConstantOp::create(
                b, l, b.getZeroAttr(resultType.getElementType()));
            linalg::YieldOp::create(
                b, l,
                arith::SelectOp::create(b, l, inRange, args[1], fzero)
                    .getResult());
          })
          .getResult(0);
  (void)spec;
  map.map(op.getResult(), masked);
  return success();
}

LogicalResult Partitioner::partitionRoutedMatmul(RoutedMatmulOp op,
                                                 bool &handled) {
  auto wGlobal = cast<RankedTensorType>(op.getW().getType());
  SmallVector<SmallVector<int64_t>> wAxes =
      shardingAxesPerDim(layoutOf(op.getW()), wGlobal.getRank());
  if (wAxes[0].empty())
    return failure();
  handled = true;
  if (wAxes[0].size() != 1)
    return op.emitError("experts sharded over several mesh axes are not "
                        "supported (shard w dim 0 over one axis)");
  int64_t axis = wAxes[0][0];
  int64_t n = mesh.getShape()[axis];
  int64_t numExperts = wGlobal.getDimSize(0);
  if (numExperts % n != 0)
    return op.emitError("expert parallelism needs the ")
           << numExperts << " experts to split evenly over the " << n
           << " processes of mesh axis " << axis;
  int64_t perRank = numExperts / n;
  // The strategy shards the tokens along the same axis (jointSplits).
  StringRef meshRef = mesh.getSymName();
  SmallVector<int64_t> axes = {axis};

  Value x = map.lookup(op.getX());
  Value ids = map.lookup(op.getIds());
  Value w = map.lookup(op.getW());
  auto xType = cast<RankedTensorType>(x.getType());
  auto idsType = cast<RankedTensorType>(ids.getType());
  RankedTensorType resultType = localType(op.getResult());
  int64_t numChoices = idsType.getDimSize(1);
  if (ShapedType::isDynamic(numChoices))
    return op.emitError("expert parallelism needs a static number of "
                        "choices per token (ids dim 1)");
  Type i64 = builder.getI64Type();
  Location l = loc();
  auto constI64 = [&](OpBuilder &b, Location at, int64_t v) -> Value {
    return arith::ConstantOp::create(b, at, b.getI64IntegerAttr(v));
  };
  auto toI64 = [&](OpBuilder &b, Location at, Value index) -> Value {
    return arith::IndexCastOp::create(b, at, b.getI64Type(), index);
  };
  auto toIndex = [&](OpBuilder &b, Location at, Value v) -> Value {
    return arith::IndexCastOp::create(b, at, b.getIndexType(), v);
  };
  auto parallel = utils::IteratorType::parallel;
  auto reduction = utils::IteratorType::reduction;
  auto zeros = [&](ArrayRef<OpFoldResult> sizes) -> Value {
    Value empty = tensor::EmptyOp::create(builder, l, sizes, i64);
    Value zero = constI64(builder, l, 0);
    return linalg::FillOp::create(builder, l, zero, empty).getResult(0);
  };
  auto map2 = [&](unsigned numDims, ArrayRef<unsigned> dims) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : dims)
      exprs.push_back(builder.getAffineDimExpr(d));
    return AffineMap::get(numDims, 0, exprs, builder.getContext());
  };

  // 1. Per (token, choice): the expert id in [0, E) (floor modulo) and the
  //    rank that holds it; then flattened to items i = t * K + k.
  SmallVector<OpFoldResult> idSizes = tensor::getMixedSizes(builder, l, ids);
  Value idInit = tensor::EmptyOp::create(builder, l, idSizes, i64);
  auto routing = linalg::GenericOp::create(
      builder, l, TypeRange{idInit.getType(), idInit.getType()}, ValueRange{ids},
      ValueRange{idInit, idInit},
      SmallVector<AffineMap>(3, builder.getMultiDimIdentityMap(2)),
      SmallVector<utils::IteratorType>(2, parallel),
      [&](OpBuilder &b, Location at, ValueRange args) {
        Value wrapped =
            RoutedMatmulOp::buildExpertIndex(b, at, args[0], numExperts);
        Value dest = arith::DivSIOp::create(b, at, wrapped,
                                            constI64(b, at, perRank));
        linalg::YieldOp::create(b, at, ValueRange{wrapped, dest});
      });
  SmallVector<ReassociationIndices> flat = {{0, 1}};
  Value expert = tensor::CollapseShapeOp::create(builder, l,
                                                 routing.getResult(0), flat);
  Value dest = tensor::CollapseShapeOp::create(builder, l,
                                               routing.getResult(1), flat);
  SmallVector<OpFoldResult> items = tensor::getMixedSizes(builder, l, dest);

  // Sums over a reduction loop (the second) of the i64 `addend` computes
  // from the inputs and the loop indices: the counting and sorting below.
  using Addend = function_ref<Value(OpBuilder &, Location, ValueRange)>;
  auto sumOver = [&](ArrayRef<OpFoldResult> sizes, ValueRange inputs,
                     SmallVector<AffineMap> maps, Addend addend) -> Value {
    Value init = zeros(sizes);
    maps.push_back(map2(2, {0}));
    return linalg::GenericOp::create(
               builder, l, TypeRange{init.getType()}, inputs, ValueRange{init},
               maps,
               SmallVector<utils::IteratorType>{parallel, reduction},
               [&](OpBuilder &b, Location at, ValueRange args) {
                 Value sum = arith::AddIOp::create(b, at, args.back(),
                                                   addend(b, at, args));
                 linalg::YieldOp::create(b, at, sum);
               })
        .getResult(0);
  };
  auto count = [&](OpBuilder &b, Location at, Value flag) -> Value {
    return arith::ExtUIOp::create(b, at, b.getI64Type(), flag);
  };

  // 2. Items per destination rank.
  Value sendCounts = sumOver(
      {builder.getIndexAttr(n)}, dest, {map2(2, {1})},
      [&](OpBuilder &b, Location at, ValueRange args) {
        Value r = toI64(b, at, linalg::IndexOp::create(b, at, 0));
        return count(b, at,
                     arith::CmpIOp::create(b, at, arith::CmpIPredicate::eq,
                                           args[0], r));
      });

  // 3. Each item's slot in the send buffer: a stable sort by destination,
  //    pos[i] = #{j : (dest[j], j) < (dest[i], i)},
  Value pos = sumOver(
      items, ValueRange{dest, dest}, {map2(2, {0}), map2(2, {1})},
      [&](OpBuilder &b, Location at, ValueRange args) {
        Value di = args[0], dj = args[1];
        Value i = linalg::IndexOp::create(b, at, 0);
        Value j = linalg::IndexOp::create(b, at, 1);
        Value lower = arith::CmpIOp::create(b, at, arith::CmpIPredicate::slt,
                                            dj, di);
        Value same = arith::CmpIOp::create(b, at, arith::CmpIPredicate::eq,
                                           dj, di);
        Value earlier = arith::CmpIOp::create(b, at, arith::CmpIPredicate::ult,
                                              j, i);
        return count(b, at,
                     arith::OrIOp::create(
                         b, at, lower,
                         arith::AndIOp::create(b, at, same, earlier)));
      });
  //    and its inverse, the item in each slot: source[p] = the i with
  //    pos[i] = p.
  Value source = sumOver(
      items, pos, {map2(2, {1})},
      [&](OpBuilder &b, Location at, ValueRange args) {
        Value p = toI64(b, at, linalg::IndexOp::create(b, at, 0));
        Value i = toI64(b, at, linalg::IndexOp::create(b, at, 1));
        Value hit = arith::CmpIOp::create(b, at, arith::CmpIPredicate::eq,
                                          args[0], p);
        return arith::SelectOp::create(b, at, hit, i, constI64(b, at, 0))
            .getResult();
      });

  // 4. The send buffers: token rows and expert ids in slot order.
  OpFoldResult hidden = tensor::getMixedSizes(builder, l, x)[1];
  Value rowsInit = tensor::EmptyOp::create(
      builder, l, SmallVector<OpFoldResult>{items[0], hidden},
      xType.getElementType());
  Value rows = linalg::GenericOp::create(
      builder, l, TypeRange{rowsInit.getType()}, ValueRange{source},
      ValueRange{rowsInit}, SmallVector<AffineMap>{map2(2, {0}), map2(2, {0, 1})},
      SmallVector<utils::IteratorType>(2, parallel),
      [&](OpBuilder &b, Location at, ValueRange args) {
        Value token = arith::DivUIOp::create(b, at, toIndex(b, at, args[0]),
                                             arith::ConstantIndexOp::create(
                                                 b, at, numChoices));
        Value h = linalg::IndexOp::create(b, at, 1);
        linalg::YieldOp::create(
            b, at, ValueRange{tensor::ExtractOp::create(b, at, x,
                                                        ValueRange{token, h})});
      }).getResult(0);
  Value sortedIds = linalg::GenericOp::create(
      builder, l, TypeRange{dest.getType()}, ValueRange{source},
      ValueRange{tensor::EmptyOp::create(builder, l, items, i64)},
      SmallVector<AffineMap>{map2(1, {0}), map2(1, {0})}, SmallVector<utils::IteratorType>{parallel},
      [&](OpBuilder &b, Location at, ValueRange args) {
        linalg::YieldOp::create(
            b, at, ValueRange{tensor::ExtractOp::create(
                       b, at, expert, ValueRange{toIndex(b, at, args[0])})});
      }).getResult(0);

  // 5. Dispatch: the counts each rank receives, then rows and ids.
  auto countsType = RankedTensorType::get({n}, i64);
  Value recvCounts = AllToAllOp::create(builder, l, countsType, sendCounts,
                                        meshRef, axes, int64_t{0},
                                        int64_t{0});
  auto rowsType = RankedTensorType::get(
      {ShapedType::kDynamic, xType.getDimSize(1)}, xType.getElementType());
  Value recvRows = AllToAllVOp::create(builder, l, rowsType, rows, sendCounts,
                                       recvCounts, meshRef, axes);
  auto idsRecvType = RankedTensorType::get({ShapedType::kDynamic}, i64);
  Value recvIds = AllToAllVOp::create(builder, l, idsRecvType, sortedIds,
                                      sendCounts, recvCounts, meshRef, axes);

  // 6. The local experts: ids relative to this rank's first expert.
  Value base = arith::MulIOp::create(
      builder, l, toI64(builder, l, coord(axis)), constI64(builder, l, perRank));
  OpFoldResult received = tensor::getMixedSizes(builder, l, recvIds)[0];
  Value localIdsInit = tensor::EmptyOp::create(
      builder, l, SmallVector<OpFoldResult>{received, builder.getIndexAttr(1)},
      i64);
  Value localIds = linalg::GenericOp::create(
      builder, l, TypeRange{localIdsInit.getType()}, ValueRange{recvIds, base},
      ValueRange{localIdsInit},
      SmallVector<AffineMap>{map2(2, {0}),
                             AffineMap::get(2, 0, {}, builder.getContext()),
                             builder.getMultiDimIdentityMap(2)},
      SmallVector<utils::IteratorType>(2, parallel),
      [&](OpBuilder &b, Location at, ValueRange args) {
        linalg::YieldOp::create(
            b, at, ValueRange{arith::SubIOp::create(b, at, args[0], args[1])});
      }).getResult(0);
  auto expertOutType = RankedTensorType::get(
      {ShapedType::kDynamic, 1, resultType.getDimSize(2)},
      resultType.getElementType());
  Value computed = RoutedMatmulOp::create(builder, l, expertOutType, recvRows,
                                          localIds, w);
  Value computedRows = tensor::CollapseShapeOp::create(
      builder, l, computed, SmallVector<ReassociationIndices>{{0, 1}, {2}});

  // 7. Combine: results back to their tokens' ranks, out of slot order.
  auto backType = RankedTensorType::get(
      {ShapedType::kDynamic, resultType.getDimSize(2)},
      resultType.getElementType());
  Value back = AllToAllVOp::create(builder, l, backType, computedRows,
                                   recvCounts, sendCounts, meshRef, axes);
  SmallVector<OpFoldResult> outSizes = {
      tensor::getMixedSizes(builder, l, x)[0], builder.getIndexAttr(numChoices),
      tensor::getMixedSizes(builder, l, w)[2]};
  Value outInit = tensor::EmptyOp::create(builder, l, outSizes,
                                          resultType.getElementType());
  Value result = linalg::GenericOp::create(
      builder, l, TypeRange{outInit.getType()}, ValueRange{},
      ValueRange{outInit}, SmallVector<AffineMap>{builder.getMultiDimIdentityMap(3)},
      SmallVector<utils::IteratorType>(3, parallel),
      [&](OpBuilder &b, Location at, ValueRange) {
        Value t = linalg::IndexOp::create(b, at, 0);
        Value k = linalg::IndexOp::create(b, at, 1);
        Value f = linalg::IndexOp::create(b, at, 2);
        Value item = arith::AddIOp::create(
            b, at,
            arith::MulIOp::create(
                b, at, t, arith::ConstantIndexOp::create(b, at, numChoices)),
            k);
        Value slot = toIndex(
            b, at, tensor::ExtractOp::create(b, at, pos, ValueRange{item}));
        linalg::YieldOp::create(
            b, at, ValueRange{tensor::ExtractOp::create(b, at, back,
                                                        ValueRange{slot, f})});
      }).getResult(0);
  map.map(op.getResult(), castTo(result, resultType));
  return success();
}

LogicalResult Partitioner::partitionOp(Operation &op) {
  currentLoc = op.getLoc();
  if (auto redistribute = dyn_cast<RedistributeOp>(op))
    return emitStep(redistribute);
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    SmallVector<Value> values;
    for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
      // The function promises its callers the result layout it declares.
      auto declared = func.getResultAttrOfType<LayoutAttr>(i, kLayoutAttrName);
      if (declared && isa<RankedTensorType>(operand.getType()) &&
          declared != layoutOf(operand))
        return op.emitError("result #")
               << i << " is returned as " << layoutOf(operand)
               << " but the function declares " << declared
               << "; run --dtensor-propagate-layouts first";
      values.push_back(map.lookup(operand));
    }
    func::ReturnOp::create(builder, loc(), values);
    return success();
  }
  if (isa<AnnotateOp>(op))
    return op.emitError("annotation left in a function being partitioned; run "
                        "--dtensor-propagate-layouts first");
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return partitionFor(loop);
  if (auto yield = dyn_cast<scf::YieldOp>(op)) {
    SmallVector<Value> values;
    for (Value operand : yield.getOperands())
      values.push_back(map.lookup(operand));
    scf::YieldOp::create(builder, loc(), values);
    return success();
  }
  bool touchesTensors =
      llvm::any_of(op.getOperandTypes(), llvm::IsaPred<RankedTensorType>) ||
      llvm::any_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>);
  if (!touchesTensors) {
    builder.clone(op, map);
    return success();
  }
  std::string why;
  FailureOr<ShardingSpec> spec = getShardingSpec(&op, &why);
  if (failed(spec))
    return op.emitError("cannot partition this op: ") << why;
  for (Value result : op.getResults())
    if (!getLayoutOf(result))
      return op.emitError("result without a layout; run "
                          "--dtensor-propagate-layouts first");
  if (spec->isCreation) {
    LayoutAttr layout = layoutOf(op.getResult(0));
    if (!creationAllowsLayout(&op, layout))
      return op.emitError("a created value cannot start as ") << layout;
    if (isa<tensor::EmptyOp, arith::ConstantOp>(op))
      return partitionCreation(op);
    // A fill of a constant overwrites its init. An init of another layout
    // (one tensor.empty shared by fills of different layouts) is replaced
    // by a fresh tensor of the fill's layout.
    if (layoutOf(cast<linalg::FillOp>(op).getOutputs()[0]) != layout)
      return partitionCreation(op);
  } else if (failed(checkStrategy(op, *spec))) {
    return failure();
  }
  if (auto gather = dyn_cast<tensor::GatherOp>(op))
    return partitionGather(gather, *spec);
  if (auto routed = dyn_cast<RoutedMatmulOp>(op)) {
    bool handled = false;
    LogicalResult result = partitionRoutedMatmul(routed, handled);
    if (handled)
      return result;
  }

  // A reshape keeps an uneven shard only where the dim is the same on both
  // sides; the outer dim of a merged or split group must split evenly.
  if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op)) {
    ShardingStrategy strategy;
    strategy.operands.push_back(layoutOf(op.getOperand(0)));
    strategy.results.push_back(layoutOf(op.getResult(0)));
    if (splitsEvenOnlyLoopUnevenly(&op, *spec, strategy, mesh))
      return op.emitError("reshape splits the outer dim of a merged or split "
                          "group unevenly (")
             << strategy.operands[0] << " to " << strategy.results[0]
             << "); run --dtensor-propagate-layouts first";
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    // The local output shape: a dynamic dim (an uneven shard) takes this
    // process's chunk size.
    auto global = cast<RankedTensorType>(expand.getResult().getType());
    LayoutAttr layout = layoutOf(expand.getResult());
    RankedTensorType local = localType(expand.getResult());
    SmallVector<OpFoldResult> globalShape = expand.getMixedOutputShape();
    SmallVector<OpFoldResult> shape;
    for (int64_t dim = 0; dim < global.getRank(); ++dim) {
      if (!local.isDynamicDim(dim))
        shape.push_back(constant(local.getDimSize(dim)));
      else if (auto size = dyn_cast<Value>(globalShape[dim]))
        shape.push_back(map.lookupOrDefault(size)); // Replicated, dynamic.
      else
        shape.push_back(localExtent(global, layout, dim).second);
    }
    Value result = tensor::ExpandShapeOp::create(
        builder, loc(), local, map.lookup(expand.getSrc()),
        expand.getReassociationIndices(), shape);
    map.map(expand.getResult(), result);
    return success();
  }

  if (isa<tensor::ExtractSliceOp>(op)) {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    RankedTensorType source = slice.getSourceType();
    LayoutAttr layout = layoutOf(slice.getSource());
    SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
    SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
    SmallVector<OpFoldResult> strides = slice.getMixedStrides();
    for (int64_t dim = 0; dim < source.getRank(); ++dim)
      if (!shardingAxesPerDim(layout, source.getRank())[dim].empty())
        sizes[dim] = localExtent(source, layout, dim).second;
    Value local = tensor::ExtractSliceOp::create(
        builder, loc(), localType(slice.getResult()),
        map.lookup(slice.getSource()), offsets, sizes, strides);
    map.map(slice.getResult(), local);
    return success();
  }

  Operation *local = builder.clone(op, map);
  local->removeAttr(kLayoutsAttrName);
  for (auto [global, result] : llvm::zip(op.getResults(), local->getResults()))
    result.setType(localType(global));
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(local))
    fixLinalgIndices(linalgOp, op, *spec);
  return success();
}

LogicalResult Partitioner::partitionFor(scf::ForOp op) {
  // The same loop over local tensors: a carried tensor has one layout
  // (propagation's), on entry, in the body and out of the loop.
  SmallVector<Value> inits;
  for (auto [init, result] : llvm::zip(op.getInitArgs(), op.getResults())) {
    if (isa<RankedTensorType>(init.getType()) &&
        layoutOf(init) != layoutOf(result))
      return op.emitError("a loop carries a tensor entering as ")
             << layoutOf(init) << " and leaving as " << layoutOf(result)
             << "; run --dtensor-propagate-layouts first";
    inits.push_back(map.lookup(init));
  }
  auto local = scf::ForOp::create(
      builder, loc(), map.lookup(op.getLowerBound()),
      map.lookup(op.getUpperBound()), map.lookup(op.getStep()), inits);
  Block *body = local.getBody();
  // The builder adds a yield to a loop without results; the body's own
  // yield replaces it.
  if (!body->empty())
    body->getTerminator()->erase();
  map.map(op.getInductionVar(), local.getInductionVar());
  for (auto [global, carried] :
       llvm::zip(op.getRegionIterArgs(), local.getRegionIterArgs()))
    map.map(global, carried);
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(body);
    for (Operation &inner : *op.getBody())
      if (failed(partitionOp(inner)))
        return failure();
  }
  for (auto [global, result] : llvm::zip(op.getResults(), local.getResults()))
    map.map(global, result);
  return success();
}

LogicalResult Partitioner::run() {
  Block &body = func.getBody().front();
  MLIRContext *ctx = func.getContext();
  // New entry block with local argument types.
  auto *newEntry = new Block();
  entry = newEntry;
  for (BlockArgument arg : body.getArguments()) {
    Type type = arg.getType();
    if (auto tensor = dyn_cast<RankedTensorType>(type)) {
      type = localType(arg);
      func.setArgAttr(arg.getArgNumber(), kGlobalTypeAttrName,
                      TypeAttr::get(tensor));
      if (!getLayoutOf(arg))
        func.setArgAttr(arg.getArgNumber(), kLayoutAttrName,
                        getReplicatedLayout(mesh));
    }
    map.map(arg, newEntry->addArgument(type, arg.getLoc()));
  }
  builder.setInsertionPointToEnd(newEntry);
  for (Operation &op : body) {
    if (failed(partitionOp(op))) {
      delete newEntry;
      return failure();
    }
  }
  // Result types and attributes from the returned values.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Type> resultTypes;
  for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
    resultTypes.push_back(map.lookup(operand).getType());
    if (auto tensor = dyn_cast<RankedTensorType>(operand.getType())) {
      func.setResultAttr(i, kGlobalTypeAttrName, TypeAttr::get(tensor));
      func.setResultAttr(i, kLayoutAttrName, layoutOf(operand));
    }
  }
  body.dropAllDefinedValueUses();
  body.dropAllUses();
  func.getBody().getBlocks().clear();
  func.getBody().push_back(newEntry);
  func.setFunctionType(FunctionType::get(
      ctx, newEntry->getArgumentTypes(), resultTypes));
  func->setAttr("dtensor.mesh", FlatSymbolRefAttr::get(mesh.getSymNameAttr()));
  return success();
}

struct PartitionPass : dtensor::impl::PartitionPassBase<PartitionPass> {
  using Base::Base;

  void runOnOperation() override {
    SymbolTableCollection symbols;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || func->hasAttr("dtensor.mesh"))
        continue;
      // The mesh: the one every layout in the function names.
      FlatSymbolRefAttr meshName, otherName;
      auto note = [&](Attribute attr) {
        auto layout = dyn_cast_or_null<LayoutAttr>(attr);
        if (!layout)
          return;
        if (!meshName)
          meshName = layout.getMesh();
        else if (layout.getMesh() != meshName && !otherName)
          otherName = layout.getMesh();
      };
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        note(func.getArgAttr(i, kLayoutAttrName));
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        note(func.getResultAttr(i, kLayoutAttrName));
      func.walk([&](Operation *op) {
        if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
          note(redistribute.getTo());
          note(redistribute.getFromAttr());
        }
        if (auto layouts = op->getAttrOfType<ArrayAttr>(kLayoutsAttrName))
          llvm::for_each(layouts, note);
      });
      if (!meshName)
        continue;
      if (otherName) {
        func.emitError("layouts on several meshes (")
            << meshName << ", " << otherName
            << ") in one function are not supported";
        return signalPassFailure();
      }
      if (!func.getBody().hasOneBlock()) {
        func.emitError("only single-block functions can be partitioned");
        return signalPassFailure();
      }
      MeshOp mesh = lookupMesh(func, meshName, /*diagnose=*/true, &symbols);
      if (!mesh)
        return signalPassFailure();
      if (failed(verifyLayoutAttrs(func)) ||
          failed(Partitioner(func, mesh).run()))
        return signalPassFailure();
      // Fold the index arithmetic and drop what the rewrite left unused.
      (void)applyPatternsGreedily(func.getOperation(),
                                  FrozenRewritePatternSet());
    }
  }
};

} // namespace
