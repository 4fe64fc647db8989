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
/// strides in elements (unit stride along d). `lse`, when not null, gets
/// each row's softmax statistics, log(sum(exp(scores))) of the scaled,
/// masked scores, f32 dense [batch, heads, sq] (what the backward takes).
struct DTensorAttentionArgs {
  const void *q, *k, *v;
  void *o;
  float *lse;
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

/// The attention backward (Attention.cu), given the forward's q, k, v, o,
/// its statistics `lse` (DTensorAttentionArgs) and the output's gradient
/// dO [batch, sq, heads, d]: dQ, dK, dV (dq like q, dk and dv like k),
/// all with their own strides (unit stride along d). `delta` is scratch
/// of the launches, f32 dense [batch, heads, sq]: rowsum(dO * O).
struct DTensorAttentionBackwardArgs {
  const void *q, *k, *v, *o, *dO;
  const float *lse;
  float *delta;
  void *dq, *dk, *dv;
  int64_t batch, heads, sq, skv;
  int64_t qStrides[3], kStrides[3], vStrides[3], oStrides[3], dOStrides[3];
  int64_t dqStrides[3], dkStrides[3], dvStrides[3];
  float scale;
  int32_t causal;
  int32_t vectorized; // every row start of q, k, v, dO 16-byte aligned
  int32_t pad;
};

/// Its launches: delta (a warp per row, DTENSOR_ATTENTION_THREADS / 32
/// rows per block), then dQ (a block per DTENSOR_ATTENTION_ROWS query rows
/// of one (batch, head), walking key tiles of DTENSOR_ATTENTION_KEYS) and
/// dK, dV (a block per DTENSOR_ATTENTION_ROWS key rows, walking query tiles
/// of DTENSOR_ATTENTION_KEYS); both with this dynamic shared memory: two
/// tiles of ROWS rows and two double-buffered tiles of KEYS rows, plus the
/// statistics of two query tiles.
#ifdef __cplusplus
constexpr int dtensorAttentionBackwardSmemBytes(int d) {
  return 2 * (d + 8) * (2 * DTENSOR_ATTENTION_ROWS + 4 * DTENSOR_ATTENTION_KEYS) +
         4 * 4 * DTENSOR_ATTENTION_KEYS;
}
#endif

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_KERNELARGS_H
