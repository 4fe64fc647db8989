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

/// One fused attention call (Attention.cu): q, o [batch, sq, heads, d] and
/// k, v [batch, skv, heads, d], each with its own batch, sequence and head
/// strides in elements (unit stride along d).
struct DTensorAttentionArgs {
  const void *q, *k, *v;
  void *o;
  int64_t batch, heads, sq, skv;
  int64_t qStrides[3], kStrides[3], vStrides[3], oStrides[3];
  float scale;
  int32_t causal;
  int32_t vectorized; // every row start 16-byte aligned: 16-byte accesses
  int32_t pad;
};

/// The attention kernel's launch: a block of DTENSOR_ATTENTION_THREADS (8
/// warps of 16 query rows) per DTENSOR_ATTENTION_ROWS query rows of one
/// (batch, head), key tiles of DTENSOR_ATTENTION_KEYS rows, and its dynamic
/// shared memory for head dim `d` (Attention.cu's Layout checks it).
#define DTENSOR_ATTENTION_ROWS 128
#define DTENSOR_ATTENTION_KEYS 64
#define DTENSOR_ATTENTION_THREADS 256
#ifdef __cplusplus
constexpr int dtensorAttentionSmemBytes(int d) {
  return 2 * (d + 8) * (DTENSOR_ATTENTION_ROWS + 4 * DTENSOR_ATTENTION_KEYS);
}
#endif

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_KERNELARGS_H
