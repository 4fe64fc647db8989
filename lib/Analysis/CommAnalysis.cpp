//===- CommAnalysis.cpp - static communication report ---------------------===//
//
// Walks per-rank functions, finds every op of the collective interface
// (inside dtensor.async_start too) and sums, per op mnemonic, the bytes each
// rank contributes and the time collectiveTimeUs models for them.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/CommAnalysis.h"

#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dtensor;

void CollectiveStats::add(const CollectiveTraffic &traffic, double time) {
  ++count;
  if (traffic.isAsync)
    ++asyncCount;
  bytesPerRank += traffic.bytesPerRank;
  timeUs += time;
  hasDynamic |= traffic.hasDynamic;
}

/// Bits of one element, or std::nullopt for element types without a size.
static std::optional<int64_t> getElementBits(Type type) {
  if (type.isIntOrFloat())
    return type.getIntOrFloatBitWidth();
  if (isa<IndexType>(type))
    return IndexType::kInternalStorageBitWidth;
  if (auto complex = dyn_cast<ComplexType>(type))
    if (std::optional<int64_t> bits = getElementBits(complex.getElementType()))
      return 2 * *bits;
  return std::nullopt;
}

std::optional<int64_t> mlir::dtensor::getStaticTensorBytes(Type type,
                                                           bool &hasDynamic) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return std::nullopt;
  std::optional<int64_t> bits = getElementBits(tensorType.getElementType());
  if (!bits)
    return std::nullopt;
  int64_t elements = 1;
  for (int64_t size : tensorType.getShape()) {
    if (ShapedType::isDynamic(size)) {
      hasDynamic = true;
      continue;
    }
    elements *= size;
  }
  return elements * ((*bits + 7) / 8);
}

namespace {
/// Sums the sizes of tensor types, failing with a diagnostic on `op` for a
/// type that cannot be sized.
class ByteCounter {
public:
  explicit ByteCounter(Operation *op) : op(op) {}

  FailureOr<int64_t> sum(TypeRange types) {
    int64_t bytes = 0;
    for (Type type : types) {
      std::optional<int64_t> size = getStaticTensorBytes(type, hasDynamic);
      if (!size)
        return op->emitError("comm report: cannot size a value of type ")
               << type;
      bytes += *size;
    }
    return bytes;
  }

  bool hasDynamic = false;

private:
  Operation *op;
};

/// What one collective moves, before the mesh is resolved.
struct Buffers {
  CollectiveKind modelKind;
  /// The operand types whose sizes make up the bytes per rank.
  SmallVector<Type> contributed;
  /// The types whose sizes make up the full buffer of collectiveTimeUs.
  SmallVector<Type> full;
};
} // namespace

/// The type of the product A @ B (A of rank 2 or 3, B of rank 2): A's shape
/// with its last size replaced by B's last size. Null for malformed types.
static Type getMatmulProductType(Type a, Type b) {
  auto aType = dyn_cast<RankedTensorType>(a);
  auto bType = dyn_cast<RankedTensorType>(b);
  if (!aType || !bType || aType.getRank() < 1 || bType.getRank() < 1)
    return {};
  SmallVector<int64_t> shape(aType.getShape());
  shape.back() = bType.getShape().back();
  return RankedTensorType::get(shape, aType.getElementType());
}

/// The buffers of each collective op. Plain and coalesced collectives
/// contribute all their operands; the full buffer is the gathered results
/// of a gather and the operands otherwise.
static FailureOr<Buffers> getBuffers(Operation *op) {
  auto operands = [&](CollectiveKind kind) {
    return Buffers{kind, llvm::to_vector(op->getOperandTypes()),
                   llvm::to_vector(op->getOperandTypes())};
  };
  return TypeSwitch<Operation *, FailureOr<Buffers>>(op)
      .Case<AllReduceOp, AllReduceCoalescedOp>(
          [&](Operation *) { return operands(CollectiveKind::AllReduce); })
      .Case<ReduceScatterOp, ReduceScatterCoalescedOp>(
          [&](Operation *) { return operands(CollectiveKind::ReduceScatter); })
      .Case<AllGatherOp, AllGatherCoalescedOp>([&](Operation *) {
        return Buffers{CollectiveKind::AllGather,
                       llvm::to_vector(op->getOperandTypes()),
                       llvm::to_vector(op->getResultTypes())};
      })
      .Case([&](AllToAllOp) { return operands(CollectiveKind::AllToAll); })
      .Case([&](AllToAllVOp exchange) -> FailureOr<Buffers> {
        // The split sizes steer the exchange; only the operand's rows
        // travel (its dim 0 is usually dynamic: flagged as such).
        Type input = exchange.getInput().getType();
        return Buffers{CollectiveKind::AllToAll, {input}, {input}};
      })
      .Case([&](PermuteOp) { return operands(CollectiveKind::Permute); })
      .Case([&](BroadcastOp) { return operands(CollectiveKind::Broadcast); })
      .Case([&](AllGatherMatmulOp fused) -> FailureOr<Buffers> {
        return Buffers{CollectiveKind::AllGather,
                       {fused.getA().getType()},
                       {fused.getGathered().getType()}};
      })
      .Case([&](MatmulReduceScatterOp fused) -> FailureOr<Buffers> {
        Type product = getMatmulProductType(fused.getA().getType(),
                                            fused.getB().getType());
        if (!product)
          return fused.emitError("comm report: cannot form the matmul "
                                 "product of ")
                 << fused.getA().getType() << " and " << fused.getB().getType();
        return Buffers{CollectiveKind::ReduceScatter, {product}, {product}};
      })
      .Default([&](Operation *) -> FailureOr<Buffers> {
        return op->emitError("comm report: no traffic model for this "
                             "collective");
      });
}

FailureOr<CollectiveTraffic>
mlir::dtensor::getCollectiveTraffic(CollectiveOpInterface op,
                                    SymbolTableCollection &symbolTable) {
  FlatSymbolRefAttr meshRef = op.getMeshAttr();
  MeshOp mesh = lookupMesh(op, meshRef, /*diagnose=*/false, &symbolTable);
  if (!mesh) {
    InFlightDiagnostic diag = op.emitError("comm report: ");
    if (meshRef)
      diag << meshRef << " does not name a dtensor.mesh";
    else
      diag << "the collective has no mesh";
    return diag;
  }
  // The verifier checks the axes (COLL2); stay safe on unverified IR.
  ArrayRef<int64_t> shape = mesh.getShape();
  int64_t groupSize = 1;
  for (int64_t axis : op.getMeshAxes()) {
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
      return op.emitError("comm report: mesh axis ")
             << axis << " is out of range for mesh " << meshRef;
    groupSize *= shape[axis];
  }

  FailureOr<Buffers> buffers = getBuffers(op);
  if (failed(buffers))
    return failure();
  ByteCounter counter(op);
  FailureOr<int64_t> contributed = counter.sum(buffers->contributed);
  if (failed(contributed))
    return failure();
  FailureOr<int64_t> full = counter.sum(buffers->full);
  if (failed(full))
    return failure();

  CollectiveTraffic traffic;
  traffic.kind = op->getName().stripDialect().str();
  traffic.modelKind = buffers->modelKind;
  traffic.bytesPerRank = *contributed;
  traffic.fullBufferBytes = *full;
  traffic.groupSize = groupSize;
  traffic.hasDynamic = counter.hasDynamic;
  traffic.isAsync = isa_and_nonnull<AsyncStartOp>(op->getParentOp());
  return traffic;
}

FailureOr<FunctionCommReport>
mlir::dtensor::computeFunctionCommReport(FunctionOpInterface func,
                                         const HardwareModel &hw,
                                         SymbolTableCollection &symbolTable) {
  FunctionCommReport report;
  report.name = func.getName().str();

  // The forward of a joint function: every top-level op its forward
  // results depend on.
  DenseSet<Operation *> forwardOps;
  auto forwardResults =
      func->getAttrOfType<IntegerAttr>(kForwardResultsAttrName);
  Block *body = func.isExternal() || !func.getFunctionBody().hasOneBlock()
                    ? nullptr
                    : &func.getFunctionBody().front();
  bool hasPhases = forwardResults && body;
  if (hasPhases) {
    report.phases["forward"];
    report.phases["backward"];
    Operation *terminator = body->getTerminator();
    int64_t n = std::min<int64_t>(forwardResults.getInt(),
                                  terminator->getNumOperands());
    SmallVector<Value> worklist(terminator->getOperands().take_front(
        std::max<int64_t>(n, 0)));
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (def)
        def = body->findAncestorOpInBlock(*def);
      if (!def || !forwardOps.insert(def).second)
        continue;
      llvm::append_range(worklist, def->getOperands());
      if (def->getNumRegions()) {
        llvm::SetVector<Value> captured;
        getUsedValuesDefinedAbove(def->getRegions(), captured);
        llvm::append_range(worklist, captured);
      }
    }
  }

  bool failedAny = false;
  func->walk<WalkOrder::PreOrder>([&](CollectiveOpInterface op) {
    FailureOr<CollectiveTraffic> traffic =
        getCollectiveTraffic(op, symbolTable);
    if (failed(traffic)) {
      failedAny = true;
      return;
    }
    // The group as it sits on nodes (getCollectiveTraffic resolved the
    // mesh already).
    MeshOp mesh =
        lookupMesh(op, op.getMeshAttr(), /*diagnose=*/false, &symbolTable);
    CollectiveGroup group =
        mesh ? meshGroup(hw, mesh.getShape(), op.getMeshAxes())
             : CollectiveGroup::contiguous(hw, traffic->groupSize);
    double time = collectiveTimeUs(hw, traffic->modelKind,
                                   traffic->fullBufferBytes, group);
    report.collectives[traffic->kind].add(*traffic, time);
    report.total.add(*traffic, time);
    if (hasPhases) {
      Operation *top = body->findAncestorOpInBlock(*op);
      CommCounts &phase =
          report.phases[top && forwardOps.contains(top) ? "forward"
                                                        : "backward"];
      phase.collectives[traffic->kind].add(*traffic, time);
      phase.total.add(*traffic, time);
    }
  });
  if (failedAny)
    return failure();
  return report;
}

FailureOr<SmallVector<FunctionCommReport>>
mlir::dtensor::computeCommReport(ModuleOp module, const HardwareModel &hw) {
  SymbolTableCollection symbolTable;
  SmallVector<FunctionCommReport> reports;
  bool failedAny = false;
  for (FunctionOpInterface func : module.getOps<FunctionOpInterface>()) {
    if (func.isExternal())
      continue;
    FailureOr<FunctionCommReport> report =
        computeFunctionCommReport(func, hw, symbolTable);
    if (failed(report)) {
      failedAny = true;
      continue;
    }
    reports.push_back(std::move(*report));
  }
  if (failedAny)
    return failure();
  return reports;
}
