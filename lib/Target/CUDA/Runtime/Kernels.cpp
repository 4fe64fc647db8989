//===- Kernels.cpp - launching the runtime's own kernels ------------------===//

#include "Kernels.h"

#include "Driver.h"
#include "KernelArgs.h"

#include <algorithm>
#include <mutex>

// The fatbin of Kernels.cu (generated: EmbedFile.cmake).
extern "C" const unsigned char dtensorCudaKernelsFatbin[];

namespace dtensor::rt::cuda {

namespace {

struct KernelModule {
  CUmodule module = nullptr;
  CUfunction copy[3] = {}; // 2, 4, 8-byte elements
  CUfunction divide[6] = {};
};

int divideSlot(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return 0;
  case ElemType::F64:
    return 1;
  case ElemType::I32:
    return 2;
  case ElemType::I64:
    return 3;
  case ElemType::BF16:
    return 4;
  case ElemType::F16:
    return 5;
  }
  return 0;
}

const KernelModule &kernels(const char *op) {
  static std::once_flag once;
  static KernelModule m;
  std::call_once(once, [op] {
    device(op);
    DTENSOR_CU(op, cuModuleLoadData, &m.module, dtensorCudaKernelsFatbin);
    const char *copyNames[3] = {"dtensor_copy_b16", "dtensor_copy_b32",
                                "dtensor_copy_b64"};
    const char *divideNames[6] = {"dtensor_divide_f32",  "dtensor_divide_f64",
                                  "dtensor_divide_i32",  "dtensor_divide_i64",
                                  "dtensor_divide_bf16", "dtensor_divide_f16"};
    for (int i = 0; i < 3; ++i)
      DTENSOR_CU(op, cuModuleGetFunction, &m.copy[i], m.module, copyNames[i]);
    for (int i = 0; i < 6; ++i)
      DTENSOR_CU(op, cuModuleGetFunction, &m.divide[i], m.module,
                 divideNames[i]);
  });
  return m;
}

unsigned gridFor(int64_t count) {
  constexpr int64_t kThreads = 256, kMaxBlocks = 4096;
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min(kMaxBlocks, (count + kThreads - 1) / kThreads)));
}

/// Drops size-1 dimensions and merges neighbours that are contiguous in
/// both views.
void simplify(std::vector<int64_t> &sizes, std::vector<int64_t> &dst,
              std::vector<int64_t> &src) {
  std::vector<int64_t> s, d, r;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 1)
      continue;
    if (!s.empty() && d.back() == dst[k] * sizes[k] &&
        r.back() == src[k] * sizes[k]) {
      s.back() *= sizes[k];
      d.back() = dst[k];
      r.back() = src[k];
      continue;
    }
    s.push_back(sizes[k]);
    d.push_back(dst[k]);
    r.push_back(src[k]);
  }
  sizes = std::move(s);
  dst = std::move(d);
  src = std::move(r);
}

void launchCopy(CUfunction fn, char *dst, const char *src, size_t elem,
                const std::vector<int64_t> &sizes,
                const std::vector<int64_t> &dstStrides,
                const std::vector<int64_t> &srcStrides, size_t first,
                CUstream stream, const char *op) {
  size_t rank = sizes.size() - first;
  if (rank > DTENSOR_COPY_MAX_RANK) {
    for (int64_t i = 0; i < sizes[first]; ++i)
      launchCopy(fn, dst + i * dstStrides[first] * elem,
                 src + i * srcStrides[first] * elem, elem, sizes, dstStrides,
                 srcStrides, first + 1, stream, op);
    return;
  }
  DTensorCopyArgs args{};
  args.count = 1;
  args.rank = static_cast<int32_t>(rank);
  for (size_t k = 0; k < rank; ++k) {
    args.sizes[k] = sizes[first + k];
    args.dstStrides[k] = dstStrides[first + k];
    args.srcStrides[k] = srcStrides[first + k];
    args.count *= args.sizes[k];
  }
  void *params[] = {&dst, &src, &args};
  DTENSOR_CU(op, cuLaunchKernel, fn, gridFor(args.count), 1, 1, 256, 1, 1, 0,
             stream, params, nullptr);
}

} // namespace

void copyOnDevice(const StridedView &dst, const StridedView &src,
                  CUstream stream, const char *op) {
  if (dst.getNumElements() == 0)
    return;
  if (dst.isContiguous() && src.isContiguous()) {
    DTENSOR_CU(op, cuMemcpyAsync, reinterpret_cast<CUdeviceptr>(dst.data),
               reinterpret_cast<CUdeviceptr>(src.data), dst.getNumBytes(),
               stream);
    return;
  }
  int slot;
  switch (dst.elemSize) {
  case 2:
    slot = 0;
    break;
  case 4:
    slot = 1;
    break;
  case 8:
    slot = 2;
    break;
  default:
    cudaFatal(op, "no device copy for " + std::to_string(dst.elemSize) +
                      "-byte elements");
  }
  std::vector<int64_t> sizes = dst.sizes, dstStrides = dst.strides,
                       srcStrides = src.strides;
  simplify(sizes, dstStrides, srcStrides);
  launchCopy(kernels(op).copy[slot], dst.data, src.data, dst.elemSize, sizes,
             dstStrides, srcStrides, 0, stream, op);
}

void divideOnDevice(void *data, size_t count, ElemType type, int64_t n,
                    CUstream stream, const char *op) {
  if (count == 0)
    return;
  int64_t c = static_cast<int64_t>(count);
  void *params[] = {&data, &c, &n};
  DTENSOR_CU(op, cuLaunchKernel, kernels(op).divide[divideSlot(type)],
             gridFor(c), 1, 1, 256, 1, 1, 0, stream, params, nullptr);
}

} // namespace dtensor::rt::cuda
