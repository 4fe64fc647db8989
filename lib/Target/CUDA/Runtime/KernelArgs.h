//===- KernelArgs.h - arguments of the runtime's own kernels ----*- C++ -*-===//
//
// Shared by Kernels.cu (device side) and Kernels.cpp (host side, which
// launches them through cuLaunchKernel): plain C layout only.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIME_KERNELARGS_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIME_KERNELARGS_H

#include <stdint.h>

/// Most dimensions one strided-copy launch handles (after merging
/// dimensions that are contiguous in both views); the host loops over the
/// leading ones of views with more.
#define DTENSOR_COPY_MAX_RANK 8

/// dst[i0..ik] = src[i0..ik], strides in elements.
struct DTensorCopyArgs {
  int64_t count; // product of sizes
  int32_t rank;
  int32_t pad;
  int64_t sizes[DTENSOR_COPY_MAX_RANK];
  int64_t dstStrides[DTENSOR_COPY_MAX_RANK];
  int64_t srcStrides[DTENSOR_COPY_MAX_RANK];
};

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_KERNELARGS_H
