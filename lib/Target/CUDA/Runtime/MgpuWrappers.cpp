//===- MgpuWrappers.cpp - the host functions of gpu-to-llvm output --------===//
//
// MLIR's gpu-to-llvm lowering turns gpu.launch_func, gpu.alloc, gpu.memcpy,
// gpu.wait, ... into calls of the mgpu* functions below (upstream ships
// them as libmlir_cuda_runtime, which Debian does not package, and which
// would in any case know nothing of the rank's stream). Signatures are
// upstream's (mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp); the
// implementation is this runtime's:
//
// - mgpuStreamCreate returns the rank's persistent compute stream, the one
//   the collectives and matmuls order against; mgpuStreamDestroy of it does
//   nothing. Compiled kernels, collectives and matmuls are thus ordered by
//   one stream without events between them.
// - mgpuMemAlloc/mgpuMemFree are stream-ordered (cuMemAllocAsync /
//   cuMemFreeAsync) on the given stream, the compute stream when null;
//   host-shared allocations are managed memory (cuMemAllocManaged), which
//   mgpuMemFree recognises from a set of them kept here: asking the driver
//   (cuPointerGetAttribute) fails on stream-ordered memory whose
//   allocation has not yet run in stream order, and costs a call per free.
// - the device is chosen as for the collectives (Driver.h), on first use;
//   mgpuSetDefaultDevice before that picks it explicitly.
// - every call is checked; a failure ends the job with a message naming
//   the rank, the wrapper and the driver call. mgpuModuleUnload ignores
//   CUDA_ERROR_DEINITIALIZED (module destructors run after the driver shut
//   down at exit).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#pragma GCC visibility push(default)
#include "dtensor/Runtime/CUDARuntime.h"
#pragma GCC visibility pop

#include <climits>
#include <mutex>
#include <unordered_set>

using namespace dtensor::rt::cuda;

namespace {

CUstream streamOr(void *stream, DeviceState &dev) {
  return stream ? static_cast<CUstream>(stream) : dev.compute;
}

/// The managed (host-shared) allocations of mgpuMemAlloc.
struct ManagedSet {
  std::mutex mutex;
  std::unordered_set<uintptr_t> pointers;
};

ManagedSet &managedSet() {
  static ManagedSet set;
  return set;
}

unsigned dim(intptr_t value, const char *what) {
  if (value < 0 || value > static_cast<intptr_t>(UINT_MAX))
    cudaFatal("mgpuLaunchKernel", std::string(what) + " " +
                                      std::to_string(value) +
                                      " is out of range");
  return static_cast<unsigned>(value);
}

} // namespace

extern "C" {

void *mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  const char *op = "mgpuModuleLoad";
  device(op);
  CUmodule module = nullptr;
  DTENSOR_CU(op, cuModuleLoadData, &module, data);
  return module;
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  const char *op = "mgpuModuleLoadJIT";
  device(op);
  CUmodule module = nullptr;
  char errorLog[4096] = {0};
  CUjit_option options[] = {CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {reinterpret_cast<void *>(static_cast<intptr_t>(optLevel)),
                    errorLog, reinterpret_cast<void *>(sizeof(errorLog) - 1)};
  CUresult rc =
      driver(op).cuModuleLoadDataEx(&module, data, 3, options, values);
  if (rc != CUDA_SUCCESS)
    cudaFatal(op, "cuModuleLoadDataEx (PTX JIT, -O" + std::to_string(optLevel) +
                      ") failed: " + describe(rc) +
                      (errorLog[0] ? std::string("\n") + errorLog : ""));
  return module;
}

void mgpuModuleUnload(void *module) {
  std::string error;
  const DriverTable *d = loadDriver(error);
  if (!d || !module)
    return;
  CUresult rc = d->cuModuleUnload(static_cast<CUmodule>(module));
  if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_DEINITIALIZED)
    check(rc, "mgpuModuleUnload", "cuModuleUnload");
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  const char *op = "mgpuModuleGetFunction";
  device(op);
  CUfunction function = nullptr;
  CUresult rc = driver(op).cuModuleGetFunction(
      &function, static_cast<CUmodule>(module), name);
  if (rc != CUDA_SUCCESS)
    cudaFatal(op, std::string("cuModuleGetFunction of '") +
                      (name ? name : "(null)") + "' failed: " + describe(rc));
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  const char *op = "mgpuLaunchKernel";
  DeviceState &dev = device(op);
  DTENSOR_CU(op, cuLaunchKernel, static_cast<CUfunction>(function),
             dim(gridX, "gridX"), dim(gridY, "gridY"), dim(gridZ, "gridZ"),
             dim(blockX, "blockX"), dim(blockY, "blockY"),
             dim(blockZ, "blockZ"), static_cast<unsigned>(smem),
             streamOr(stream, dev), params, extra);
}

void *mgpuStreamCreate(void) { return device("mgpuStreamCreate").compute; }

void mgpuStreamDestroy(void *stream) {
  const char *op = "mgpuStreamDestroy";
  DeviceState &dev = device(op);
  if (!stream || stream == dev.compute)
    return; // the compute stream lives as long as the process
  DTENSOR_CU(op, cuStreamDestroy, static_cast<CUstream>(stream));
}

void mgpuStreamSynchronize(void *stream) {
  const char *op = "mgpuStreamSynchronize";
  DeviceState &dev = device(op);
  DTENSOR_CU(op, cuStreamSynchronize, streamOr(stream, dev));
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  const char *op = "mgpuStreamWaitEvent";
  DeviceState &dev = device(op);
  DTENSOR_CU(op, cuStreamWaitEvent, streamOr(stream, dev),
             static_cast<CUevent>(event), 0);
}

void *mgpuEventCreate(void) {
  const char *op = "mgpuEventCreate";
  device(op);
  CUevent event = nullptr;
  DTENSOR_CU(op, cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
  return event;
}

void mgpuEventDestroy(void *event) {
  const char *op = "mgpuEventDestroy";
  device(op);
  DTENSOR_CU(op, cuEventDestroy, static_cast<CUevent>(event));
}

void mgpuEventSynchronize(void *event) {
  const char *op = "mgpuEventSynchronize";
  device(op);
  DTENSOR_CU(op, cuEventSynchronize, static_cast<CUevent>(event));
}

void mgpuEventRecord(void *event, void *stream) {
  const char *op = "mgpuEventRecord";
  DeviceState &dev = device(op);
  DTENSOR_CU(op, cuEventRecord, static_cast<CUevent>(event),
             streamOr(stream, dev));
}

void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared) {
  const char *op = "mgpuMemAlloc";
  DeviceState &dev = device(op);
  if (isHostShared) {
    CUdeviceptr ptr = 0;
    CUresult rc = driver(op).cuMemAllocManaged(&ptr, sizeBytes ? sizeBytes : 1,
                                               CU_MEM_ATTACH_GLOBAL);
    if (rc != CUDA_SUCCESS)
      cudaFatal(op, "cuMemAllocManaged of " + std::to_string(sizeBytes) +
                        " bytes failed: " + describe(rc));
    ManagedSet &set = managedSet();
    std::lock_guard<std::mutex> lock(set.mutex);
    set.pointers.insert(static_cast<uintptr_t>(ptr));
    return reinterpret_cast<void *>(ptr);
  }
  if (void *block = captureAllocate(sizeBytes, op))
    return block;
  CUdeviceptr ptr = 0;
  CUresult rc = driver(op).cuMemAllocAsync(&ptr, sizeBytes ? sizeBytes : 1,
                                           streamOr(stream, dev));
  if (rc != CUDA_SUCCESS) {
    size_t freeBytes = 0, totalBytes = 0;
    driver(op).cuMemGetInfo(&freeBytes, &totalBytes);
    cudaFatal(op, "cuMemAllocAsync of " + std::to_string(sizeBytes) +
                      " bytes failed: " + describe(rc) + " (" +
                      std::to_string(freeBytes) + " of " +
                      std::to_string(totalBytes) + " bytes free)");
  }
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, void *stream) {
  const char *op = "mgpuMemFree";
  DeviceState &dev = device(op);
  if (!ptr)
    return;
  auto address = reinterpret_cast<CUdeviceptr>(ptr);
  bool managed = false;
  {
    ManagedSet &set = managedSet();
    std::lock_guard<std::mutex> lock(set.mutex);
    managed = set.pointers.erase(static_cast<uintptr_t>(address)) != 0;
  }
  if (managed) {
    // Managed memory is not stream-ordered: wait for its users first.
    DTENSOR_CU(op, cuStreamSynchronize, streamOr(stream, dev));
    DTENSOR_CU(op, cuMemFree, address);
    return;
  }
  if (captureRelease(ptr))
    return;
  DTENSOR_CU(op, cuMemFreeAsync, address, streamOr(stream, dev));
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  const char *op = "mgpuMemcpy";
  DeviceState &dev = device(op);
  DTENSOR_CU(op, cuMemcpyAsync, reinterpret_cast<CUdeviceptr>(dst),
             reinterpret_cast<CUdeviceptr>(src), sizeBytes,
             streamOr(stream, dev));
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  const char *op = "mgpuMemset32";
  DeviceState &dev = device(op);
  DTENSOR_CU(op, cuMemsetD32Async, reinterpret_cast<CUdeviceptr>(dst), value,
             count, streamOr(stream, dev));
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  const char *op = "mgpuMemset16";
  DeviceState &dev = device(op);
  DTENSOR_CU(op, cuMemsetD16Async, reinterpret_cast<CUdeviceptr>(dst), value,
             count, streamOr(stream, dev));
}

void mgpuSetDefaultDevice(int32_t device) {
  requestDeviceOrdinal(device, "mgpuSetDefaultDevice");
}

} // extern "C"
