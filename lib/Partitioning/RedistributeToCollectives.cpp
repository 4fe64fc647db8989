//===- RedistributeToCollectives.cpp - one redistribution step per rank ---===//
//
// Lowers one step of a planned redistribution chain (a dtensor.redistribute
// that changes the placement of one mesh axis) to the per-rank code of its
// StepKind: a dtensor collective along that axis or a local step. Uneven
// shards (torch.chunk semantics) are padded to ceil(L/n) around collectives
// and trimmed after, so results match the unsharded program exactly.
//
//===----------------------------------------------------------------------===//

#include "Partitioning.h"

#include "dtensor/Sharding/Redistribute.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <functional>

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// The lowering of one step along mesh `axis` of `n` processes, from
/// placement `src` to `dst` of that axis.
class StepLowering {
public:
  StepLowering(PerRankBuilder &pb, RedistributeOp op, int64_t axis)
      : pb(pb), builder(pb.getBuilder()), mesh(pb.getMesh()),
        global(op.getInput().getType()), from(*op.getFrom()), to(op.getTo()),
        src(from.getPlacements()[axis]), dst(to.getPlacements()[axis]),
        axis(axis), n(mesh.getShape()[axis]),
        meshRef(from.getMesh().getValue()) {}

  Value lower(StepKind kind, Value input);

private:
  Location loc() { return pb.getLoc(); }
  /// The size of `dim` on this process before this axis splits it: the
  /// extent under the axes that split `dim` before `axis`.
  OpFoldResult logicalSize(LayoutAttr layout, int64_t dim);
  /// `type` with `dim` of `size` elements.
  static RankedTensorType withDim(RankedTensorType type, int64_t dim,
                                  OpFoldResult size);

  Value allGather(Value input);
  Value reduceScatter(Value input);
  Value allToAll(Value input);
  Value localChunk(Value input);
  Value localPart(StepKind kind, Value input);

  PerRankBuilder &pb;
  OpBuilder &builder;
  MeshOp mesh;
  RankedTensorType global;
  LayoutAttr from, to;
  PlacementAttr src, dst;
  int64_t axis, n;
  StringRef meshRef;
};

} // namespace

OpFoldResult StepLowering::logicalSize(LayoutAttr layout, int64_t dim) {
  SmallVector<SmallVector<int64_t>> byDim =
      shardingAxesPerDim(layout, global.getRank());
  size_t before =
      llvm::count_if(byDim[dim], [&](int64_t a) { return a < axis; });
  return pb.localExtent(global, layout, dim, before).second;
}

RankedTensorType StepLowering::withDim(RankedTensorType type, int64_t dim,
                                       OpFoldResult size) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = getConstantIntValue(size).value_or(ShapedType::kDynamic);
  return RankedTensorType::get(shape, type.getElementType());
}

Value StepLowering::lower(StepKind kind, Value input) {
  switch (kind) {
  case StepKind::None:
    return input;
  case StepKind::AllReduce:
    return AllReduceOp::create(builder, loc(), input.getType(), input, meshRef,
                               SmallVector<int64_t>{axis}, src.getReduce());
  case StepKind::AllGather:
    return allGather(input);
  case StepKind::ReduceScatter:
    return reduceScatter(input);
  case StepKind::AllToAll:
    return allToAll(input);
  case StepKind::LocalChunk:
    return localChunk(input);
  case StepKind::LocalPartition:
  case StepKind::LocalRescale:
    return localPart(kind, input);
  }
  llvm_unreachable("unknown step kind");
}

Value StepLowering::allGather(Value input) {
  int64_t dim = src.getDim();
  OpFoldResult length = logicalSize(to, dim);
  OpFoldResult padded = pb.ceilDiv(length, n);
  Value buffer = pb.padAlong(input, dim, padded);
  auto bufferType = cast<RankedTensorType>(buffer.getType());
  Value gathered = AllGatherOp::create(
      builder, loc(), withDim(bufferType, dim, pb.mul(padded, n)), buffer,
      meshRef, SmallVector<int64_t>{axis}, dim);
  return pb.sliceAlong(gathered, dim, pb.constant(0), length);
}

Value StepLowering::reduceScatter(Value input) {
  int64_t dim = dst.getDim();
  OpFoldResult length = logicalSize(from, dim);
  OpFoldResult padded = pb.ceilDiv(length, n);
  Value buffer = pb.padAlong(input, dim, pb.mul(padded, n));
  auto bufferType = cast<RankedTensorType>(buffer.getType());
  Value scattered = ReduceScatterOp::create(
      builder, loc(), withDim(bufferType, dim, padded), buffer, meshRef,
      SmallVector<int64_t>{axis}, dim, src.getReduce());
  return pb.sliceAlong(scattered, dim, pb.constant(0),
                       pb.chunk(length, axis).second);
}

Value StepLowering::allToAll(Value input) {
  int64_t gatherDim = src.getDim(), splitDim = dst.getDim();
  OpFoldResult gatherLength = logicalSize(to, gatherDim);
  OpFoldResult splitLength = logicalSize(from, splitDim);
  OpFoldResult gatherPadded = pb.ceilDiv(gatherLength, n);
  OpFoldResult splitPadded = pb.ceilDiv(splitLength, n);
  Value buffer = pb.padAlong(input, gatherDim, gatherPadded);
  buffer = pb.padAlong(buffer, splitDim, pb.mul(splitPadded, n));
  auto bufferType = cast<RankedTensorType>(buffer.getType());
  RankedTensorType exchanged =
      withDim(withDim(bufferType, gatherDim, pb.mul(gatherPadded, n)), splitDim,
              splitPadded);
  Value swapped =
      AllToAllOp::create(builder, loc(), exchanged, buffer, meshRef,
                         SmallVector<int64_t>{axis}, splitDim, gatherDim);
  swapped = pb.sliceAlong(swapped, gatherDim, pb.constant(0), gatherLength);
  return pb.sliceAlong(swapped, splitDim, pb.constant(0),
                       pb.chunk(splitLength, axis).second);
}

Value StepLowering::localChunk(Value input) {
  int64_t dim = dst.getDim();
  auto [offset, size] = pb.chunk(logicalSize(to, dim), axis);
  return pb.sliceAlong(input, dim, offset, size);
}

Value StepLowering::localPart(StepKind kind, Value input) {
  // R -> P(avg|min|max): every process keeps the value.
  if (kind == StepKind::LocalPartition && dst.getReduce() != ReduceKind::Sum)
    return input;
  auto inputType = cast<RankedTensorType>(input.getType());
  Type elementType = inputType.getElementType();
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
  if (kind == StepKind::LocalRescale && dst.getReduce() == ReduceKind::Avg) {
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
    Value zero = arith::ConstantOp::create(builder, loc(),
                                           builder.getZeroAttr(elementType));
    Value first = arith::CmpIOp::create(
        builder, loc(), arith::CmpIPredicate::eq, pb.coord(axis),
        arith::ConstantIndexOp::create(builder, loc(), 0));
    part = [first, zero](OpBuilder &b, Location l, Value x) -> Value {
      return arith::SelectOp::create(b, l, first, x, zero);
    };
  }
  return linalg::GenericOp::create(
             builder, loc(), inputType, input, init, maps, iterators,
             [&](OpBuilder &b, Location l, ValueRange args) {
               linalg::YieldOp::create(b, l, part(b, l, args[0]));
             })
      .getResult(0);
}

FailureOr<Value> mlir::dtensor::lowerRedistributionStep(PerRankBuilder &pb,
                                                        RedistributeOp op,
                                                        Value input) {
  MeshOp mesh = pb.getMesh();
  LayoutAttr from = *op.getFrom(), to = op.getTo();
  RankedTensorType resultType = getLocalType(op.getInput().getType(), to, mesh);
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
  if (!axis)
    return pb.castTo(input, resultType);
  PlacementAttr src = from.getPlacements()[*axis];
  PlacementAttr dst = to.getPlacements()[*axis];
  int64_t n = mesh.getShape()[*axis];
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
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
  Value result = StepLowering(pb, op, *axis).lower(*kind, input);
  return pb.castTo(result, resultType);
}
