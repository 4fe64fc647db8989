/*===- CUDARuntime.h - CUDA-only entry points of the runtime ------*- C -*-===*\
|*                                                                            *|
|* What libdtensor_runtime_cuda exports besides the collectives of           *|
|* Runtime.h (which it builds with DTENSOR_RT_CONTEXT_ABI):                   *|
|*                                                                            *|
|* - dtensor_rt_matmul_<T>: C = A.B (or C += A.B) with cuBLASLt on the        *|
|*   rank's compute stream, for compiled code. Memrefs as in Runtime.h.      *|
|*   Rank 2: A [M,K], B [K,N], C [M,N]; rank 3: a batch, [Bt,M,K] x         *|
|*   [Bt,K,N] -> [Bt,M,N]. A and B may be transposed views (unit stride on   *|
|*   either of their last two dimensions); C must be dense row-major.        *|
|*   bf16 and f16 accumulate in f32; f32 computes in f32 (TF32 only with     *|
|*   DTENSOR_MATMUL_TF32=1).                                                  *|
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
