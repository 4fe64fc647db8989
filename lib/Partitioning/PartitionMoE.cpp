//===- PartitionMoE.cpp - expert-parallel routed matmul per rank ----------===//
//
// Partitions dtensor.routed_matmul whose experts (w dim 0) are sharded along
// one mesh axis, with the tokens sharded along the same axis: each rank
// routes its tokens' (token, choice) items to the ranks holding their
// experts (dtensor.all_to_all of the counts, dtensor.all_to_all_v of rows
// and expert ids), applies its local experts, and sends the results back to
// the tokens' ranks, where they return to (token, choice) order.
//
//===----------------------------------------------------------------------===//

#include "Partitioning.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::dtensor;

bool mlir::dtensor::hasShardedExperts(RoutedMatmulOp op) {
  LayoutAttr layout = getLayoutOf(op.getW());
  return layout &&
         !shardingAxesPerDim(layout, op.getW().getType().getRank())[0].empty();
}

FailureOr<Value> mlir::dtensor::partitionRoutedMatmul(PerRankBuilder &pb,
                                                      RoutedMatmulOp op,
                                                      Value x, Value ids,
                                                      Value w) {
  OpBuilder &builder = pb.getBuilder();
  MeshOp mesh = pb.getMesh();
  auto wGlobal = cast<RankedTensorType>(op.getW().getType());
  SmallVector<SmallVector<int64_t>> wAxes =
      shardingAxesPerDim(pb.layoutOf(op.getW()), wGlobal.getRank());
  if (wAxes[0].empty())
    return op.emitError("expert parallelism needs the experts (w dim 0) "
                        "sharded");
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

  auto xType = cast<RankedTensorType>(x.getType());
  auto idsType = cast<RankedTensorType>(ids.getType());
  RankedTensorType resultType = pb.localType(op.getResult());
  int64_t numChoices = idsType.getDimSize(1);
  if (ShapedType::isDynamic(numChoices))
    return op.emitError("expert parallelism needs a static number of "
                        "choices per token (ids dim 1)");
  Type i64 = builder.getI64Type();
  Location l = pb.getLoc();
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
      builder, l, TypeRange{idInit.getType(), idInit.getType()},
      ValueRange{ids}, ValueRange{idInit, idInit},
      SmallVector<AffineMap>(3, builder.getMultiDimIdentityMap(2)),
      SmallVector<utils::IteratorType>(2, parallel),
      [&](OpBuilder &b, Location at, ValueRange args) {
        Value wrapped =
            RoutedMatmulOp::buildExpertIndex(b, at, args[0], numExperts);
        Value dest =
            arith::DivSIOp::create(b, at, wrapped, constI64(b, at, perRank));
        linalg::YieldOp::create(b, at, ValueRange{wrapped, dest});
      });
  SmallVector<ReassociationIndices> flat = {{0, 1}};
  Value expert =
      tensor::CollapseShapeOp::create(builder, l, routing.getResult(0), flat);
  Value dest =
      tensor::CollapseShapeOp::create(builder, l, routing.getResult(1), flat);
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
               maps, SmallVector<utils::IteratorType>{parallel, reduction},
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
  Value sendCounts =
      sumOver({builder.getIndexAttr(n)}, dest, {map2(2, {1})},
              [&](OpBuilder &b, Location at, ValueRange args) {
                Value r = toI64(b, at, linalg::IndexOp::create(b, at, 0));
                return count(b, at,
                             arith::CmpIOp::create(
                                 b, at, arith::CmpIPredicate::eq, args[0], r));
              });

  // 3. Each item's slot in the send buffer: a stable sort by destination,
  //    pos[i] = #{j : (dest[j], j) < (dest[i], i)},
  Value pos = sumOver(
      items, ValueRange{dest, dest}, {map2(2, {0}), map2(2, {1})},
      [&](OpBuilder &b, Location at, ValueRange args) {
        Value di = args[0], dj = args[1];
        Value i = linalg::IndexOp::create(b, at, 0);
        Value j = linalg::IndexOp::create(b, at, 1);
        Value lower =
            arith::CmpIOp::create(b, at, arith::CmpIPredicate::slt, dj, di);
        Value same =
            arith::CmpIOp::create(b, at, arith::CmpIPredicate::eq, dj, di);
        Value earlier =
            arith::CmpIOp::create(b, at, arith::CmpIPredicate::ult, j, i);
        return count(
            b, at,
            arith::OrIOp::create(b, at, lower,
                                 arith::AndIOp::create(b, at, same, earlier)));
      });
  //    and its inverse, the item in each slot: source[p] = the i with
  //    pos[i] = p.
  Value source = sumOver(
      items, pos, {map2(2, {1})},
      [&](OpBuilder &b, Location at, ValueRange args) {
        Value p = toI64(b, at, linalg::IndexOp::create(b, at, 0));
        Value i = toI64(b, at, linalg::IndexOp::create(b, at, 1));
        Value hit =
            arith::CmpIOp::create(b, at, arith::CmpIPredicate::eq, args[0], p);
        return arith::SelectOp::create(b, at, hit, i, constI64(b, at, 0))
            .getResult();
      });

  // 4. The send buffers: token rows and expert ids in slot order.
  OpFoldResult hidden = tensor::getMixedSizes(builder, l, x)[1];
  Value rowsInit = tensor::EmptyOp::create(
      builder, l, SmallVector<OpFoldResult>{items[0], hidden},
      xType.getElementType());
  Value rows =
      linalg::GenericOp::create(
          builder, l, TypeRange{rowsInit.getType()}, ValueRange{source},
          ValueRange{rowsInit},
          SmallVector<AffineMap>{map2(2, {0}), map2(2, {0, 1})},
          SmallVector<utils::IteratorType>(2, parallel),
          [&](OpBuilder &b, Location at, ValueRange args) {
            Value token = arith::DivUIOp::create(
                b, at, toIndex(b, at, args[0]),
                arith::ConstantIndexOp::create(b, at, numChoices));
            Value h = linalg::IndexOp::create(b, at, 1);
            linalg::YieldOp::create(b, at,
                                    ValueRange{tensor::ExtractOp::create(
                                        b, at, x, ValueRange{token, h})});
          })
          .getResult(0);
  Value sortedIds =
      linalg::GenericOp::create(
          builder, l, TypeRange{dest.getType()}, ValueRange{source},
          ValueRange{tensor::EmptyOp::create(builder, l, items, i64)},
          SmallVector<AffineMap>{map2(1, {0}), map2(1, {0})},
          SmallVector<utils::IteratorType>{parallel},
          [&](OpBuilder &b, Location at, ValueRange args) {
            linalg::YieldOp::create(
                b, at,
                ValueRange{tensor::ExtractOp::create(
                    b, at, expert, ValueRange{toIndex(b, at, args[0])})});
          })
          .getResult(0);

  // 5. Dispatch: the counts each rank receives, then rows and ids.
  auto countsType = RankedTensorType::get({n}, i64);
  Value recvCounts = AllToAllOp::create(builder, l, countsType, sendCounts,
                                        meshRef, axes, int64_t{0}, int64_t{0});
  auto rowsType = RankedTensorType::get(
      {ShapedType::kDynamic, xType.getDimSize(1)}, xType.getElementType());
  Value recvRows = AllToAllVOp::create(builder, l, rowsType, rows, sendCounts,
                                       recvCounts, meshRef, axes);
  auto idsRecvType = RankedTensorType::get({ShapedType::kDynamic}, i64);
  Value recvIds = AllToAllVOp::create(builder, l, idsRecvType, sortedIds,
                                      sendCounts, recvCounts, meshRef, axes);

  // 6. The local experts: ids relative to this rank's first expert.
  Value base =
      arith::MulIOp::create(builder, l, toI64(builder, l, pb.coord(axis)),
                            constI64(builder, l, perRank));
  OpFoldResult received = tensor::getMixedSizes(builder, l, recvIds)[0];
  Value localIdsInit = tensor::EmptyOp::create(
      builder, l, SmallVector<OpFoldResult>{received, builder.getIndexAttr(1)},
      i64);
  Value localIds =
      linalg::GenericOp::create(
          builder, l, TypeRange{localIdsInit.getType()},
          ValueRange{recvIds, base}, ValueRange{localIdsInit},
          SmallVector<AffineMap>{map2(2, {0}),
                                 AffineMap::get(2, 0, {}, builder.getContext()),
                                 builder.getMultiDimIdentityMap(2)},
          SmallVector<utils::IteratorType>(2, parallel),
          [&](OpBuilder &b, Location at, ValueRange args) {
            linalg::YieldOp::create(
                b, at,
                ValueRange{arith::SubIOp::create(b, at, args[0], args[1])});
          })
          .getResult(0);
  auto expertOutType =
      RankedTensorType::get({ShapedType::kDynamic, 1, resultType.getDimSize(2)},
                            resultType.getElementType());
  Value computed =
      RoutedMatmulOp::create(builder, l, expertOutType, recvRows, localIds, w);
  Value computedRows = tensor::CollapseShapeOp::create(
      builder, l, computed, SmallVector<ReassociationIndices>{{0, 1}, {2}});

  // 7. Combine: results back to their tokens' ranks, out of slot order.
  auto backType =
      RankedTensorType::get({ShapedType::kDynamic, resultType.getDimSize(2)},
                            resultType.getElementType());
  Value back = AllToAllVOp::create(builder, l, backType, computedRows,
                                   recvCounts, sendCounts, meshRef, axes);
  SmallVector<OpFoldResult> outSizes = {
      tensor::getMixedSizes(builder, l, x)[0], builder.getIndexAttr(numChoices),
      tensor::getMixedSizes(builder, l, w)[2]};
  Value outInit = tensor::EmptyOp::create(builder, l, outSizes,
                                          resultType.getElementType());
  Value result =
      linalg::GenericOp::create(
          builder, l, TypeRange{outInit.getType()}, ValueRange{},
          ValueRange{outInit},
          SmallVector<AffineMap>{builder.getMultiDimIdentityMap(3)},
          SmallVector<utils::IteratorType>(3, parallel),
          [&](OpBuilder &b, Location at, ValueRange) {
            Value t = linalg::IndexOp::create(b, at, 0);
            Value k = linalg::IndexOp::create(b, at, 1);
            Value f = linalg::IndexOp::create(b, at, 2);
            Value item = arith::AddIOp::create(
                b, at,
                arith::MulIOp::create(
                    b, at, t,
                    arith::ConstantIndexOp::create(b, at, numChoices)),
                k);
            Value slot = toIndex(
                b, at, tensor::ExtractOp::create(b, at, pos, ValueRange{item}));
            linalg::YieldOp::create(b, at,
                                    ValueRange{tensor::ExtractOp::create(
                                        b, at, back, ValueRange{slot, f})});
          })
          .getResult(0);
  return pb.castTo(result, resultType);
}
