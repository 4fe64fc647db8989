//===- RowMatmul.cpp - matmuls of the rows of A by a 2-D B ----------------===//

#include "RowMatmul.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::dtensor;

bool mlir::dtensor::isZeroScalar(Value value) {
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

bool mlir::dtensor::isZeroTensor(Value value) {
  if (auto fill = value.getDefiningOp<linalg::FillOp>())
    return fill.hasPureTensorSemantics() && isZeroScalar(fill.getInputs()[0]);
  return isZeroScalar(value);
}

/// The loop dims an indexing map reads, if each result is a plain dim.
static std::optional<SmallVector<unsigned>> dimsOf(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr expr : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim)
      return std::nullopt;
    dims.push_back(dim.getPosition());
  }
  return dims;
}

std::optional<RowMatmul> mlir::dtensor::matchRowMatmul(Operation *op,
                                                       std::string &why) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp) {
    why = "not a linalg contraction";
    return std::nullopt;
  }
  if (!linalgOp.hasPureTensorSemantics() || linalgOp.getNumDpsInputs() != 2 ||
      linalgOp.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      !linalg::isaContractionOpInterface(linalgOp)) {
    why = "not a multiply-accumulate contraction of two tensors";
    return std::nullopt;
  }
  // Nothing to pipeline or chunk, and slices of a size-0 dim are invalid
  // (MLIR reports any offset there as out of bounds).
  for (Type type : op->getOperandTypes())
    if (hasEmptyDim(type)) {
      why = "an operand has a dimension of size 0";
      return std::nullopt;
    }
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(linalgOp);
  SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
  std::optional<SmallVector<unsigned>> out = dimsOf(maps[2]);
  if (failed(dims) || !dims->batch.empty() || dims->k.size() != 1 ||
      dims->n.size() != 1 || dims->m.empty() || dims->m.size() > 2 || !out ||
      out->size() != dims->m.size() + 1 || out->back() != dims->n.front()) {
    why = "not a matmul of the rows of A (rank 2 or 3) by a 2-D B";
    return std::nullopt;
  }
  unsigned k = dims->k.front(), n = dims->n.front();
  SmallVector<unsigned> expectedA = *out;
  expectedA.back() = k;
  RowMatmul match;
  match.op = linalgOp;
  for (unsigned i = 0; i < 2; ++i) {
    std::optional<SmallVector<unsigned>> operandDims = dimsOf(maps[i]);
    if (operandDims && *operandDims == expectedA)
      match.a = linalgOp.getDpsInputOperand(i);
    else if (operandDims && *operandDims == SmallVector<unsigned>{k, n})
      match.b = linalgOp.getDpsInputOperand(i);
    else if (operandDims && *operandDims == SmallVector<unsigned>{n, k}) {
      match.b = linalgOp.getDpsInputOperand(i);
      match.transposedB = true;
    }
  }
  if (!match.a || !match.b) {
    why = "not a matmul of the rows of A (rank 2 or 3) by a 2-D B";
    return std::nullopt;
  }
  Type elementType = getElementTypeOrSelf(match.a->get().getType());
  if (getElementTypeOrSelf(match.b->get().getType()) != elementType ||
      getElementTypeOrSelf(op->getResult(0).getType()) != elementType) {
    why = "the matmul mixes element types";
    return std::nullopt;
  }
  if (!isZeroTensor(linalgOp.getDpsInitOperand(0)->get())) {
    why = "the matmul accumulates into a tensor that is not zero";
    return std::nullopt;
  }
  return match;
}

bool mlir::dtensor::hasEmptyDim(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  return shaped && shaped.hasRank() && llvm::is_contained(shaped.getShape(), 0);
}

void mlir::dtensor::eraseIfDead(ValueRange values) {
  // The defining ops, taken before anything is erased: an erased op's
  // results must not be looked at again (an op with two dead operands from
  // one producer, or a value among `values` that an earlier one's producers
  // include). No op is created meanwhile, so an erased address stays unused.
  llvm::SetVector<Operation *> worklist;
  for (Value value : values)
    if (Operation *op = value ? value.getDefiningOp() : nullptr)
      worklist.insert(op);
  llvm::SmallPtrSet<Operation *, 16> erased;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (erased.contains(op) || !isOpTriviallyDead(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp())
        if (!erased.contains(producer))
          worklist.insert(producer);
    op->erase();
    erased.insert(op);
  }
}
