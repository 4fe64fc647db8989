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

/// Erases the op defining `value` and, recursively, its producers, while
/// they are trivially dead.
void eraseIfDead(Value value);

} // namespace mlir::dtensor

#endif // DTENSOR_LIB_OVERLAP_ROWMATMUL_H
