//===- Kernels.cu - strided copy and avg division on the device -----------===//
//
// The device side of the memory hooks of NCCLBackend: a strided copy per
// element size (2, 4, 8 bytes: every ABI element type) and the in-place
// division of the avg reduction per element type; and the fill that stands
// for a CUDA graph's memset node (Graph.cpp). Compiled by nvcc to a
// fatbin (sm_90 SASS + compute_90 PTX), embedded in the library and loaded
// with cuModuleLoadData; launched by Kernels.cpp.
//
//===----------------------------------------------------------------------===//

#include "KernelArgs.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

template <typename Word>
__device__ void stridedCopy(Word *dst, const Word *src,
                            const DTensorCopyArgs &a) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < a.count; i += step) {
    int64_t rest = i, d = 0, s = 0;
    for (int k = a.rank - 1; k >= 0; --k) {
      int64_t size = a.sizes[k];
      int64_t coord = rest % size;
      rest /= size;
      d += coord * a.dstStrides[k];
      s += coord * a.srcStrides[k];
    }
    dst[d] = src[s];
  }
}

template <typename T>
__device__ void divideInPlace(T *data, int64_t count, int64_t n) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step)
    data[i] = static_cast<T>(data[i] / static_cast<T>(n));
}

template <typename T>
__device__ void fillRows(char *dst, uint64_t pitch, T value, uint64_t width,
                         uint64_t height) {
  uint64_t count = width * height;
  uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x +
                    threadIdx.x;
       i < count; i += step) {
    uint64_t row = i / width;
    reinterpret_cast<T *>(dst + row * pitch)[i - row * width] = value;
  }
}

} // namespace

extern "C" {

// A memset node of a CUDA graph as a kernel (Graph.cpp): `height` rows of
// `width` elements, `pitch` bytes apart, set to `value`.
__global__ void dtensor_fill_b8(char *dst, uint64_t pitch, uint32_t value,
                                uint64_t width, uint64_t height) {
  fillRows(dst, pitch, static_cast<uint8_t>(value), width, height);
}
__global__ void dtensor_fill_b16(char *dst, uint64_t pitch, uint32_t value,
                                 uint64_t width, uint64_t height) {
  fillRows(dst, pitch, static_cast<uint16_t>(value), width, height);
}
__global__ void dtensor_fill_b32(char *dst, uint64_t pitch, uint32_t value,
                                 uint64_t width, uint64_t height) {
  fillRows(dst, pitch, value, width, height);
}

__global__ void dtensor_copy_b16(uint16_t *dst, const uint16_t *src,
                                 DTensorCopyArgs args) {
  stridedCopy(dst, src, args);
}
__global__ void dtensor_copy_b32(uint32_t *dst, const uint32_t *src,
                                 DTensorCopyArgs args) {
  stridedCopy(dst, src, args);
}
__global__ void dtensor_copy_b64(uint64_t *dst, const uint64_t *src,
                                 DTensorCopyArgs args) {
  stridedCopy(dst, src, args);
}

__global__ void dtensor_divide_f32(float *data, int64_t count, int64_t n) {
  divideInPlace(data, count, n);
}
__global__ void dtensor_divide_f64(double *data, int64_t count, int64_t n) {
  divideInPlace(data, count, n);
}
__global__ void dtensor_divide_i32(int32_t *data, int64_t count, int64_t n) {
  divideInPlace(data, count, n); // truncates toward zero, like C
}
__global__ void dtensor_divide_i64(int64_t *data, int64_t count, int64_t n) {
  divideInPlace(data, count, n);
}
__global__ void dtensor_divide_bf16(__nv_bfloat16 *data, int64_t count,
                                    int64_t n) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  float divisor = static_cast<float>(n);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step)
    data[i] = __float2bfloat16_rn(__bfloat162float(data[i]) / divisor);
}
__global__ void dtensor_divide_f16(__half *data, int64_t count, int64_t n) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  float divisor = static_cast<float>(n);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step)
    data[i] = __float2half_rn(__half2float(data[i]) / divisor);
}

} // extern "C"
