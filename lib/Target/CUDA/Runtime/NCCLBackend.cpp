//===- NCCLBackend.cpp - the CUDA communication backend -------------------===//
//
// CommBackend over NCCL on CUDA streams.
//
// Streams and events. The rank has one compute stream (Driver.h), on which
// compiled code, the mgpu* wrappers, matmuls, and this backend's memory
// hooks (staging allocation, strided copies, avg division) run. Every
// communicator has its own comm stream. A collective
//   1. records the group's `ready` event on the compute stream and makes
//      the comm stream wait on it (so it sees every earlier write, staging
//      packs included);
//   2. enqueues the NCCL call(s) on the comm stream;
//   3. records a fresh `done` event on the comm stream and hands it to the
//      watchdog;
// and returns a request whose wait() makes the compute stream wait on
// `done`: no host blocking anywhere, the host runs ahead.
//
// Buffer lifetime. The ABI layer releases staging buffers after wait() and
// the completion step; releaseStage is cuMemFreeAsync on the compute stream,
// which by then waits on `done`, so the memory returns to the pool only
// after the collective finished reading and writing it.
//
// Communicators. registerMesh splits the world communicator into the
// mesh's (ncclCommSplit, NCCL_SPLIT_NOCOLOR outside the mesh; collective
// over the world, like the interface asks); createGroup splits the mesh
// communicator by the group's color, keyed by its index (collective over
// the mesh), and checks that the NCCL rank is the group index.
//
// Faults. Every driver and NCCL call is checked; messages name the rank,
// the entry point, the group and the call. A watchdog thread polls every
// 50 ms: the `done` events of collectives in flight (cuEventQuery; not of
// collectives captured into a CUDA graph, whose enqueue only is watched), the
// host-side NCCL calls in progress (init, split, destroy, and the enqueue
// of a collective, which may block while NCCL connects to the peers), and
// ncclCommGetAsyncError of every communicator. When something exceeds
// DTENSOR_NCCL_TIMEOUT seconds (default 300), or NCCL reports an
// asynchronous error, it prints
//   dtensor runtime: rank R: <op> on group (mesh M, axes {..}) did not
//   complete within T s
// aborts every communicator (ncclCommAbort) and exits with status 1; a
// hung job becomes a failed one.
//
//===----------------------------------------------------------------------===//

#include "NCCLBackend.h"

#include "Bootstrap.h"
#include "Driver.h"
#include "Kernels.h"

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace dtensor::rt {

namespace cuda {
namespace {
std::atomic<bool> backendActive{false};
} // namespace
bool hasActiveBackend() { return backendActive.load(); }
} // namespace cuda

namespace {

using namespace cuda;
using Clock = std::chrono::steady_clock;

std::string ncclMessage(ncclResult_t result, ncclComm_t comm) {
  std::string s = ncclGetErrorString(result);
  const char *last = ncclGetLastError(comm);
  if (last && *last)
    s += std::string(" (") + last + ")";
  return s;
}

ncclDataType_t ncclType(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return ncclFloat32;
  case ElemType::F64:
    return ncclFloat64;
  case ElemType::I32:
    return ncclInt32;
  case ElemType::I64:
    return ncclInt64;
  case ElemType::BF16:
    return ncclBfloat16;
  case ElemType::F16:
    return ncclFloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclOp(ReduceOp reduce) {
  switch (reduce) {
  case ReduceOp::Sum:
    return ncclSum;
  case ReduceOp::Product:
    return ncclProd;
  case ReduceOp::Min:
    return ncclMin;
  case ReduceOp::Max:
    return ncclMax;
  }
  return ncclSum;
}

/// "(mesh 0, axes {0,1})".
std::string groupName(int64_t mesh, int64_t axesMask) {
  std::string axes;
  for (int a = 0; a < 63; ++a)
    if (axesMask & (int64_t(1) << a))
      axes += (axes.empty() ? "" : ",") + std::to_string(a);
  return "(mesh " + std::to_string(mesh) + ", axes {" + axes + "})";
}

/// A CUevent owned by whoever holds the last reference (a request, the
/// watchdog).
class Event {
public:
  explicit Event(const char *op) {
    DTENSOR_CU(op, cuEventCreate, &event, CU_EVENT_DISABLE_TIMING);
  }
  ~Event() {
    std::string error;
    if (const DriverTable *d = loadDriver(error))
      d->cuEventDestroy(event);
  }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  CUevent get() const { return event; }

private:
  CUevent event = nullptr;
};

class NCCLBackend;

class NCCLGroup : public CommGroup {
public:
  NCCLGroup(NCCLBackend &backend, int64_t index, int64_t size, ncclComm_t comm,
            std::string name, const char *op);
  ~NCCLGroup() override;

  ncclComm_t comm;
  CUstream stream = nullptr;
  CUevent ready = nullptr;
  std::string name;

private:
  NCCLBackend &backend;
};

class NCCLRequest : public CommRequest {
public:
  NCCLRequest(std::shared_ptr<Event> done, CUstream compute, std::string op)
      : done(std::move(done)), compute(compute), op(std::move(op)) {}
  void wait() override {
    // The compute stream waits; the host does not.
    DTENSOR_CU(op.c_str(), cuStreamWaitEvent, compute, done->get(), 0);
  }

private:
  std::shared_ptr<Event> done;
  CUstream compute;
  std::string op;
};

/// Something the watchdog times: a collective (with its `done` event) or a
/// host-side NCCL call (no event; removed when the call returns).
struct Watch {
  uint64_t id;
  std::string op;
  std::string group;
  std::shared_ptr<Event> done;
  Clock::time_point start;
};

class NCCLBackend : public CommBackend {
public:
  NCCLBackend(const LaunchEnv &env, DeviceState &dev, double timeout)
      : env(env), dev(dev), timeout(timeout) {}
  ~NCCLBackend() override { stopWatchdog(); }

  const char *getName() const override { return "nccl"; }
  void *getContext() override { return &dev; }
  int64_t worldRank() const override { return env.rank; }
  int64_t worldSize() const override { return env.worldSize; }

  /// Rank 0 makes the id, the rendezvous spreads it, every rank joins the
  /// world communicator. False with a message on failure.
  bool start(std::string &error);

  void barrier(const char *op) override;
  [[noreturn]] void abortJob(int code) override;
  void finalize() override;

  void registerMesh(int64_t mesh,
                    const std::vector<int64_t> &positionRanks) override;
  std::unique_ptr<CommGroup> createGroup(const GroupSpec &spec,
                                         const char *op) override;

  void *allocateStage(size_t bytes) override {
    return allocAsync(bytes, "stage", "staging memory");
  }
  void releaseStage(void *ptr) override { freeAsync(ptr, "stage"); }
  void copy(const StridedView &dst, const StridedView &src) override {
    device("stage");
    copyOnDevice(dst, src, dev.compute, "stage");
  }
  void writeBuffer(void *buffer, const void *host, size_t bytes) override {
    const char *op = "buffer_write";
    device(op);
    DTENSOR_CU(op, cuMemcpyHtoDAsync, reinterpret_cast<CUdeviceptr>(buffer),
               host, bytes, dev.compute);
    // `host` may be pageable and reused at once.
    DTENSOR_CU(op, cuStreamSynchronize, dev.compute);
  }
  void readBuffer(void *host, const void *buffer, size_t bytes) override {
    const char *op = "buffer_read";
    device(op);
    DTENSOR_CU(op, cuMemcpyDtoHAsync, host,
               reinterpret_cast<CUdeviceptr>(buffer), bytes, dev.compute);
    DTENSOR_CU(op, cuStreamSynchronize, dev.compute);
  }
  void synchronize() override {
    device("synchronize");
    DTENSOR_CU("synchronize", cuStreamSynchronize, dev.compute);
  }
  void divide(void *data, size_t count, ElemType type, int64_t n) override {
    device("avg");
    divideOnDevice(data, count, type, n, dev.compute, "avg");
  }

  std::unique_ptr<CommRequest> allReduce(const void *send, void *recv,
                                         size_t count, ElemType type,
                                         ReduceOp reduce, CommGroup &group,
                                         const char *op) override {
    // In place (send == recv, CommBackend.h) is NCCL's own in-place form.
    return issue(group, op, "ncclAllReduce", [&](NCCLGroup &g) {
      return ncclAllReduce(send, recv, count, ncclType(type), ncclOp(reduce),
                           g.comm, g.stream);
    });
  }
  std::unique_ptr<CommRequest> allGather(const void *send, void *recv,
                                         size_t count, ElemType type,
                                         CommGroup &group,
                                         const char *op) override {
    return issue(group, op, "ncclAllGather", [&](NCCLGroup &g) {
      return ncclAllGather(send, recv, count, ncclType(type), g.comm, g.stream);
    });
  }
  std::unique_ptr<CommRequest> reduceScatter(const void *send, void *recv,
                                             size_t count, ElemType type,
                                             ReduceOp reduce, CommGroup &group,
                                             const char *op) override {
    return issue(group, op, "ncclReduceScatter", [&](NCCLGroup &g) {
      return ncclReduceScatter(send, recv, count, ncclType(type),
                               ncclOp(reduce), g.comm, g.stream);
    });
  }
  std::unique_ptr<CommRequest> allToAll(const void *send, void *recv,
                                        size_t count, ElemType type,
                                        CommGroup &group,
                                        const char *op) override {
    size_t bytes = count * elemSize(type);
    return issue(group, op, "grouped ncclSend/ncclRecv", [&](NCCLGroup &g) {
      ncclResult_t r = ncclGroupStart();
      for (int64_t j = 0; r == ncclSuccess && j < g.getSize(); ++j) {
        r = ncclSend(static_cast<const char *>(send) + j * bytes, count,
                     ncclType(type), static_cast<int>(j), g.comm, g.stream);
        if (r == ncclSuccess)
          r = ncclRecv(static_cast<char *>(recv) + j * bytes, count,
                       ncclType(type), static_cast<int>(j), g.comm, g.stream);
      }
      ncclResult_t end = ncclGroupEnd();
      return r != ncclSuccess ? r : end;
    });
  }
  std::unique_ptr<CommRequest>
  allToAllV(const void *send, std::vector<size_t> sendCounts,
            std::vector<size_t> sendDispls, void *recv,
            std::vector<size_t> recvCounts, std::vector<size_t> recvDispls,
            ElemType type, CommGroup &group, const char *op) override {
    size_t bytes = elemSize(type);
    return issue(group, op, "grouped ncclSend/ncclRecv", [&](NCCLGroup &g) {
      // Empty blocks are skipped on both sides (by the all_to_all_v
      // contract, a zero send count on one side is a zero recv count on
      // the other).
      ncclResult_t r = ncclGroupStart();
      for (int64_t j = 0; r == ncclSuccess && j < g.getSize(); ++j) {
        if (sendCounts[j] > 0)
          r = ncclSend(static_cast<const char *>(send) + sendDispls[j] * bytes,
                       sendCounts[j], ncclType(type), static_cast<int>(j),
                       g.comm, g.stream);
        if (r == ncclSuccess && recvCounts[j] > 0)
          r = ncclRecv(static_cast<char *>(recv) + recvDispls[j] * bytes,
                       recvCounts[j], ncclType(type), static_cast<int>(j),
                       g.comm, g.stream);
      }
      ncclResult_t end = ncclGroupEnd();
      return r != ncclSuccess ? r : end;
    });
  }
  std::unique_ptr<CommRequest> sendRecv(const void *send, void *recv,
                                        size_t count, ElemType type,
                                        int64_t sendTo, int64_t recvFrom,
                                        CommGroup &group,
                                        const char *op) override {
    return issue(group, op, "grouped ncclSend/ncclRecv", [&](NCCLGroup &g) {
      ncclResult_t r = ncclGroupStart();
      if (r == ncclSuccess)
        r = ncclSend(send, count, ncclType(type), static_cast<int>(sendTo),
                     g.comm, g.stream);
      if (r == ncclSuccess)
        r = ncclRecv(recv, count, ncclType(type), static_cast<int>(recvFrom),
                     g.comm, g.stream);
      ncclResult_t end = ncclGroupEnd();
      return r != ncclSuccess ? r : end;
    });
  }
  std::unique_ptr<CommRequest> broadcast(const void *send, void *recv,
                                         size_t count, ElemType type,
                                         int64_t root, CommGroup &group,
                                         const char *op) override {
    return issue(group, op, "ncclBroadcast", [&](NCCLGroup &g) {
      // Only the root's send buffer is read; the others pass their recv
      // buffer so that NCCL sees a valid pointer.
      return ncclBroadcast(send ? send : recv, recv, count, ncclType(type),
                           static_cast<int>(root), g.comm, g.stream);
    });
  }

  // Communicators the watchdog checks and abortJob aborts.
  void addComm(ncclComm_t comm, const std::string &name) {
    std::lock_guard<std::mutex> lock(mutex);
    comms.emplace(comm, name);
  }
  void removeComm(ncclComm_t comm) {
    std::lock_guard<std::mutex> lock(mutex);
    comms.erase(comm);
  }

  /// Times a host-side NCCL call (init, split, destroy) until the returned
  /// id is passed to endHostWatch.
  uint64_t beginHostWatch(const std::string &op, const std::string &group) {
    return addWatch(op, group, nullptr);
  }
  /// Turns host watch `id` into a watch of `done` (same start time).
  void attachEvent(uint64_t id, std::shared_ptr<Event> done) {
    std::lock_guard<std::mutex> lock(mutex);
    for (Watch &w : watches)
      if (w.id == id) {
        w.done = std::move(done);
        return;
      }
  }
  void endHostWatch(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto it = watches.begin(); it != watches.end(); ++it)
      if (it->id == id) {
        watches.erase(it);
        return;
      }
  }

  /// Fatal unless `result` is ncclSuccess.
  void checkNccl(ncclResult_t result, const char *op, const char *call,
                 const std::string &group, ncclComm_t comm) {
    if (result == ncclSuccess)
      return;
    fatal(op, std::string(call) + " on group " + group +
                  " failed: " + ncclMessage(result, comm));
  }

private:
  template <typename Enqueue>
  std::unique_ptr<CommRequest> issue(CommGroup &group, const char *op,
                                     const char *call, Enqueue enqueue) {
    auto &g = static_cast<NCCLGroup &>(group);
    device(op); // the context, current on this thread
    const DriverTable &d = driver(op);
    // Driver failures here name the group too.
    auto checkOn = [&](CUresult result, const char *what) {
      if (result != CUDA_SUCCESS)
        fatal(op, std::string(what) + " on group " + g.name +
                      " failed: " + describe(result));
    };
    checkOn(d.cuEventRecord(g.ready, dev.compute),
            "cuEventRecord (compute stream)");
    checkOn(d.cuStreamWaitEvent(g.stream, g.ready, 0),
            "cuStreamWaitEvent (comm stream)");
    // Timed from here: the enqueue itself may block on the host (NCCL sets
    // up connections lazily, with the peers, at their first use).
    uint64_t watch = beginHostWatch(op, g.name);
    checkNccl(enqueue(g), op, call, g.name, g.comm);
    auto done = std::make_shared<Event>(op);
    checkOn(d.cuEventRecord(done->get(), g.stream),
            "cuEventRecord (comm stream)");
    // A collective captured into a CUDA graph runs at each launch of the
    // graph, where the watchdog cannot see it (and querying an event
    // recorded in a capture is not allowed): only its enqueue is watched.
    if (computeStreamCapturing(op))
      endHostWatch(watch);
    else
      attachEvent(watch, done);
    return std::make_unique<NCCLRequest>(std::move(done), dev.compute, op);
  }

  uint64_t addWatch(const std::string &op, const std::string &group,
                    std::shared_ptr<Event> done) {
    std::lock_guard<std::mutex> lock(mutex);
    uint64_t id = nextWatch++;
    watches.push_back(Watch{id, op, group, std::move(done), Clock::now()});
    return id;
  }

  void startWatchdog() {
    watchdog = std::thread([this] { watchdogLoop(); });
  }
  void stopWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wakeup.notify_all();
    if (watchdog.joinable())
      watchdog.join();
  }
  void watchdogLoop();
  /// Prints `message` as the watchdog's verdict, aborts and exits.
  [[noreturn]] void watchdogFail(const std::string &message);
  void abortComms();

  LaunchEnv env;
  DeviceState &dev;
  double timeout;
  ncclComm_t world = nullptr;
  CUstream worldStream = nullptr;
  int *barrierScratch = nullptr;
  std::map<int64_t, ncclComm_t> meshComms; // null outside the mesh

  std::mutex mutex; // guards what follows
  std::map<ncclComm_t, std::string> comms;
  std::list<Watch> watches;
  uint64_t nextWatch = 1;
  bool stopping = false;
  std::condition_variable wakeup;
  std::thread watchdog;
};

//===----------------------------------------------------------------------===//
// NCCLGroup
//===----------------------------------------------------------------------===//

NCCLGroup::NCCLGroup(NCCLBackend &backend, int64_t index, int64_t size,
                     ncclComm_t comm, std::string name, const char *op)
    : CommGroup(index, size), comm(comm), name(std::move(name)),
      backend(backend) {
  DTENSOR_CU(op, cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING);
  DTENSOR_CU(op, cuEventCreate, &ready, CU_EVENT_DISABLE_TIMING);
  backend.addComm(comm, this->name);
}

NCCLGroup::~NCCLGroup() {
  const char *op = "finalize";
  // Everything enqueued on the comm stream is done once it synchronizes;
  // the destroy is then local.
  DTENSOR_CU(op, cuStreamSynchronize, stream);
  backend.removeComm(comm);
  uint64_t watch = backend.beginHostWatch("ncclCommDestroy", name);
  backend.checkNccl(ncclCommDestroy(comm), op, "ncclCommDestroy", name,
                    nullptr);
  backend.endHostWatch(watch);
  DTENSOR_CU(op, cuEventDestroy, ready);
  DTENSOR_CU(op, cuStreamDestroy, stream);
}

//===----------------------------------------------------------------------===//
// NCCLBackend
//===----------------------------------------------------------------------===//

ncclConfig_t blockingConfig(const char *name) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.commName = name;
  return config;
}

bool NCCLBackend::start(std::string &error) {
  ncclUniqueId id{};
  if (env.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      error = "ncclGetUniqueId failed: " + ncclMessage(r, nullptr);
      return false;
    }
  }
  if (!exchangeUniqueId(env, &id, sizeof(id), error))
    return false;
  startWatchdog();
  uint64_t watch = beginHostWatch("ncclCommInitRankConfig", "(world)");
  ncclConfig_t config = blockingConfig("dtensor-world");
  ncclResult_t r =
      ncclCommInitRankConfig(&world, static_cast<int>(env.worldSize), id,
                             static_cast<int>(env.rank), &config);
  endHostWatch(watch);
  if (r != ncclSuccess) {
    error = "ncclCommInitRankConfig (world of " +
            std::to_string(env.worldSize) +
            " ranks) failed: " + ncclMessage(r, nullptr);
    return false;
  }
  addComm(world, "(world)");
  const char *op = "init";
  DTENSOR_CU(op, cuStreamCreate, &worldStream, CU_STREAM_NON_BLOCKING);
  CUdeviceptr scratch = 0;
  DTENSOR_CU(op, cuMemAlloc, &scratch, sizeof(int));
  barrierScratch = reinterpret_cast<int *>(scratch);
  return true;
}

void NCCLBackend::barrier(const char *op) {
  device(op);
  DTENSOR_CU(op, cuStreamSynchronize, dev.compute);
  uint64_t watch = beginHostWatch(op, "(world)");
  checkNccl(ncclAllReduce(barrierScratch, barrierScratch, 1, ncclInt32, ncclSum,
                          world, worldStream),
            op, "ncclAllReduce (barrier)", "(world)", world);
  auto done = std::make_shared<Event>(op);
  DTENSOR_CU(op, cuEventRecord, done->get(), worldStream);
  attachEvent(watch, done);
  DTENSOR_CU(op, cuEventSynchronize, done->get());
}

/// While the communicators are aborted, a thread still inside NCCL or
/// waiting on its stream may fault: the job is ending with its error
/// printed already, so such a fault exits with status 1 like the abort
/// itself instead of reporting a crash.
static void exitDuringAbort(int) { ::_exit(1); }

void NCCLBackend::abortComms() {
  std::signal(SIGSEGV, exitDuringAbort);
  std::signal(SIGBUS, exitDuringAbort);
  std::signal(SIGABRT, exitDuringAbort);
  std::map<ncclComm_t, std::string> toAbort;
  {
    std::lock_guard<std::mutex> lock(mutex);
    toAbort = comms;
  }
  // ncclCommAbort must not hang the exit: give it 10 s.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::fprintf(stderr, "dtensor runtime: ncclCommAbort did not return "
                         "within 10 s; exiting anyway\n");
    ::_exit(1);
  }).detach();
  for (auto &entry : toAbort)
    ncclCommAbort(entry.first);
}

void NCCLBackend::abortJob(int code) {
  abortComms();
  std::fflush(stderr);
  ::_exit(code ? code : 1);
}

void NCCLBackend::watchdogFail(const std::string &message) {
  std::fprintf(stderr, "dtensor runtime: rank %lld: %s\n",
               static_cast<long long>(env.rank), message.c_str());
  std::fflush(stderr);
  abortComms();
  ::_exit(1);
}

void NCCLBackend::watchdogLoop() {
  std::string error;
  const DriverTable *d = loadDriver(error);
  if (!d)
    return;
  CUresult rc = d->cuCtxSetCurrent(dev.context);
  if (rc != CUDA_SUCCESS)
    watchdogFail("watchdog: cuCtxSetCurrent failed: " + describe(rc));
  std::unique_lock<std::mutex> lock(mutex);
  while (!stopping) {
    wakeup.wait_for(lock, std::chrono::milliseconds(50));
    if (stopping)
      break;
    auto now = Clock::now();
    for (auto it = watches.begin(); it != watches.end();) {
      if (it->done) {
        CUresult q = d->cuEventQuery(it->done->get());
        if (q == CUDA_SUCCESS) {
          it = watches.erase(it);
          continue;
        }
        if (q != CUDA_ERROR_NOT_READY) {
          std::string message = it->op + " on group " + it->group +
                                ": the device reports " + describe(q);
          lock.unlock();
          watchdogFail(message);
        }
      }
      double elapsed = std::chrono::duration<double>(now - it->start).count();
      if (elapsed > timeout) {
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%g", timeout);
        std::string message = it->op + " on group " + it->group +
                              " did not complete within " + seconds +
                              " s (DTENSOR_NCCL_TIMEOUT); aborting the "
                              "communicators";
        lock.unlock();
        watchdogFail(message);
      }
      ++it;
    }
    for (auto &entry : comms) {
      ncclResult_t async = ncclSuccess;
      ncclResult_t r = ncclCommGetAsyncError(entry.first, &async);
      if (r == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
        std::string message = "NCCL reports an asynchronous error on group " +
                              entry.second + ": " +
                              ncclMessage(async, entry.first);
        lock.unlock();
        watchdogFail(message);
      }
    }
  }
}

void NCCLBackend::finalize() {
  const char *op = "finalize";
  device(op);
  DTENSOR_CU(op, cuStreamSynchronize, dev.compute);
  DTENSOR_CU(op, cuStreamSynchronize, worldStream);
  for (auto &entry : meshComms) {
    if (!entry.second)
      continue;
    removeComm(entry.second);
    std::string name = "(mesh " + std::to_string(entry.first) + ")";
    uint64_t watch = beginHostWatch("ncclCommDestroy", name);
    checkNccl(ncclCommDestroy(entry.second), op, "ncclCommDestroy", name,
              nullptr);
    endHostWatch(watch);
  }
  meshComms.clear();
  removeComm(world);
  uint64_t watch = beginHostWatch("ncclCommDestroy", "(world)");
  checkNccl(ncclCommDestroy(world), op, "ncclCommDestroy", "(world)", nullptr);
  endHostWatch(watch);
  world = nullptr;
  stopWatchdog();
  DTENSOR_CU(op, cuMemFree, reinterpret_cast<CUdeviceptr>(barrierScratch));
  DTENSOR_CU(op, cuStreamDestroy, worldStream);
  backendActive.store(false);
}

void NCCLBackend::registerMesh(int64_t mesh,
                               const std::vector<int64_t> &positionRanks) {
  const char *op = "register_mesh";
  int key = -1;
  for (size_t p = 0; p < positionRanks.size(); ++p)
    if (positionRanks[p] == env.rank)
      key = static_cast<int>(p);
  std::string name = "(mesh " + std::to_string(mesh) + ")";
  std::string commName = "dtensor-mesh-" + std::to_string(mesh);
  ncclConfig_t config = blockingConfig(commName.c_str());
  ncclComm_t comm = nullptr;
  uint64_t watch = beginHostWatch("ncclCommSplit", name);
  checkNccl(ncclCommSplit(world, key >= 0 ? 0 : NCCL_SPLIT_NOCOLOR,
                          key >= 0 ? key : 0, &comm, &config),
            op, "ncclCommSplit", name, world);
  endHostWatch(watch);
  meshComms[mesh] = key >= 0 ? comm : nullptr;
  if (key >= 0)
    addComm(comm, name);
}

std::unique_ptr<CommGroup> NCCLBackend::createGroup(const GroupSpec &spec,
                                                    const char *op) {
  std::string name = groupName(spec.mesh, spec.axesMask);
  auto it = meshComms.find(spec.mesh);
  if (it == meshComms.end() || !it->second)
    fatal(op, "no communicator for mesh " + std::to_string(spec.mesh) +
                  " on this rank");
  if (spec.color > INT_MAX || spec.index > INT_MAX)
    fatal(op, "group " + name + " has a color or index beyond int");
  std::string commName = "dtensor-group-" + std::to_string(spec.mesh) + "-" +
                         std::to_string(spec.axesMask) + "-" +
                         std::to_string(spec.color);
  ncclConfig_t config = blockingConfig(commName.c_str());
  ncclComm_t comm = nullptr;
  uint64_t watch = beginHostWatch("ncclCommSplit", name);
  checkNccl(ncclCommSplit(it->second, static_cast<int>(spec.color),
                          static_cast<int>(spec.index), &comm, &config),
            op, "ncclCommSplit", name, it->second);
  endHostWatch(watch);
  int rank = -1, count = -1;
  checkNccl(ncclCommUserRank(comm, &rank), op, "ncclCommUserRank", name, comm);
  checkNccl(ncclCommCount(comm, &count), op, "ncclCommCount", name, comm);
  if (rank != spec.index || count != spec.size)
    fatal(op, "group " + name + ": NCCL made rank " + std::to_string(rank) +
                  " of " + std::to_string(count) + ", expected index " +
                  std::to_string(spec.index) + " of " +
                  std::to_string(spec.size));
  return std::make_unique<NCCLGroup>(*this, spec.index, spec.size, comm, name,
                                     op);
}

double readTimeout(std::string &error) {
  const char *text = std::getenv("DTENSOR_NCCL_TIMEOUT");
  if (!text || !*text)
    return 300;
  char *end = nullptr;
  double seconds = std::strtod(text, &end);
  if (end == text || *end || !(seconds > 0)) {
    error = std::string("DTENSOR_NCCL_TIMEOUT='") + text +
            "' is not a positive number of seconds";
    return -1;
  }
  return seconds;
}

} // namespace

std::unique_ptr<CommBackend> createNCCLBackend(int *, char ***) {
  LaunchEnv env;
  std::string error;
  auto fail = [&](const std::string &message) {
    std::string rank = std::to_string(env.rank);
    std::fprintf(stderr, "dtensor runtime: rank %s: init: %s\n", rank.c_str(),
                 message.c_str());
    std::fflush(stderr);
    return nullptr;
  };
  if (!readLaunchEnv(env, error))
    return fail(error);
  setMessageRank(env.rank);
  double timeout = readTimeout(error);
  if (timeout < 0)
    return fail(error);
  // NCCL reads these at communicator init.
  ::setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  if (env.singleGpuTest) {
    std::string hostId = "dtensor-rank-" + std::to_string(env.rank);
    ::setenv("NCCL_HOSTID", hostId.c_str(), 1);
    ::setenv("NCCL_SOCKET_IFNAME", "lo", 0);
    ::setenv("NCCL_IB_DISABLE", "1", 0); // sockets over loopback only
  }
  DeviceState *dev = tryInitDevice(error);
  if (!dev)
    return fail("no CUDA device: " + error);
  auto backend = std::make_unique<NCCLBackend>(env, *dev, timeout);
  if (!backend->start(error))
    return fail(error);
  backendActive.store(true);
  return backend;
}

} // namespace dtensor::rt
