//===- Layouts.h - index arithmetic of the device copy and matmul -*- C++
//-*-===//
//
// The pure arithmetic behind Kernels.cpp (how a strided copy becomes kernel
// launches) and Matmul.cpp (how a row-major, possibly transposed, product
// maps onto cuBLASLt's column-major one), with no CUDA in it, so that
// dtensor-cuda-layout-test checks it on the host (test/Target/CUDA/
// layouts.test) by emulating the kernel's and cuBLASLt's index formulas.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIME_LAYOUTS_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIME_LAYOUTS_H

#include "KernelArgs.h"

#include <cstdint>
#include <vector>

namespace dtensor::rt::cuda {

/// One launch of a strided copy kernel: it copies `args` (element strides)
/// from element `srcOffset` of the source to element `dstOffset` of the
/// destination.
struct CopyLaunch {
  int64_t dstOffset = 0;
  int64_t srcOffset = 0;
  DTensorCopyArgs args{};
};

/// The launches that copy a view of `sizes` between the given element
/// strides: size-1 dimensions dropped, neighbours contiguous in both views
/// merged, and views of more than DTENSOR_COPY_MAX_RANK remaining
/// dimensions split into one launch per index of the leading ones. Empty
/// for zero elements.
std::vector<CopyLaunch> planStridedCopy(const std::vector<int64_t> &sizes,
                                        const std::vector<int64_t> &dstStrides,
                                        const std::vector<int64_t> &srcStrides);

/// How a row-major-indexed [rows, cols] matrix with strides (rowStride,
/// colStride) lies in memory: row-major with leading dimension `ld`, or
/// column-major (`transposed`) with leading dimension `ld`.
struct Orientation {
  bool transposed = false;
  int64_t ld = 0;
};

/// False when the matrix is neither (it must be packed first).
bool orientMatrix(int64_t rows, int64_t cols, int64_t rowStride,
                  int64_t colStride, Orientation &o);

/// A column-major operand of cuBLASLt: stored as rows x cols with leading
/// dimension ld (CUBLAS_OP_T when `transpose`), batches `batchStride`
/// elements apart.
struct LtOperand {
  bool transpose = false;
  int64_t rows = 0, cols = 0, ld = 0, batchStride = 0;
};

/// C[p] = A[p].B[p] (row-major, A [M,K], B [K,N], C dense [M,N]) as
/// cuBLASLt's column-major D = op(A').op(B') with m = N, n = M, k = K:
/// A' is our B, B' is our A, D is C^T with ldc = N.
struct GemmPlan {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  LtOperand a, b; // cuBLASLt's A (our B) and B (our A)
  int64_t ldc = 0, batchStrideC = 0;
};

GemmPlan planGemm(int64_t batch, int64_t m, int64_t k, int64_t n,
                  const Orientation &ourA, int64_t strideA,
                  const Orientation &ourB, int64_t strideB);

} // namespace dtensor::rt::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_LAYOUTS_H
