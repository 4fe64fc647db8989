//===- Attention.cu - fused causal/full attention on tensor cores ---------===//
//
// O = softmax(scale * Q K^T [+ causal mask]) V per (batch, head), without
// materializing the scores: a flash-attention forward pass (the FA2
// scheme). A block of 8 warps owns 128 query rows (16 per warp) and walks
// the key/value rows in tiles of 64 (under a causal mask only up to its
// last query row). Per tile, each warp computes its 16 x 64 scores with
// mma.sync m16n8k16 (16-bit inputs, f32 accumulators in registers),
// updates each row's running maximum and sum in f32 (online softmax),
// rescales its output accumulators, and adds P V, P taken straight from
// the score accumulators (their layout is the A operand's). Rows are
// divided by their sums at the end. K and V tiles arrive by cp.async,
// the next tile's copies in flight while the current one is used.
//
// Compiled by nvcc into the runtime's fatbin with Kernels.cu; launched by
// Attention.cpp. Head dims 64 and 128.
//
//===----------------------------------------------------------------------===//

#include "KernelArgs.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kRows = DTENSOR_ATTENTION_ROWS; // query rows per block
constexpr int kKeys = DTENSOR_ATTENTION_KEYS; // key rows per tile
constexpr int kThreads = DTENSOR_ATTENTION_THREADS;
static_assert(kThreads == kRows / 16 * 32, "a warp per 16 query rows");

/// Shared memory (elements of 16 bits): the Q tile and two buffers each of
/// the K and V tiles (one filled while the other is used), row-major with
/// rows of D + 8 (padding against bank conflicts).
template <int D> struct Layout {
  static constexpr int ld = D + 8;
  static constexpr int q = 0;
  static constexpr int k = q + kRows * ld;      // k + b * tile: buffer b
  static constexpr int v = k + 2 * kKeys * ld;  // v + b * tile
  static constexpr int tile = kKeys * ld;
  static constexpr int elements = v + 2 * kKeys * ld;
  static_assert(elements * 2 == dtensorAttentionSmemBytes(D),
                "KernelArgs.h and the kernel disagree on shared memory");
};

template <typename T> __device__ T fromFloat(float x);
template <> __device__ __nv_bfloat16 fromFloat(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __half fromFloat(float x) { return __float2half_rn(x); }

/// Two floats as a 16-bit pair (the first in the low half).
template <typename T> __device__ uint32_t pack(float lo, float hi);
template <> __device__ uint32_t pack<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ uint32_t pack<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}

/// d += a * b for one m16n8k16 tile (f32 accumulators).
template <typename T>
__device__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                    uint32_t b1);
template <>
__device__ void mma<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                   uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                 "r"(b1));
}
template <>
__device__ void mma<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                            uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                 "r"(b1));
}

/// Starts copying rows [first, first + rows) of one head of `src` into
/// `dst` (row stride `ld`) with cp.async, 16 bytes per copy; rows at or
/// past `count` are zero-filled. Without 16-byte alignment (`vectorized`
/// false) the copy is synchronous, element by element.
template <typename T, int D, int Rows>
__device__ void loadTile(T *dst, const T *src, int64_t first, int64_t count,
                         int64_t rowStride, bool vectorized) {
  constexpr int per = 16 / sizeof(T); // elements per 16-byte chunk
  constexpr int chunks = D / per;
  static_assert(Rows * chunks % kThreads == 0, "whole rounds of copies");
#pragma unroll
  for (int n = 0; n < Rows * chunks / kThreads; ++n) {
    int i = threadIdx.x + n * kThreads;
    int row = i / chunks, col = (i % chunks) * per;
    bool inside = first + row < count;
    const T *at = src + (inside ? (first + row) * rowStride + col : 0);
    T *to = dst + row * Layout<D>::ld + col;
    if (vectorized) {
      unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(to));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                       address),
                   "l"(at), "r"(inside ? 16 : 0));
    } else {
      for (int e = 0; e < per; ++e)
        to[e] = inside ? at[e] : fromFloat<T>(0.0f);
    }
  }
}

__device__ void commitCopies() { asm volatile("cp.async.commit_group;\n"); }
/// Waits until at most `N` groups of copies are still in flight.
template <int N> __device__ void waitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/// Four 8x8 matrices of 16-bit elements from shared memory, lane l giving
/// the address of row l % 8 of matrix l / 8; each lane receives, per
/// matrix, the pair (row l / 4, columns 2 (l % 4), + 1), or with `Trans`
/// the pair (rows 2 (l % 4), + 1, column l / 4): the mma operand layouts.
template <bool Trans>
__device__ void loadMatrices(uint32_t (&r)[4], const void *rowAddress) {
  unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(rowAddress));
  if (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

template <typename T, int D>
__device__ void attention(const DTensorAttentionArgs &a) {
  using L = Layout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T *qs = reinterpret_cast<T *>(smem) + L::q;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int g = lane / 4, t = lane % 4; // mma fragment coordinates

  // Under a causal mask later rows see more keys: start those first, so
  // that the last wave holds the short blocks.
  int64_t first = static_cast<int64_t>(a.causal ? gridDim.x - 1 - blockIdx.x
                                                : blockIdx.x) *
                  kRows;
  int64_t head = blockIdx.y, batch = blockIdx.z;
  const T *q = static_cast<const T *>(a.q) + batch * a.qStrides[0] +
               head * a.qStrides[2];
  const T *k = static_cast<const T *>(a.k) + batch * a.kStrides[0] +
               head * a.kStrides[2];
  const T *v = static_cast<const T *>(a.v) + batch * a.vStrides[0] +
               head * a.vStrides[2];
  T *o = static_cast<T *>(a.o) + batch * a.oStrides[0] + head * a.oStrides[2];
  bool vec = a.vectorized != 0;

  int64_t end = a.skv;
  if (a.causal && first + kRows < end)
    end = first + kRows;
  loadTile<T, D, kRows>(qs, q, first, a.sq, a.qStrides[1], vec);
  commitCopies();
  // Tile 0 into buffer 0.
  T *ks = reinterpret_cast<T *>(smem) + L::k;
  T *vs = reinterpret_cast<T *>(smem) + L::v;
  loadTile<T, D, kKeys>(ks, k, 0, a.skv, a.kStrides[1], vec);
  loadTile<T, D, kKeys>(vs, v, 0, a.skv, a.vStrides[1], vec);
  commitCopies();
  waitCopies<1>(); // Q is in
  __syncthreads();
  // Q as A operands: rows g and g + 8 of the warp's 16, columns 2t, 2t + 1
  // and 2t + 8, 2t + 9 of each 16-wide step.
  uint32_t qa[D / 16][4];
  const T *qw = qs + warp * 16 * L::ld;
  for (int kk = 0; kk < D / 16; ++kk) {
    int c = kk * 16 + 2 * t;
    qa[kk][0] = *reinterpret_cast<const uint32_t *>(qw + g * L::ld + c);
    qa[kk][1] = *reinterpret_cast<const uint32_t *>(qw + (g + 8) * L::ld + c);
    qa[kk][2] = *reinterpret_cast<const uint32_t *>(qw + g * L::ld + c + 8);
    qa[kk][3] =
        *reinterpret_cast<const uint32_t *>(qw + (g + 8) * L::ld + c + 8);
  }
  float acc[D / 8][4];
  for (auto &tile : acc)
    tile[0] = tile[1] = tile[2] = tile[3] = 0.0f;
  // Per row (g, g + 8): running maximum (of scaled scores, log2 units) and
  // this thread's part of the running sum.
  float rowMax[2] = {-INFINITY, -INFINITY}, rowSum[2] = {0.0f, 0.0f};
  const float scale = a.scale * 1.4426950408889634f; // exp(x) = exp2(x log2e)
  int64_t query[2] = {first + warp * 16 + g, first + warp * 16 + g + 8};

  int buffer = 0;
  for (int64_t key0 = 0; key0 < end; key0 += kKeys, buffer ^= 1) {
    // Start the next tile into the other buffer (freed by the barrier at
    // the end of the previous iteration), then wait for this one.
    if (key0 + kKeys < end) {
      loadTile<T, D, kKeys>(ks + (buffer ^ 1) * L::tile, k, key0 + kKeys,
                            a.skv, a.kStrides[1], vec);
      loadTile<T, D, kKeys>(vs + (buffer ^ 1) * L::tile, v, key0 + kKeys,
                            a.skv, a.vStrides[1], vec);
    }
    commitCopies();
    waitCopies<1>();
    __syncthreads();
    const T *kt = ks + buffer * L::tile, *vtile = vs + buffer * L::tile;
    // S = Q K^T: tile j holds keys 8j + 2t, 8j + 2t + 1 of rows g, g + 8.
    // The B operands of key tiles j, j + 1 for one 16-wide step of d are
    // four 8x8 matrices of K: rows 8j.., 8(j+1).., columns 16kk, 16kk + 8.
    float s[kKeys / 8][4];
    for (auto &tile : s)
      tile[0] = tile[1] = tile[2] = tile[3] = 0.0f;
    int m = lane / 8, mr = lane % 8; // the matrix and row this lane points at
    for (int j = 0; j < kKeys / 8; j += 2) {
      const T *krow = kt + (8 * (j + m / 2) + mr) * L::ld + 8 * (m % 2);
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t b[4];
        loadMatrices<false>(b, krow + kk * 16);
        mma<T>(s[j], qa[kk], b[0], b[1]);
        mma<T>(s[j + 1], qa[kk], b[2], b[3]);
      }
    }
    // Scale, mask, and the online softmax of rows g and g + 8.
    bool masked = a.causal ? key0 + kKeys > first : false;
    bool ragged = key0 + kKeys > a.skv;
    float tileMax[2] = {-INFINITY, -INFINITY};
    for (int j = 0; j < kKeys / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        int r = e / 2;
        int64_t key = key0 + j * 8 + 2 * t + (e % 2);
        float x = s[j][e] * scale;
        if ((ragged && key >= a.skv) || (masked && key > query[r]))
          x = -INFINITY;
        s[j][e] = x;
        tileMax[r] = fmaxf(tileMax[r], x);
      }
    float alpha[2];
    for (int r = 0; r < 2; ++r) {
      tileMax[r] = fmaxf(tileMax[r], __shfl_xor_sync(0xffffffffu, tileMax[r], 1));
      tileMax[r] = fmaxf(tileMax[r], __shfl_xor_sync(0xffffffffu, tileMax[r], 2));
      float newMax = fmaxf(rowMax[r], tileMax[r]);
      float base = newMax == -INFINITY ? 0.0f : newMax; // a row masked so far
      alpha[r] = exp2f(rowMax[r] - base);
      rowMax[r] = newMax;
      tileMax[r] = base;
    }
    float tileSum[2] = {0.0f, 0.0f};
    for (int j = 0; j < kKeys / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        float p = exp2f(s[j][e] - tileMax[e / 2]);
        s[j][e] = p;
        tileSum[e / 2] += p;
      }
    for (int r = 0; r < 2; ++r)
      rowSum[r] = rowSum[r] * alpha[r] + tileSum[r];
    for (auto &tile : acc) {
      tile[0] *= alpha[0];
      tile[1] *= alpha[0];
      tile[2] *= alpha[1];
      tile[3] *= alpha[1];
    }
    // O += P V: P's score tiles 2kk, 2kk + 1 are the A operand of keys
    // 16kk .. 16kk + 15.
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      uint32_t pa[4] = {pack<T>(s[2 * kk][0], s[2 * kk][1]),
                        pack<T>(s[2 * kk][2], s[2 * kk][3]),
                        pack<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                        pack<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      // Columns 8n.., 8(n+1).. of V's rows 16kk.., 16kk + 8.., transposed.
      const T *vrow = vtile + (16 * kk + 8 * (m % 2) + mr) * L::ld + 8 * (m / 2);
      for (int n = 0; n < D / 8; n += 2) {
        uint32_t b[4];
        loadMatrices<true>(b, vrow + 8 * n);
        mma<T>(acc[n], pa, b[0], b[1]);
        mma<T>(acc[n + 1], pa, b[2], b[3]);
      }
    }
    __syncthreads(); // this buffer may be refilled
  }
  // Row sums over the row's 4 threads; O / sum to the output.
  for (int r = 0; r < 2; ++r) {
    rowSum[r] += __shfl_xor_sync(0xffffffffu, rowSum[r], 1);
    rowSum[r] += __shfl_xor_sync(0xffffffffu, rowSum[r], 2);
  }
  for (int r = 0; r < 2; ++r) {
    if (query[r] >= a.sq)
      continue;
    // The statistics, in natural-log units: rowMax is log2-scaled.
    if (a.lse && t == 0)
      a.lse[(batch * a.heads + head) * a.sq + query[r]] =
          (rowMax[r] + log2f(rowSum[r])) * 0.6931471805599453f;
    float inv = rowSum[r] > 0.0f ? 1.0f / rowSum[r] : 0.0f;
    T *orow = o + query[r] * a.oStrides[1] + 2 * t;
    for (int n = 0; n < D / 8; ++n) {
      orow[n * 8] = fromFloat<T>(acc[n][2 * r] * inv);
      orow[n * 8 + 1] = fromFloat<T>(acc[n][2 * r + 1] * inv);
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//
//
// The FA2 backward split into two passes that never materialize the
// [S, Skv] scores and need no atomics: with P = exp(scale S - lse) from the
// forward's statistics and delta = rowsum(dO * O) (one warp per row),
//   dQ   = scale (P * (dO V^T - delta)) K          a block per 128 queries,
//                                                  walking key tiles
//   dV   = P^T dO, dK = scale (P * (dO V^T - delta))^T Q
//                                                  a block per 128 keys,
//                                                  walking query tiles
// (the scores are recomputed in both). Each warp owns 16 rows of its
// block; the block's own 128-row operands stay in shared memory, the tiles
// it walks arrive by cp.async into double buffers, every product is an
// mma.sync m16n8k16 with f32 accumulators, P and dS enter the next product
// in the input type, as in the forward.

/// Shared memory of the backward kernels (elements of 16 bits): two
/// 128-row operands of the block (x, y), two double-buffered 64-row tiles
/// (u, w), then (as floats) the statistics of the two buffered tiles.
template <int D> struct BackwardLayout {
  static constexpr int ld = D + 8;
  static constexpr int x = 0;
  static constexpr int y = x + kRows * ld;
  static constexpr int u = y + kRows * ld;      // u + b * tile: buffer b
  static constexpr int w = u + 2 * kKeys * ld;  // w + b * tile
  static constexpr int tile = kKeys * ld;
  static constexpr int elements = w + 2 * kKeys * ld;
  static_assert(elements * 2 + 4 * 4 * kKeys ==
                    dtensorAttentionBackwardSmemBytes(D),
                "KernelArgs.h and the kernels disagree on shared memory");
};

/// The A operand of rows 16 of `rows` (row stride `ld`), columns
/// 16 kk .. 16 kk + 15: rows g, g + 8, columns 2t, 2t + 1 and 2t + 8, 2t + 9.
template <typename T, int Ld>
__device__ void fragmentA(uint32_t (&a)[4], const T *rows, int kk, int g,
                          int t) {
  int c = kk * 16 + 2 * t;
  a[0] = *reinterpret_cast<const uint32_t *>(rows + g * Ld + c);
  a[1] = *reinterpret_cast<const uint32_t *>(rows + (g + 8) * Ld + c);
  a[2] = *reinterpret_cast<const uint32_t *>(rows + g * Ld + c + 8);
  a[3] = *reinterpret_cast<const uint32_t *>(rows + (g + 8) * Ld + c + 8);
}

/// acc[16 x 64] += A[16 x D] . B^T where B is a 64-row tile (row stride Ld)
/// of D columns: tile j of acc holds columns 8j + 2t, + 1 of rows g, g + 8.
/// `arows` are the warp's 16 rows of A in shared memory.
template <typename T, int D, int Ld>
__device__ void productABt(float (&acc)[kKeys / 8][4], const T *arows,
                           const T *btile, int lane) {
  int g = (lane % 32) / 4, t = lane % 4;
  int m = (lane % 32) / 8, mr = lane % 8;
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t a[4];
    fragmentA<T, Ld>(a, arows, kk, g, t);
    for (int j = 0; j < kKeys / 8; j += 2) {
      const T *brow = btile + (8 * (j + m / 2) + mr) * Ld + 8 * (m % 2);
      uint32_t b[4];
      loadMatrices<false>(b, brow + kk * 16);
      mma<T>(acc[j], a, b[0], b[1]);
      mma<T>(acc[j + 1], a, b[2], b[3]);
    }
  }
}

/// acc[16 x D] += P[16 x 64] . B where P are score accumulators (tile j:
/// columns 8j + 2t, + 1) and B a 64-row tile (row stride Ld) of D columns.
template <typename T, int D, int Ld>
__device__ void productPB(float (&acc)[D / 8][4], const float (&p)[kKeys / 8][4],
                          const T *btile, int lane) {
  int m = (lane % 32) / 8, mr = lane % 8;
  for (int kk = 0; kk < kKeys / 16; ++kk) {
    uint32_t pa[4] = {pack<T>(p[2 * kk][0], p[2 * kk][1]),
                      pack<T>(p[2 * kk][2], p[2 * kk][3]),
                      pack<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                      pack<T>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
    const T *brow = btile + (16 * kk + 8 * (m % 2) + mr) * Ld + 8 * (m / 2);
    for (int n = 0; n < D / 8; n += 2) {
      uint32_t b[4];
      loadMatrices<true>(b, brow + 8 * n);
      mma<T>(acc[n], pa, b[0], b[1]);
      mma<T>(acc[n + 1], pa, b[2], b[3]);
    }
  }
}

/// Writes rows g, g + 8 (of the warp's 16, starting at `row0`) of `acc`
/// times `factor` to `out` (row stride `rowStride`), rows below `count`.
template <typename T, int D>
__device__ void storeRows(T *out, const float (&acc)[D / 8][4], int64_t row0,
                          int64_t count, int64_t rowStride, float factor,
                          int g, int t) {
  for (int r = 0; r < 2; ++r) {
    int64_t row = row0 + g + 8 * r;
    if (row >= count)
      continue;
    T *orow = out + row * rowStride + 2 * t;
    for (int n = 0; n < D / 8; ++n) {
      orow[n * 8] = fromFloat<T>(acc[n][2 * r] * factor);
      orow[n * 8 + 1] = fromFloat<T>(acc[n][2 * r + 1] * factor);
    }
  }
}

template <typename T> __device__ float toFloat(T x);
template <> __device__ float toFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <> __device__ float toFloat(__half x) { return __half2float(x); }

/// delta[b, h, s] = sum_d dO[b, s, h, d] O[b, s, h, d], a warp per row.
template <typename T, int D>
__device__ void attentionDelta(const DTensorAttentionBackwardArgs &a) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) +
                threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= a.batch * a.sq * a.heads)
    return;
  int64_t head = row % a.heads, s = (row / a.heads) % a.sq,
          batch = row / (a.heads * a.sq);
  const T *o = static_cast<const T *>(a.o) + batch * a.oStrides[0] +
               s * a.oStrides[1] + head * a.oStrides[2];
  const T *dO = static_cast<const T *>(a.dO) + batch * a.dOStrides[0] +
                s * a.dOStrides[1] + head * a.dOStrides[2];
  float sum = 0.0f;
  for (int e = lane; e < D; e += 32)
    sum += toFloat<T>(o[e]) * toFloat<T>(dO[e]);
  for (int offset = 16; offset > 0; offset /= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0)
    a.delta[(batch * a.heads + head) * a.sq + s] = sum;
}

/// dQ of 128 query rows: per key tile, P = exp(scale S - lse), dP = dO V^T,
/// dS = P (dP - delta), dQ += dS K; dQ scaled at the end.
template <typename T, int D>
__device__ void attentionBackwardQ(const DTensorAttentionBackwardArgs &a) {
  using L = BackwardLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T *base = reinterpret_cast<T *>(smem);
  T *qs = base + L::x, *dos = base + L::y, *ks = base + L::u,
    *vs = base + L::w;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int g = lane / 4, t = lane % 4;
  int64_t first = static_cast<int64_t>(a.causal ? gridDim.x - 1 - blockIdx.x
                                                : blockIdx.x) *
                  kRows;
  int64_t head = blockIdx.y, batch = blockIdx.z;
  const T *q = static_cast<const T *>(a.q) + batch * a.qStrides[0] +
               head * a.qStrides[2];
  const T *k = static_cast<const T *>(a.k) + batch * a.kStrides[0] +
               head * a.kStrides[2];
  const T *v = static_cast<const T *>(a.v) + batch * a.vStrides[0] +
               head * a.vStrides[2];
  const T *dO = static_cast<const T *>(a.dO) + batch * a.dOStrides[0] +
                head * a.dOStrides[2];
  T *dq = static_cast<T *>(a.dq) + batch * a.dqStrides[0] +
          head * a.dqStrides[2];
  const float *lse = a.lse + (batch * a.heads + head) * a.sq;
  const float *delta = a.delta + (batch * a.heads + head) * a.sq;
  bool vec = a.vectorized != 0;
  const float log2e = 1.4426950408889634f;
  const float scale = a.scale * log2e;

  int64_t end = a.skv;
  if (a.causal && first + kRows < end)
    end = first + kRows;
  loadTile<T, D, kRows>(qs, q, first, a.sq, a.qStrides[1], vec);
  loadTile<T, D, kRows>(dos, dO, first, a.sq, a.dOStrides[1], vec);
  commitCopies();
  loadTile<T, D, kKeys>(ks, k, 0, a.skv, a.kStrides[1], vec);
  loadTile<T, D, kKeys>(vs, v, 0, a.skv, a.vStrides[1], vec);
  commitCopies();
  int64_t query[2] = {first + warp * 16 + g, first + warp * 16 + g + 8};
  float rowLse[2], rowDelta[2];
  for (int r = 0; r < 2; ++r) {
    bool inside = query[r] < a.sq;
    rowLse[r] = inside ? lse[query[r]] * log2e : 0.0f;
    rowDelta[r] = inside ? delta[query[r]] : 0.0f;
  }
  float acc[D / 8][4];
  for (auto &tile : acc)
    tile[0] = tile[1] = tile[2] = tile[3] = 0.0f;
  const T *qw = qs + warp * 16 * L::ld, *dow = dos + warp * 16 * L::ld;

  int buffer = 0;
  for (int64_t key0 = 0; key0 < end; key0 += kKeys, buffer ^= 1) {
    if (key0 + kKeys < end) {
      loadTile<T, D, kKeys>(ks + (buffer ^ 1) * L::tile, k, key0 + kKeys,
                            a.skv, a.kStrides[1], vec);
      loadTile<T, D, kKeys>(vs + (buffer ^ 1) * L::tile, v, key0 + kKeys,
                            a.skv, a.vStrides[1], vec);
    }
    commitCopies();
    waitCopies<1>();
    __syncthreads();
    const T *kt = ks + buffer * L::tile, *vt = vs + buffer * L::tile;
    float s[kKeys / 8][4], dp[kKeys / 8][4];
    for (int j = 0; j < kKeys / 8; ++j)
      for (int e = 0; e < 4; ++e)
        s[j][e] = dp[j][e] = 0.0f;
    productABt<T, D, L::ld>(s, qw, kt, lane);
    productABt<T, D, L::ld>(dp, dow, vt, lane);
    for (int j = 0; j < kKeys / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        int r = e / 2;
        int64_t key = key0 + j * 8 + 2 * t + (e % 2);
        bool masked = key >= a.skv || query[r] >= a.sq ||
                      (a.causal && key > query[r]);
        float p = masked ? 0.0f : exp2f(s[j][e] * scale - rowLse[r]);
        s[j][e] = p * (dp[j][e] - rowDelta[r]);
      }
    productPB<T, D, L::ld>(acc, s, kt, lane);
    __syncthreads(); // this buffer may be refilled
  }
  storeRows<T, D>(dq, acc, first + warp * 16, a.sq, a.dqStrides[1], a.scale,
                  g, t);
}

/// dK and dV of 128 key rows: per query tile, P^T = exp(scale S^T - lse),
/// dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - delta), dK += dS^T Q;
/// dK scaled at the end.
template <typename T, int D>
__device__ void attentionBackwardKV(const DTensorAttentionBackwardArgs &a) {
  using L = BackwardLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T *base = reinterpret_cast<T *>(smem);
  T *ks = base + L::x, *vs = base + L::y, *qs = base + L::u,
    *dos = base + L::w;
  float *stats = reinterpret_cast<float *>(base + L::elements); // [2][2][64]
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int g = lane / 4, t = lane % 4;
  // Under a causal mask the first keys see the most queries: they run
  // first.
  int64_t first = static_cast<int64_t>(blockIdx.x) * kRows;
  int64_t head = blockIdx.y, batch = blockIdx.z;
  const T *q = static_cast<const T *>(a.q) + batch * a.qStrides[0] +
               head * a.qStrides[2];
  const T *k = static_cast<const T *>(a.k) + batch * a.kStrides[0] +
               head * a.kStrides[2];
  const T *v = static_cast<const T *>(a.v) + batch * a.vStrides[0] +
               head * a.vStrides[2];
  const T *dO = static_cast<const T *>(a.dO) + batch * a.dOStrides[0] +
                head * a.dOStrides[2];
  T *dk = static_cast<T *>(a.dk) + batch * a.dkStrides[0] +
          head * a.dkStrides[2];
  T *dv = static_cast<T *>(a.dv) + batch * a.dvStrides[0] +
          head * a.dvStrides[2];
  const float *lse = a.lse + (batch * a.heads + head) * a.sq;
  const float *delta = a.delta + (batch * a.heads + head) * a.sq;
  bool vec = a.vectorized != 0;
  const float log2e = 1.4426950408889634f;
  const float scale = a.scale * log2e;

  // The statistics of query tile `from` into stats buffer `b` (lse in
  // log2 units), by plain loads: read after the next barrier.
  auto loadStats = [&](int b, int64_t from) {
    for (int i = threadIdx.x; i < 2 * kKeys; i += kThreads) {
      int64_t row = from + i % kKeys;
      float x = 0.0f;
      if (row < a.sq)
        x = i < kKeys ? lse[row] * log2e : delta[row];
      stats[b * 2 * kKeys + i] = x;
    }
  };
  loadTile<T, D, kRows>(ks, k, first, a.skv, a.kStrides[1], vec);
  loadTile<T, D, kRows>(vs, v, first, a.skv, a.vStrides[1], vec);
  commitCopies();
  // Under a causal mask no query before `first` sees these keys.
  int64_t start = a.causal ? first / kKeys * kKeys : 0;
  if (start < a.sq) {
    loadTile<T, D, kKeys>(qs, q, start, a.sq, a.qStrides[1], vec);
    loadTile<T, D, kKeys>(dos, dO, start, a.sq, a.dOStrides[1], vec);
    loadStats(0, start);
  }
  commitCopies();
  int64_t key[2] = {first + warp * 16 + g, first + warp * 16 + g + 8};
  float dkAcc[D / 8][4], dvAcc[D / 8][4];
  for (int n = 0; n < D / 8; ++n)
    for (int e = 0; e < 4; ++e)
      dkAcc[n][e] = dvAcc[n][e] = 0.0f;
  const T *kw = ks + warp * 16 * L::ld, *vw = vs + warp * 16 * L::ld;

  int buffer = 0;
  for (int64_t q0 = start; q0 < a.sq; q0 += kKeys, buffer ^= 1) {
    if (q0 + kKeys < a.sq) {
      loadTile<T, D, kKeys>(qs + (buffer ^ 1) * L::tile, q, q0 + kKeys, a.sq,
                            a.qStrides[1], vec);
      loadTile<T, D, kKeys>(dos + (buffer ^ 1) * L::tile, dO, q0 + kKeys,
                            a.sq, a.dOStrides[1], vec);
      loadStats(buffer ^ 1, q0 + kKeys);
    }
    commitCopies();
    waitCopies<1>();
    __syncthreads();
    const T *qt = qs + buffer * L::tile, *dot = dos + buffer * L::tile;
    const float *tileLse = stats + buffer * 2 * kKeys;
    const float *tileDelta = tileLse + kKeys;
    float s[kKeys / 8][4];
    for (auto &tile : s)
      tile[0] = tile[1] = tile[2] = tile[3] = 0.0f;
    productABt<T, D, L::ld>(s, kw, qt, lane); // S^T: keys x queries
    for (int j = 0; j < kKeys / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        int r = e / 2, col = j * 8 + 2 * t + (e % 2);
        int64_t query = q0 + col;
        bool masked = query >= a.sq || key[r] >= a.skv ||
                      (a.causal && key[r] > query);
        s[j][e] = masked ? 0.0f : exp2f(s[j][e] * scale - tileLse[col]);
      }
    productPB<T, D, L::ld>(dvAcc, s, dot, lane); // dV += P^T dO
    float dp[kKeys / 8][4];
    for (auto &tile : dp)
      tile[0] = tile[1] = tile[2] = tile[3] = 0.0f;
    productABt<T, D, L::ld>(dp, vw, dot, lane); // dP^T = V dO^T
    for (int j = 0; j < kKeys / 8; ++j)
      for (int e = 0; e < 4; ++e) {
        int col = j * 8 + 2 * t + (e % 2);
        s[j][e] *= dp[j][e] - tileDelta[col];
      }
    productPB<T, D, L::ld>(dkAcc, s, qt, lane); // dK += dS^T Q
    __syncthreads(); // this buffer may be refilled
  }
  storeRows<T, D>(dk, dkAcc, first + warp * 16, a.skv, a.dkStrides[1],
                  a.scale, g, t);
  storeRows<T, D>(dv, dvAcc, first + warp * 16, a.skv, a.dvStrides[1], 1.0f,
                  g, t);
}

} // namespace

extern "C" {

__global__ void __launch_bounds__(kThreads)
    dtensor_attention_bf16_d64(DTensorAttentionArgs a) {
  attention<__nv_bfloat16, 64>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_bf16_d128(DTensorAttentionArgs a) {
  attention<__nv_bfloat16, 128>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_f16_d64(DTensorAttentionArgs a) {
  attention<__half, 64>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_f16_d128(DTensorAttentionArgs a) {
  attention<__half, 128>(a);
}

__global__ void __launch_bounds__(kThreads)
    dtensor_attention_delta_bf16_d64(DTensorAttentionBackwardArgs a) {
  attentionDelta<__nv_bfloat16, 64>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_backward_q_bf16_d64(DTensorAttentionBackwardArgs a) {
  attentionBackwardQ<__nv_bfloat16, 64>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_backward_kv_bf16_d64(DTensorAttentionBackwardArgs a) {
  attentionBackwardKV<__nv_bfloat16, 64>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_delta_bf16_d128(DTensorAttentionBackwardArgs a) {
  attentionDelta<__nv_bfloat16, 128>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_backward_q_bf16_d128(DTensorAttentionBackwardArgs a) {
  attentionBackwardQ<__nv_bfloat16, 128>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_backward_kv_bf16_d128(DTensorAttentionBackwardArgs a) {
  attentionBackwardKV<__nv_bfloat16, 128>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_delta_f16_d64(DTensorAttentionBackwardArgs a) {
  attentionDelta<__half, 64>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_backward_q_f16_d64(DTensorAttentionBackwardArgs a) {
  attentionBackwardQ<__half, 64>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_backward_kv_f16_d64(DTensorAttentionBackwardArgs a) {
  attentionBackwardKV<__half, 64>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_delta_f16_d128(DTensorAttentionBackwardArgs a) {
  attentionDelta<__half, 128>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_backward_q_f16_d128(DTensorAttentionBackwardArgs a) {
  attentionBackwardQ<__half, 128>(a);
}
__global__ void __launch_bounds__(kThreads)
    dtensor_attention_backward_kv_f16_d128(DTensorAttentionBackwardArgs a) {
  attentionBackwardKV<__half, 128>(a);
}

} // extern "C"
