//===- CostEstimator.cpp - modelled time of the ops of a program ----------===//
//
// The default estimator times compute with the roofline of CostModel.h
// (flops of linalg loop nests, bytes of the tensors an op reads and writes)
// and collectives with the collective model, sized as the comm report sizes
// them (CommAnalysis.h). The table estimator looks costs up by op name.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/CostEstimator.h"

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Analysis/CommAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::dtensor;

CostEstimator::~CostEstimator() = default;

/// Whether `op` only reinterprets or renames a tensor (or produces one
/// without data): no memory traffic of its own.
static bool isViewOrCast(Operation *op) {
  if (isa<tensor::EmptyOp, tensor::CastOp, tensor::BitcastOp,
          tensor::ExpandShapeOp, tensor::CollapseShapeOp,
          tensor::ExtractSliceOp, tensor::DimOp, tensor::RankOp,
          ViewLikeOpInterface>(op))
    return true;
  // Casts of scalars (index_cast of a coordinate, ...) are free; a cast of
  // a tensor (arith.extf on a tensor) converts every element.
  if (isa<CastOpInterface>(op))
    return llvm::none_of(op->getResultTypes(), llvm::IsaPred<ShapedType>);
  return false;
}

OpResource CostEstimator::classify(Operation *op) {
  if (isa<WaitOp>(op))
    return OpResource::Wait;
  if (isa<AsyncStartOp, CollectiveOpInterface>(op))
    return OpResource::Communication;
  if (op->hasTrait<OpTrait::ConstantLike>() ||
      op->hasTrait<OpTrait::IsTerminator>() || isa<CoordOp>(op) ||
      isViewOrCast(op))
    return OpResource::Free;
  // Scalar bookkeeping (index arithmetic on coordinates, ...): no tensors,
  // no regions, no side effects.
  if (op->getNumRegions() == 0 &&
      llvm::none_of(op->getOperandTypes(), llvm::IsaPred<ShapedType>) &&
      llvm::none_of(op->getResultTypes(), llvm::IsaPred<ShapedType>) &&
      isMemoryEffectFree(op))
    return OpResource::Free;
  return OpResource::Compute;
}

/// Bytes of the tensors in `types`, static dims only.
static int64_t getTensorBytes(TypeRange types) {
  int64_t bytes = 0;
  bool hasDynamic = false;
  for (Type type : types)
    if (std::optional<int64_t> size = getStaticTensorBytes(type, hasDynamic))
      bytes += *size;
  return bytes;
}

/// Whether the body of a linalg op multiplies and accumulates (a
/// contraction written as a generic): two flops per iteration.
static bool hasMulAddBody(linalg::LinalgOp op) {
  if (op->getNumRegions() != 1 || op->getRegion(0).empty())
    return false;
  bool mul = false, add = false;
  for (Operation &inner : op->getRegion(0).front()) {
    mul |= isa<arith::MulFOp, arith::MulIOp>(inner);
    add |= isa<arith::AddFOp, arith::AddIOp>(inner);
  }
  return mul && add;
}

namespace {
class DefaultCostEstimator : public CostEstimator {
public:
  explicit DefaultCostEstimator(const HardwareModel &hw) : hw(hw) {}

  double estimateUs(Operation *op) override {
    switch (classify(op)) {
    case OpResource::Free:
    case OpResource::Wait:
      return 0;
    case OpResource::Communication:
      return estimateCollective(op);
    case OpResource::Compute:
      return estimateCompute(op);
    }
    return 0;
  }

private:
  double estimateCollective(Operation *op) {
    if (auto start = dyn_cast<AsyncStartOp>(op)) {
      op = start.getCollective();
      if (!op)
        return 0;
    }
    auto collective = dyn_cast<CollectiveOpInterface>(op);
    if (!collective)
      return 0;
    FlatSymbolRefAttr meshRef = collective.getMeshAttr();
    MeshOp mesh =
        lookupMesh(collective, meshRef, /*diagnose=*/false, &symbolTable);
    if (!mesh || !canAnalyse(collective, mesh))
      return 0;
    // A fused collective + matmul takes its ring pipeline's time, the
    // model the fusion gate decides by.
    if (std::optional<double> fused = estimateFused(collective, mesh))
      return *fused;
    FailureOr<CollectiveTraffic> traffic =
        getCollectiveTraffic(collective, symbolTable);
    if (failed(traffic))
      return 0;
    // The group of rank 0 along the axes, placed on nodes as the mesh's
    // ranks are.
    CollectiveGroup group =
        meshGroup(hw, mesh.getShape(), collective.getMeshAxes());
    return collectiveTimeUs(hw, traffic->modelKind, traffic->fullBufferBytes,
                            group);
  }

  /// The pipelined time of an all_gather_matmul or matmul_reduce_scatter
  /// (static shapes: canAnalyse checked them), or std::nullopt for other
  /// collectives.
  std::optional<double> estimateFused(CollectiveOpInterface op, MeshOp mesh) {
    FusedMatmulShape shape;
    shape.groupSize = mesh.getGroupSize(op.getMeshAxes());
    if (auto fused = dyn_cast<AllGatherMatmulOp>(op.getOperation())) {
      auto gathered = cast<RankedTensorType>(fused.getGathered().getType());
      shape.k = gathered.getShape().back();
      shape.rows = shape.k > 0 ? gathered.getNumElements() / shape.k : 0;
      shape.elementBytes =
          llvm::divideCeil(gathered.getElementTypeBitWidth(), 8);
      for (Value b : fused.getBs())
        shape.ns.push_back(
            cast<RankedTensorType>(b.getType()).getShape().back());
      return estimateAllGatherMatmul(hw, shape,
                                     !fused.getGathered().use_empty())
          .pipelinedUs();
    }
    if (auto fused = dyn_cast<MatmulReduceScatterOp>(op.getOperation())) {
      auto a = cast<RankedTensorType>(fused.getA().getType());
      auto b = cast<RankedTensorType>(fused.getB().getType());
      shape.k = a.getShape().back();
      shape.rows = shape.k > 0 ? a.getNumElements() / shape.k : 0;
      shape.ns.push_back(b.getShape().back());
      shape.elementBytes = llvm::divideCeil(a.getElementTypeBitWidth(), 8);
      bool alongColumns =
          static_cast<int64_t>(fused.getScatterDim()) == a.getRank() - 1;
      return estimateMatmulReduceScatter(hw, shape, alongColumns).pipelinedUs();
    }
    return std::nullopt;
  }

  /// Whether getCollectiveTraffic will succeed (it reports a diagnostic
  /// otherwise; an estimate of an unverified op is 0 instead).
  bool canAnalyse(CollectiveOpInterface op, MeshOp mesh) {
    for (int64_t axis : op.getMeshAxes())
      if (axis < 0 || axis >= mesh.getRank())
        return false;
    bool hasDynamic = false;
    auto sizable = [&](Type type) {
      return getStaticTensorBytes(type, hasDynamic).has_value();
    };
    if (!llvm::all_of(op->getOperandTypes(), sizable) ||
        !llvm::all_of(op->getResultTypes(), sizable))
      return false;
    if (auto fused = dyn_cast<MatmulReduceScatterOp>(op.getOperation())) {
      auto a = cast<RankedTensorType>(fused.getA().getType());
      auto b = cast<RankedTensorType>(fused.getB().getType());
      return a.getRank() >= 1 && b.getRank() >= 1;
    }
    return true;
  }

  double estimateCompute(Operation *op) {
    int64_t bytes = getTensorBytes(op->getOperandTypes()) +
                    getTensorBytes(op->getResultTypes());
    double flops = 0;
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      double iterations = 1;
      for (int64_t size : linalgOp.getStaticLoopRanges())
        if (!ShapedType::isDynamic(size))
          iterations *= static_cast<double>(size);
      bool multiplyAccumulate = linalg::isaContractionOpInterface(linalgOp) ||
                                hasMulAddBody(linalgOp);
      flops = (multiplyAccumulate ? 2 : 1) * iterations;
    } else {
      // Elementwise-like: one operation per result element.
      for (Type type : op->getResultTypes())
        if (auto shaped = dyn_cast<ShapedType>(type)) {
          double elements = 1;
          for (int64_t size : shaped.getShape())
            if (!ShapedType::isDynamic(size))
              elements *= static_cast<double>(size);
          flops += elements;
        }
    }
    return computeTimeUs(hw, flops, bytes);
  }

  HardwareModel hw;
  SymbolTableCollection symbolTable;
};

class TableCostEstimator : public CostEstimator {
public:
  TableCostEstimator(llvm::StringMap<double> table,
                     std::unique_ptr<CostEstimator> fallback)
      : table(std::move(table)), fallback(std::move(fallback)) {}

  double estimateUs(Operation *op) override {
    // An async start costs what its collective costs.
    if (auto start = dyn_cast<AsyncStartOp>(op))
      if (Operation *collective = start.getCollective())
        op = collective;
    auto it = table.find(op->getName().getStringRef());
    if (it != table.end())
      return it->second;
    OpResource resource = classify(op);
    if (resource == OpResource::Free || resource == OpResource::Wait)
      return 0;
    auto byDefault = table.find("default");
    if (byDefault != table.end())
      return byDefault->second;
    return fallback ? fallback->estimateUs(op) : 0;
  }

  OpResource classify(Operation *op) override {
    return fallback ? fallback->classify(op) : CostEstimator::classify(op);
  }

private:
  llvm::StringMap<double> table;
  std::unique_ptr<CostEstimator> fallback;
};
} // namespace

std::unique_ptr<CostEstimator>
mlir::dtensor::createDefaultCostEstimator(const HardwareModel &hw) {
  return std::make_unique<DefaultCostEstimator>(hw);
}

std::unique_ptr<CostEstimator> mlir::dtensor::createTableCostEstimator(
    llvm::StringMap<double> table, std::unique_ptr<CostEstimator> fallback) {
  return std::make_unique<TableCostEstimator>(std::move(table),
                                              std::move(fallback));
}
