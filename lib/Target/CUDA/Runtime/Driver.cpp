//===- Driver.cpp - the CUDA driver API, loaded at run time ---------------===//

#include "Driver.h"

#include "Bootstrap.h"
#include "CommBackend.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <unistd.h>
#include <vector>

namespace dtensor::rt::cuda {

namespace {

struct DriverLoad {
  DriverTable table;
  std::string error;
  bool ok = false;
};

DriverLoad &driverLoad() {
  static DriverLoad load = [] {
    DriverLoad l;
    void *handle = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      const char *why = ::dlerror();
      l.error = std::string("cannot load the CUDA driver library "
                            "libcuda.so.1 (") +
                (why ? why : "unknown dlopen error") +
                "): no NVIDIA driver on this machine";
      return l;
    }
    // Resolve the name cuda.h maps each function to (cuMemAlloc ->
    // cuMemAlloc_v2): the string of the macro-expanded name.
#define DTENSOR_CUDA_STRING2(x) #x
#define DTENSOR_CUDA_STRING(x) DTENSOR_CUDA_STRING2(x)
#define DTENSOR_CUDA_RESOLVE(name)                                             \
  l.table.name = reinterpret_cast<decltype(l.table.name)>(                     \
      ::dlsym(handle, DTENSOR_CUDA_STRING(name)));                             \
  if (!l.table.name) {                                                         \
    l.error = "the CUDA driver library libcuda.so.1 lacks " +                  \
              std::string(DTENSOR_CUDA_STRING(name)) +                         \
              " (driver too old for CUDA 13?)";                                \
    return l;                                                                  \
  }
    DTENSOR_CUDA_DRIVER_FUNCTIONS(DTENSOR_CUDA_RESOLVE)
#undef DTENSOR_CUDA_RESOLVE
#undef DTENSOR_CUDA_STRING
#undef DTENSOR_CUDA_STRING2
    CUresult rc = l.table.cuInit(0);
    if (rc != CUDA_SUCCESS) {
      const char *name = nullptr;
      l.table.cuGetErrorName(rc, &name);
      l.error = std::string("cuInit failed: ") + (name ? name : "?");
      return l;
    }
    l.ok = true;
    return l;
  }();
  return load;
}

std::atomic<int64_t> rankForMessages{-1};

struct DeviceSlot {
  std::mutex mutex;
  DeviceState state;
  int requested = -1;
};

DeviceSlot &deviceSlot() {
  static DeviceSlot slot;
  return slot;
}

} // namespace

const DriverTable *loadDriver(std::string &error) {
  DriverLoad &l = driverLoad();
  if (!l.ok) {
    error = l.error;
    return nullptr;
  }
  return &l.table;
}

const DriverTable &driver(const char *op) {
  std::string error;
  const DriverTable *table = loadDriver(error);
  if (!table)
    cudaFatal(op, "no CUDA device: " + error);
  return *table;
}

std::string describe(CUresult result) {
  std::string error;
  const DriverTable *table = loadDriver(error);
  const char *name = nullptr;
  const char *text = nullptr;
  if (table) {
    table->cuGetErrorName(result, &name);
    table->cuGetErrorString(result, &text);
  }
  std::string s = name ? name : "CUresult " + std::to_string(result);
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

int64_t messageRank() {
  int64_t rank = rankForMessages.load();
  if (rank >= 0)
    return rank;
  LaunchEnv env;
  std::string error;
  if (readLaunchEnv(env, error))
    return env.rank;
  return -1;
}

void setMessageRank(int64_t rank) { rankForMessages.store(rank); }

bool hasActiveBackend(); // NCCLBackend.cpp

[[noreturn]] void cudaFatal(const char *op, const std::string &message) {
  if (hasActiveBackend())
    fatal(op, message); // aborts the communicators, exits
  int64_t rank = messageRank();
  std::string r = rank >= 0 ? std::to_string(rank) : std::string("?");
  std::fprintf(stderr, "dtensor runtime: rank %s: %s: %s\n", r.c_str(), op,
               message.c_str());
  std::fflush(stderr);
  ::_exit(1);
}

void check(CUresult result, const char *op, const char *call) {
  if (result == CUDA_SUCCESS)
    return;
  cudaFatal(op, std::string(call) + " failed: " + describe(result));
}

DeviceState *tryInitDevice(std::string &error) {
  DeviceSlot &slot = deviceSlot();
  std::lock_guard<std::mutex> lock(slot.mutex);
  const DriverTable *d = loadDriver(error);
  if (!d)
    return nullptr;
  DeviceState &s = slot.state;
  if (s.magic == kContextMagic) {
    CUresult rc = d->cuCtxSetCurrent(s.context);
    if (rc != CUDA_SUCCESS) {
      error = "cuCtxSetCurrent failed: " + describe(rc);
      return nullptr;
    }
    return &s;
  }
  int count = 0;
  CUresult rc = d->cuDeviceGetCount(&count);
  if (rc != CUDA_SUCCESS || count == 0) {
    error = rc != CUDA_SUCCESS ? "cuDeviceGetCount failed: " + describe(rc)
                               : std::string("the driver reports 0 devices");
    return nullptr;
  }
  LaunchEnv env;
  std::string envError;
  if (!readLaunchEnv(env, envError)) {
    error = envError;
    return nullptr;
  }
  int ordinal = slot.requested;
  if (ordinal < 0)
    ordinal = env.singleGpuTest ? 0 : static_cast<int>(env.localRank % count);
  if (ordinal >= count) {
    error = "device " + std::to_string(ordinal) +
            " requested, the machine has " + std::to_string(count);
    return nullptr;
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  if ((rc = d->cuDeviceGet(&dev, ordinal)) != CUDA_SUCCESS) {
    error =
        "cuDeviceGet(" + std::to_string(ordinal) + ") failed: " + describe(rc);
    return nullptr;
  }
  if ((rc = d->cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS) {
    error = "cuDevicePrimaryCtxRetain on device " + std::to_string(ordinal) +
            " failed: " + describe(rc);
    return nullptr;
  }
  if ((rc = d->cuCtxSetCurrent(ctx)) != CUDA_SUCCESS ||
      (rc = d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) !=
          CUDA_SUCCESS) {
    error = "creating the compute stream on device " + std::to_string(ordinal) +
            " failed: " + describe(rc);
    return nullptr;
  }
  // Keep freed stream-ordered memory in the pool (the default threshold 0
  // returns it to the system at every synchronization): staging buffers
  // come and go with every collective.
  CUmemoryPool pool = nullptr;
  cuuint64_t threshold = ~cuuint64_t(0);
  if ((rc = d->cuDeviceGetDefaultMemPool(&pool, dev)) != CUDA_SUCCESS ||
      (rc = d->cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                     &threshold)) != CUDA_SUCCESS) {
    error = "configuring the memory pool of device " + std::to_string(ordinal) +
            " failed: " + describe(rc);
    return nullptr;
  }
  s.ordinal = ordinal;
  s.device = dev;
  s.context = ctx;
  s.compute = stream;
  s.magic = kContextMagic;
  return &s;
}

DeviceState &device(const char *op) {
  std::string error;
  DeviceState *s = tryInitDevice(error);
  if (!s)
    cudaFatal(op, "no CUDA device: " + error);
  return *s;
}

void requestDeviceOrdinal(int ordinal, const char *op) {
  DeviceSlot &slot = deviceSlot();
  std::lock_guard<std::mutex> lock(slot.mutex);
  if (slot.state.magic == kContextMagic) {
    if (slot.state.ordinal != ordinal)
      cudaFatal(op, "device " + std::to_string(ordinal) +
                        " requested, but this process already runs on device " +
                        std::to_string(slot.state.ordinal) +
                        " (one device per rank)");
    return;
  }
  slot.requested = ordinal;
}

bool deviceReady() {
  DeviceSlot &slot = deviceSlot();
  std::lock_guard<std::mutex> lock(slot.mutex);
  return slot.state.magic == kContextMagic;
}

void *allocAsync(size_t bytes, const char *op, const char *what) {
  if (void *block = captureAllocate(bytes, op))
    return block;
  DeviceState &s = device(op);
  const DriverTable &d = driver(op);
  CUdeviceptr ptr = 0;
  // cuMemAllocAsync rejects 0 bytes; a 1-byte allocation keeps pointers
  // distinct and non-null.
  CUresult rc = d.cuMemAllocAsync(&ptr, bytes ? bytes : 1, s.compute);
  if (rc != CUDA_SUCCESS) {
    size_t freeBytes = 0, totalBytes = 0;
    d.cuMemGetInfo(&freeBytes, &totalBytes);
    cudaFatal(op, std::string("cuMemAllocAsync of ") + std::to_string(bytes) +
                      " bytes of " + what + " failed: " + describe(rc) +
                      " (device " + std::to_string(s.ordinal) + ": " +
                      std::to_string(freeBytes) + " of " +
                      std::to_string(totalBytes) + " bytes free)");
  }
  return reinterpret_cast<void *>(ptr);
}

void freeAsync(void *ptr, const char *op) {
  if (!ptr || captureRelease(ptr))
    return;
  DeviceState &s = device(op);
  DTENSOR_CU(op, cuMemFreeAsync, reinterpret_cast<CUdeviceptr>(ptr), s.compute);
}

bool computeStreamCapturing(const char *op) {
  DeviceState &s = device(op);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  DTENSOR_CU(op, cuStreamIsCapturing, s.compute, &status);
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

float medianStreamMs(const std::function<bool()> &launch, int repeats,
                     const char *op, const std::function<void()> &untimed) {
  if (repeats < 1)
    return -1;
  DeviceState &dev = device(op);
  std::vector<CUevent> events(2 * repeats);
  for (CUevent &event : events)
    DTENSOR_CU(op, cuEventCreate, &event, CU_EVENT_DEFAULT);
  bool ok = true;
  for (int rep = -1; rep < repeats && ok; ++rep) {
    if (untimed)
      untimed();
    if (rep >= 0)
      DTENSOR_CU(op, cuEventRecord, events[2 * rep], dev.compute);
    ok = launch();
    if (rep >= 0)
      DTENSOR_CU(op, cuEventRecord, events[2 * rep + 1], dev.compute);
  }
  std::vector<float> times;
  if (ok) {
    DTENSOR_CU(op, cuEventSynchronize, events.back());
    for (int rep = 0; rep < repeats; ++rep) {
      float ms = 0;
      DTENSOR_CU(op, cuEventElapsedTime, &ms, events[2 * rep],
                 events[2 * rep + 1]);
      times.push_back(ms);
    }
  }
  for (CUevent event : events)
    DTENSOR_CU(op, cuEventDestroy, event);
  return ok ? medianOf(std::move(times)) : -1;
}

float medianOf(std::vector<float> times) {
  if (times.empty())
    return -1;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace dtensor::rt::cuda
