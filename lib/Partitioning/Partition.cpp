//===- Partition.cpp - global-view functions to per-rank programs ---------===//
//
// Rewrites each propagated, planned function into the program one process
// runs: local tensor types, the same ops on local tensors (with the index
// and shape fix-ups uneven shards need), and for every single-step
// redistribution its collective or local step (RedistributeToCollectives.cpp;
// the expert-parallel routed matmul is in PartitionMoE.cpp).
//
//===----------------------------------------------------------------------===//

#include "dtensor/Partitioning/Passes.h"

#include "Partitioning.h"

#include "dtensor/Sharding/Layout.h"
#include "dtensor/Sharding/ShardingRules.h"
#include "dtensor/Support/ChunkMath.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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
      : func(func), mesh(mesh), builder(func.getContext()),
        pb(builder, mesh, func.getLoc()) {}

  LogicalResult run();

private:
  Location loc() { return pb.getLoc(); }
  LayoutAttr layoutOf(Value global) { return pb.layoutOf(global); }
  RankedTensorType localType(Value global) { return pb.localType(global); }

  LogicalResult partitionOp(Operation &op);
  LogicalResult partitionRedistribute(RedistributeOp op);
  LogicalResult partitionCreation(Operation &op);
  LogicalResult partitionFor(scf::ForOp op);
  LogicalResult partitionGather(tensor::GatherOp op, const ShardingSpec &spec);
  LogicalResult partitionRoutedMatmul(RoutedMatmulOp op);
  LogicalResult checkStrategy(Operation &op, const ShardingSpec &spec);
  void fixLinalgIndices(linalg::LinalgOp local, Operation &global,
                        const ShardingSpec &spec);

  func::FuncOp func;
  MeshOp mesh;
  OpBuilder builder;
  PerRankBuilder pb;
  IRMapping map;
};

LogicalResult Partitioner::partitionRedistribute(RedistributeOp op) {
  FailureOr<Value> local =
      lowerRedistributionStep(pb, op, map.lookup(op.getInput()));
  if (failed(local))
    return failure();
  map.map(op.getResult(), *local);
  return success();
}

LogicalResult Partitioner::partitionRoutedMatmul(RoutedMatmulOp op) {
  FailureOr<Value> local = dtensor::partitionRoutedMatmul(
      pb, op, map.lookup(op.getX()), map.lookup(op.getIds()),
      map.lookup(op.getW()));
  if (failed(local))
    return failure();
  map.map(op.getResult(), *local);
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
    sizes.push_back(pb.localExtent(globalType, layout, dim).second);
  if (isa<tensor::EmptyOp>(op)) {
    Value empty = tensor::EmptyOp::create(builder, loc(), sizes,
                                          local.getElementType());
    map.map(global, pb.castTo(empty, local));
    return success();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Value empty =
        tensor::EmptyOp::create(builder, loc(), sizes, local.getElementType());
    Value filled =
        linalg::FillOp::create(builder, loc(), map.lookup(fill.value()), empty)
            .getResult(0);
    map.map(global, pb.castTo(filled, local));
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
  map.map(global, pb.castTo(filled, local));
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
        offsets[loop] = pb.localExtent(type, layoutOf(value), dim).first;
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
  auto [rowOffset, rowCount] = pb.localExtent(globalTable, tableLayout, 0);
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
    source = pb.padAlong(table, 0,
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

LogicalResult Partitioner::partitionOp(Operation &op) {
  pb.setLoc(op.getLoc());
  if (auto redistribute = dyn_cast<RedistributeOp>(op))
    return partitionRedistribute(redistribute);
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
  if (auto routed = dyn_cast<RoutedMatmulOp>(op);
      routed && hasShardedExperts(routed))
    return partitionRoutedMatmul(routed);

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
        shape.push_back(pb.constant(local.getDimSize(dim)));
      else if (auto size = dyn_cast<Value>(globalShape[dim]))
        shape.push_back(map.lookupOrDefault(size)); // Replicated, dynamic.
      else
        shape.push_back(pb.localExtent(global, layout, dim).second);
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
        sizes[dim] = pb.localExtent(source, layout, dim).second;
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
  pb.setEntry(newEntry);
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
