//===- Kernels.cpp - launching the runtime's own kernels ------------------===//

#include "Kernels.h"

#include "Driver.h"
#include "KernelArgs.h"
#include "Layouts.h"

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
  CUfunction fill[3] = {}; // 1, 2, 4-byte elements
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
    const char *fillNames[3] = {"dtensor_fill_b8", "dtensor_fill_b16",
                                "dtensor_fill_b32"};
    for (int i = 0; i < 3; ++i)
      DTENSOR_CU(op, cuModuleGetFunction, &m.fill[i], m.module, fillNames[i]);
  });
  return m;
}

unsigned gridFor(int64_t count) {
  constexpr int64_t kThreads = 256, kMaxBlocks = 4096;
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min(kMaxBlocks, (count + kThreads - 1) / kThreads)));
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
  CUfunction fn = kernels(op).copy[slot];
  size_t elem = dst.elemSize;
  for (CopyLaunch &launch :
       planStridedCopy(dst.sizes, dst.strides, src.strides)) {
    char *d = dst.data + launch.dstOffset * static_cast<ptrdiff_t>(elem);
    const char *s = src.data + launch.srcOffset * static_cast<ptrdiff_t>(elem);
    void *params[] = {&d, &s, &launch.args};
    DTENSOR_CU(op, cuLaunchKernel, fn, gridFor(launch.args.count), 1, 1, 256, 1,
               1, 0, stream, params, nullptr);
  }
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

CUgraphNode addFillNode(CUgraph graph, const CUDA_MEMSET_NODE_PARAMS &memset,
                        const char *op) {
  int slot;
  switch (memset.elementSize) {
  case 1:
    slot = 0;
    break;
  case 2:
    slot = 1;
    break;
  case 4:
    slot = 2;
    break;
  default:
    cudaFatal(op, "a memset node of " + std::to_string(memset.elementSize) +
                      "-byte elements");
  }
  auto *dst = reinterpret_cast<char *>(memset.dst);
  uint64_t pitch = memset.pitch, width = memset.width, height = memset.height;
  uint32_t value = memset.value;
  void *params[] = {&dst, &pitch, &value, &width, &height};
  CUDA_KERNEL_NODE_PARAMS kernel{};
  kernel.func = kernels(op).fill[slot];
  int64_t count = static_cast<int64_t>(width * height);
  kernel.gridDimX = gridFor(count);
  kernel.gridDimY = kernel.gridDimZ = 1;
  kernel.blockDimX = static_cast<unsigned>(std::clamp<int64_t>(count, 1, 256));
  kernel.blockDimY = kernel.blockDimZ = 1;
  kernel.kernelParams = params;
  CUgraphNode node = nullptr;
  DTENSOR_CU(op, cuGraphAddKernelNode, &node, graph, nullptr, 0, &kernel);
  return node;
}

} // namespace dtensor::rt::cuda
