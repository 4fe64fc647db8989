//===- MPIBackend.cpp - the CommBackend over MPI
//---------------------------===//
//
// CPU ranks: one MPI process per mesh position. Communicators:
//   - world: a duplicate of MPI_COMM_WORLD, so runtime traffic never matches
//     messages of a host that uses MPI itself;
//   - one per registered mesh: MPI_Comm_split of world, members ordered by
//     mesh position, MPI_COMM_NULL on processes outside the mesh;
//   - one per (mesh, axesMask) group: MPI_Comm_split of the mesh
//     communicator by GroupSpec::color, ordered by GroupSpec::index, so the
//     rank in the group communicator is the dialect's group index.
// Every communicator has MPI_ERRORS_RETURN; a failing call is reported with
// MPI_Error_string through fatal(). Operations are the non-blocking MPI
// collectives (MPI_Iallreduce, MPI_Iallgather, MPI_Ireduce_scatter_block,
// MPI_Ialltoall, MPI_Ibcast) and MPI_Isend/MPI_Irecv for permutations.
// Progress happens inside MPI calls (any later collective's post or the
// wait), as usual without an asynchronous progress thread.
//
//===----------------------------------------------------------------------===//

#include "CommBackend.h"

#include "dtensor/Support/Float16.h"

#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace dtensor::rt {
namespace {

/// Tag of the point-to-point messages of sendRecv. Messages between one pair
/// of processes on one communicator are matched in posting order, which is
/// program order on every process, so one tag serves every permute.
constexpr int kPermuteTag = 0x5d7;

std::string mpiErrorString(int code) {
  char buffer[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, buffer, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(buffer, length);
}

/// Aborts with "<op>: <call>: <MPI error string>" unless `code` is success.
void check(int code, const char *op, const char *call) {
  if (code != MPI_SUCCESS)
    fatal(op, std::string(call) + ": " + mpiErrorString(code));
}

MPI_Datatype mpiType(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return MPI_FLOAT;
  case ElemType::F64:
    return MPI_DOUBLE;
  case ElemType::I32:
    return MPI_INT32_T;
  case ElemType::I64:
    return MPI_INT64_T;
  case ElemType::BF16:
  case ElemType::F16:
    // Moved as 16-bit words; reductions use the ops of halfOp.
    return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

/// One step of a reduction of 16-bit floats, computed in f32 and rounded
/// back (MPI has no 16-bit float types).
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float),
          float (*Combine)(float, float)>
void reduceHalves(void *in, void *inout, int *len, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = FromFloat(Combine(ToFloat(a[i]), ToFloat(b[i])));
}

float addF(float a, float b) { return a + b; }
float mulF(float a, float b) { return a * b; }
// NaN propagates, as in MPI_MIN/MPI_MAX on floats of common MPIs.
float minF(float a, float b) { return a != a || a < b ? a : b; }
float maxF(float a, float b) { return a != a || a > b ? a : b; }

/// The user-defined MPI ops reducing bf16 and f16 through f32, created once
/// (MPI_Op_create needs MPI initialized) and freed by MPI_Finalize.
MPI_Op halfOp(ElemType type, ReduceOp reduce) {
  using Fn = void (*)(void *, void *, int *, MPI_Datatype *);
  static const Fn kFns[2][4] = {
      {reduceHalves<bf16ToFloat, floatToBF16, addF>,
       reduceHalves<bf16ToFloat, floatToBF16, mulF>,
       reduceHalves<bf16ToFloat, floatToBF16, minF>,
       reduceHalves<bf16ToFloat, floatToBF16, maxF>},
      {reduceHalves<f16ToFloat, floatToF16, addF>,
       reduceHalves<f16ToFloat, floatToF16, mulF>,
       reduceHalves<f16ToFloat, floatToF16, minF>,
       reduceHalves<f16ToFloat, floatToF16, maxF>}};
  static MPI_Op ops[2][4];
  static bool created = false;
  if (!created) {
    for (int t = 0; t < 2; ++t)
      for (int r = 0; r < 4; ++r)
        check(MPI_Op_create(kFns[t][r], /*commute=*/1, &ops[t][r]), "init",
              "MPI_Op_create");
    created = true;
  }
  return ops[type == ElemType::F16][static_cast<int>(reduce)];
}

MPI_Op mpiOp(ElemType type, ReduceOp reduce) {
  if (type == ElemType::BF16 || type == ElemType::F16)
    return halfOp(type, reduce);
  switch (reduce) {
  case ReduceOp::Sum:
    return MPI_SUM;
  case ReduceOp::Product:
    return MPI_PROD;
  case ReduceOp::Min:
    return MPI_MIN;
  case ReduceOp::Max:
    return MPI_MAX;
  }
  return MPI_OP_NULL;
}

/// MPI counts are `int`; larger messages are rejected, not truncated.
int mpiCount(size_t count, const char *op) {
  if (count > static_cast<size_t>(INT_MAX))
    fatal(op, "message of " + std::to_string(count) +
                  " elements exceeds the MPI count limit");
  return static_cast<int>(count);
}

class MPIGroup final : public CommGroup {
public:
  MPIGroup(int64_t index, int64_t size, MPI_Comm comm)
      : CommGroup(index, size), comm(comm) {}
  ~MPIGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  }
  MPI_Comm getComm() const { return comm; }

private:
  MPI_Comm comm;
};

class MPIRequest final : public CommRequest {
public:
  MPIRequest(const char *op, const char *call) : op(op), call(call) {}
  ~MPIRequest() override = default;

  MPI_Request *add() { return &requests[numRequests++]; }
  /// Integer arrays MPI reads until completion (MPI_Ialltoallv's counts
  /// and displacements).
  std::vector<int> &arrays() { return ints; }

  void wait() override {
    MPI_Status statuses[2];
    int code = MPI_Waitall(numRequests, requests, statuses);
    if (code == MPI_ERR_IN_STATUS) {
      for (int i = 0; i < numRequests; ++i)
        if (statuses[i].MPI_ERROR != MPI_SUCCESS)
          code = statuses[i].MPI_ERROR;
    }
    check(code, op.c_str(), (call + " (wait)").c_str());
    numRequests = 0;
  }

private:
  std::string op;
  std::string call;
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int numRequests = 0;
  std::vector<int> ints;
};

class MPIBackend final : public CommBackend {
public:
  MPIBackend(MPI_Comm world, bool ownsMPI) : world(world), ownsMPI(ownsMPI) {
    int rank = 0, size = 0;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    myRank = rank;
    mySize = size;
  }

  const char *getName() const override { return "mpi"; }
  int64_t worldRank() const override { return myRank; }
  int64_t worldSize() const override { return mySize; }

  void barrier(const char *op) override {
    check(MPI_Barrier(world), op, "MPI_Barrier");
  }

  [[noreturn]] void abortJob(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();
  }

  void finalize() override {
    for (auto &[mesh, comm] : meshComms)
      if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    meshComms.clear();
    if (world != MPI_COMM_NULL)
      MPI_Comm_free(&world);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (ownsMPI && !finalized)
      check(MPI_Finalize(), "finalize", "MPI_Finalize");
  }

  void registerMesh(int64_t mesh,
                    const std::vector<int64_t> &positionRanks) override {
    int color = MPI_UNDEFINED, key = 0;
    for (size_t p = 0; p < positionRanks.size(); ++p) {
      if (positionRanks[p] == myRank) {
        color = 0;
        key = static_cast<int>(p);
      }
    }
    MPI_Comm comm = MPI_COMM_NULL;
    check(MPI_Comm_split(world, color, key, &comm), "register_mesh",
          "MPI_Comm_split");
    if (comm != MPI_COMM_NULL)
      check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "register_mesh",
            "MPI_Comm_set_errhandler");
    meshComms[mesh] = comm;
  }

  std::unique_ptr<CommGroup> createGroup(const GroupSpec &spec,
                                         const char *op) override {
    auto it = meshComms.find(spec.mesh);
    if (it == meshComms.end() || it->second == MPI_COMM_NULL)
      fatal(op, "mesh " + std::to_string(spec.mesh) +
                    " has no communicator on this process");
    MPI_Comm comm = MPI_COMM_NULL;
    check(MPI_Comm_split(it->second, static_cast<int>(spec.color),
                         static_cast<int>(spec.index), &comm),
          op, "MPI_Comm_split");
    check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), op,
          "MPI_Comm_set_errhandler");
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank != spec.index || size != spec.size)
      fatal(op, "group communicator of mesh " + std::to_string(spec.mesh) +
                    " has rank " + std::to_string(rank) + " of " +
                    std::to_string(size) + ", expected " +
                    std::to_string(spec.index) + " of " +
                    std::to_string(spec.size) +
                    " (groups created in different orders?)");
    return std::make_unique<MPIGroup>(spec.index, spec.size, comm);
  }

  std::unique_ptr<CommRequest> allReduce(const void *send, void *recv,
                                         size_t count, ElemType type,
                                         ReduceOp reduce, CommGroup &group,
                                         const char *op) override {
    return start(op, "MPI_Iallreduce", [&](MPI_Request *request) {
      // In place (CommBackend.h): MPI spells it MPI_IN_PLACE.
      return MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv,
                            mpiCount(count, op), mpiType(type),
                            mpiOp(type, reduce), commOf(group), request);
    });
  }

  std::unique_ptr<CommRequest> allGather(const void *send, void *recv,
                                         size_t count, ElemType type,
                                         CommGroup &group,
                                         const char *op) override {
    int n = mpiCount(count, op);
    return start(op, "MPI_Iallgather", [&](MPI_Request *request) {
      return MPI_Iallgather(send, n, mpiType(type), recv, n, mpiType(type),
                            commOf(group), request);
    });
  }

  std::unique_ptr<CommRequest> reduceScatter(const void *send, void *recv,
                                             size_t count, ElemType type,
                                             ReduceOp reduce, CommGroup &group,
                                             const char *op) override {
    // The send buffer holds a block per member: that count must fit too.
    mpiCount(count * group.getSize(), op);
    return start(op, "MPI_Ireduce_scatter_block", [&](MPI_Request *request) {
      return MPI_Ireduce_scatter_block(send, recv, mpiCount(count, op),
                                       mpiType(type), mpiOp(type, reduce),
                                       commOf(group), request);
    });
  }

  std::unique_ptr<CommRequest> allToAll(const void *send, void *recv,
                                        size_t count, ElemType type,
                                        CommGroup &group,
                                        const char *op) override {
    int n = mpiCount(count, op);
    return start(op, "MPI_Ialltoall", [&](MPI_Request *request) {
      return MPI_Ialltoall(send, n, mpiType(type), recv, n, mpiType(type),
                           commOf(group), request);
    });
  }

  std::unique_ptr<CommRequest>
  allToAllV(const void *send, std::vector<size_t> sendCounts,
            std::vector<size_t> sendDispls, void *recv,
            std::vector<size_t> recvCounts, std::vector<size_t> recvDispls,
            ElemType type, CommGroup &group, const char *op) override {
    // MPI reads the count and displacement arrays until the request
    // completes: the request owns them.
    auto request = std::make_unique<MPIRequest>(op, "MPI_Ialltoallv");
    std::vector<int> &ints = request->arrays();
    for (const std::vector<size_t> *values :
         {&sendCounts, &sendDispls, &recvCounts, &recvDispls})
      for (size_t v : *values)
        ints.push_back(mpiCount(v, op));
    size_t n = sendCounts.size();
    const int *base = ints.data();
    check(MPI_Ialltoallv(send, base, base + n, mpiType(type), recv,
                         base + 2 * n, base + 3 * n, mpiType(type),
                         commOf(group), request->add()),
          op, "MPI_Ialltoallv");
    return request;
  }

  std::unique_ptr<CommRequest> sendRecv(const void *send, void *recv,
                                        size_t count, ElemType type,
                                        int64_t sendTo, int64_t recvFrom,
                                        CommGroup &group,
                                        const char *op) override {
    auto request = std::make_unique<MPIRequest>(op, "MPI_Isend/MPI_Irecv");
    int n = mpiCount(count, op);
    MPI_Comm comm = commOf(group);
    check(MPI_Irecv(recv, n, mpiType(type), static_cast<int>(recvFrom),
                    kPermuteTag, comm, request->add()),
          op, "MPI_Irecv");
    check(MPI_Isend(send, n, mpiType(type), static_cast<int>(sendTo),
                    kPermuteTag, comm, request->add()),
          op, "MPI_Isend");
    return request;
  }

  std::unique_ptr<CommRequest> broadcast(const void *send, void *recv,
                                         size_t count, ElemType type,
                                         int64_t root, CommGroup &group,
                                         const char *op) override {
    int n = mpiCount(count, op);
    // MPI_Ibcast works in place: the root's data goes into its recv buffer.
    if (group.getIndex() == root && send != recv && count > 0)
      std::memcpy(recv, send, count * elemSize(type));
    return start(op, "MPI_Ibcast", [&](MPI_Request *request) {
      return MPI_Ibcast(recv, n, mpiType(type), static_cast<int>(root),
                        commOf(group), request);
    });
  }

private:
  static MPI_Comm commOf(CommGroup &group) {
    return static_cast<MPIGroup &>(group).getComm();
  }

  /// The request of one non-blocking MPI call, `call` in messages: `post`
  /// makes the call with the MPI_Request to fill and returns its code.
  template <typename Post>
  static std::unique_ptr<CommRequest> start(const char *op, const char *call,
                                            Post post) {
    auto request = std::make_unique<MPIRequest>(op, call);
    check(post(request->add()), op, call);
    return request;
  }

  MPI_Comm world;
  bool ownsMPI;
  int64_t myRank = 0;
  int64_t mySize = 1;
  std::map<int64_t, MPI_Comm> meshComms;
};

} // namespace

std::unique_ptr<CommBackend> createMPIBackend(int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  bool ownsMPI = false;
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS) {
      std::fprintf(stderr, "dtensor runtime: rank ?: init: MPI_Init_thread "
                           "failed\n");
      return nullptr;
    }
    ownsMPI = true;
  }
  MPI_Comm world = MPI_COMM_NULL;
  int code = MPI_Comm_dup(MPI_COMM_WORLD, &world);
  if (code == MPI_SUCCESS)
    code = MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  if (code != MPI_SUCCESS) {
    std::fprintf(stderr, "dtensor runtime: rank ?: init: %s\n",
                 mpiErrorString(code).c_str());
    return nullptr;
  }
  return std::make_unique<MPIBackend>(world, ownsMPI);
}

} // namespace dtensor::rt
