//===- CommBackend.h - communication backends of the runtime ----*- C++ -*-===//
//
// The runtime (include/dtensor/Runtime/Runtime.h) is two layers:
//
//   ABI layer (Runtime.cpp)          written once for every backend
//     decodes memref descriptors, checks shapes against the dialect's
//     constraints, resolves (mesh, axesMask) to a cached CommGroup, packs
//     strided inputs and non-leading chunk dimensions into contiguous
//     staging buffers, turns avg into sum + divide, keeps the table of
//     asynchronous handles and, at wait, runs the completion step that
//     divides and unpacks into the output descriptor.
//
//   CommBackend (this interface)     one implementation per transport
//     moves contiguous, dense byte buffers of `count` elements of one
//     ElemType inside one CommGroup, and nothing else: no shapes, no
//     strides, no avg. Every operation is non-blocking and returns a
//     CommRequest; the synchronous ABI entry points start and wait at once.
//     MPIBackend.cpp implements it over MPI non-blocking collectives; a
//     CUDA backend implements the same calls with NCCL on a stream (a
//     request is then an event), overrides the memory hooks (staging
//     allocation, strided copy, avg division) to work on device memory,
//     and is selected by name in createBackend(): each runtime library
//     links one registry (MPIRegistry.cpp for dtensor_runtime,
//     lib/Target/CUDA/Runtime/CUDARegistry.cpp for dtensor_runtime_cuda)
//     that knows the backends compiled into it.
//
// Data layout contract of the collectives (n = group size, `count` = the
// elements one member contributes or receives per block, blocks in group
// index order):
//   allReduce      send: count          recv: count
//   allGather      send: count          recv: n * count, block j from index j
//   reduceScatter  send: n * count      recv: count, block `index` reduced
//   allToAll       send: n * count      recv: n * count; send block j goes
//                                       to index j, recv block j came from j
//   allToAllV      send: block j of sendCounts[j] elements at element
//                  offset sendDispls[j] goes to index j; recv: block j of
//                  recvCounts[j] elements at recvDispls[j] came from j
//   sendRecv       send: count to index `sendTo`, recv: count from index
//                  `recvFrom` (a permutation step; either may be self)
//   broadcast      send: count (read on the root only), recv: count
//
// Buffers must stay valid and unchanged (send) or untouched (recv) until
// the request is waited. Send and recv buffers never overlap, except that
// allReduce may be in place: send == recv (the whole buffer), which it
// reduces where it lies (MPI_IN_PLACE; NCCL takes equal pointers).
//
// Errors inside a backend go through fatal(), which prints
// "dtensor runtime: rank R: <op>: <message>" and aborts the whole job;
// backends never return error codes to the ABI layer.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_RUNTIME_COMMBACKEND_H
#define DTENSOR_LIB_RUNTIME_COMMBACKEND_H

#include "MemRef.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dtensor::rt {

/// Element types of the ABI (ElementTypes.def; NAME is the ABI suffix).
enum class ElemType {
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES) ENUM,
#include "dtensor/Runtime/ElementTypes.def"
};

size_t elemSize(ElemType type);
const char *elemTypeName(ElemType type);

/// Reductions a backend performs. `avg` is not one: the ABI layer reduces
/// with Sum and divides by the group size.
enum class ReduceOp { Sum, Product, Min, Max };

/// One group of processes of a mesh: those that share their coordinates on
/// every mesh axis outside an axes mask. `index` is the calling process's
/// row-major coordinate over the masked axes, `size` the product of their
/// sizes. Backends subclass it to hold their communicator.
class CommGroup {
public:
  CommGroup(int64_t index, int64_t size) : index(index), size(size) {}
  virtual ~CommGroup();
  CommGroup(const CommGroup &) = delete;
  CommGroup &operator=(const CommGroup &) = delete;

  int64_t getIndex() const { return index; }
  int64_t getSize() const { return size; }

private:
  int64_t index;
  int64_t size;
};

/// An operation in flight. wait() blocks until its buffers may be reused
/// and the recv buffer holds the result; it is called exactly once.
class CommRequest {
public:
  virtual ~CommRequest();
  virtual void wait() = 0;
};

class CommBackend;

/// A staging buffer in the backend's memory space, released on destruction.
class StageBuffer {
public:
  StageBuffer() = default;
  StageBuffer(CommBackend &owner, size_t bytes);
  ~StageBuffer();
  StageBuffer(StageBuffer &&other) noexcept;
  StageBuffer &operator=(StageBuffer &&other) noexcept;
  StageBuffer(const StageBuffer &) = delete;
  StageBuffer &operator=(const StageBuffer &) = delete;

  char *data() const { return static_cast<char *>(ptr); }
  size_t size() const { return bytes; }

private:
  void reset();

  CommBackend *owner = nullptr;
  void *ptr = nullptr;
  size_t bytes = 0;
};

/// Where a group sits in its mesh, for CommBackend::createGroup.
struct GroupSpec {
  int64_t mesh;     // mesh id, as registered
  int64_t axesMask; // bit i = mesh axis i
  int64_t color;    // which group of the mesh: row-major coordinate over
                    // the axes outside the mask
  int64_t index;    // the caller's index in the group
  int64_t size;     // number of processes in the group
};

class CommBackend {
public:
  virtual ~CommBackend();

  virtual const char *getName() const = 0;
  /// The execution context dtensor_rt_context() hands to compiled code
  /// (null for host backends; the CUDA backend's device/context/stream).
  virtual void *getContext() { return nullptr; }
  virtual int64_t worldRank() const = 0;
  virtual int64_t worldSize() const = 0;
  virtual void barrier(const char *op) = 0;
  /// Terminates every process of the job. Never returns.
  [[noreturn]] virtual void abortJob(int code) = 0;
  /// Releases the backend's resources (groups are destroyed before).
  virtual void finalize() = 0;

  /// Registers mesh `mesh`; `positionRanks[p]` is the world rank at row-major
  /// mesh position p. Collective over the whole world: every process calls
  /// it, for every mesh, in the same order (the host registers the module's
  /// meshes in module order on every process).
  virtual void registerMesh(int64_t mesh,
                            const std::vector<int64_t> &positionRanks) = 0;
  /// Creates the calling process's group for `spec`. Collective over all
  /// processes of the mesh: each calls it with its own color and index, and
  /// all of them create the groups of one mesh in the same order.
  virtual std::unique_ptr<CommGroup> createGroup(const GroupSpec &spec,
                                                 const char *op) = 0;

  // The memory the ABI layer stages through and the data movement around
  // the collectives. The defaults serve host memory (the MPI backend); a
  // device backend allocates device memory and runs the copies and the avg
  // division on its stream, ordered with its collectives.
  virtual void *allocateStage(size_t bytes);
  virtual void releaseStage(void *ptr);
  /// Copies `src` to `dst` (equal sizes), either strided.
  virtual void copy(const StridedView &dst, const StridedView &src);
  /// The entry's argument and result buffers (dtensor_rt_buffer_*): host
  /// memory by default; a device backend copies between the host and its
  /// device memory on its stream. readBuffer returns with the data on the
  /// host, after everything enqueued before it; writeBuffer returns when
  /// `host` may be reused. Buffers are allocated and released as stages.
  virtual void writeBuffer(void *buffer, const void *host, size_t bytes);
  virtual void readBuffer(void *host, const void *buffer, size_t bytes);
  /// Waits for everything this process enqueued (nothing on the host).
  virtual void synchronize() {}
  /// Divides `count` dense elements by `n` in place (the avg reduction;
  /// integers truncate toward zero).
  virtual void divide(void *data, size_t count, ElemType type, int64_t n);

  // Collectives over contiguous buffers; see the file comment for layouts.
  // `op` names the ABI entry point for error messages.
  virtual std::unique_ptr<CommRequest>
  allReduce(const void *send, void *recv, size_t count, ElemType type,
            ReduceOp reduce, CommGroup &group, const char *op) = 0;
  virtual std::unique_ptr<CommRequest> allGather(const void *send, void *recv,
                                                 size_t count, ElemType type,
                                                 CommGroup &group,
                                                 const char *op) = 0;
  virtual std::unique_ptr<CommRequest>
  reduceScatter(const void *send, void *recv, size_t count, ElemType type,
                ReduceOp reduce, CommGroup &group, const char *op) = 0;
  virtual std::unique_ptr<CommRequest> allToAll(const void *send, void *recv,
                                                size_t count, ElemType type,
                                                CommGroup &group,
                                                const char *op) = 0;
  /// Counts and displacements are in elements, one per group index; the
  /// vectors are the callee's to keep until the request completes.
  virtual std::unique_ptr<CommRequest>
  allToAllV(const void *send, std::vector<size_t> sendCounts,
            std::vector<size_t> sendDispls, void *recv,
            std::vector<size_t> recvCounts, std::vector<size_t> recvDispls,
            ElemType type, CommGroup &group, const char *op) = 0;
  virtual std::unique_ptr<CommRequest>
  sendRecv(const void *send, void *recv, size_t count, ElemType type,
           int64_t sendTo, int64_t recvFrom, CommGroup &group,
           const char *op) = 0;
  virtual std::unique_ptr<CommRequest> broadcast(const void *send, void *recv,
                                                 size_t count, ElemType type,
                                                 int64_t root, CommGroup &group,
                                                 const char *op) = 0;
};

/// The backend registry of the library: creates backend `name` ("mpi",
/// "nccl", ...), or returns null with a message on stderr naming the known
/// backends when it is not compiled into this library or fails to start.
std::unique_ptr<CommBackend> createBackend(const std::string &name, int *argc,
                                           char ***argv);
/// The backend dtensor_rt_init uses when neither its argument nor
/// DTENSOR_RT_BACKEND names one.
const char *defaultBackendName();

/// Initializes MPI if the host has not (MPI_Init_thread, funneled) and
/// returns the MPI backend; null with a message on stderr on failure.
std::unique_ptr<CommBackend> createMPIBackend(int *argc, char ***argv);

/// Prints "dtensor runtime: rank R: <op>: <message>" to stderr and aborts
/// the job through the active backend (std::abort() before there is one).
[[noreturn]] void fatal(const char *op, const std::string &message);

} // namespace dtensor::rt

#endif // DTENSOR_LIB_RUNTIME_COMMBACKEND_H
