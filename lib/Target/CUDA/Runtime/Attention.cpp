//===- Attention.cpp - dtensor_rt_attention_<T> ---------------------------===//
//
// O = softmax(scale * Q K^T [+ causal mask]) V on the compute stream with
// the fused kernel of Attention.cu (no score matrix in memory), for the
// attention the CUDA lowering recognises (dtensor-cuda-fuse-attention).
//
// Operands are memrefs in the ABI of Runtime.h: Q and O [S, H, D] or
// [B, S, H, D], K and V [Skv, H, D] or [B, Skv, H, D], any strides with a
// unit stride along D (Q, K, V are typically views of one fused qkv
// projection). D is 64 or 128, the element type bf16 or f16; a causal mask
// needs S == Skv (query i sees keys 0..i).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "KernelArgs.h"
#include "Layouts.h"
#include "MemRef.h"

#pragma GCC visibility push(default)
#include "dtensor/Runtime/CUDARuntime.h"
#pragma GCC visibility pop

#include <mutex>

extern "C" const unsigned char dtensorCudaAttentionFatbin[];

namespace dtensor::rt::cuda {

namespace {

struct AttentionKernels {
  CUmodule module = nullptr;
  CUfunction kernel[2][2] = {}; // [bf16, f16][d64, d128]
};

const AttentionKernels &attentionKernels(const char *op) {
  static std::once_flag once;
  static AttentionKernels m;
  std::call_once(once, [op] {
    device(op);
    DTENSOR_CU(op, cuModuleLoadData, &m.module, dtensorCudaAttentionFatbin);
    const char *names[2][2] = {
        {"dtensor_attention_bf16_d64", "dtensor_attention_bf16_d128"},
        {"dtensor_attention_f16_d64", "dtensor_attention_f16_d128"}};
    int dims[2] = {64, 128};
    for (int t = 0; t < 2; ++t)
      for (int d = 0; d < 2; ++d) {
        DTENSOR_CU(op, cuModuleGetFunction, &m.kernel[t][d], m.module,
                   names[t][d]);
        DTENSOR_CU(op, cuFuncSetAttribute, m.kernel[t][d],
                   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                   dtensorAttentionSmemBytes(dims[d]));
      }
  });
  return m;
}

/// A [S, H, D] or [B, S, H, D] operand as [B, S, H, D].
StridedView decode4(int64_t rank, void *descriptor, const char *op,
                    const char *what) {
  StridedView v = decodeMemRef(rank, descriptor, 2, op, what);
  if (rank != 3 && rank != 4)
    cudaFatal(op, std::string(what) + " has rank " + std::to_string(rank) +
                      ", expected 3 ([S, H, D]) or 4 ([B, S, H, D])");
  if (rank == 3) {
    v.sizes.insert(v.sizes.begin(), 1);
    v.strides.insert(v.strides.begin(), 0);
  }
  return v;
}

void attention(void *ctx, int typeSlot, const char *op, int64_t qRank, void *q,
               int64_t kRank, void *k, int64_t vRank, void *v, int64_t oRank,
               void *o, float scale, int64_t causal) {
  DeviceState &dev = device(op);
  if (ctx != &dev)
    cudaFatal(op, ctx ? "context argument is not dtensor_rt_context() of "
                        "this process"
                      : "null context (dtensor_rt_init not called?)");
  StridedView qv = decode4(qRank, q, op, "Q"), kv = decode4(kRank, k, op, "K"),
              vv = decode4(vRank, v, op, "V"), ov = decode4(oRank, o, op, "O");
  int64_t batch = qv.sizes[0], sq = qv.sizes[1], heads = qv.sizes[2],
          d = qv.sizes[3], skv = kv.sizes[1];
  if (ov.sizes != qv.sizes || kv.sizes != vv.sizes || kv.sizes[0] != batch ||
      kv.sizes[2] != heads || kv.sizes[3] != d)
    cudaFatal(op, "shapes do not match: Q " + formatShape(qv.sizes) + ", K " +
                      formatShape(kv.sizes) + ", V " + formatShape(vv.sizes) +
                      ", O " + formatShape(ov.sizes) +
                      " (expected Q, O [B,S,H,D] and K, V [B,Skv,H,D])");
  if (d != 64 && d != 128)
    cudaFatal(op, "head dim " + std::to_string(d) + " (supported: 64, 128)");
  if (causal && sq != skv)
    cudaFatal(op, "a causal mask needs as many queries as keys (" +
                      std::to_string(sq) + " and " + std::to_string(skv) + ")");
  for (StridedView *view : {&qv, &kv, &vv, &ov})
    if (view->strides[3] != 1 && view->sizes[3] > 1)
      cudaFatal(op, "the head dim must have unit stride");
  if (batch == 0 || sq == 0 || heads == 0)
    return;
  if (batch > 65535 || heads > 65535 ||
      (sq + DTENSOR_ATTENTION_ROWS - 1) / DTENSOR_ATTENTION_ROWS > INT32_MAX)
    cudaFatal(op, "too many batches, heads or rows for one launch");

  DTensorAttentionArgs args{};
  args.q = qv.data;
  args.k = kv.data;
  args.v = vv.data;
  args.o = ov.data;
  args.batch = batch;
  args.heads = heads;
  args.sq = sq;
  args.skv = skv;
  bool vectorized = true;
  StridedView *views[4] = {&qv, &kv, &vv, &ov};
  int64_t *strides[4] = {args.qStrides, args.kStrides, args.vStrides,
                         args.oStrides};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      strides[i][j] = views[i]->strides[j];
      vectorized &= strides[i][j] % 8 == 0; // 16 bytes of 16-bit elements
    }
    vectorized &= reinterpret_cast<uintptr_t>(views[i]->data) % 16 == 0;
  }
  args.scale = scale;
  args.causal = causal != 0;
  args.vectorized = vectorized;
  CUfunction fn = attentionKernels(op).kernel[typeSlot][d == 64 ? 0 : 1];
  void *params[] = {&args};
  DTENSOR_CU(op, cuLaunchKernel, fn,
             static_cast<unsigned>((sq + DTENSOR_ATTENTION_ROWS - 1) /
                                   DTENSOR_ATTENTION_ROWS),
             static_cast<unsigned>(heads), static_cast<unsigned>(batch),
             DTENSOR_ATTENTION_THREADS, 1, 1,
             static_cast<unsigned>(dtensorAttentionSmemBytes(int(d))),
             dev.compute, params, nullptr);
}

} // namespace

} // namespace dtensor::rt::cuda

extern "C" {

void dtensor_rt_attention_bf16(void *ctx, int64_t qRank, void *q, int64_t kRank,
                               void *k, int64_t vRank, void *v, int64_t oRank,
                               void *o, float scale, int64_t causal) {
  dtensor::rt::cuda::attention(ctx, 0, "attention_bf16", qRank, q, kRank, k,
                               vRank, v, oRank, o, scale, causal);
}

void dtensor_rt_attention_f16(void *ctx, int64_t qRank, void *q, int64_t kRank,
                              void *k, int64_t vRank, void *v, int64_t oRank,
                              void *o, float scale, int64_t causal) {
  dtensor::rt::cuda::attention(ctx, 1, "attention_f16", qRank, q, kRank, k,
                               vRank, v, oRank, o, scale, causal);
}

} // extern "C"
