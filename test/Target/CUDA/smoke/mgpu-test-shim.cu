//===- mgpu-test-shim.cu - TEST SHIM of the CUDA runtime for the smoke ----===//
//
// NOT the project's CUDA runtime. A minimal stand-in for
// libdtensor_runtime_cuda.so so that scripts/cuda-smoke-build.sh works
// before that library exists: the mgpu* entry points that code lowered by
// dtensor-cuda-lowering calls, dtensor_rt_context, and dtensor_rt_matmul_f32
// as a naive (slow, correct) kernel instead of cuBLASLt. No collectives.
// Single process, device 0, one persistent stream.
//
// The contract it shows (and the real runtime must keep):
//  - mgpuModuleLoad runs from a global constructor when the compiled library
//    is loaded, before main: it initializes CUDA itself;
//  - mgpuStreamCreate returns the rank's persistent stream, every call the
//    same; mgpuStreamDestroy/Synchronize are never called by lowered code;
//  - mgpuMemAlloc/mgpuMemFree are stream-ordered (cuMemAllocAsync /
//    cuMemFreeAsync on that stream);
//  - dtensor_rt_matmul_* runs on that same stream.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

void check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "mgpu test shim: %s failed: %s\n", what,
               name ? name : "unknown error");
  std::abort();
}

/// Device 0's primary context, current on this thread.
void ensureContext() {
  static CUcontext context = nullptr;
  if (!context) {
    check(cuInit(0), "cuInit");
    CUdevice device;
    check(cuDeviceGet(&device, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&context, device),
          "cuDevicePrimaryCtxRetain");
  }
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

CUstream theStream() {
  static CUstream stream = nullptr;
  ensureContext();
  if (!stream)
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return stream;
}

/// An MLIR ranked memref descriptor of element type T.
template <typename T>
struct Descriptor {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
};

/// C[b] (+)= A[b] * B[b], any strides, one thread per element of C.
__global__ void naiveMatmul(const float *a, const float *b, float *c,
                            int64_t batch, int64_t m, int64_t n, int64_t k,
                            int64_t sab, int64_t sam, int64_t sak,
                            int64_t sbb, int64_t sbk, int64_t sbn,
                            int64_t scb, int64_t scm, int64_t scn,
                            int accumulate) {
  int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= batch * m * n)
    return;
  int64_t j = idx % n, i = (idx / n) % m, p = idx / (m * n);
  float sum = 0.0f;
  for (int64_t l = 0; l < k; ++l)
    sum += a[p * sab + i * sam + l * sak] * b[p * sbb + l * sbk + j * sbn];
  float *out = &c[p * scb + i * scm + j * scn];
  *out = accumulate ? *out + sum : sum;
}

struct View {
  float *data;
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t sBatch = 0, sRows = 0, sCols = 0;
};

View view(int64_t rank, void *ptr) {
  auto *d = static_cast<Descriptor<float> *>(ptr);
  if (rank != 2 && rank != 3) {
    std::fprintf(stderr, "mgpu test shim: matmul of rank %ld\n", long(rank));
    std::abort();
  }
  const int64_t *sizes = d->sizesAndStrides;
  const int64_t *strides = d->sizesAndStrides + rank;
  View v;
  v.data = d->aligned + d->offset;
  int first = rank == 3 ? 1 : 0;
  if (rank == 3) {
    v.batch = sizes[0];
    v.sBatch = strides[0];
  }
  v.rows = sizes[first];
  v.cols = sizes[first + 1];
  v.sRows = strides[first];
  v.sCols = strides[first + 1];
  return v;
}

int context_token;

} // namespace

extern "C" {

CUmodule mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  ensureContext();
  CUmodule module = nullptr;
  check(cuModuleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

/// format=isa embeds PTX, loaded with a JIT optimization level.
CUmodule mgpuModuleLoadJIT(void *data, int optLevel) {
  ensureContext();
  CUmodule module = nullptr;
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {reinterpret_cast<void *>(intptr_t(optLevel))};
  check(cuModuleLoadDataEx(&module, data, 1, options, values),
        "cuModuleLoadDataEx");
  return module;
}

void mgpuModuleUnload(CUmodule module) {
  // At exit the context may be gone already; ignore errors.
  cuModuleUnload(module);
}

CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  CUfunction function = nullptr;
  check(cuModuleGetFunction(&function, module, name), "cuModuleGetFunction");
  return function;
}

void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, CUstream stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  ensureContext();
  if (gridX == 0 || gridY == 0 || gridZ == 0)
    return; // lowered code guards this; be tolerant anyway
  check(cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                       smem, stream, params, extra),
        "cuLaunchKernel");
}

CUstream mgpuStreamCreate() { return theStream(); }

void mgpuStreamDestroy(CUstream) {
  std::fprintf(stderr, "mgpu test shim: mgpuStreamDestroy called: lowered "
                       "code must never destroy the rank's stream\n");
  std::abort();
}

void mgpuStreamSynchronize(CUstream) {
  std::fprintf(stderr, "mgpu test shim: mgpuStreamSynchronize called: "
                       "lowered code must not synchronise the host\n");
  std::abort();
}

void *mgpuMemAlloc(uint64_t sizeBytes, CUstream stream, bool isHostShared) {
  ensureContext();
  if (isHostShared) {
    std::fprintf(stderr, "mgpu test shim: host-shared allocation\n");
    std::abort();
  }
  CUdeviceptr ptr = 0;
  if (sizeBytes)
    check(cuMemAllocAsync(&ptr, sizeBytes, stream), "cuMemAllocAsync");
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, CUstream stream) {
  if (ptr)
    check(cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(ptr), stream),
          "cuMemFreeAsync");
}

void *dtensor_rt_context(void) { return &context_token; }

void dtensor_rt_matmul_f32(void *ctx, int64_t aRank, void *a, int64_t bRank,
                           void *b, int64_t cRank, void *c,
                           int64_t accumulate) {
  if (ctx != &context_token) {
    std::fprintf(stderr, "mgpu test shim: bad context\n");
    std::abort();
  }
  View va = view(aRank, a), vb = view(bRank, b), vc = view(cRank, c);
  if (va.rows != vc.rows || vb.cols != vc.cols || va.cols != vb.rows ||
      va.batch != vc.batch || vb.batch != vc.batch) {
    std::fprintf(stderr, "mgpu test shim: matmul shape mismatch\n");
    std::abort();
  }
  int64_t total = vc.batch * vc.rows * vc.cols;
  if (total == 0)
    return;
  int64_t blocks = (total + 255) / 256;
  naiveMatmul<<<unsigned(blocks), 256, 0, cudaStream_t(theStream())>>>(
      va.data, vb.data, vc.data, vc.batch, vc.rows, vc.cols, va.cols,
      va.sBatch, va.sRows, va.sCols, vb.sBatch, vb.sRows, vb.sCols,
      vc.sBatch, vc.sRows, vc.sCols, int(accumulate));
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "mgpu test shim: matmul launch: %s\n",
                 cudaGetErrorString(err));
    std::abort();
  }
}

} // extern "C"
