/*===- CUDARuntime.h - CUDA-only entry points of the runtime ------*- C -*-===*\
|*                                                                            *|
|* What libdtensor_runtime_cuda exports besides the collectives of           *|
|* Runtime.h:                                                                 *|
|*                                                                            *|
|* - dtensor_rt_matmul_<T>: C = A.B (or C += A.B) with cuBLASLt on the        *|
|*   rank's compute stream, for compiled code. Memrefs as in Runtime.h.      *|
|*   Rank 2: A [M,K], B [K,N], C [M,N]; rank 3: a batch, [Bt,M,K] x         *|
|*   [Bt,K,N] -> [Bt,M,N]. A and B may be transposed views (unit stride on   *|
|*   either of their last two dimensions); C must be dense row-major.        *|
|*   bf16 and f16 accumulate in f32; f32 computes in f32 (TF32 only with     *|
|*   DTENSOR_MATMUL_TF32=1). The algorithm of each shape is autotuned on    *|
|*   its first call (docs/runtime.md: DTENSOR_MATMUL_AUTOTUNE,               *|
|*   DTENSOR_MATMUL_CACHE).                                                   *|
|*                                                                            *|
|* - dtensor_rt_matmul_add_<T>: C = A.B + R, the residual R (dense           *|
|*   row-major, C's shape, another buffer) added in the GEMM's epilogue     *|
|*   (beta = 1) in f32 before the one rounding; what                          *|
|*   dtensor-cuda-fuse-matmul-epilogue makes of a residual add.              *|
|*                                                                            *|
|* - dtensor_rt_matmul_bias_<T>: C = act(A.B + bias), the bias (dense, C's *|
|*   last size) added to every row in cuBLASLt's bias epilogue; what the    *|
|*   same pass makes of nn.Linear's bias add. `activation`: 0 none, 1 ReLU, *|
|*   2 GELU in its tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715       *|
|*   x^3))), applied last in the epilogue (K > 0 with a bias); what         *|
|*   matmul-to-runtime makes of such an activation right after the matmul.  *|
|*                                                                            *|
|* - dtensor_rt_matmul_act_<T>: C = act(A.B), the same activation codes.    *|
|*                                                                            *|
|* - dtensor_rt_attention_<T>: fused attention: cuDNN's flash attention    *|
|*   where cuDNN loads and takes the shape, else the runtime's kernel        *|
|*   (Attention.cu); dtensor_rt_attention_last says which ran.              *|
|*   dtensor_rt_attention_stats_<T> also saves the softmax statistics, and   *|
|*   dtensor_rt_attention_backward_<T> computes dQ, dK, dV from them.        *|
|*                                                                            *|
|* - dtensor_rt_matmul_best_ms: the floor of a matmul shape for benchmarks. *|
|*                                                                            *|
|* - dtensor_rt_graph_*: CUDA graphs of the compute stream (Graph.cpp).     *|
|*                                                                            *|
|* - the mgpu* host functions that MLIR's gpu-to-llvm output calls, with     *|
|*   upstream's signatures. mgpuStreamCreate returns the rank's compute      *|
|*   stream (mgpuStreamDestroy of it does nothing); mgpuMemAlloc/Free are    *|
|*   stream-ordered on the stream they are given.                            *|
|*                                                                            *|
|* Errors print "dtensor runtime: rank R: <op>: <message>" and end the job.  *|
\*===----------------------------------------------------------------------===*/

#ifndef DTENSOR_RUNTIME_CUDARUNTIME_H
#define DTENSOR_RUNTIME_CUDARUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void dtensor_rt_matmul_bf16(void *ctx, int64_t aRank, void *a, int64_t bRank,
                            void *b, int64_t cRank, void *c,
                            int64_t accumulate);
void dtensor_rt_matmul_f16(void *ctx, int64_t aRank, void *a, int64_t bRank,
                           void *b, int64_t cRank, void *c,
                           int64_t accumulate);
void dtensor_rt_matmul_f32(void *ctx, int64_t aRank, void *a, int64_t bRank,
                           void *b, int64_t cRank, void *c,
                           int64_t accumulate);
void dtensor_rt_matmul_add_bf16(void *ctx, int64_t aRank, void *a,
                                int64_t bRank, void *b, int64_t rRank, void *r,
                                int64_t cRank, void *c);
void dtensor_rt_matmul_add_f16(void *ctx, int64_t aRank, void *a,
                               int64_t bRank, void *b, int64_t rRank, void *r,
                               int64_t cRank, void *c);
void dtensor_rt_matmul_add_f32(void *ctx, int64_t aRank, void *a,
                               int64_t bRank, void *b, int64_t rRank, void *r,
                               int64_t cRank, void *c);
/* The `activation` codes of dtensor_rt_matmul_bias_<T> and _act_<T>
   (GELU in its tanh form: cuBLASLt's). */
enum DTensorActivation {
  DTENSOR_RT_ACTIVATION_NONE = 0,
  DTENSOR_RT_ACTIVATION_RELU = 1,
  DTENSOR_RT_ACTIVATION_GELU_TANH = 2
};

void dtensor_rt_matmul_bias_bf16(void *ctx, int64_t aRank, void *a,
                                 int64_t bRank, void *b, int64_t biasRank,
                                 void *bias, int64_t cRank, void *c,
                                 int64_t activation);
void dtensor_rt_matmul_bias_f16(void *ctx, int64_t aRank, void *a,
                                int64_t bRank, void *b, int64_t biasRank,
                                void *bias, int64_t cRank, void *c,
                                int64_t activation);
void dtensor_rt_matmul_bias_f32(void *ctx, int64_t aRank, void *a,
                                int64_t bRank, void *b, int64_t biasRank,
                                void *bias, int64_t cRank, void *c,
                                int64_t activation);
void dtensor_rt_matmul_act_bf16(void *ctx, int64_t aRank, void *a,
                                int64_t bRank, void *b, int64_t cRank, void *c,
                                int64_t activation);
void dtensor_rt_matmul_act_f16(void *ctx, int64_t aRank, void *a, int64_t bRank,
                               void *b, int64_t cRank, void *c,
                               int64_t activation);
void dtensor_rt_matmul_act_f32(void *ctx, int64_t aRank, void *a, int64_t bRank,
                               void *b, int64_t cRank, void *c,
                               int64_t activation);

/* O = softmax(scale * Q K^T [masked causally when `causal`]) V, fused
   (no score matrix in memory). Q, O: [S, H, D] or [B, S, H, D]; K, V:
   [Skv, H, D] or [B, Skv, H, D]; any strides with unit stride along D;
   D 64 or 128; causal needs S == Skv. What dtensor-cuda-fuse-attention
   emits for a recognised attention. Runs cuDNN's fused flash attention
   where cuDNN loads and accepts the problem, else the runtime's kernel;
   DTENSOR_ATTENTION=cudnn|kernel chooses, DTENSOR_ATTENTION_VERBOSE=1
   prints which ran and why (docs/runtime.md). The first call of a shape
   builds (and times) cuDNN's plans: make it before a graph capture. */
void dtensor_rt_attention_bf16(void *ctx, int64_t qRank, void *q,
                               int64_t kRank, void *k, int64_t vRank, void *v,
                               int64_t oRank, void *o, float scale,
                               int64_t causal);
void dtensor_rt_attention_f16(void *ctx, int64_t qRank, void *q, int64_t kRank,
                              void *k, int64_t vRank, void *v, int64_t oRank,
                              void *o, float scale, int64_t causal);

/* The same forward for training: also writes `stats`, f32 [H, S] or
   [B, H, S] (dense, Q's batch and heads), each row's logsumexp of its
   scaled, masked scores: log(sum_t exp(scale * q.k_t)). What
   dtensor_rt_attention_backward_<T> takes. */
void dtensor_rt_attention_stats_bf16(void *ctx, int64_t qRank, void *q,
                                     int64_t kRank, void *k, int64_t vRank,
                                     void *v, int64_t oRank, void *o,
                                     int64_t statsRank, void *stats,
                                     float scale, int64_t causal);
void dtensor_rt_attention_stats_f16(void *ctx, int64_t qRank, void *q,
                                    int64_t kRank, void *k, int64_t vRank,
                                    void *v, int64_t oRank, void *o,
                                    int64_t statsRank, void *stats,
                                    float scale, int64_t causal);

/* The attention's backward, fused (no score matrix in memory): given the
   forward's Q, K, V, its output O and statistics (from
   dtensor_rt_attention_stats_<T>, same scale and mask) and the output's
   gradient dO (like O), writes dQ (like Q), dK and dV (like K and V), any
   strides with unit stride along D. cuDNN's SDPA backward where cuDNN
   takes it, else the runtime's backward kernels; the same variables as the
   forward choose and report the path (dtensor_rt_attention_last). What
   dtensor-cuda-fuse-attention emits for a recognised attention together
   with its backward. */
void dtensor_rt_attention_backward_bf16(
    void *ctx, int64_t qRank, void *q, int64_t kRank, void *k, int64_t vRank,
    void *v, int64_t oRank, void *o, int64_t dORank, void *dO,
    int64_t statsRank, void *stats, int64_t dqRank, void *dq, int64_t dkRank,
    void *dk, int64_t dvRank, void *dv, float scale, int64_t causal);
void dtensor_rt_attention_backward_f16(
    void *ctx, int64_t qRank, void *q, int64_t kRank, void *k, int64_t vRank,
    void *v, int64_t oRank, void *o, int64_t dORank, void *dO,
    int64_t statsRank, void *stats, int64_t dqRank, void *dq, int64_t dkRank,
    void *dk, int64_t dvRank, void *dv, float scale, int64_t causal);

/* Which path the last attention call (forward or backward) of this
   process took: 1 cuDNN, 0 the runtime's kernel, -1 none yet. Copies its
   one-line note (the path, the problem, cuDNN's engine or the reason of a
   fallback: what DTENSOR_ATTENTION_VERBOSE=1 prints) into `note`,
   NUL-terminated and truncated to `capacity` bytes, when `note` is not
   null. */
int32_t dtensor_rt_attention_last(void *ctx, char *note, int64_t capacity);

/* The fastest time, in ms, of C[M,N] = A[M,K].B[K,N] on the device
   buffers a, b, c (dense row-major, `batch` of them back to back) over the
   first `candidates` algorithms cuBLASLt's heuristic returns, each the
   median of `repeats` timed runs after a warm-up; C is overwritten. `type`
   is 0 (f32), 1 (f16) or 2 (bf16). Negative when no algorithm ran. */
float dtensor_rt_matmul_best_ms(void *ctx, int32_t type, int64_t batch,
                                int64_t m, int64_t n, int64_t k, void *a,
                                void *b, void *c, int32_t candidates,
                                int32_t repeats);

/* The rank's compute stream (a CUstream): every kernel, matmul and
   collective of compiled code is ordered on it. A host framework may wrap
   it (torch.cuda.ExternalStream) to order its own work with the program. */
void *dtensor_rt_cuda_stream(void *ctx);

/* The most device memory the program's allocations (stream-ordered, the
   device's default pool) held at once since the last reset, in bytes;
   `reset` non-zero starts a new measurement. */
uint64_t dtensor_rt_cuda_peak_bytes(void *ctx, int32_t reset);

/* CUDA graphs. dtensor_rt_graph_begin starts capturing the compute stream;
   everything enqueued until dtensor_rt_graph_end (kernels, matmuls,
   allocations, collectives) becomes one instantiated graph, replayed by
   dtensor_rt_graph_launch with one host call. Run a program once before
   capturing it (first calls build matmul plans). Allocations during the
   capture are device blocks owned by the graph (no allocation nodes): the
   results are the same blocks at every launch, freeing them does nothing,
   and dtensor_rt_graph_destroy frees them all. */
void dtensor_rt_graph_begin(void *ctx);
void *dtensor_rt_graph_end(void *ctx);
void dtensor_rt_graph_launch(void *ctx, void *graph);
void dtensor_rt_graph_destroy(void *ctx, void *graph);

/* What a launch of `graph` replays: writes "N nodes (counts by type), E
   edges, a straight line | branching; kernels: name xK, ..." into `text`
   (at most `capacity` bytes with the terminating NUL) and returns N. With
   DTENSOR_RT_GRAPH_DOT=<path> set, dtensor_rt_graph_end also writes each
   captured graph to <path> (Graphviz, cuGraphDebugDotPrint's verbose
   form; the last graph wins). */
int64_t dtensor_rt_graph_describe(void *ctx, void *graph, char *text,
                                  int64_t capacity);

/* CUmodule, CUfunction, CUstream and CUevent as opaque pointers. */
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void mgpuStreamWaitEvent(void *stream, void *event);
void *mgpuEventCreate(void);
void mgpuEventDestroy(void *event);
void mgpuEventSynchronize(void *event);
void mgpuEventRecord(void *event, void *stream);
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream);
void mgpuSetDefaultDevice(int32_t device);

#ifdef __cplusplus
}
#endif

#endif /* DTENSOR_RUNTIME_CUDARUNTIME_H */
