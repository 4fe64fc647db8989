//===- RuntimeTest.cpp - end-to-end tests of the MPI runtime --------------===//
//
// Run under mpirun (2 or 4 processes; any count >= 2 works). Calls the
// dtensor_rt_* entry points with hand-built ranked memref descriptors and
// compares every output with values computed here on the host from the
// dialect's semantics (test/Runtime/*.test run it):
//
//   every collective, synchronous and asynchronous, every element type;
//   every reduce op for all_reduce and reduce_scatter;
//   gather / scatter / split / concat dims 0, 1 and 2 of rank-3 tensors;
//   every non-empty axes mask of a 1-D, a 2-D and a 3-D mesh, of meshes with
//   explicit devices, and of a mesh that leaves processes out;
//   strided inputs, inputs at an offset, strided outputs, ranks 0 to 3,
//   zero-sized tensors, several asynchronous collectives in flight waited
//   in reverse order.
//
// Every process computes each check; process 0 prints one line per check,
// "PASS <name>" or "FAIL <name> (ranks ...)", then
// "dtensor-runtime-test: N checks, M failed", and every process exits
// non-zero if a check failed. Details of a failure go to stderr.
//
// `--error=<kind>` instead runs one misuse that the runtime must report
// and abort on (test/Runtime/errors.test).
//
//===----------------------------------------------------------------------===//

#include "dtensor/Runtime/Runtime.h"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Shape = std::vector<int64_t>;

//===----------------------------------------------------------------------===//
// Hand-built memref descriptors
//===----------------------------------------------------------------------===//

/// MLIR's ranked memref descriptor (StridedMemRefType) of rank N.
template <int N> struct StridedMemRef {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};
/// Rank 0 has no size and stride arrays.
struct StridedMemRef0 {
  void *allocated;
  void *aligned;
  int64_t offset;
};
static_assert(offsetof(StridedMemRef<1>, sizes) == 24, "descriptor layout");
static_assert(offsetof(StridedMemRef<3>, strides) == 48, "descriptor layout");
static_assert(sizeof(StridedMemRef<2>) == 56, "descriptor layout");

/// One descriptor of rank 0 to 3; get() is what an unranked memref points to.
struct Descriptor {
  int64_t rank = 0;
  StridedMemRef0 d0 = {};
  StridedMemRef<1> d1 = {};
  StridedMemRef<2> d2 = {};
  StridedMemRef<3> d3 = {};

  template <typename D>
  static void fill(D &d, void *base, int64_t offset, const Shape &sizes,
                   const Shape &strides) {
    d.allocated = base;
    d.aligned = base;
    d.offset = offset;
    for (size_t i = 0; i < sizes.size(); ++i) {
      d.sizes[i] = sizes[i];
      d.strides[i] = strides[i];
    }
  }

  void set(void *base, int64_t offset, const Shape &sizes,
           const Shape &strides) {
    rank = static_cast<int64_t>(sizes.size());
    switch (rank) {
    case 0:
      d0 = {base, base, offset};
      break;
    case 1:
      fill(d1, base, offset, sizes, strides);
      break;
    case 2:
      fill(d2, base, offset, sizes, strides);
      break;
    case 3:
      fill(d3, base, offset, sizes, strides);
      break;
    default:
      std::fprintf(stderr, "descriptor rank %lld not supported\n",
                   static_cast<long long>(rank));
      std::abort();
    }
  }

  void *get() {
    switch (rank) {
    case 0:
      return &d0;
    case 1:
      return &d1;
    case 2:
      return &d2;
    default:
      return &d3;
    }
  }
};

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

Shape rowMajorStrides(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Multi-index of row-major linear index `linear`.
Shape unflatten(int64_t linear, const Shape &shape) {
  Shape index(shape.size(), 0);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = linear % shape[d];
    linear /= shape[d];
  }
  return index;
}

int64_t flatten(const Shape &index, const Shape &shape) {
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    linear = linear * shape[d] + index[d];
  return linear;
}

std::string shapeString(const Shape &shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? "x" : "") + std::to_string(shape[d]);
  return s;
}

//===----------------------------------------------------------------------===//
// Host tensors and reference semantics
//===----------------------------------------------------------------------===//

/// A dense row-major tensor on the host.
template <typename T> struct Dense {
  Shape shape;
  std::vector<T> values;
};

/// The input of world rank `rank`: distinct per rank and position for data
/// movement, small (|v| <= 3) for products.
template <typename T>
Dense<T> inputOf(int64_t rank, const Shape &shape, int64_t salt,
                 bool forProduct) {
  Dense<T> t{shape, std::vector<T>(numElements(shape))};
  for (int64_t i = 0; i < numElements(shape); ++i) {
    int64_t v = forProduct ? (rank * 5 + i * 3 + salt) % 7 - 3
                           : rank * 1000 + (i * 7 + salt) % 997 - 1500;
    t.values[i] = static_cast<T>(v);
  }
  return t;
}

/// Concatenation along `dim`.
template <typename T>
Dense<T> concat(const std::vector<Dense<T>> &parts, int64_t dim) {
  Shape shape = parts.front().shape;
  int64_t block = shape[dim];
  shape[dim] *= static_cast<int64_t>(parts.size());
  Dense<T> out{shape, std::vector<T>(numElements(shape))};
  for (int64_t i = 0; i < numElements(shape); ++i) {
    Shape index = unflatten(i, shape);
    const Dense<T> &part = parts[index[dim] / block];
    index[dim] %= block;
    out.values[i] = part.values[flatten(index, part.shape)];
  }
  return out;
}

/// Chunk `k` of `n` along `dim`.
template <typename T>
Dense<T> chunk(const Dense<T> &t, int64_t dim, int64_t n, int64_t k) {
  Shape shape = t.shape;
  shape[dim] /= n;
  Dense<T> out{shape, std::vector<T>(numElements(shape))};
  for (int64_t i = 0; i < numElements(shape); ++i) {
    Shape index = unflatten(i, shape);
    index[dim] += k * shape[dim];
    out.values[i] = t.values[flatten(index, t.shape)];
  }
  return out;
}

const char *reduceName(int64_t code) {
  static const char *names[] = {"sum", "avg", "product", "min", "max"};
  return names[code];
}

/// Elementwise reduction with the ABI's reduce code.
template <typename T>
Dense<T> reduce(const std::vector<Dense<T>> &parts, int64_t code) {
  Dense<T> out = parts.front();
  for (size_t p = 1; p < parts.size(); ++p) {
    for (size_t i = 0; i < out.values.size(); ++i) {
      T a = out.values[i], b = parts[p].values[i];
      switch (code) {
      case 0:
      case 1:
        out.values[i] = a + b;
        break;
      case 2:
        out.values[i] = a * b;
        break;
      case 3:
        out.values[i] = b < a ? b : a;
        break;
      default:
        out.values[i] = b > a ? b : a;
        break;
      }
    }
  }
  if (code == 1)
    for (T &v : out.values)
      v = static_cast<T>(v / static_cast<T>(parts.size()));
  return out;
}

//===----------------------------------------------------------------------===//
// Buffers: host tensors behind descriptors
//===----------------------------------------------------------------------===//

/// How a buffer lays out its elements.
enum class Layout {
  Dense,   // identity strides, offset 0 (what the lowering passes)
  Offset,  // identity strides, offset 5
  Strided, // offset 3, every dimension padded, innermost stride 2
};

const char *layoutName(Layout layout) {
  switch (layout) {
  case Layout::Dense:
    return "dense";
  case Layout::Offset:
    return "offset";
  case Layout::Strided:
    return "strided";
  }
  return "?";
}

template <typename T> constexpr T sentinel() { return static_cast<T>(-7777); }

template <typename T> struct Buffer {
  Shape shape;
  Shape strides;
  int64_t offset = 0;
  std::vector<T> storage;
  Descriptor desc;

  Buffer(const Shape &shape, Layout layout) : shape(shape) {
    int64_t rank = static_cast<int64_t>(shape.size());
    if (layout == Layout::Strided) {
      offset = 3;
      strides.assign(rank, 2);
      for (int64_t d = rank - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * shape[d + 1] + 1;
    } else {
      offset = layout == Layout::Offset ? 5 : 0;
      strides = rowMajorStrides(shape);
    }
    int64_t extent = offset + 1;
    for (int64_t d = 0; d < rank; ++d)
      extent += (shape[d] > 0 ? shape[d] - 1 : 0) * strides[d];
    storage.assign(extent + 4, sentinel<T>());
    desc.set(storage.data(), offset, shape, strides);
  }
  Buffer(const Dense<T> &t, Layout layout) : Buffer(t.shape, layout) {
    for (int64_t i = 0; i < numElements(shape); ++i)
      storage[position(unflatten(i, shape))] = t.values[i];
  }
  Buffer(const Buffer &) = delete;

  int64_t position(const Shape &index) const {
    int64_t p = offset;
    for (size_t d = 0; d < index.size(); ++d)
      p += index[d] * strides[d];
    return p;
  }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  void *descriptor() { return desc.get(); }

  Dense<T> read() const {
    Dense<T> t{shape, std::vector<T>(numElements(shape))};
    for (int64_t i = 0; i < numElements(shape); ++i)
      t.values[i] = storage[position(unflatten(i, shape))];
    return t;
  }

  /// Storage outside the view still holds the sentinel.
  bool paddingUntouched() const {
    std::vector<bool> inView(storage.size(), false);
    for (int64_t i = 0; i < numElements(shape); ++i)
      inView[position(unflatten(i, shape))] = true;
    for (size_t p = 0; p < storage.size(); ++p)
      if (!inView[p] && storage[p] != sentinel<T>())
        return false;
    return true;
  }
};

template <typename T> std::string str(T v) {
  return std::to_string(static_cast<long double>(v));
}

/// Compares a buffer with the expected tensor; the first difference goes
/// into `detail`.
template <typename T>
bool matches(const Buffer<T> &buffer, const Dense<T> &expected,
             std::string &detail) {
  Dense<T> got = buffer.read();
  if (got.shape != expected.shape) {
    detail = "shape " + shapeString(got.shape) + ", expected " +
             shapeString(expected.shape);
    return false;
  }
  for (size_t i = 0; i < got.values.size(); ++i) {
    if (got.values[i] != expected.values[i]) {
      detail = "element " + std::to_string(i) + " is " + str(got.values[i]) +
               ", expected " + str(expected.values[i]);
      return false;
    }
  }
  if (!buffer.paddingUntouched()) {
    detail = "wrote outside the view";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The entry points per element type
//===----------------------------------------------------------------------===//

template <typename T> struct Api;
#define DTENSOR_TEST_API(TYPE, SUFFIX)                                         \
  template <> struct Api<TYPE> {                                               \
    static constexpr const char *name = #SUFFIX;                               \
    static constexpr auto allReduce = dtensor_rt_all_reduce_##SUFFIX;          \
    static constexpr auto allGather = dtensor_rt_all_gather_##SUFFIX;          \
    static constexpr auto reduceScatter = dtensor_rt_reduce_scatter_##SUFFIX;  \
    static constexpr auto allToAll = dtensor_rt_all_to_all_##SUFFIX;           \
    static constexpr auto allToAllV = dtensor_rt_all_to_all_v_##SUFFIX;        \
    static constexpr auto startAllToAllV =                                     \
        dtensor_rt_start_all_to_all_v_##SUFFIX;                                \
    static constexpr auto permute = dtensor_rt_permute_##SUFFIX;               \
    static constexpr auto broadcast = dtensor_rt_broadcast_##SUFFIX;           \
    static constexpr auto startAllReduce =                                     \
        dtensor_rt_start_all_reduce_##SUFFIX;                                  \
    static constexpr auto startAllGather =                                     \
        dtensor_rt_start_all_gather_##SUFFIX;                                  \
    static constexpr auto startReduceScatter =                                 \
        dtensor_rt_start_reduce_scatter_##SUFFIX;                              \
    static constexpr auto startAllToAll =                                      \
        dtensor_rt_start_all_to_all_##SUFFIX;                                  \
    static constexpr auto startPermute = dtensor_rt_start_permute_##SUFFIX;    \
    static constexpr auto startBroadcast =                                     \
        dtensor_rt_start_broadcast_##SUFFIX;                                   \
  };
DTENSOR_TEST_API(float, f32)
DTENSOR_TEST_API(double, f64)
DTENSOR_TEST_API(int32_t, i32)
DTENSOR_TEST_API(int64_t, i64)

//===----------------------------------------------------------------------===//
// Meshes and the host model of groups
//===----------------------------------------------------------------------===//

struct MeshSpec {
  int64_t id;
  Shape shape;
  std::vector<int64_t> devices; // empty: position p is world rank p
  std::string name;
};

/// The calling process's group of (mesh, mask), computed independently of
/// the runtime.
struct GroupInfo {
  bool member = false;
  int64_t index = 0;
  int64_t size = 1;
  std::vector<int64_t> members; // world ranks in group-index order
};

GroupInfo groupOf(const MeshSpec &mesh, int64_t mask, int64_t worldRank) {
  GroupInfo g;
  int64_t positions = numElements(mesh.shape);
  auto rankAt = [&](int64_t p) {
    return mesh.devices.empty() ? p : mesh.devices[p];
  };
  int64_t mine = -1;
  for (int64_t p = 0; p < positions; ++p)
    if (rankAt(p) == worldRank)
      mine = p;
  if (mine < 0)
    return g;
  g.member = true;
  Shape myCoords = unflatten(mine, mesh.shape);
  for (size_t a = 0; a < mesh.shape.size(); ++a)
    if (mask & (int64_t(1) << a))
      g.size *= mesh.shape[a];
  g.members.assign(g.size, -1);
  for (int64_t p = 0; p < positions; ++p) {
    Shape coords = unflatten(p, mesh.shape);
    bool same = true;
    int64_t index = 0;
    for (size_t a = 0; a < mesh.shape.size(); ++a) {
      if (mask & (int64_t(1) << a))
        index = index * mesh.shape[a] + coords[a];
      else if (coords[a] != myCoords[a])
        same = false;
    }
    if (!same)
      continue;
    g.members[index] = rankAt(p);
    if (p == mine)
      g.index = index;
  }
  return g;
}

std::string axesString(int64_t mask) {
  std::string s = "[";
  for (int64_t a = 0; a < 62; ++a)
    if (mask & (int64_t(1) << a))
      s += (s.size() > 1 ? "," : "") + std::to_string(a);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// The harness
//===----------------------------------------------------------------------===//

class Harness {
public:
  int worldRank = 0;
  int worldSize = 1;
  int numChecks = 0;
  int numFailed = 0;

  /// Collective over MPI_COMM_WORLD: every process reports every check.
  void report(const std::string &name, bool ok, const std::string &detail) {
    if (!ok)
      std::fprintf(stderr, "rank %d: FAIL %s: %s\n", worldRank, name.c_str(),
                   detail.c_str());
    int flag = ok ? 1 : 0;
    std::vector<int> flags(worldSize);
    MPI_Allgather(&flag, 1, MPI_INT, flags.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::string failedRanks;
    for (int r = 0; r < worldSize; ++r)
      if (!flags[r])
        failedRanks += (failedRanks.empty() ? "" : " ") + std::to_string(r);
    ++numChecks;
    if (!failedRanks.empty())
      ++numFailed;
    if (worldRank != 0)
      return;
    if (failedRanks.empty())
      std::printf("PASS %s\n", name.c_str());
    else
      std::printf("FAIL %s (ranks %s)\n", name.c_str(), failedRanks.c_str());
  }
};

/// One configuration of a collective call.
struct Case {
  const MeshSpec *mesh;
  int64_t mask;
  bool async;
  Layout in = Layout::Dense;
  Layout out = Layout::Dense;
};

template <typename T>
std::string caseName(const char *op, const Case &c, const std::string &extra) {
  std::string name = std::string(op) + " " + Api<T>::name + " " + c.mesh->name +
                     " axes=" + axesString(c.mask);
  if (!extra.empty())
    name += " " + extra;
  if (c.in != Layout::Dense)
    name += std::string(" in=") + layoutName(c.in);
  if (c.out != Layout::Dense)
    name += std::string(" out=") + layoutName(c.out);
  return name + (c.async ? " async" : " sync");
}

/// Checks the output and that the input is unchanged.
template <typename T>
void finishCase(Harness &h, const std::string &name, const Buffer<T> &in,
                const Dense<T> &input, const Buffer<T> &out,
                const Dense<T> &expected) {
  std::string detail;
  bool ok = matches(out, expected, detail);
  std::string inDetail;
  if (ok && !matches(in, input, inDetail)) {
    ok = false;
    detail = "input changed: " + inDetail;
  }
  h.report(name, ok, detail);
}

//===----------------------------------------------------------------------===//
// One test per collective
//===----------------------------------------------------------------------===//

/// With `inPlace`, the output is the input buffer (the compiler reuses a
/// dying input, dtensor-reuse-collective-buffers): reduced in place.
template <typename T>
void testAllReduce(Harness &h, const Case &c, const Shape &shape,
                   int64_t code, bool inPlace = false) {
  std::string name = caseName<T>(
      "all_reduce", c,
      std::string(reduceName(code)) + (inPlace ? " in place" : ""));
  GroupInfo g = groupOf(*c.mesh, c.mask, h.worldRank);
  if (!g.member)
    return h.report(name, true, "");
  bool product = code == 2;
  Dense<T> input = inputOf<T>(h.worldRank, shape, code, product);
  std::vector<Dense<T>> parts;
  for (int64_t m : g.members)
    parts.push_back(inputOf<T>(m, shape, code, product));
  Buffer<T> in(input, c.in), fresh(inPlace ? Shape{} : shape, c.out);
  Buffer<T> &out = inPlace ? in : fresh;
  if (c.async)
    dtensor_rt_wait(dtensor_rt_context(), Api<T>::startAllReduce(dtensor_rt_context(), in.rank(), in.descriptor(),
                                           out.rank(), out.descriptor(),
                                           c.mesh->id, c.mask, code));
  else
    Api<T>::allReduce(dtensor_rt_context(), in.rank(), in.descriptor(), out.rank(), out.descriptor(),
                      c.mesh->id, c.mask, code);
  if (!inPlace)
    return finishCase(h, name, in, input, out, reduce(parts, code));
  std::string detail;
  bool ok = matches(out, reduce(parts, code), detail);
  h.report(name, ok, detail);
}

template <typename T>
void testAllGather(Harness &h, const Case &c, const Shape &shape, int64_t dim) {
  std::string name = caseName<T>(
      "all_gather", c, "dim=" + std::to_string(dim) + " " + shapeString(shape));
  GroupInfo g = groupOf(*c.mesh, c.mask, h.worldRank);
  if (!g.member)
    return h.report(name, true, "");
  Dense<T> input = inputOf<T>(h.worldRank, shape, dim, false);
  std::vector<Dense<T>> parts;
  for (int64_t m : g.members)
    parts.push_back(inputOf<T>(m, shape, dim, false));
  Shape outShape = shape;
  outShape[dim] *= g.size;
  Buffer<T> in(input, c.in), out(outShape, c.out);
  if (c.async)
    dtensor_rt_wait(dtensor_rt_context(), Api<T>::startAllGather(dtensor_rt_context(), in.rank(), in.descriptor(),
                                           out.rank(), out.descriptor(),
                                           c.mesh->id, c.mask, dim));
  else
    Api<T>::allGather(dtensor_rt_context(), in.rank(), in.descriptor(), out.rank(), out.descriptor(),
                      c.mesh->id, c.mask, dim);
  finishCase(h, name, in, input, out, concat(parts, dim));
}

/// `shape` is the output shape; the input is g.size times larger along dim.
template <typename T>
void testReduceScatter(Harness &h, const Case &c, const Shape &shape,
                       int64_t dim, int64_t code) {
  std::string name =
      caseName<T>("reduce_scatter", c,
                  "dim=" + std::to_string(dim) + " " + reduceName(code));
  GroupInfo g = groupOf(*c.mesh, c.mask, h.worldRank);
  if (!g.member)
    return h.report(name, true, "");
  Shape inShape = shape;
  inShape[dim] *= g.size;
  bool product = code == 2;
  Dense<T> input = inputOf<T>(h.worldRank, inShape, dim + code, product);
  std::vector<Dense<T>> parts;
  for (int64_t m : g.members)
    parts.push_back(inputOf<T>(m, inShape, dim + code, product));
  Buffer<T> in(input, c.in), out(shape, c.out);
  if (c.async)
    dtensor_rt_wait(dtensor_rt_context(), Api<T>::startReduceScatter(dtensor_rt_context(), in.rank(), in.descriptor(),
                                               out.rank(), out.descriptor(),
                                               c.mesh->id, c.mask, dim, code));
  else
    Api<T>::reduceScatter(dtensor_rt_context(), in.rank(), in.descriptor(), out.rank(),
                          out.descriptor(), c.mesh->id, c.mask, dim, code);
  finishCase(h, name, in, input, out,
             chunk(reduce(parts, code), dim, g.size, g.index));
}

/// `shape` is the input shape divided by the group size along splitDim.
template <typename T>
void testAllToAll(Harness &h, const Case &c, const Shape &shape,
                  int64_t splitDim, int64_t concatDim) {
  std::string name = caseName<T>("all_to_all", c,
                                 "split=" + std::to_string(splitDim) +
                                     " concat=" + std::to_string(concatDim));
  GroupInfo g = groupOf(*c.mesh, c.mask, h.worldRank);
  if (!g.member)
    return h.report(name, true, "");
  Shape inShape = shape;
  inShape[splitDim] *= g.size;
  Shape outShape = inShape;
  outShape[splitDim] /= g.size;
  outShape[concatDim] *= g.size;
  int64_t salt = splitDim * 3 + concatDim;
  Dense<T> input = inputOf<T>(h.worldRank, inShape, salt, false);
  std::vector<Dense<T>> received;
  for (int64_t m : g.members)
    received.push_back(
        chunk(inputOf<T>(m, inShape, salt, false), splitDim, g.size, g.index));
  Buffer<T> in(input, c.in), out(outShape, c.out);
  if (c.async)
    dtensor_rt_wait(dtensor_rt_context(), Api<T>::startAllToAll(dtensor_rt_context(),
        in.rank(), in.descriptor(), out.rank(), out.descriptor(), c.mesh->id,
        c.mask, splitDim, concatDim));
  else
    Api<T>::allToAll(dtensor_rt_context(), in.rank(), in.descriptor(), out.rank(), out.descriptor(),
                     c.mesh->id, c.mask, splitDim, concatDim);
  finishCase(h, name, in, input, out, concat(received, concatDim));
}

/// Rows group index `from` sends to index `to` in the all_to_all_v tests:
/// uneven, zero for some pairs.
int64_t a2avRows(int64_t from, int64_t to, int64_t salt) {
  return (from + 2 * to + salt) % 3;
}

/// all_to_all_v of `cols`-wide rows (2-D, or 3-D with a trailing dim of 2
/// when `cols3`): each member sends a2avRows(i, j) rows to j; the sizes are
/// passed as strided i64 memrefs when `stridedSizes`.
template <typename T>
void testAllToAllV(Harness &h, const Case &c, int64_t cols, bool cols3,
                   int64_t salt, bool stridedSizes) {
  std::string name = caseName<T>(
      "all_to_all_v", c,
      "salt=" + std::to_string(salt) + (cols3 ? " rank=3" : " rank=2") +
          (stridedSizes ? " sizes=strided" : ""));
  GroupInfo g = groupOf(*c.mesh, c.mask, h.worldRank);
  if (!g.member)
    return h.report(name, true, "");
  int64_t n = g.size, me = g.index;
  auto shapeOf = [&](int64_t rows) {
    return cols3 ? Shape{rows, cols, 2} : Shape{rows, cols};
  };
  auto totalFrom = [&](int64_t from) {
    int64_t total = 0;
    for (int64_t j = 0; j < n; ++j)
      total += a2avRows(from, j, salt);
    return total;
  };
  Dense<T> input = inputOf<T>(h.worldRank, shapeOf(totalFrom(me)), salt,
                              false);
  // Expected: from each member j in order, its block for this index.
  int64_t slice = cols * (cols3 ? 2 : 1);
  int64_t outRows = 0;
  std::vector<T> expectedValues;
  for (int64_t j = 0; j < n; ++j) {
    Dense<T> theirs = inputOf<T>(g.members[j], shapeOf(totalFrom(j)), salt,
                                 false);
    int64_t offset = 0;
    for (int64_t l = 0; l < me; ++l)
      offset += a2avRows(j, l, salt);
    int64_t rows = a2avRows(j, me, salt);
    expectedValues.insert(expectedValues.end(),
                          theirs.values.begin() + offset * slice,
                          theirs.values.begin() + (offset + rows) * slice);
    outRows += rows;
  }
  Dense<T> expected{shapeOf(outRows), expectedValues};
  // Sizes, dense or with stride 2.
  int64_t stride = stridedSizes ? 2 : 1;
  std::vector<int64_t> sendSizes(n * stride, -1), recvSizes(n * stride, -1);
  for (int64_t j = 0; j < n; ++j) {
    sendSizes[j * stride] = a2avRows(me, j, salt);
    recvSizes[j * stride] = a2avRows(j, me, salt);
  }
  Descriptor sendDesc, recvDesc;
  sendDesc.set(sendSizes.data(), 0, {n}, {stride});
  recvDesc.set(recvSizes.data(), 0, {n}, {stride});
  int64_t total = dtensor_rt_total_size(dtensor_rt_context(), 1, recvDesc.get());
  if (total != outRows)
    return h.report(name, false,
                    "total_size " + std::to_string(total) + ", expected " +
                        std::to_string(outRows));
  Buffer<T> in(input, c.in), out(expected.shape, c.out);
  if (c.async)
    dtensor_rt_wait(dtensor_rt_context(),
                    Api<T>::startAllToAllV(
                        dtensor_rt_context(), in.rank(), in.descriptor(),
                        out.rank(), out.descriptor(), 1, sendDesc.get(), 1,
                        recvDesc.get(), c.mesh->id, c.mask));
  else
    Api<T>::allToAllV(dtensor_rt_context(), in.rank(), in.descriptor(),
                      out.rank(), out.descriptor(), 1, sendDesc.get(), 1,
                      recvDesc.get(), c.mesh->id, c.mask);
  finishCase(h, name, in, input, out, expected);
}

/// `shift` k: perm[i] = (i + k) mod n; `reverse`: perm[i] = n - 1 - i.
template <typename T>
void testPermute(Harness &h, const Case &c, const Shape &shape, int64_t shift,
                 bool reverse) {
  std::string name = caseName<T>("permute", c,
                                 reverse ? std::string("reverse")
                                         : "shift=" + std::to_string(shift));
  GroupInfo g = groupOf(*c.mesh, c.mask, h.worldRank);
  if (!g.member)
    return h.report(name, true, "");
  int64_t n = g.size;
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i)
    perm[i] = reverse ? n - 1 - i : (i + shift) % n;
  int64_t from = 0;
  for (int64_t j = 0; j < n; ++j)
    if (perm[j] == g.index)
      from = j;
  Descriptor permDesc;
  permDesc.set(perm.data(), 0, {n}, {1});
  Dense<T> input = inputOf<T>(h.worldRank, shape, shift, false);
  Dense<T> expected = inputOf<T>(g.members[from], shape, shift, false);
  Buffer<T> in(input, c.in), out(shape, c.out);
  if (c.async)
    dtensor_rt_wait(dtensor_rt_context(), Api<T>::startPermute(dtensor_rt_context(), in.rank(), in.descriptor(), out.rank(),
                                         out.descriptor(), c.mesh->id, c.mask,
                                         1, permDesc.get()));
  else
    Api<T>::permute(dtensor_rt_context(), in.rank(), in.descriptor(), out.rank(), out.descriptor(),
                    c.mesh->id, c.mask, 1, permDesc.get());
  finishCase(h, name, in, input, out, expected);
}

template <typename T>
void testBroadcast(Harness &h, const Case &c, const Shape &shape,
                   bool rootLast) {
  std::string name =
      caseName<T>("broadcast", c, rootLast ? "root=last" : "root=0");
  GroupInfo g = groupOf(*c.mesh, c.mask, h.worldRank);
  if (!g.member)
    return h.report(name, true, "");
  int64_t root = rootLast ? g.size - 1 : 0;
  Dense<T> input = inputOf<T>(h.worldRank, shape, 11, false);
  Dense<T> expected = inputOf<T>(g.members[root], shape, 11, false);
  Buffer<T> in(input, c.in), out(shape, c.out);
  if (c.async)
    dtensor_rt_wait(dtensor_rt_context(), Api<T>::startBroadcast(dtensor_rt_context(), in.rank(), in.descriptor(),
                                           out.rank(), out.descriptor(),
                                           c.mesh->id, c.mask, root));
  else
    Api<T>::broadcast(dtensor_rt_context(), in.rank(), in.descriptor(), out.rank(), out.descriptor(),
                      c.mesh->id, c.mask, root);
  finishCase(h, name, in, input, out, expected);
}

//===----------------------------------------------------------------------===//
// Test plans
//===----------------------------------------------------------------------===//

/// Every collective on one group. `full`: every dim, dim pair, root and perm
/// kind; otherwise one representative of each, chosen by `variant`.
template <typename T>
void testGroup(Harness &h, const MeshSpec &mesh, int64_t mask, bool full,
               int64_t variant) {
  const Shape shape3 = {2, 3, 2};
  for (bool async : {false, true}) {
    Case c{&mesh, mask, async};
    testAllReduce<T>(h, c, {3, 4}, 0);
    for (int64_t dim = 0; dim < 3; ++dim) {
      if (!full && dim != variant % 3)
        continue;
      testAllGather<T>(h, c, shape3, dim);
      testReduceScatter<T>(h, c, shape3, dim, 0);
    }
    for (int64_t split = 0; split < 3; ++split) {
      for (int64_t cat = 0; cat < 3; ++cat) {
        if (!full && (split != variant % 3 || cat != (variant + 1) % 3))
          continue;
        testAllToAll<T>(h, c, shape3, split, cat);
      }
    }
    testAllToAllV<T>(h, c, 3, false, variant % 3, false);
    testPermute<T>(h, c, {2, 3}, 1, false);
    testBroadcast<T>(h, c, {2, 3}, true);
    if (full) {
      testAllToAllV<T>(h, c, 2, true, (variant + 1) % 3, true);
      testPermute<T>(h, c, {2, 3}, 0, true);
      testBroadcast<T>(h, c, {2, 3}, false);
    }
  }
}

/// Every reduce op of all_reduce and reduce_scatter on one group.
template <typename T>
void testReduceOps(Harness &h, const MeshSpec &mesh, int64_t mask) {
  for (bool async : {false, true}) {
    Case c{&mesh, mask, async};
    for (int64_t code = 0; code < 5; ++code) {
      testAllReduce<T>(h, c, {2, 5}, code);
      testAllReduce<T>(h, c, {2, 5}, code, /*inPlace=*/true);
      testReduceScatter<T>(h, c, {2, 2, 3}, 1, code);
    }
  }
}

/// Strided inputs, inputs at an offset, strided outputs.
template <typename T>
void testLayouts(Harness &h, const MeshSpec &mesh, int64_t mask) {
  const Shape shape3 = {2, 3, 2};
  struct Variant {
    Layout in, out;
    bool async;
  };
  for (Variant v : {Variant{Layout::Strided, Layout::Dense, false},
                    Variant{Layout::Strided, Layout::Dense, true},
                    Variant{Layout::Offset, Layout::Dense, false},
                    Variant{Layout::Dense, Layout::Strided, false},
                    Variant{Layout::Strided, Layout::Offset, true}}) {
    Case c{&mesh, mask, v.async, v.in, v.out};
    testAllReduce<T>(h, c, {3, 4}, 1);
    testAllToAllV<T>(h, c, 3, true, 1, false);
    for (int64_t dim = 0; dim < 3; ++dim) {
      testAllGather<T>(h, c, shape3, dim);
      testReduceScatter<T>(h, c, shape3, dim, 0);
    }
    testAllToAll<T>(h, c, shape3, 0, 2);
    testAllToAll<T>(h, c, shape3, 2, 0);
    testAllToAll<T>(h, c, shape3, 1, 1);
    testPermute<T>(h, c, {2, 3}, 1, false);
    testBroadcast<T>(h, c, {2, 3}, true);
  }
}

/// Rank 0, rank 1 and zero-sized tensors.
void testRanksAndEmpty(Harness &h, const MeshSpec &mesh) {
  for (bool async : {false, true}) {
    Case c{&mesh, 1, async};
    testAllReduce<double>(h, c, {}, 0);
    testAllReduce<int32_t>(h, c, {}, 4);
    testPermute<float>(h, c, {}, 1, false);
    testBroadcast<int64_t>(h, c, {}, true);
    testAllGather<float>(h, c, {5}, 0);
    testReduceScatter<int64_t>(h, c, {3}, 0, 0);
    testAllToAll<double>(h, c, {2}, 0, 0);
    testAllReduce<float>(h, c, {0, 3}, 0);
    testAllGather<float>(h, c, {2, 0, 3}, 1);
    testAllToAll<int32_t>(h, c, {0, 2, 1}, 2, 0);
  }
}

/// Several collectives in flight on different groups, waited in reverse
/// order of their start.
void testInFlight(Harness &h, const MeshSpec &mesh1d, const MeshSpec &mesh2d) {
  GroupInfo g1 = groupOf(mesh1d, 1, h.worldRank);
  int64_t lastAxis = int64_t(1) << (mesh2d.shape.size() - 1);
  GroupInfo g2 = groupOf(mesh2d, lastAxis, h.worldRank);
  GroupInfo g3 = groupOf(mesh2d, 1, h.worldRank);
  const char *names[] = {"all_gather", "all_reduce", "reduce_scatter",
                         "all_to_all", "permute",    "broadcast"};
  if (!g1.member || !g2.member || !g3.member) {
    for (const char *n : names)
      h.report(std::string("in-flight ") + n, true, "");
    return;
  }
  Shape shape = {2, 4};
  auto inputAg = inputOf<float>(h.worldRank, shape, 21, false);
  auto inputAr = inputOf<int64_t>(h.worldRank, shape, 22, false);
  Shape rsIn = {2, 2 * g3.size};
  auto inputRs = inputOf<double>(h.worldRank, rsIn, 23, false);
  Shape a2aIn = {2 * g1.size, 3};
  auto inputA2a = inputOf<int32_t>(h.worldRank, a2aIn, 24, false);
  auto inputPerm = inputOf<float>(h.worldRank, shape, 25, false);
  auto inputBc = inputOf<double>(h.worldRank, shape, 26, false);

  Buffer<float> agIn(inputAg, Layout::Strided),
      agOut({2, 4 * g2.size}, Layout::Dense);
  Buffer<int64_t> arIn(inputAr, Layout::Dense), arOut(shape, Layout::Dense);
  Buffer<double> rsIn_(inputRs, Layout::Offset), rsOut({2, 2}, Layout::Dense);
  Buffer<int32_t> a2aIn_(inputA2a, Layout::Dense),
      a2aOut({2, 3 * g1.size}, Layout::Dense);
  Buffer<float> permIn(inputPerm, Layout::Dense),
      permOut(shape, Layout::Strided);
  Buffer<double> bcIn(inputBc, Layout::Dense), bcOut(shape, Layout::Dense);
  std::vector<int64_t> perm(g3.size);
  for (int64_t i = 0; i < g3.size; ++i)
    perm[i] = (i + g3.size - 1) % g3.size;
  Descriptor permDesc;
  permDesc.set(perm.data(), 0, {g3.size}, {1});

  int64_t handles[6];
  handles[0] = dtensor_rt_start_all_gather_f32(dtensor_rt_context(),
      2, agIn.descriptor(), 2, agOut.descriptor(), mesh2d.id, lastAxis, 1);
  handles[1] = dtensor_rt_start_all_reduce_i64(dtensor_rt_context(),
      2, arIn.descriptor(), 2, arOut.descriptor(), mesh1d.id, 1, 4);
  handles[2] = dtensor_rt_start_reduce_scatter_f64(dtensor_rt_context(),
      2, rsIn_.descriptor(), 2, rsOut.descriptor(), mesh2d.id, 1, 1, 1);
  handles[3] = dtensor_rt_start_all_to_all_i32(dtensor_rt_context(),
      2, a2aIn_.descriptor(), 2, a2aOut.descriptor(), mesh1d.id, 1, 0, 1);
  handles[4] = dtensor_rt_start_permute_f32(dtensor_rt_context(), 2, permIn.descriptor(), 2,
                                            permOut.descriptor(), mesh2d.id, 1,
                                            1, permDesc.get());
  handles[5] = dtensor_rt_start_broadcast_f64(dtensor_rt_context(),
      2, bcIn.descriptor(), 2, bcOut.descriptor(), mesh1d.id, 1, 0);
  bool distinct = true;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < i; ++j)
      if (handles[i] == handles[j] || handles[i] == 0)
        distinct = false;
  for (int i = 5; i >= 0; --i)
    dtensor_rt_wait(dtensor_rt_context(), handles[i]);
  h.report("in-flight handles distinct and non-zero", distinct, "");

  std::vector<Dense<float>> ag;
  for (int64_t m : g2.members)
    ag.push_back(inputOf<float>(m, shape, 21, false));
  finishCase(h, "in-flight all_gather", agIn, inputAg, agOut, concat(ag, 1));
  std::vector<Dense<int64_t>> ar;
  for (int64_t m : g1.members)
    ar.push_back(inputOf<int64_t>(m, shape, 22, false));
  finishCase(h, "in-flight all_reduce", arIn, inputAr, arOut, reduce(ar, 4));
  std::vector<Dense<double>> rs;
  for (int64_t m : g3.members)
    rs.push_back(inputOf<double>(m, rsIn, 23, false));
  finishCase(h, "in-flight reduce_scatter", rsIn_, inputRs, rsOut,
             chunk(reduce(rs, 1), 1, g3.size, g3.index));
  std::vector<Dense<int32_t>> a2a;
  for (int64_t m : g1.members)
    a2a.push_back(
        chunk(inputOf<int32_t>(m, a2aIn, 24, false), 0, g1.size, g1.index));
  finishCase(h, "in-flight all_to_all", a2aIn_, inputA2a, a2aOut,
             concat(a2a, 1));
  int64_t from = (g3.index + 1) % g3.size;
  finishCase(h, "in-flight permute", permIn, inputPerm, permOut,
             inputOf<float>(g3.members[from], shape, 25, false));
  finishCase(h, "in-flight broadcast", bcIn, inputBc, bcOut,
             inputOf<double>(g1.members[0], shape, 26, false));
}

std::vector<MeshSpec> meshesFor(int worldSize) {
  int64_t w = worldSize;
  std::vector<MeshSpec> meshes;
  if (w == 4) {
    meshes.push_back({0, {4}, {}, "m0[4]"});
    meshes.push_back({1, {2, 2}, {}, "m1[2x2]"});
    meshes.push_back({2, {2, 2}, {3, 1, 2, 0}, "m2[2x2]@[3,1,2,0]"});
    meshes.push_back({3, {2}, {3, 1}, "m3[2]@[3,1]"});
    meshes.push_back({4, {2, 1, 2}, {}, "m4[2x1x2]"});
    return meshes;
  }
  std::vector<int64_t> reversed(w);
  for (int64_t r = 0; r < w; ++r)
    reversed[r] = w - 1 - r;
  meshes.push_back({0, {w}, {}, "m0[" + std::to_string(w) + "]"});
  meshes.push_back({1, {1, w}, {}, "m1[1x" + std::to_string(w) + "]"});
  meshes.push_back({2, {w}, reversed, "m2[" + std::to_string(w) + "]@rev"});
  meshes.push_back({3, {1}, {w - 1}, "m3[1]@[" + std::to_string(w - 1) + "]"});
  meshes.push_back({4, {w, 1, 1}, {}, "m4[" + std::to_string(w) + "x1x1]"});
  return meshes;
}

int registerMesh(const MeshSpec &m) {
  return dtensor_rt_register_mesh(
      m.id, static_cast<int64_t>(m.shape.size()), m.shape.data(),
      m.devices.empty() ? nullptr : m.devices.data());
}

//===----------------------------------------------------------------------===//
// Misuse that must abort (--error=<kind>)
//===----------------------------------------------------------------------===//

/// Each kind ends in a runtime abort; returning means the runtime missed it.
void runError(const std::string &kind, const std::vector<MeshSpec> &meshes) {
  int64_t n = meshes[0].shape[0];
  Buffer<float> in({2, 2}, Layout::Dense), out({2, 2}, Layout::Dense);
  if (kind == "gather-shape") {
    Buffer<float> bad({2, 2 * n + 1}, Layout::Dense);
    dtensor_rt_all_gather_f32(dtensor_rt_context(), 2, in.descriptor(), 2, bad.descriptor(), 0, 1, 1);
  } else if (kind == "scatter-shape") {
    Buffer<float> bad({2, 3}, Layout::Dense);
    dtensor_rt_reduce_scatter_f32(dtensor_rt_context(), 2, in.descriptor(), 2, bad.descriptor(), 0, 1,
                                  1, 0);
  } else if (kind == "gather-outside") {
    Buffer<float> bad({3, 2 * n}, Layout::Dense);
    dtensor_rt_start_all_gather_f32(dtensor_rt_context(), 2, in.descriptor(), 2, bad.descriptor(), 0,
                                    1, 1);
  } else if (kind == "scatter-rank") {
    Buffer<float> bad({2}, Layout::Dense);
    dtensor_rt_reduce_scatter_f32(dtensor_rt_context(), 2, in.descriptor(), 1, bad.descriptor(), 0, 1,
                                  1, 0);
  } else if (kind == "reduce-shape") {
    Buffer<float> bad({2, 3}, Layout::Dense);
    dtensor_rt_all_reduce_f32(dtensor_rt_context(), 2, in.descriptor(), 2, bad.descriptor(), 0, 1, 0);
  } else if (kind == "unknown-mesh") {
    dtensor_rt_all_reduce_f32(dtensor_rt_context(), 2, in.descriptor(), 2, out.descriptor(), 42, 1,
                              0);
  } else if (kind == "bad-mask") {
    dtensor_rt_all_reduce_f32(dtensor_rt_context(), 2, in.descriptor(), 2, out.descriptor(), 1, 4, 0);
  } else if (kind == "bad-reduce") {
    dtensor_rt_all_reduce_f32(dtensor_rt_context(), 2, in.descriptor(), 2, out.descriptor(), 0, 1, 9);
  } else if (kind == "bad-perm") {
    std::vector<int64_t> perm(n, 0);
    Descriptor permDesc;
    permDesc.set(perm.data(), 0, {n}, {1});
    dtensor_rt_permute_f32(dtensor_rt_context(), 2, in.descriptor(), 2, out.descriptor(), 0, 1, 1,
                           permDesc.get());
  } else if (kind == "a2av-sizes") {
    // Sizes that do not add up to the input's 2 rows.
    std::vector<int64_t> sizes(n, 3);
    Descriptor sizesDesc;
    sizesDesc.set(sizes.data(), 0, {n}, {1});
    Buffer<float> received({3 * n, 2}, Layout::Dense);
    dtensor_rt_all_to_all_v_f32(dtensor_rt_context(), 2, in.descriptor(), 2,
                                received.descriptor(), 1, sizesDesc.get(), 1,
                                sizesDesc.get(), 0, 1);
  } else if (kind == "a2av-short") {
    // Send sizes add up (2 rows to index 0); recv sizes fall short.
    std::vector<int64_t> send(n, 0), recv(n, 0);
    send[0] = 2;
    Descriptor sendDesc, recvDesc;
    sendDesc.set(send.data(), 0, {n}, {1});
    recvDesc.set(recv.data(), 0, {n}, {1});
    dtensor_rt_start_all_to_all_v_f32(dtensor_rt_context(), 2,
                                      in.descriptor(), 2, out.descriptor(), 1,
                                      sendDesc.get(), 1, recvDesc.get(), 0, 1);
  } else if (kind == "a2av-negative") {
    std::vector<int64_t> sizes(n, 0);
    sizes[0] = -1;
    Descriptor sizesDesc;
    sizesDesc.set(sizes.data(), 0, {n}, {1});
    dtensor_rt_total_size(dtensor_rt_context(), 1, sizesDesc.get());
  } else if (kind == "wait-twice") {
    int64_t handle = dtensor_rt_start_all_reduce_f32(dtensor_rt_context(), 2, in.descriptor(), 2,
                                                     out.descriptor(), 0, 1, 0);
    dtensor_rt_wait(dtensor_rt_context(), handle);
    dtensor_rt_wait(dtensor_rt_context(), handle);
  } else if (kind == "wait-unknown") {
    dtensor_rt_wait(dtensor_rt_context(), 77);
  } else if (kind == "never-waited") {
    dtensor_rt_start_all_reduce_f32(dtensor_rt_context(), 2, in.descriptor(), 2, out.descriptor(), 0,
                                    1, 0);
    dtensor_rt_finalize();
  } else if (kind == "not-member") {
    // Mesh 3 leaves world rank 0 out.
    dtensor_rt_coord(3, 1);
    // The members reach the barrier the aborting process never does.
    dtensor_rt_barrier();
  } else {
    std::fprintf(stderr, "unknown --error kind '%s'\n", kind.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string errorKind;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--error=", 0) == 0) {
      errorKind = arg.substr(8);
    } else {
      std::fprintf(stderr, "usage: %s [--error=<kind>]\n", argv[0]);
      return 2;
    }
  }
  if (dtensor_rt_init("mpi", &argc, &argv) != 0) {
    std::fprintf(stderr, "dtensor_rt_init failed\n");
    return 2;
  }
  Harness h;
  MPI_Comm_rank(MPI_COMM_WORLD, &h.worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &h.worldSize);
  if (h.worldSize < 2) {
    std::fprintf(stderr, "run with at least 2 processes\n");
    dtensor_rt_finalize();
    return 2;
  }
  std::vector<MeshSpec> meshes = meshesFor(h.worldSize);
  for (const MeshSpec &m : meshes)
    h.report("register " + m.name, registerMesh(m) == 0, "non-zero result");

  if (!errorKind.empty()) {
    runError(errorKind, meshes);
    std::fprintf(stderr, "rank %d: --error=%s did not abort\n", h.worldRank,
                 errorKind.c_str());
    return 3;
  }

  h.report("world rank and size",
           dtensor_rt_world_rank() == h.worldRank &&
               dtensor_rt_world_size() == h.worldSize,
           "differ from MPI_COMM_WORLD");

  // Meshes the runtime must refuse, the same way on every process.
  {
    int64_t tooBig[] = {h.worldSize + 1};
    int64_t two[] = {2};
    int64_t twice[] = {1, 1};
    int64_t outside[] = {0, h.worldSize};
    h.report("register rejects a mesh larger than the world",
             dtensor_rt_register_mesh(10, 1, tooBig, nullptr) != 0, "");
    h.report("register rejects repeated devices",
             dtensor_rt_register_mesh(11, 1, two, twice) != 0, "");
    h.report("register rejects devices outside the world",
             dtensor_rt_register_mesh(12, 1, two, outside) != 0, "");
    h.report("register rejects a mesh id registered twice",
             registerMesh(meshes[0]) != 0, "");
  }

  // dtensor_rt_coord against the host model, every mesh and mask.
  for (const MeshSpec &m : meshes) {
    int64_t rank = static_cast<int64_t>(m.shape.size());
    for (int64_t mask = 1; mask < (int64_t(1) << rank); ++mask) {
      GroupInfo g = groupOf(m, mask, h.worldRank);
      std::string name = "coord " + m.name + " axes=" + axesString(mask);
      if (!g.member) {
        h.report(name, true, "");
        continue;
      }
      int64_t got = dtensor_rt_coord(m.id, mask);
      h.report(name, got == g.index,
               "got " + std::to_string(got) + ", expected " +
                   std::to_string(g.index));
    }
  }

  // Full matrix on the 1-D mesh and every mask of the 2-D mesh; one
  // representative per collective on every other group.
  int64_t variant = 0;
  for (const MeshSpec &m : meshes) {
    int64_t rank = static_cast<int64_t>(m.shape.size());
    for (int64_t mask = 1; mask < (int64_t(1) << rank); ++mask) {
      bool full = m.id <= 1;
      testGroup<float>(h, m, mask, full, variant++);
      testGroup<double>(h, m, mask, full, variant++);
      testGroup<int32_t>(h, m, mask, full, variant++);
      testGroup<int64_t>(h, m, mask, full, variant++);
    }
  }

  const MeshSpec &mesh2d = meshes[1];
  int64_t all2d = (int64_t(1) << mesh2d.shape.size()) - 1;
  testReduceOps<float>(h, meshes[0], 1);
  testReduceOps<double>(h, mesh2d, all2d);
  testReduceOps<int32_t>(h, meshes[0], 1);
  testReduceOps<int64_t>(h, mesh2d, all2d);
  testReduceOps<float>(h, meshes[2], 1);

  testLayouts<float>(h, meshes[0], 1);
  testLayouts<int64_t>(h, mesh2d, 1);
  testLayouts<double>(h, meshes[2], 1);

  testRanksAndEmpty(h, meshes[0]);
  testInFlight(h, meshes[0], mesh2d);

  if (h.worldRank == 0) {
    std::printf("dtensor-runtime-test: %d checks, %d failed\n", h.numChecks,
                h.numFailed);
    std::fflush(stdout);
  }
  int failed = h.numFailed;
  dtensor_rt_finalize();
  return failed ? 1 : 0;
}
