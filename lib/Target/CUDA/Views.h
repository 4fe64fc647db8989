//===- Views.h - which ops view a buffer, for the CUDA passes ---*- C++ -*-===//
//
// The CUDA passes that reason about buffers (freeing after the last use,
// finding a matmul's zero fill) need every op that makes a view of a buffer
// without copying it. ViewLikeOpInterface is not all of them:
// memref.transpose does not implement it in MLIR 22, and memref.cast is a
// cast. Missing one frees a buffer while a view of it is still read.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_VIEWS_H
#define DTENSOR_LIB_TARGET_CUDA_VIEWS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::dtensor::cuda {

/// The buffer `op`'s result views, or null when `op` makes no view.
inline Value getViewedBuffer(Operation *op) {
  if (op->getNumResults() != 1 ||
      !isa<BaseMemRefType>(op->getResult(0).getType()))
    return nullptr;
  if (auto view = dyn_cast<ViewLikeOpInterface>(op))
    return view.getViewSource();
  if (auto transpose = dyn_cast<memref::TransposeOp>(op))
    return transpose.getIn();
  if (auto cast = dyn_cast<memref::CastOp>(op))
    return cast.getSource();
  return nullptr;
}

} // namespace mlir::dtensor::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_VIEWS_H
