//===- Runtime.cpp - the C ABI of include/dtensor/Runtime/Runtime.h -------===//
//
// The ABI layer, written once over the CommBackend interface
// (CommBackend.h has the split between the two layers).
//
// Each collective entry point
//   1. decodes its descriptors and checks the shapes against the dialect's
//      constraints (AG3, RS3, A2A3, ...), the mesh id, the axes mask, the
//      reduce code, root and perm;
//   2. resolves (mesh, axesMask) to a CommGroup, created on first use and
//      cached (see getGroup for the ordering this relies on);
//   3. builds the contiguous send buffer: the input itself when it is dense
//      and its chunks along the split dimension are consecutive blocks, a
//      packed staging copy otherwise (strided inputs, chunk dimension not
//      leading);
//   4. picks the recv buffer the same way: the output itself, or a staging
//      buffer whose blocks are unpacked into the output afterwards;
//   5. starts the backend operation and records a Pending entry: the
//      request, the staging buffers, and a completion step (divide by the
//      group size for avg, unpack the staging buffer into the output).
// Synchronous forms wait and complete at once; start_* forms put the entry
// in the handle table, and dtensor_rt_wait(handle) waits and completes it.
//
// Semantics (the dialect's, group index = row-major coordinate over the
// masked axes): all_gather concatenates the members' inputs in group order
// along gatherDim; reduce_scatter gives index i the i-th chunk along
// scatterDim of the reduction; all_to_all splits along splitDim, sends
// chunk j to index j and concatenates what it receives in group order along
// concatDim; all_to_all_v sends the block of sendSizes[j] slices along
// dim 0 to index j and concatenates the recvSizes[j]-slice blocks it gets;
// permute sends to perm[i]; broadcast copies index root's input.
// avg is sum followed by a division by the group size (truncating toward
// zero for integers).
//
// Fault injection (for testing the checkers and the fault handling):
// DTENSOR_RT_FAULT=swap-gather-chunks makes all_gather place the blocks of
// group indices 0 and 1 swapped, a deliberately wrong result;
// DTENSOR_RT_FAULT=skip-collective:R makes world rank R skip its first
// collective after creating its group (it returns at once, its output
// unwritten), so that the other
// ranks wait for it: a hang the backend's watchdog or the launcher's
// timeout must end. Any other non-empty value aborts.
//
//===----------------------------------------------------------------------===//

#include "CommBackend.h"
#include "MemRef.h"

// The ABI symbols are the library's only exported ones (CMake builds it
// with hidden visibility).
#pragma GCC visibility push(default)
#include "dtensor/Runtime/Runtime.h"
#pragma GCC visibility pop

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <utility>

namespace dtensor::rt {

namespace {

/// A registered mesh as seen by the calling process.
struct Mesh {
  std::vector<int64_t> shape;
  std::vector<int64_t> positionRanks; // world rank at each position
  std::vector<int64_t> coords;        // this process's; empty if outside
};

/// An operation started but not yet completed.
struct Pending {
  std::string op;
  std::unique_ptr<CommRequest> request;
  StageBuffer sendStage;
  StageBuffer recvStage;
  std::function<void(Pending &)> complete;
};

struct State {
  std::unique_ptr<CommBackend> backend;
  std::map<int64_t, Mesh> meshes;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<CommGroup>> groups;
  std::map<int64_t, Pending> pending;
  int64_t nextHandle = 1;
  bool swapGatherChunks = false;
  /// The world rank that skips its first collective (skip-collective:R).
  int64_t skipCollectiveRank = -1;
};

State &state() {
  static State s;
  return s;
}

CommBackend &backendFor(const char *op) {
  State &s = state();
  if (!s.backend)
    fatal(op, "runtime not initialized (dtensor_rt_init not called)");
  return *s.backend;
}

/// Resolves the mesh and checks the mask and membership.
const Mesh &getMesh(const char *op, int64_t meshId, int64_t axesMask) {
  State &s = state();
  backendFor(op);
  auto it = s.meshes.find(meshId);
  if (it == s.meshes.end())
    fatal(op, "mesh " + std::to_string(meshId) + " is not registered");
  const Mesh &mesh = it->second;
  int64_t rank = mesh.shape.size();
  if (axesMask <= 0 || (rank < 63 && (axesMask >> rank) != 0))
    fatal(op, "axes mask " + std::to_string(axesMask) +
                  " is not a non-empty set of axes of mesh " +
                  std::to_string(meshId) + " (rank " + std::to_string(rank) +
                  ")");
  if (mesh.coords.empty())
    fatal(op, "this process (world rank " +
                  std::to_string(s.backend->worldRank()) + ") is not in mesh " +
                  std::to_string(meshId));
  return mesh;
}

GroupSpec groupSpec(const Mesh &mesh, int64_t meshId, int64_t axesMask) {
  GroupSpec spec{meshId, axesMask, 0, 0, 1};
  for (size_t a = 0; a < mesh.shape.size(); ++a) {
    if (axesMask & (int64_t(1) << a)) {
      spec.index = spec.index * mesh.shape[a] + mesh.coords[a];
      spec.size *= mesh.shape[a];
    } else {
      spec.color = spec.color * mesh.shape[a] + mesh.coords[a];
    }
  }
  return spec;
}

/// The group of (mesh, axesMask), created on first use. Creation is
/// collective over the mesh (MPI_Comm_split for the MPI backend), so all
/// processes of the mesh must use their (mesh, axesMask) pairs for the first
/// time in the same order. Compiled per-rank programs are SPMD: every rank
/// runs the same sequence of collectives, so they do.
CommGroup &getGroup(const char *op, int64_t meshId, int64_t axesMask) {
  const Mesh &mesh = getMesh(op, meshId, axesMask);
  State &s = state();
  auto key = std::make_pair(meshId, axesMask);
  auto it = s.groups.find(key);
  if (it != s.groups.end())
    return *it->second;
  std::unique_ptr<CommGroup> group =
      s.backend->createGroup(groupSpec(mesh, meshId, axesMask), op);
  CommGroup &ref = *group;
  s.groups.emplace(key, std::move(group));
  return ref;
}

/// Maps the ABI's reduce code; `avg` comes back as Sum with `divide` set.
ReduceOp reduceOp(const char *op, int64_t code, bool &divide) {
  divide = false;
  switch (code) {
  case 0:
    return ReduceOp::Sum;
  case 1:
    divide = true;
    return ReduceOp::Sum;
  case 2:
    return ReduceOp::Product;
  case 3:
    return ReduceOp::Min;
  case 4:
    return ReduceOp::Max;
  default:
    fatal(op, "unknown reduce code " + std::to_string(code) +
                  " (0 sum, 1 avg, 2 product, 3 min, 4 max)");
  }
}

/// "(input 2x2, output 2x5)".
std::string shapesOf(const StridedView &in, const StridedView &out) {
  return "(input " + formatShape(in.sizes) + ", output " +
         formatShape(out.sizes) + ")";
}

std::string mismatch(const char *what, const StridedView &in,
                     const StridedView &out) {
  return std::string(what) + " " + shapesOf(in, out);
}

void checkDim(const char *op, const char *name, int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank)
    fatal(op, std::string(name) + " " + std::to_string(dim) +
                  " is out of range for rank " + std::to_string(rank));
}

/// Sizes equal in every dimension except `skipA` and `skipB`.
bool sameOutside(const StridedView &in, const StridedView &out, int64_t skipA,
                 int64_t skipB) {
  if (in.getRank() != out.getRank())
    return false;
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (d != skipA && d != skipB && in.sizes[d] != out.sizes[d])
      return false;
  return true;
}

/// The send buffer of `view` as blocks: block j is chunk j of `blockSize`
/// along `dim`, for j < numBlocks (numBlocks 1, dim -1: the whole view).
/// Returns `view.data` when those blocks already lie densely in order,
/// otherwise packs into `stage`.
const void *packBlocks(CommBackend &backend, const StridedView &view,
                       int64_t dim, int64_t numBlocks, int64_t blockSize,
                       StageBuffer &stage) {
  bool direct = dim < 0 ? view.isContiguous() : view.hasContiguousChunks(dim);
  if (direct)
    return view.data;
  stage = StageBuffer(backend, view.getNumBytes());
  if (dim < 0) {
    backend.copy(contiguousView(stage.data(), view.sizes, view.elemSize), view);
    return stage.data();
  }
  StridedView first = view.chunk(dim, 0, blockSize);
  size_t blockBytes = first.getNumBytes();
  for (int64_t j = 0; j < numBlocks; ++j)
    backend.copy(contiguousView(stage.data() + j * blockBytes, first.sizes,
                                view.elemSize),
                 view.chunk(dim, j, blockSize));
  return stage.data();
}

/// Whether the recv buffer can be `view` itself (blocks along `dim`
/// consecutive and dense; dim -1: the whole view), without overlapping the
/// send buffer.
bool receiveDirect(const StridedView &out, int64_t dim, const void *send,
                   size_t sendBytes) {
  bool direct = dim < 0 ? out.isContiguous() : out.hasContiguousChunks(dim);
  if (!direct)
    return false;
  const char *s = static_cast<const char *>(send);
  size_t outBytes = out.getNumBytes();
  return !(sendBytes && outBytes && s < out.data + outBytes &&
           out.data < s + sendBytes);
}

/// Unpacks recv staging blocks into chunks along `dim` of `out` (dim -1:
/// one block, the whole view); block j goes to chunk position(j).
void unpackBlocks(CommBackend &backend, const StageBuffer &stage,
                  const StridedView &out, int64_t dim, int64_t numBlocks,
                  int64_t blockSize,
                  const std::function<int64_t(int64_t)> &position) {
  if (dim < 0) {
    backend.copy(out, contiguousView(stage.data(), out.sizes, out.elemSize));
    return;
  }
  StridedView first = out.chunk(dim, 0, blockSize);
  size_t blockBytes = first.getNumBytes();
  for (int64_t j = 0; j < numBlocks; ++j)
    backend.copy(out.chunk(dim, position(j), blockSize),
                 contiguousView(stage.data() + j * blockBytes, first.sizes,
                                out.elemSize));
}

int64_t identityPosition(int64_t j) { return j; }

/// Runs a Pending entry to completion.
void finish(Pending &p) {
  if (p.request)
    p.request->wait();
  if (p.complete)
    p.complete(p);
}

/// Whether the planted skip-collective fault applies to this collective
/// (the first one of its rank): if so, a note goes to stderr and the caller
/// returns without starting anything.
bool skipCollective(const char *op) {
  State &s = state();
  if (s.skipCollectiveRank < 0 ||
      backendFor(op).worldRank() != s.skipCollectiveRank)
    return false;
  s.skipCollectiveRank = -1;
  std::fprintf(stderr,
               "dtensor runtime: rank %lld: %s: skipped (planted fault "
               "DTENSOR_RT_FAULT=skip-collective)\n",
               static_cast<long long>(backendFor(op).worldRank()), op);
  std::fflush(stderr);
  return true;
}

/// Synchronous forms complete at once; start_* forms get a handle.
int64_t dispatch(Pending &&p, bool async) {
  if (!async) {
    finish(p);
    return 0;
  }
  State &s = state();
  int64_t handle = s.nextHandle++;
  s.pending.emplace(handle, std::move(p));
  return handle;
}

std::string opName(const char *base, ElemType type, bool async) {
  return std::string(async ? "start_" : "") + base + "_" + elemTypeName(type);
}

/// What every collective entry point decodes first, in this order: its name
/// for messages ("start_" for the asynchronous form, the element type
/// suffix), the backend (fatal before init), the input and output
/// descriptors.
struct Call {
  Call(const char *base, ElemType type, bool async, int64_t inRank,
       void *inDescriptor, int64_t outRank, void *outDescriptor)
      : type(type), name(opName(base, type, async)), op(name.c_str()),
        backend(backendFor(op)),
        inView(decodeMemRef(inRank, inDescriptor, elemSize(type), op, "input")),
        outView(decodeMemRef(outRank, outDescriptor, elemSize(type), op,
                             "output")) {}
  // `op` points into `name`.
  Call(const Call &) = delete;
  Call &operator=(const Call &) = delete;

  /// Fatal unless the input and the output have the same shape.
  void checkSameShape() const {
    if (inView.sizes != outView.sizes)
      fatal(op,
            mismatch("output shape differs from input shape", inView, outView));
  }
  /// Fatal unless the input and the output have the same rank.
  void checkSameRank() const {
    if (inView.getRank() != outView.getRank())
      fatal(op, mismatch("input and output ranks differ", inView, outView));
  }
  /// Fatal unless, along `dim` (the `what` dim), one side is `n` blocks of
  /// the other (the output of the input if `outputIsWhole`, else the input
  /// of the output) and the sizes agree outside it. Returns the block size.
  int64_t checkBlocks(const char *what, int64_t dim, int64_t n,
                      bool outputIsWhole) const {
    std::string dimName = std::string(what) + " dim";
    if (!sameOutside(inView, outView, dim, dim))
      fatal(op, mismatch(("sizes outside the " + dimName + " differ").c_str(),
                         inView, outView));
    const char *wholeName = outputIsWhole ? "output" : "input";
    const char *partName = outputIsWhole ? "input" : "output";
    int64_t whole = (outputIsWhole ? outView : inView).sizes[dim];
    int64_t block = (outputIsWhole ? inView : outView).sizes[dim];
    if (whole != n * block)
      fatal(op, std::string(wholeName) + " size " + std::to_string(whole) +
                    " along " + dimName + " " + std::to_string(dim) +
                    " is not group size " + std::to_string(n) + " x " +
                    partName + " size " + std::to_string(block) + " " +
                    shapesOf(inView, outView));
    return block;
  }

  /// A Pending entry for this call.
  Pending begin() const {
    Pending p;
    p.op = name;
    return p;
  }
  /// The recv buffer of `p`: the output itself if `direct`, else a staging
  /// buffer of the output's size, kept in `p`.
  void *recvBuffer(Pending &p, bool direct) const {
    if (direct)
      return outView.data;
    p.recvStage = StageBuffer(backend, outView.getNumBytes());
    return p.recvStage.data();
  }
  /// The send and recv buffers of a collective on whole tensors: the input
  /// (or its packed copy) and the output (or a staging buffer of its size),
  /// staging kept in `p`; `direct` when the output is the recv buffer.
  struct WholeBuffers {
    const void *send;
    void *recv;
    bool direct;
  };
  /// With `allowInPlace` (all_reduce), an input that is the dense output
  /// itself is both send and recv buffer.
  WholeBuffers wholeBuffers(Pending &p, bool allowInPlace = false) const {
    const void *send = packBlocks(backend, inView, -1, 1, 0, p.sendStage);
    bool inPlace =
        allowInPlace && send == outView.data && outView.isContiguous();
    bool direct =
        inPlace || receiveDirect(outView, -1, send, inView.getNumBytes());
    return {send, recvBuffer(p, direct), direct};
  }
  /// The completion of a collective whose recv buffer `recv` of `count`
  /// elements is the whole output (or its staging copy, if not `direct`):
  /// divides by `divideBy` unless it is 0 (avg), then unpacks the staging
  /// buffer into the output. Empty when there is nothing to do.
  std::function<void(Pending &)>
  completeWhole(void *recv, size_t count, bool direct, int64_t divideBy) const {
    if (direct && divideBy == 0)
      return nullptr;
    return [recv, count, direct, divideBy, type = type, out = outView,
            &backend = backend](Pending &self) {
      if (divideBy != 0)
        backend.divide(recv, count, type, divideBy);
      if (!direct)
        unpackBlocks(backend, self.recvStage, out, -1, 1, 0, identityPosition);
    };
  }

  ElemType type;
  std::string name;
  const char *op;
  CommBackend &backend;
  StridedView inView;
  StridedView outView;
};

//===----------------------------------------------------------------------===//
// The collectives, once for every element type
//===----------------------------------------------------------------------===//

int64_t allReduce(ElemType type, bool async, int64_t inRank, void *in,
                  int64_t outRank, void *out, int64_t meshId, int64_t axesMask,
                  int64_t reduce) {
  Call c("all_reduce", type, async, inRank, in, outRank, out);
  c.checkSameShape();
  bool divide = false;
  ReduceOp rop = reduceOp(c.op, reduce, divide);
  CommGroup &group = getGroup(c.op, meshId, axesMask);

  if (skipCollective(c.op))
    return dispatch(c.begin(), async);
  Pending p = c.begin();
  // In place when the input is the dense output itself (the compiler reuses
  // a dying input's buffer, dtensor-reuse-collective-buffers).
  auto [send, recv, direct] = c.wholeBuffers(p, /*allowInPlace=*/true);
  size_t count = c.inView.getNumElements();
  p.request = c.backend.allReduce(send, recv, count, type, rop, group, c.op);
  p.complete =
      c.completeWhole(recv, count, direct, divide ? group.getSize() : 0);
  return dispatch(std::move(p), async);
}

int64_t allGather(ElemType type, bool async, int64_t inRank, void *in,
                  int64_t outRank, void *out, int64_t meshId, int64_t axesMask,
                  int64_t gatherDim) {
  Call c("all_gather", type, async, inRank, in, outRank, out);
  c.checkSameRank();
  checkDim(c.op, "gather dim", gatherDim, inRank);
  CommGroup &group = getGroup(c.op, meshId, axesMask);
  int64_t n = group.getSize();
  int64_t block = c.checkBlocks("gather", gatherDim, n, /*outputIsWhole=*/true);

  if (skipCollective(c.op))
    return dispatch(c.begin(), async);
  Pending p = c.begin();
  const void *send = packBlocks(c.backend, c.inView, -1, 1, 0, p.sendStage);
  bool swap = state().swapGatherChunks && n >= 2;
  bool direct = !swap && receiveDirect(c.outView, gatherDim, send,
                                       c.inView.getNumBytes());
  void *recv = c.recvBuffer(p, direct);
  p.request = c.backend.allGather(send, recv, c.inView.getNumElements(), type,
                                  group, c.op);
  if (!direct) {
    p.complete = [=, &backend = c.backend, out = c.outView](Pending &self) {
      auto position = [swap](int64_t j) -> int64_t {
        if (swap && j < 2)
          return 1 - j;
        return j;
      };
      unpackBlocks(backend, self.recvStage, out, gatherDim, n, block, position);
    };
  }
  return dispatch(std::move(p), async);
}

int64_t reduceScatter(ElemType type, bool async, int64_t inRank, void *in,
                      int64_t outRank, void *out, int64_t meshId,
                      int64_t axesMask, int64_t scatterDim, int64_t reduce) {
  Call c("reduce_scatter", type, async, inRank, in, outRank, out);
  c.checkSameRank();
  checkDim(c.op, "scatter dim", scatterDim, inRank);
  bool divide = false;
  ReduceOp rop = reduceOp(c.op, reduce, divide);
  CommGroup &group = getGroup(c.op, meshId, axesMask);
  int64_t n = group.getSize();
  int64_t block =
      c.checkBlocks("scatter", scatterDim, n, /*outputIsWhole=*/false);

  if (skipCollective(c.op))
    return dispatch(c.begin(), async);
  Pending p = c.begin();
  const void *send =
      packBlocks(c.backend, c.inView, scatterDim, n, block, p.sendStage);
  bool direct = receiveDirect(c.outView, -1, send, c.inView.getNumBytes());
  void *recv = c.recvBuffer(p, direct);
  size_t count = c.outView.getNumElements();
  p.request =
      c.backend.reduceScatter(send, recv, count, type, rop, group, c.op);
  p.complete = c.completeWhole(recv, count, direct, divide ? n : 0);
  return dispatch(std::move(p), async);
}

int64_t allToAll(ElemType type, bool async, int64_t inRank, void *in,
                 int64_t outRank, void *out, int64_t meshId, int64_t axesMask,
                 int64_t splitDim, int64_t concatDim) {
  Call c("all_to_all", type, async, inRank, in, outRank, out);
  c.checkSameRank();
  checkDim(c.op, "split dim", splitDim, inRank);
  checkDim(c.op, "concat dim", concatDim, inRank);
  CommGroup &group = getGroup(c.op, meshId, axesMask);
  int64_t n = group.getSize();
  if (!sameOutside(c.inView, c.outView, splitDim, concatDim))
    fatal(c.op, mismatch("sizes outside the split and concat dims differ",
                         c.inView, c.outView));
  if (c.inView.sizes[splitDim] % n != 0)
    fatal(c.op, "input size " + std::to_string(c.inView.sizes[splitDim]) +
                    " along split dim " + std::to_string(splitDim) +
                    " is not a multiple of group size " + std::to_string(n));
  int64_t sendBlock = c.inView.sizes[splitDim] / n;
  std::vector<int64_t> expected = c.inView.sizes;
  expected[splitDim] = sendBlock;
  expected[concatDim] *= n;
  if (c.outView.sizes != expected)
    fatal(c.op, "output shape " + formatShape(c.outView.sizes) +
                    " is not the input shape " + formatShape(c.inView.sizes) +
                    " split along dim " + std::to_string(splitDim) +
                    " and concatenated along dim " + std::to_string(concatDim) +
                    " over group size " + std::to_string(n) + " (" +
                    formatShape(expected) + ")");
  // The chunk each process sends and receives has the input's shape with
  // the split dim divided by n; along concatDim it has recvBlock elements.
  std::vector<int64_t> chunkShape = c.inView.sizes;
  chunkShape[splitDim] = sendBlock;
  int64_t recvBlock = chunkShape[concatDim];

  if (skipCollective(c.op))
    return dispatch(c.begin(), async);
  Pending p = c.begin();
  const void *send =
      packBlocks(c.backend, c.inView, splitDim, n, sendBlock, p.sendStage);
  bool direct =
      receiveDirect(c.outView, concatDim, send, c.inView.getNumBytes());
  void *recv = c.recvBuffer(p, direct);
  size_t count = c.inView.getNumElements() / n;
  p.request = c.backend.allToAll(send, recv, count, type, group, c.op);
  if (!direct) {
    p.complete = [=, &backend = c.backend, out = c.outView](Pending &self) {
      unpackBlocks(backend, self.recvStage, out, concatDim, n, recvBlock,
                   identityPosition);
    };
  }
  return dispatch(std::move(p), async);
}

/// The entries of a rank-1 i64 size vector (an all_to_all_v's send or recv
/// sizes) on the host: packed if strided, then read from the backend's
/// memory. Fatal unless it has `expected` entries (when not negative), all
/// non-negative.
std::vector<int64_t> readSizes(CommBackend &backend, const char *op,
                               const char *name, int64_t rank, void *sizes,
                               int64_t expected) {
  if (rank != 1)
    fatal(op, std::string(name) + " has rank " + std::to_string(rank) +
                  ", expected 1");
  StridedView view = decodeMemRef(rank, sizes, sizeof(int64_t), op, name);
  if (expected >= 0 && view.sizes[0] != expected)
    fatal(op, std::string(name) + " has " + std::to_string(view.sizes[0]) +
                  " entries, the group has " + std::to_string(expected) +
                  " processes");
  StageBuffer stage;
  const void *dense = packBlocks(backend, view, -1, 1, 0, stage);
  std::vector<int64_t> host(view.sizes[0]);
  backend.readBuffer(host.data(), dense, host.size() * sizeof(int64_t));
  for (size_t j = 0; j < host.size(); ++j)
    if (host[j] < 0)
      fatal(op, std::string(name) + "[" + std::to_string(j) + "] is " +
                    std::to_string(host[j]) + ", sizes must be non-negative");
  return host;
}

int64_t allToAllV(ElemType type, bool async, int64_t inRank, void *in,
                  int64_t outRank, void *out, int64_t sendRank,
                  void *sendSizes, int64_t recvRank, void *recvSizes,
                  int64_t meshId, int64_t axesMask) {
  Call c("all_to_all_v", type, async, inRank, in, outRank, out);
  c.checkSameRank();
  if (inRank < 1)
    fatal(c.op, "input has rank 0, expected 1 or more");
  if (!sameOutside(c.inView, c.outView, 0, 0))
    fatal(c.op, mismatch("sizes outside dim 0 differ", c.inView, c.outView));
  CommGroup &group = getGroup(c.op, meshId, axesMask);
  int64_t n = group.getSize();
  std::vector<int64_t> sendRows =
      readSizes(c.backend, c.op, "send sizes", sendRank, sendSizes, n);
  std::vector<int64_t> recvRows =
      readSizes(c.backend, c.op, "recv sizes", recvRank, recvSizes, n);
  // Elements per slice along dim 0, then counts and displacements.
  int64_t slice = 1;
  for (int64_t d = 1; d < inRank; ++d)
    slice *= c.inView.sizes[d];
  auto toElements = [&](const std::vector<int64_t> &rows, int64_t total,
                        const char *what, const char *side,
                        std::vector<size_t> &counts,
                        std::vector<size_t> &displs) {
    // Sizes are non-negative (readSizes): a running sum past `total` is a
    // mismatch, found before any product could overflow.
    int64_t offset = 0;
    bool over = false;
    for (int64_t r : rows) {
      over |= r > total - offset;
      if (over)
        break;
      counts.push_back(static_cast<size_t>(r * slice));
      displs.push_back(static_cast<size_t>(offset * slice));
      offset += r;
    }
    if (over || offset != total)
      fatal(c.op, std::string(what) + " sum to " +
                      (over ? std::string("more than ") + std::to_string(total)
                            : std::to_string(offset)) +
                      ", the " + side + " has " + std::to_string(total) +
                      " along dim 0 " + shapesOf(c.inView, c.outView));
  };
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  toElements(sendRows, c.inView.sizes[0], "send sizes", "input", sendCounts,
             sendDispls);
  toElements(recvRows, c.outView.sizes[0], "recv sizes", "output",
             recvCounts, recvDispls);

  if (skipCollective(c.op))
    return dispatch(c.begin(), async);
  Pending p = c.begin();
  auto [send, recv, direct] = c.wholeBuffers(p);
  p.request = c.backend.allToAllV(send, std::move(sendCounts),
                                  std::move(sendDispls), recv,
                                  std::move(recvCounts), std::move(recvDispls),
                                  type, group, c.op);
  p.complete = c.completeWhole(recv, c.outView.getNumElements(), direct, 0);
  return dispatch(std::move(p), async);
}

int64_t permute(ElemType type, bool async, int64_t inRank, void *in,
                int64_t outRank, void *out, int64_t meshId, int64_t axesMask,
                int64_t permRank, void *perm) {
  Call c("permute", type, async, inRank, in, outRank, out);
  c.checkSameShape();
  if (permRank != 1)
    fatal(c.op, "perm has rank " + std::to_string(permRank) + ", expected 1");
  StridedView permView =
      decodeMemRef(permRank, perm, sizeof(int64_t), c.op, "perm");
  CommGroup &group = getGroup(c.op, meshId, axesMask);
  int64_t n = group.getSize();
  if (permView.sizes[0] != n)
    fatal(c.op, "perm has " + std::to_string(permView.sizes[0]) +
                    " entries, the group has " + std::to_string(n) +
                    " processes");
  std::vector<int64_t> targets(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(&targets[i], permView.data + i * permView.strides[0] * 8, 8);
    if (targets[i] < 0 || targets[i] >= n || seen[targets[i]])
      fatal(c.op, "perm is not a permutation of 0.." + std::to_string(n - 1) +
                      " (entry " + std::to_string(i) + " is " +
                      std::to_string(targets[i]) + ")");
    seen[targets[i]] = true;
  }
  int64_t me = group.getIndex();
  int64_t sendTo = targets[me];
  int64_t recvFrom = 0;
  for (int64_t j = 0; j < n; ++j)
    if (targets[j] == me)
      recvFrom = j;

  if (skipCollective(c.op))
    return dispatch(c.begin(), async);
  Pending p = c.begin();
  auto [send, recv, direct] = c.wholeBuffers(p);
  size_t count = c.inView.getNumElements();
  p.request = c.backend.sendRecv(send, recv, count, type, sendTo, recvFrom,
                                 group, c.op);
  p.complete = c.completeWhole(recv, count, direct, 0);
  return dispatch(std::move(p), async);
}

int64_t broadcast(ElemType type, bool async, int64_t inRank, void *in,
                  int64_t outRank, void *out, int64_t meshId, int64_t axesMask,
                  int64_t root) {
  Call c("broadcast", type, async, inRank, in, outRank, out);
  c.checkSameShape();
  CommGroup &group = getGroup(c.op, meshId, axesMask);
  int64_t n = group.getSize();
  if (root < 0 || root >= n)
    fatal(c.op, "root " + std::to_string(root) +
                    " is not a group index (group size " + std::to_string(n) +
                    ")");

  if (skipCollective(c.op))
    return dispatch(c.begin(), async);
  Pending p = c.begin();
  bool isRoot = group.getIndex() == root;
  // Only the root's input is read.
  const void *send =
      isRoot ? packBlocks(c.backend, c.inView, -1, 1, 0, p.sendStage) : nullptr;
  bool direct =
      receiveDirect(c.outView, -1, send, isRoot ? c.inView.getNumBytes() : 0);
  void *recv = c.recvBuffer(p, direct);
  size_t count = c.outView.getNumElements();
  p.request = c.backend.broadcast(send, recv, count, type, root, group, c.op);
  p.complete = c.completeWhole(recv, count, direct, 0);
  return dispatch(std::move(p), async);
}

} // namespace

[[noreturn]] void fatal(const char *op, const std::string &message) {
  State &s = state();
  std::string rank =
      s.backend ? std::to_string(s.backend->worldRank()) : std::string("?");
  std::fprintf(stderr, "dtensor runtime: rank %s: %s: %s\n", rank.c_str(), op,
               message.c_str());
  std::fflush(stderr);
  if (s.backend)
    s.backend->abortJob(1);
  std::abort();
}

} // namespace dtensor::rt

using namespace dtensor::rt;

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

int dtensor_rt_init(const char *backend, int *argc, char ***argv) {
  State &s = state();
  if (s.backend)
    return 0;
  std::string name = backend ? backend : "";
  if (name.empty())
    if (const char *env = std::getenv("DTENSOR_RT_BACKEND"))
      name = env;
  if (name.empty())
    name = defaultBackendName();
  s.backend = createBackend(name, argc, argv);
  if (!s.backend)
    return 1;
  if (const char *fault = std::getenv("DTENSOR_RT_FAULT")) {
    std::string value = fault;
    std::string skipPrefix = "skip-collective:";
    char *end = nullptr;
    if (value == "swap-gather-chunks") {
      s.swapGatherChunks = true;
    } else if (value.rfind(skipPrefix, 0) == 0 &&
               value.size() > skipPrefix.size() &&
               (s.skipCollectiveRank = std::strtoll(
                    value.c_str() + skipPrefix.size(), &end, 10)) >= 0 &&
               *end == '\0') {
      // Parsed above.
    } else if (!value.empty()) {
      fatal("init", "unknown DTENSOR_RT_FAULT value '" + value +
                        "' (known: swap-gather-chunks, skip-collective:R)");
    }
  }
  return 0;
}

void dtensor_rt_finalize(void) {
  State &s = state();
  if (!s.backend)
    return;
  if (!s.pending.empty()) {
    std::string handles;
    for (auto &entry : s.pending)
      handles +=
          " " + std::to_string(entry.first) + " (" + entry.second.op + ")";
    fatal("finalize", std::to_string(s.pending.size()) +
                          " asynchronous collective(s) started but never "
                          "waited: handle" +
                          handles);
  }
  s.groups.clear();
  s.meshes.clear();
  s.backend->finalize();
  s.backend.reset();
  s.nextHandle = 1;
}

int64_t dtensor_rt_world_rank(void) {
  return backendFor("world_rank").worldRank();
}

int64_t dtensor_rt_world_size(void) {
  return backendFor("world_size").worldSize();
}

int dtensor_rt_register_mesh(int64_t mesh, int64_t rank, const int64_t *shape,
                             const int64_t *devices) {
  const char *op = "register_mesh";
  State &s = state();
  CommBackend &backend = backendFor(op);
  int64_t worldSize = backend.worldSize();
  auto fail = [&](const std::string &message) {
    std::fprintf(stderr, "dtensor runtime: rank %lld: %s: mesh %lld: %s\n",
                 static_cast<long long>(backend.worldRank()), op,
                 static_cast<long long>(mesh), message.c_str());
    return 1;
  };
  if (mesh < 0)
    return fail("mesh ids are non-negative");
  if (s.meshes.count(mesh))
    return fail("registered twice");
  if (rank < 1 || rank > 62 || !shape)
    return fail("rank " + std::to_string(rank) + " is not in 1..62");
  Mesh m;
  int64_t numPositions = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] < 1)
      return fail("size " + std::to_string(shape[d]) + " of axis " +
                  std::to_string(d) + " is not positive");
    m.shape.push_back(shape[d]);
  }
  for (int64_t size : m.shape) {
    if (size > worldSize / numPositions)
      return fail("shape " + formatShape(m.shape) +
                  " needs more processes than the world's " +
                  std::to_string(worldSize));
    numPositions *= size;
  }
  std::vector<bool> used(worldSize, false);
  for (int64_t p = 0; p < numPositions; ++p) {
    int64_t r = devices ? devices[p] : p;
    if (r < 0 || r >= worldSize)
      return fail("device " + std::to_string(r) + " at position " +
                  std::to_string(p) + " is not a world rank (world size " +
                  std::to_string(worldSize) + ")");
    if (used[r])
      return fail("device " + std::to_string(r) + " appears twice");
    used[r] = true;
    m.positionRanks.push_back(r);
  }
  int64_t me = backend.worldRank();
  for (int64_t p = 0; p < numPositions; ++p) {
    if (m.positionRanks[p] != me)
      continue;
    m.coords.assign(rank, 0);
    int64_t rest = p;
    for (int64_t d = rank - 1; d >= 0; --d) {
      m.coords[d] = rest % m.shape[d];
      rest /= m.shape[d];
    }
  }
  backend.registerMesh(mesh, m.positionRanks);
  s.meshes.emplace(mesh, std::move(m));
  return 0;
}

void dtensor_rt_barrier(void) { backendFor("barrier").barrier("barrier"); }

static size_t bufferBytes(const char *op, int64_t bytes) {
  if (bytes < 0)
    fatal(op, "negative size " + std::to_string(bytes));
  return static_cast<size_t>(bytes);
}

void *dtensor_rt_buffer_alloc(int64_t bytes) {
  const char *op = "buffer_alloc";
  return backendFor(op).allocateStage(bufferBytes(op, bytes));
}

void dtensor_rt_buffer_free(void *buffer) {
  if (buffer)
    backendFor("buffer_free").releaseStage(buffer);
}

void dtensor_rt_buffer_write(void *buffer, const void *host, int64_t bytes) {
  const char *op = "buffer_write";
  backendFor(op).writeBuffer(buffer, host, bufferBytes(op, bytes));
}

void dtensor_rt_buffer_read(void *host, const void *buffer, int64_t bytes) {
  const char *op = "buffer_read";
  backendFor(op).readBuffer(host, buffer, bufferBytes(op, bytes));
}

void dtensor_rt_synchronize(void) {
  backendFor("synchronize").synchronize();
}

//===----------------------------------------------------------------------===//
// Compiled code
//===----------------------------------------------------------------------===//

int64_t dtensor_rt_coord(int64_t mesh, int64_t axesMask) {
  const Mesh &m = getMesh("coord", mesh, axesMask);
  return groupSpec(m, mesh, axesMask).index;
}

void *dtensor_rt_context(void) {
  State &s = state();
  return s.backend ? s.backend->getContext() : nullptr;
}

/// Fatal unless `ctx` is the context dtensor_rt_context() returns.
#define DTENSOR_RT_CHECK_CTX() checkContext(ctx, __func__)
static void checkContext(void *ctx, const char *entry) {
  // Messages name the entry point as the others do: all_reduce_f32.
  const char *prefix = "dtensor_rt_";
  if (std::strncmp(entry, prefix, std::strlen(prefix)) == 0)
    entry += std::strlen(prefix);
  CommBackend &backend = backendFor(entry);
  if (ctx != backend.getContext())
    fatal(entry, "context argument is not dtensor_rt_context() of this "
                 "process");
}

int64_t dtensor_rt_total_size(DTENSOR_RT_CTX_PARAM int64_t rank, void *sizes) {
  const char *op = "total_size";
  CommBackend &backend = backendFor(op);
  DTENSOR_RT_CHECK_CTX();
  int64_t total = 0;
  for (int64_t size : readSizes(backend, op, "sizes", rank, sizes, -1))
    total += size;
  return total;
}

void dtensor_rt_wait(DTENSOR_RT_CTX_PARAM int64_t handle) {
  const char *op = "wait";
  State &s = state();
  backendFor(op);
  DTENSOR_RT_CHECK_CTX();
  auto it = s.pending.find(handle);
  if (it == s.pending.end()) {
    if (handle > 0 && handle < s.nextHandle)
      fatal(op, "handle " + std::to_string(handle) + " was already waited");
    fatal(op, "handle " + std::to_string(handle) + " was never started");
  }
  Pending p = std::move(it->second);
  s.pending.erase(it);
  finish(p);
}

// The element type of each ABI suffix, for the definitions below.
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES)                                \
  [[maybe_unused]] constexpr ElemType kElemType_##NAME = ElemType::ENUM;
#include "dtensor/Runtime/ElementTypes.def"

// Each collective of Collectives.def, synchronous and started, per element
// type: checks the context and forwards to its implementation above.
#define DTENSOR_RT_DEFINE_COLLECTIVE(T, ENUM, NAME, IMPL, PARAMS, ARGS)        \
  void dtensor_rt_##NAME##_##T(DTENSOR_RT_CTX_PARAM int64_t inRank, void *in,  \
                               int64_t outRank, void *out,                     \
                               DTENSOR_RT_UNPAREN PARAMS) {                    \
    DTENSOR_RT_CHECK_CTX();                                                    \
    IMPL(kElemType_##T, false, inRank, in, outRank, out,                         \
         DTENSOR_RT_UNPAREN ARGS);                                             \
  }                                                                            \
  int64_t dtensor_rt_start_##NAME##_##T(DTENSOR_RT_CTX_PARAM int64_t inRank,   \
                                        void *in, int64_t outRank, void *out,  \
                                        DTENSOR_RT_UNPAREN PARAMS) {           \
    DTENSOR_RT_CHECK_CTX();                                                    \
    return IMPL(kElemType_##T, true, inRank, in, outRank, out,                   \
                DTENSOR_RT_UNPAREN ARGS);                                      \
  }

#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES)                                \
  DTENSOR_RT_COLLECTIVES(DTENSOR_RT_DEFINE_COLLECTIVE, NAME)
#include "dtensor/Runtime/ElementTypes.def"
