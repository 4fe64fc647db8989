//===- DecomposeFused.cpp - fused comm + compute ops to ring pipelines ----===//
//
// Both fused ops become n unrolled steps over their group of n processes,
// each step a matmul on one chunk overlapped with an asynchronous ring shift
// (dtensor.permute inside dtensor.async_start, completed by dtensor.wait):
//
// all_gather_matmul(A, B_1..B_k, gather_dim) on the process with group index
// r: at step s it holds the shard of group index (r + s) mod n (its own at
// s = 0). It starts passing that shard to index r - 1 (and so receives the
// shard of index r + s + 1 from r + 1), multiplies the shard it holds by
// every B_i, and inserts the products and, where the gathered A is used, the
// shard itself at row block (r + s) mod n along gather_dim: all_gather's
// group-order concatenation. The shard in flight and the one being
// multiplied are separate buffers (double buffering).
//
// matmul_reduce_scatter(A, B, scatter_dim) on group index r: at step s
// (0 <= s < n) it computes the partial product of chunk (r - s - 1) mod n
// along scatter_dim (a row block of A times B, or A times a column block of
// B for the last dim). From step 1 on, the accumulator is passed to index
// r + 1 while the next partial product is computed, and the accumulator
// received from r - 1, which holds that process's chunk of the previous
// step, ((r - 1) - (s - 1) - 1) mod n, the same chunk, is added to it.
// After the last step the accumulator holds chunk r summed over the group,
// the reduce_scatter's result for index r; avg divides it by n.
//
//===----------------------------------------------------------------------===//

#include "RowMatmul.h"

#include "dtensor/Overlap/FusedOps.h"
#include "dtensor/Overlap/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_DECOMPOSEFUSEDPASS
#include "dtensor/Overlap/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// Builds the pipeline of one fused op at the builder's insertion point.
class PipelineBuilder {
public:
  PipelineBuilder(OpBuilder &builder, Operation *fused, int64_t groupSize)
      : b(builder), loc(fused->getLoc()), groupSize(groupSize),
        collective(cast<CollectiveOpInterface>(fused)) {}

  /// Results of all_gather_matmul: the gathered A (null if !needGathered)
  /// and one product per B.
  SmallVector<Value> allGatherMatmul(AllGatherMatmulOp op, bool needGathered);
  /// Result of matmul_reduce_scatter.
  Value matmulReduceScatter(MatmulReduceScatterOp op);

private:
  Value index(int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  }
  OpFoldResult mul(OpFoldResult a, OpFoldResult c);
  OpFoldResult divide(OpFoldResult a, int64_t c);
  /// (rank + step) mod groupSize.
  Value chunkIndex(Value rank, int64_t step);
  RankedTensorType typeOf(ArrayRef<OpFoldResult> sizes, Type elementType);
  Value empty(ArrayRef<OpFoldResult> sizes, Type elementType);
  /// `a @ b` for A of rank 2 or 3 (rows, then the contracted dim) and a 2-D
  /// B: a linalg.matmul, over A's rows flattened where A has rank 3.
  Value matmul(Value a, Value bMatrix);
  /// Starts sending `value` along the ring `perm`; returns the future.
  Value startPermute(Value value, ArrayRef<int64_t> perm);
  Value wait(Value future, Type type) {
    return WaitOp::create(b, loc, type, future).getResult();
  }
  Value castTo(Value value, Type type) {
    if (value.getType() == type)
      return value;
    return tensor::CastOp::create(b, loc, type, value).getResult();
  }

  OpBuilder &b;
  Location loc;
  int64_t groupSize;
  CollectiveOpInterface collective;
};

OpFoldResult PipelineBuilder::mul(OpFoldResult a, OpFoldResult c) {
  std::optional<int64_t> ca = getConstantIntValue(a);
  std::optional<int64_t> cc = getConstantIntValue(c);
  if (ca && cc)
    return b.getIndexAttr(*ca * *cc);
  if (ca == 0 || cc == 0)
    return b.getIndexAttr(0);
  if (ca == 1)
    return c;
  if (cc == 1)
    return a;
  return arith::MulIOp::create(b, loc,
                               getValueOrCreateConstantIndexOp(b, loc, a),
                               getValueOrCreateConstantIndexOp(b, loc, c))
      .getResult();
}

OpFoldResult PipelineBuilder::divide(OpFoldResult a, int64_t c) {
  if (std::optional<int64_t> ca = getConstantIntValue(a))
    return b.getIndexAttr(*ca / c);
  return arith::DivUIOp::create(b, loc,
                                getValueOrCreateConstantIndexOp(b, loc, a),
                                index(c))
      .getResult();
}

Value PipelineBuilder::chunkIndex(Value rank, int64_t step) {
  step %= groupSize;
  if (step == 0)
    return rank;
  Value sum = arith::AddIOp::create(b, loc, rank, index(step));
  return arith::RemUIOp::create(b, loc, sum, index(groupSize));
}

RankedTensorType PipelineBuilder::typeOf(ArrayRef<OpFoldResult> sizes,
                                         Type elementType) {
  SmallVector<int64_t> shape;
  for (OpFoldResult size : sizes)
    shape.push_back(getConstantIntValue(size).value_or(ShapedType::kDynamic));
  return RankedTensorType::get(shape, elementType);
}

Value PipelineBuilder::empty(ArrayRef<OpFoldResult> sizes, Type elementType) {
  return tensor::EmptyOp::create(b, loc, sizes, elementType).getResult();
}

Value PipelineBuilder::matmul(Value a, Value bMatrix) {
  auto aType = cast<RankedTensorType>(a.getType());
  Type elementType = aType.getElementType();
  SmallVector<OpFoldResult> aSizes;
  Value rowsByK = a;
  if (aType.getRank() == 3) {
    aSizes = tensor::getMixedSizes(b, loc, a);
    rowsByK = tensor::CollapseShapeOp::create(
        b, loc, a, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  }
  OpFoldResult rows = tensor::getMixedSize(b, loc, rowsByK, 0);
  OpFoldResult cols = tensor::getMixedSize(b, loc, bMatrix, 1);
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  Value init = linalg::FillOp::create(b, loc, zero,
                                      empty({rows, cols}, elementType))
                   .getResult(0);
  Value product = linalg::MatmulOp::create(b, loc, ValueRange{rowsByK, bMatrix},
                                           ValueRange{init})
                      .getResult(0);
  if (aType.getRank() != 3)
    return product;
  SmallVector<OpFoldResult> shape = {aSizes[0], aSizes[1], cols};
  return tensor::ExpandShapeOp::create(
             b, loc, typeOf(shape, elementType), product,
             ArrayRef<ReassociationIndices>{{0, 1}, {2}}, shape)
      .getResult();
}

Value PipelineBuilder::startPermute(Value value, ArrayRef<int64_t> perm) {
  auto type = cast<RankedTensorType>(value.getType());
  auto start = AsyncStartOp::create(
      b, loc, TypeRange{FutureType::get(b.getContext(), type)});
  OpBuilder inner(b.getContext());
  inner.setInsertionPointToStart(inner.createBlock(&start.getBody()));
  auto permute = PermuteOp::create(inner, loc, type, value,
                                   collective.getMeshAttr(),
                                   inner.getDenseI64ArrayAttr(
                                       collective.getMeshAxes()),
                                   inner.getDenseI64ArrayAttr(perm));
  YieldOp::create(inner, loc, permute.getResult());
  return start.getFutures()[0];
}

SmallVector<Value> PipelineBuilder::allGatherMatmul(AllGatherMatmulOp op,
                                                    bool needGathered) {
  Value shard = op.getA();
  if (groupSize == 1) {
    // The gathered A is the shard itself.
    SmallVector<Value> results = {castTo(shard, op.getGathered().getType())};
    for (auto [bMatrix, result] : llvm::zip(op.getBs(), op.getResults()))
      results.push_back(castTo(matmul(shard, bMatrix), result.getType()));
    return results;
  }
  auto shardType = cast<RankedTensorType>(shard.getType());
  Type elementType = shardType.getElementType();
  int64_t rank = shardType.getRank();
  int64_t gatherDim = op.getGatherDim();
  SmallVector<OpFoldResult> chunkSizes = tensor::getMixedSizes(b, loc, shard);
  OpFoldResult chunkRows = chunkSizes[gatherDim];
  SmallVector<OpFoldResult> fullSizes = chunkSizes;
  fullSizes[gatherDim] = mul(chunkRows, b.getIndexAttr(groupSize));

  // Destinations: the gathered A and one product per B.
  Value gathered = needGathered ? empty(fullSizes, elementType) : Value();
  SmallVector<Value> products;
  SmallVector<SmallVector<OpFoldResult>> productChunkSizes;
  for (Value bMatrix : op.getBs()) {
    OpFoldResult cols = tensor::getMixedSize(b, loc, bMatrix, 1);
    SmallVector<OpFoldResult> sizes = fullSizes;
    sizes.back() = cols;
    products.push_back(empty(sizes, elementType));
    SmallVector<OpFoldResult> chunk = chunkSizes;
    chunk.back() = cols;
    productChunkSizes.push_back(chunk);
  }

  // Every process passes the shard it holds to group index r - 1.
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < groupSize; ++i)
    perm.push_back((i + groupSize - 1) % groupSize);
  Value groupRank =
      CoordOp::create(b, loc, collective.getMeshAttr(),
                      b.getDenseI64ArrayAttr(collective.getMeshAxes()))
          .getResult();
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  Value current = shard;
  for (int64_t step = 0; step < groupSize; ++step) {
    Value future;
    if (step + 1 < groupSize)
      future = startPermute(current, perm);
    // `current` is the shard of group index (r + step) mod n.
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    offsets[gatherDim] = mul(chunkIndex(groupRank, step), chunkRows);
    for (auto [i, bMatrix] : llvm::enumerate(op.getBs())) {
      Value product = matmul(current, bMatrix);
      products[i] = tensor::InsertSliceOp::create(b, loc, product, products[i],
                                                  offsets, productChunkSizes[i],
                                                  strides)
                        .getResult();
    }
    if (gathered)
      gathered = tensor::InsertSliceOp::create(b, loc, current, gathered,
                                               offsets, chunkSizes, strides)
                     .getResult();
    if (future)
      current = wait(future, shardType);
  }

  SmallVector<Value> results;
  results.push_back(gathered ? castTo(gathered, op.getGathered().getType())
                             : Value());
  for (auto [product, result] : llvm::zip(products, op.getResults()))
    results.push_back(castTo(product, result.getType()));
  return results;
}

Value PipelineBuilder::matmulReduceScatter(MatmulReduceScatterOp op) {
  Value a = op.getA(), bMatrix = op.getB();
  auto aType = cast<RankedTensorType>(a.getType());
  Type elementType = aType.getElementType();
  int64_t rank = aType.getRank();
  int64_t scatterDim = op.getScatterDim();
  if (groupSize == 1) // reduce and scatter over one process: the product
    return castTo(matmul(a, bMatrix), op.getResult().getType());
  bool alongColumns = scatterDim == rank - 1;
  SmallVector<OpFoldResult> aSizes = tensor::getMixedSizes(b, loc, a);
  SmallVector<OpFoldResult> bSizes = tensor::getMixedSizes(b, loc, bMatrix);
  OpFoldResult chunk =
      divide(alongColumns ? bSizes[1] : aSizes[scatterDim], groupSize);

  // The partial product of chunk `index` along scatter_dim.
  auto partial = [&](Value chunkIdx) -> Value {
    OpFoldResult offset = mul(chunkIdx, chunk);
    if (alongColumns) {
      Value columns = tensor::ExtractSliceOp::create(
          b, loc, bMatrix, {b.getIndexAttr(0), offset}, {bSizes[0], chunk},
          {b.getIndexAttr(1), b.getIndexAttr(1)});
      return matmul(a, columns);
    }
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    offsets[scatterDim] = offset;
    SmallVector<OpFoldResult> sizes = aSizes;
    sizes[scatterDim] = chunk;
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    Value rows =
        tensor::ExtractSliceOp::create(b, loc, a, offsets, sizes, strides);
    return matmul(rows, bMatrix);
  };

  // Every process passes its accumulator to group index r + 1.
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < groupSize; ++i)
    perm.push_back((i + 1) % groupSize);
  Value groupRank =
      CoordOp::create(b, loc, collective.getMeshAttr(),
                      b.getDenseI64ArrayAttr(collective.getMeshAxes()))
          .getResult();
  // Chunk (r - step - 1) mod n at each step.
  auto chunkAt = [&](int64_t step) {
    return chunkIndex(groupRank, groupSize - 1 - step);
  };
  Value accumulator = partial(chunkAt(0));
  for (int64_t step = 1; step < groupSize; ++step) {
    Type type = accumulator.getType();
    Value future = startPermute(accumulator, perm);
    Value part = partial(chunkAt(step));
    Value received = wait(future, type);
    Value init = empty(tensor::getMixedSizes(b, loc, part), elementType);
    accumulator = linalg::AddOp::create(b, loc, ValueRange{received, part},
                                        ValueRange{init})
                      .getResult(0);
  }

  if (op.getReduce() == ReduceKind::Avg) {
    // Sum, then divide by the group size (truncating for integers), as the
    // runtime's avg does.
    auto type = cast<RankedTensorType>(accumulator.getType());
    Value divisor =
        isa<FloatType>(elementType)
            ? arith::ConstantOp::create(
                  b, loc, b.getFloatAttr(elementType, double(groupSize)))
                  .getResult()
            : arith::ConstantOp::create(
                  b, loc, b.getIntegerAttr(elementType, groupSize))
                  .getResult();
    SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(type.getRank()));
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    Value init =
        empty(tensor::getMixedSizes(b, loc, accumulator), elementType);
    accumulator =
        linalg::GenericOp::create(
            b, loc, type, ValueRange{accumulator}, ValueRange{init}, maps,
            iterators,
            [&](OpBuilder &nb, Location l, ValueRange args) {
              Value quotient =
                  isa<FloatType>(elementType)
                      ? arith::DivFOp::create(nb, l, args[0], divisor)
                            .getResult()
                      : arith::DivSIOp::create(nb, l, args[0], divisor)
                            .getResult();
              linalg::YieldOp::create(nb, l, quotient);
            })
            .getResult(0);
  }
  return castTo(accumulator, op.getResult().getType());
}

} // namespace

LogicalResult mlir::dtensor::decomposeFusedOp(Operation *op) {
  if (!isa<AllGatherMatmulOp, MatmulReduceScatterOp>(op))
    return op->emitError("not a fused collective");
  auto collective = cast<CollectiveOpInterface>(op);
  MeshOp mesh = lookupMesh(op, collective.getMeshAttr());
  if (!mesh)
    return failure();
  int64_t groupSize = mesh.getGroupSize(collective.getMeshAxes());
  if (groupSize < 1)
    return op->emitError("empty group");
  // Slices of a size-0 dimension are invalid IR, and there is nothing to
  // overlap: dtensor-fuse-collective-matmul never fuses such an op.
  if (llvm::any_of(op->getOperandTypes(), hasEmptyDim) ||
      llvm::any_of(op->getResultTypes(), hasEmptyDim))
    return op->emitError("cannot decompose a fused op on a tensor with an "
                         "empty dimension; use the unfused collective and "
                         "matmul");

  // An asynchronous fused op runs its pipeline where it is started; the
  // pipeline overlaps its own steps.
  auto start = dyn_cast_or_null<AsyncStartOp>(op->getParentOp());
  SmallVector<WaitOp> waits;
  if (start) {
    if (start.getFutures().size() != op->getNumResults())
      return start.emitError("malformed dtensor.async_start");
    for (Value future : start.getFutures()) {
      if (!future.hasOneUse())
        return start.emitError("malformed dtensor.async_start");
      auto wait = dyn_cast<WaitOp>(*future.getUsers().begin());
      if (!wait)
        return start.emitError("malformed dtensor.async_start");
      waits.push_back(wait);
    }
  }
  auto resultValue = [&](unsigned i) -> Value {
    return start ? Value(waits[i].getResult()) : op->getResult(i);
  };

  OpBuilder builder(start ? start.getOperation() : op);
  PipelineBuilder pipeline(builder, op, groupSize);
  SmallVector<Value> results;
  if (auto agmm = dyn_cast<AllGatherMatmulOp>(op))
    results = pipeline.allGatherMatmul(agmm, !resultValue(0).use_empty());
  else
    results.push_back(
        pipeline.matmulReduceScatter(cast<MatmulReduceScatterOp>(op)));

  for (auto [i, value] : llvm::enumerate(results))
    if (value)
      resultValue(i).replaceAllUsesWith(value);
  if (start) {
    for (WaitOp wait : waits)
      wait.erase();
    start.erase();
  } else {
    op->erase();
  }
  return success();
}

LogicalResult mlir::dtensor::decomposeFusedOps(Operation *root) {
  SmallVector<Operation *> fused;
  root->walk([&](Operation *op) {
    if (isa<AllGatherMatmulOp, MatmulReduceScatterOp>(op))
      fused.push_back(op);
  });
  for (Operation *op : fused)
    if (failed(decomposeFusedOp(op)))
      return failure();
  return success();
}

namespace {
struct DecomposeFusedPass
    : dtensor::impl::DecomposeFusedPassBase<DecomposeFusedPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(decomposeFusedOps(getOperation())))
      signalPassFailure();
  }
};
} // namespace
