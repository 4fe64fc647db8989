//===- Driver.h - the CUDA driver API, loaded at run time -------*- C++ -*-===//
//
// The CUDA runtime library never links libcuda: it dlopens libcuda.so.1 on
// first use and calls the driver through the table below. A machine without
// a driver (CI, build machines) can therefore load the library, run
// `--help` of its tools, and get a clear "no CUDA device" error from
// dtensor_rt_init instead of a loader failure. NCCL and cuBLASLt load the
// driver the same way (neither has libcuda as a NEEDED entry).
//
// The table holds the versioned entry points cuda.h maps the plain names to
// (cuMemAlloc -> cuMemAlloc_v2, ...), so that the function types of cuda.h
// match what dlsym returns.
//
// Device state: one device, its primary context, and the rank's persistent
// compute stream, shared by the NCCL backend, the mgpu* wrappers and the
// matmul entry points; set up by the first of them that runs.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIME_DRIVER_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIME_DRIVER_H

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dtensor::rt::cuda {

// X(name): every driver function the library calls.
#define DTENSOR_CUDA_DRIVER_FUNCTIONS(X)                                       \
  X(cuInit)                                                                    \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuMemGetInfo)                                                              \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemAllocAsync)                                                           \
  X(cuDeviceGetDefaultMemPool)                                                 \
  X(cuMemPoolSetAttribute)                                                     \
  X(cuMemPoolGetAttribute)                                                     \
  X(cuMemFreeAsync)                                                            \
  X(cuMemAllocManaged)                                                         \
  X(cuMemcpyAsync)                                                             \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemsetD32Async)                                                          \
  X(cuMemsetD16Async)                                                          \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventQuery)                                                              \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuStreamBeginCapture)                                                      \
  X(cuStreamEndCapture)                                                        \
  X(cuStreamIsCapturing)                                                       \
  X(cuGraphInstantiateWithFlags)                                               \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphDestroy)                                                            \
  X(cuGraphGetNodes)                                                           \
  X(cuGraphMemsetNodeGetParams)                                                \
  X(cuGraphNodeGetDependencies)                                                \
  X(cuGraphNodeGetDependentNodes)                                              \
  X(cuGraphAddKernelNode)                                                      \
  X(cuGraphAddDependencies)                                                    \
  X(cuGraphDestroyNode)                                                        \
  X(cuGraphGetEdges)                                                           \
  X(cuGraphNodeGetType)                                                        \
  X(cuGraphKernelNodeGetParams)                                                \
  X(cuGraphDebugDotPrint)                                                      \
  X(cuFuncGetName)                                                             \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)

struct DriverTable {
#define DTENSOR_CUDA_DECLARE_POINTER(name) decltype(&::name) name = nullptr;
  DTENSOR_CUDA_DRIVER_FUNCTIONS(DTENSOR_CUDA_DECLARE_POINTER)
#undef DTENSOR_CUDA_DECLARE_POINTER
};

/// The driver table, or null with `error` set ("cannot load libcuda.so.1:
/// ...", "libcuda.so.1 lacks cuMemAllocAsync", "cuInit: ..."). Loads and
/// initializes the driver once; thread-safe.
const DriverTable *loadDriver(std::string &error);

/// The driver table; fatal ("no CUDA device: <why>") if it cannot be loaded.
const DriverTable &driver(const char *op);

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string describe(CUresult result);

/// The world rank for messages: the bootstrap's, or -1 before it is known.
int64_t messageRank();
void setMessageRank(int64_t rank);

/// Prints "dtensor runtime: rank R: <op>: <message>" and ends the job:
/// through the active backend when there is one (which aborts its
/// communicators), else with exit status 1.
[[noreturn]] void cudaFatal(const char *op, const std::string &message);

/// Fatal unless `result` is CUDA_SUCCESS: "<op>: <call> failed:
/// CUDA_ERROR_... (<string>)".
void check(CUresult result, const char *op, const char *call);

/// Checks a driver call: DTENSOR_CU(op, cuStreamSynchronize, stream).
#define DTENSOR_CU(op, fn, ...)                                                \
  ::dtensor::rt::cuda::check(::dtensor::rt::cuda::driver(op).fn(__VA_ARGS__),  \
                             op, #fn)

/// The device, its primary context and the compute stream of this process.
/// Every field is set once, by tryInitDevice().
struct DeviceState {
  uint64_t magic = 0; // kContextMagic once set up: checks ctx arguments
  int ordinal = -1;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream compute = nullptr;
};

constexpr uint64_t kContextMagic = 0x647465'6e736f72ULL; // "dtensor"

/// Chooses and sets up the device on first call (ordinal: `ordinal` if
/// non-negative, else the one mgpuSetDefaultDevice set, else the launcher's
/// local rank modulo the device count, 0 in single-GPU test mode), makes its
/// context current on the calling thread and returns the state. Fatal on
/// failure; see tryInitDevice for a non-fatal form.
DeviceState &device(const char *op);

/// As device(), but returns null with `error` set when there is no driver
/// or no device.
DeviceState *tryInitDevice(std::string &error);

/// Requests device `ordinal` for the first initialization (fatal if the
/// device is already set up as a different one).
void requestDeviceOrdinal(int ordinal, const char *op);

/// Whether the device state is set up (without setting it up).
bool deviceReady();

/// Stream-ordered device allocation on the compute stream; fatal on
/// failure, naming `bytes` and the free and total device memory.
void *allocAsync(size_t bytes, const char *op, const char *what);
void freeAsync(void *ptr, const char *op);

/// Whether the compute stream is being captured into a CUDA graph.
bool computeStreamCapturing(const char *op);

/// While dtensor_rt_graph_begin..end captures the compute stream, device
/// allocations come from the graph's own blocks (Graph.cpp) instead of
/// stream-ordered allocation nodes: returns such a block of at least
/// `bytes`, or null when no graph is being captured.
void *captureAllocate(size_t bytes, const char *op);
/// Whether `ptr` is a block of a graph (being captured or captured): its
/// free is then the graph's business (a free during the capture makes the
/// block reusable by the capture's later allocations; after it, none).
bool captureRelease(void *ptr);

/// The median of `times` (the upper one of an even count); negative if
/// there are none.
float medianOf(std::vector<float> times);

/// Times `launch`, which enqueues one run on the compute stream and says
/// whether it could: the median of `repeats` runs after one warm-up, in
/// ms, between events on the compute stream; negative if a launch failed.
/// Waits for the stream, so never during a capture. `untimed`, if given,
/// enqueues work before each run, outside the timed span (evicting the L2
/// cache, so that a run does not find its operands there from the last).
/// The autotuning of the matmuls and of cuDNN's attention plans.
float medianStreamMs(const std::function<bool()> &launch, int repeats,
                     const char *op,
                     const std::function<void()> &untimed = nullptr);

} // namespace dtensor::rt::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_DRIVER_H
