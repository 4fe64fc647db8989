//===- Kernels.h - launching the runtime's own kernels ----------*- C++ -*-===//
//
// Strided copies and the avg division on the compute stream, and memset
// nodes of CUDA graphs as kernel nodes (Kernels.cu holds the device code,
// embedded as a fatbin).
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIME_KERNELS_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIME_KERNELS_H

#include "CommBackend.h"
#include "MemRef.h"

#include <cuda.h>

namespace dtensor::rt::cuda {

/// Enqueues dst = src (equal sizes and element sizes, either strided) on
/// `stream`: one cuMemcpyAsync when both are dense, else copy kernels over
/// the views with contiguous dimensions merged.
void copyOnDevice(const StridedView &dst, const StridedView &src,
                  CUstream stream, const char *op);

/// Enqueues data[i] /= n for `count` dense elements on `stream`.
void divideOnDevice(void *data, size_t count, ElemType type, int64_t n,
                    CUstream stream, const char *op);

/// Adds to `graph` a kernel node that does what the memset node `memset`
/// does (its element size 1, 2 or 4 bytes), with no dependencies; returns
/// it.
CUgraphNode addFillNode(CUgraph graph, const CUDA_MEMSET_NODE_PARAMS &memset,
                        const char *op);

} // namespace dtensor::rt::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_KERNELS_H
