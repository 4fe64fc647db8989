//===- RowMatmul.h - matmuls of the rows of A by a 2-D B --------*- C++ -*-===//
//
// Matching of the matmuls that the communication/compute passes rewrite
// (FuseCollectiveMatmul, SplitMatmulAllReduce): any linalg contraction
// C[rows..., n] = sum_k A[rows..., k] * B[k, n] (or B[n, k]) into zeros,
// with A of rank 2 or 3. Slicing A along a row dim slices C along the same
// dim, and the rows do not interact.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_OVERLAP_ROWMATMUL_H
#define DTENSOR_LIB_OVERLAP_ROWMATMUL_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>
#include <string>

namespace mlir::dtensor {

/// C[rows..., n] = sum_k A[rows..., k] * B[k, n] (B[n, k] if transposedB)
/// into zeros, A of rank 2 or 3, all element types equal.
struct RowMatmul {
  linalg::LinalgOp op;
  OpOperand *a = nullptr;
  OpOperand *b = nullptr;
  bool transposedB = false;
};

/// A zero float or integer constant.
bool isZeroScalar(Value value);

/// A splat zero constant or a fill with zero.
bool isZeroTensor(Value value);

/// Matches `op` as a row matmul; otherwise says why not in `why`.
std::optional<RowMatmul> matchRowMatmul(Operation *op, std::string &why);

/// Whether `type` is a ranked shaped type with a static dimension of size 0:
/// nothing to pipeline or chunk, and slices of it are invalid IR.
bool hasEmptyDim(Type type);

/// Erases the ops defining `values` and, recursively, their producers, while
/// they are trivially dead. Each op is erased once, however many of the
/// values (or of a dead op's operands) it defines.
void eraseIfDead(ValueRange values);

} // namespace mlir::dtensor

#endif // DTENSOR_LIB_OVERLAP_ROWMATMUL_H
