//===- CudaRuntimeTest.cpp - dtensor-cuda-rt-test -------------------------===//
//
// The CUDA runtime (libdtensor_runtime_cuda) driven through its ABI only,
// as compiled code would: device buffers from mgpuMemAlloc, memref
// descriptors built by hand, collectives with the context argument, matmuls,
// the mgpu* wrappers, CUDA graphs. One process per rank
// (scripts/cuda-rt-test.sh starts N of them on one GPU); every check compares
// with a host-computed expectation and prints PASS/FAIL; the last line of each
// rank is "rank R: N passed, N failed" and the exit status is 1 if any check
// failed.
//
//   --fault skip-collective   rank 1 skips an all_reduce that the others
//                             run; the others' watchdog must end the job
//                             within DTENSOR_NCCL_TIMEOUT (rank 1 waits, and
//                             exits 3 if nobody ended the job).
//   --fault oom               a 1 PiB mgpuMemAlloc must end the job with the
//                             size in the message.
//   --fault bad-context       a wrong ctx argument must end the job.
//   --fault bad-graph         dtensor_rt_graph_describe of a pointer that
//                             is no graph must end the job.
//   --fault bad-activation    an activation code other than 0, 1, 2 must
//                             end the job.
//   --help                    usage; needs no GPU.
//
// Links nothing but libdtensor_runtime_cuda (no CUDA libraries).
//
//===----------------------------------------------------------------------===//

#include "dtensor/Runtime/CUDARuntime.h"
#include "dtensor/Runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

// PTX of AddOne.cu, NUL-terminated (generated at build time).
extern "C" const unsigned char dtensorTestAddOnePtx[];

namespace {

int64_t rank = 0, worldSize = 1;
void *ctx = nullptr;
void *stream = nullptr;
int passed = 0, failed = 0;

void report(bool ok, const std::string &name, const std::string &detail) {
  if (ok) {
    ++passed;
    std::printf("rank %lld: PASS %s%s\n", static_cast<long long>(rank),
                name.c_str(),
                detail.empty() ? "" : (" (" + detail + ")").c_str());
  } else {
    ++failed;
    std::printf("rank %lld: FAIL %s: %s\n", static_cast<long long>(rank),
                name.c_str(), detail.c_str());
  }
  std::fflush(stdout);
}

//===----------------------------------------------------------------------===//
// Element types on the host
//===----------------------------------------------------------------------===//

enum class Type { F32, BF16, F16 };

const char *typeName(Type t) {
  return t == Type::F32 ? "f32" : t == Type::BF16 ? "bf16" : "f16";
}
size_t typeSize(Type t) { return t == Type::F32 ? 4 : 2; }

uint16_t toBF16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, 4);
  word += 0x7fffu + ((word >> 16) & 1);
  return static_cast<uint16_t>(word >> 16);
}

float fromBF16(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

/// IEEE half, round to nearest even (no infinities or NaNs in these tests).
uint16_t toF16(float value) {
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude < std::ldexp(1.0, -14)) // subnormal: units of 2^-24
    return sign |
           static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24)));
  int exp = 0;
  double frac = std::frexp(magnitude, &exp); // magnitude = frac * 2^exp
  // 11 significant bits: mantissa in [1024, 2048).
  double mant = std::nearbyint(std::ldexp(frac, 11));
  if (mant == 2048) {
    mant = 1024;
    ++exp;
  }
  int biased = exp - 1 + 15;
  return sign | static_cast<uint16_t>(biased << 10) |
         static_cast<uint16_t>(static_cast<int>(mant) - 1024);
}

float fromF16(uint16_t bits) {
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  int exp = (bits >> 10) & 0x1f;
  int mant = bits & 0x3ff;
  if (exp == 0)
    return static_cast<float>(sign * std::ldexp(mant, -24));
  return static_cast<float>(sign * std::ldexp(mant + 1024, exp - 25));
}

/// The value as the element type holds it.
float roundTo(Type t, float value) {
  if (t == Type::BF16)
    return fromBF16(toBF16(value));
  if (t == Type::F16)
    return fromF16(toF16(value));
  return value;
}

std::vector<char> encode(Type t, const std::vector<float> &values) {
  std::vector<char> bytes(values.size() * typeSize(t));
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == Type::F32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    } else {
      uint16_t h = t == Type::BF16 ? toBF16(values[i]) : toF16(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

std::vector<float> decode(Type t, const std::vector<char> &bytes) {
  std::vector<float> values(bytes.size() / typeSize(t));
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == Type::F32) {
      std::memcpy(&values[i], bytes.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      values[i] = t == Type::BF16 ? fromBF16(h) : fromF16(h);
    }
  }
  return values;
}

//===----------------------------------------------------------------------===//
// Device buffers and memref descriptors
//===----------------------------------------------------------------------===//

struct DeviceBuffer {
  void *ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t bytes) : bytes(bytes) {
    ptr = mgpuMemAlloc(bytes, stream, false);
  }
  ~DeviceBuffer() { mgpuMemFree(ptr, stream); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void upload(const std::vector<char> &host) {
    mgpuMemcpy(ptr, const_cast<char *>(host.data()), host.size(), stream);
    mgpuStreamSynchronize(stream); // the host vector may go away
  }
  std::vector<char> download() {
    std::vector<char> host(bytes);
    mgpuMemcpy(host.data(), ptr, bytes, stream);
    mgpuStreamSynchronize(stream);
    return host;
  }
};

/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct MemRef {
  std::vector<int64_t> words;
  int64_t rank = 0;

  MemRef(void *base, int64_t offset, std::vector<int64_t> sizes,
         std::vector<int64_t> strides = {}) {
    rank = static_cast<int64_t>(sizes.size());
    if (strides.empty()) {
      strides.assign(rank, 1);
      for (int64_t d = rank - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * sizes[d + 1];
    }
    words.push_back(reinterpret_cast<int64_t>(base));
    words.push_back(reinterpret_cast<int64_t>(base));
    words.push_back(offset);
    words.insert(words.end(), sizes.begin(), sizes.end());
    words.insert(words.end(), strides.begin(), strides.end());
  }
  void *desc() { return words.data(); }
};

int64_t product(const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

/// Compares element-wise with a relative tolerance; reports the first
/// mismatch.
void expectClose(const std::string &name, const std::vector<float> &got,
                 const std::vector<float> &want, double tolerance) {
  if (got.size() != want.size()) {
    report(false, name,
           "size " + std::to_string(got.size()) +
               " != " + std::to_string(want.size()));
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    double diff = std::fabs(double(got[i]) - double(want[i]));
    if (!(diff <= tolerance * std::max(1.0, std::fabs(double(want[i]))))) {
      char detail[160];
      std::snprintf(detail, sizeof(detail),
                    "element %zu is %g, expected %g (tolerance %g)", i,
                    double(got[i]), double(want[i]), tolerance);
      report(false, name, detail);
      return;
    }
  }
  report(true, name, "");
}

/// Small integers, exact in bf16 and in sums over a few ranks.
float value(int64_t r, int64_t i) {
  return static_cast<float>((i * 7 + r * 3) % 11) - 3.0f;
}

std::vector<float> input(int64_t r, int64_t count) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = value(r, i);
  return v;
}

//===----------------------------------------------------------------------===//
// The ABI per element type
//===----------------------------------------------------------------------===//

using ReduceFn = void (*)(void *, int64_t, void *, int64_t, void *, int64_t,
                          int64_t, int64_t);
using ScatterFn = void (*)(void *, int64_t, void *, int64_t, void *, int64_t,
                           int64_t, int64_t, int64_t);
using PermuteFn = void (*)(void *, int64_t, void *, int64_t, void *, int64_t,
                           int64_t, int64_t, void *);
using StartFn = int64_t (*)(void *, int64_t, void *, int64_t, void *, int64_t,
                            int64_t, int64_t);

struct Api {
  ReduceFn allReduce, allGather, broadcast;
  ScatterFn reduceScatter, allToAll;
  PermuteFn permute;
  StartFn startAllReduce, startAllGather;
};

#define DTENSOR_TEST_API(S)                                                    \
  Api {                                                                        \
    dtensor_rt_all_reduce_##S, dtensor_rt_all_gather_##S,                      \
        dtensor_rt_broadcast_##S, dtensor_rt_reduce_scatter_##S,               \
        dtensor_rt_all_to_all_##S, dtensor_rt_permute_##S,                     \
        dtensor_rt_start_all_reduce_##S, dtensor_rt_start_all_gather_##S       \
  }

const Api &api(Type t) {
  static const Api f32 = DTENSOR_TEST_API(f32);
  static const Api bf16 = DTENSOR_TEST_API(bf16);
  static const Api f16 = DTENSOR_TEST_API(f16);
  return t == Type::F32 ? f32 : t == Type::BF16 ? bf16 : f16;
}

double tolerance(Type t, bool rounding) {
  if (t == Type::BF16)
    return 1e-2;
  if (t == Type::F16)
    return 2e-3;
  return rounding ? 1e-6 : 0.0;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

constexpr int64_t kMesh = 0;    // 1-D mesh of every rank
constexpr int64_t kAllAxes = 1; // its only axis
constexpr int64_t kMesh2D = 1;  // [2, N/2] when N is even

void testAllReduce(Type t) {
  const int64_t n = worldSize;
  std::vector<int64_t> shape = {4, 6};
  int64_t count = product(shape);
  struct Case {
    const char *name;
    int64_t code;
  } cases[] = {{"sum", 0}, {"avg", 1}, {"max", 4}};
  for (const Case &c : cases) {
    DeviceBuffer in(count * typeSize(t)), out(count * typeSize(t));
    in.upload(encode(t, input(rank, count)));
    MemRef inRef(in.ptr, 0, shape), outRef(out.ptr, 0, shape);
    api(t).allReduce(ctx, 2, inRef.desc(), 2, outRef.desc(), kMesh, kAllAxes,
                     c.code);
    std::vector<float> want(count);
    for (int64_t i = 0; i < count; ++i) {
      float acc = c.code == 4 ? value(0, i) : 0.0f;
      for (int64_t r = 0; r < n; ++r)
        acc = c.code == 4 ? std::max(acc, value(r, i)) : acc + value(r, i);
      want[i] = c.code == 1 ? acc / n : acc;
    }
    expectClose(std::string("all_reduce_") + typeName(t) + " " + c.name,
                decode(t, out.download()), want, tolerance(t, c.code == 1));
  }
  // A strided input: columns 2..4 of a [4, 6] buffer (packed into a stage).
  DeviceBuffer in(count * typeSize(t)), out(4 * 3 * typeSize(t));
  in.upload(encode(t, input(rank, count)));
  MemRef inRef(in.ptr, 2, {4, 3}, {6, 1}), outRef(out.ptr, 0, {4, 3});
  api(t).allReduce(ctx, 2, inRef.desc(), 2, outRef.desc(), kMesh, kAllAxes, 0);
  std::vector<float> want;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 2; j < 5; ++j) {
      float acc = 0;
      for (int64_t r = 0; r < n; ++r)
        acc += value(r, i * 6 + j);
      want.push_back(acc);
    }
  expectClose(std::string("all_reduce_") + typeName(t) + " strided input",
              decode(t, out.download()), want, tolerance(t, false));
}

void testAllGather(Type t) {
  const int64_t n = worldSize;
  for (int64_t dim : {0, 1}) {
    std::vector<int64_t> inShape = {2, 3}, outShape = inShape;
    outShape[dim] *= n;
    int64_t count = product(inShape);
    DeviceBuffer in(count * typeSize(t)), out(count * n * typeSize(t));
    in.upload(encode(t, input(rank, count)));
    MemRef inRef(in.ptr, 0, inShape), outRef(out.ptr, 0, outShape);
    api(t).allGather(ctx, 2, inRef.desc(), 2, outRef.desc(), kMesh, kAllAxes,
                     dim);
    std::vector<float> want(count * n);
    for (int64_t i = 0; i < outShape[0]; ++i)
      for (int64_t j = 0; j < outShape[1]; ++j) {
        int64_t src = dim == 0 ? i / 2 : j / 3;
        int64_t li = dim == 0 ? i % 2 : i, lj = dim == 1 ? j % 3 : j;
        want[i * outShape[1] + j] = value(src, li * 3 + lj);
      }
    expectClose(std::string("all_gather_") + typeName(t) + " dim " +
                    std::to_string(dim),
                decode(t, out.download()), want, 0);
  }
}

void testReduceScatter(Type t) {
  const int64_t n = worldSize;
  for (int64_t dim : {0, 1}) {
    for (int64_t code : {0, 1}) {
      std::vector<int64_t> outShape = {2, 3}, inShape = outShape;
      inShape[dim] *= n;
      int64_t count = product(inShape);
      DeviceBuffer in(count * typeSize(t)),
          out(product(outShape) * typeSize(t));
      in.upload(encode(t, input(rank, count)));
      MemRef inRef(in.ptr, 0, inShape), outRef(out.ptr, 0, outShape);
      api(t).reduceScatter(ctx, 2, inRef.desc(), 2, outRef.desc(), kMesh,
                           kAllAxes, dim, code);
      std::vector<float> want;
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 3; ++j) {
          int64_t gi = dim == 0 ? rank * 2 + i : i;
          int64_t gj = dim == 1 ? rank * 3 + j : j;
          float acc = 0;
          for (int64_t r = 0; r < n; ++r)
            acc += value(r, gi * inShape[1] + gj);
          want.push_back(code == 1 ? acc / n : acc);
        }
      expectClose(std::string("reduce_scatter_") + typeName(t) + " dim " +
                      std::to_string(dim) + (code ? " avg" : " sum"),
                  decode(t, out.download()), want, tolerance(t, code == 1));
    }
  }
}

void testAllToAll(Type t) {
  const int64_t n = worldSize;
  // Split dim 0 ([2n, 3] -> n chunks [2, 3]), concat dim 1 ([2, 3n]).
  std::vector<int64_t> inShape = {2 * n, 3}, outShape = {2, 3 * n};
  int64_t count = product(inShape);
  DeviceBuffer in(count * typeSize(t)), out(count * typeSize(t));
  in.upload(encode(t, input(rank, count)));
  MemRef inRef(in.ptr, 0, inShape), outRef(out.ptr, 0, outShape);
  api(t).allToAll(ctx, 2, inRef.desc(), 2, outRef.desc(), kMesh, kAllAxes, 0,
                  1);
  std::vector<float> want(count);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3 * n; ++j) {
      int64_t src = j / 3; // block j/3 came from rank j/3: its chunk `rank`
      want[i * 3 * n + j] = value(src, (rank * 2 + i) * 3 + j % 3);
    }
  expectClose(std::string("all_to_all_") + typeName(t) + " split 0 concat 1",
              decode(t, out.download()), want, 0);
}

void testPermuteBroadcast(Type t) {
  const int64_t n = worldSize;
  std::vector<int64_t> shape = {3, 5};
  int64_t count = product(shape);
  {
    DeviceBuffer in(count * typeSize(t)), out(count * typeSize(t));
    in.upload(encode(t, input(rank, count)));
    MemRef inRef(in.ptr, 0, shape), outRef(out.ptr, 0, shape);
    std::vector<int64_t> perm(n);
    for (int64_t i = 0; i < n; ++i)
      perm[i] = (i + 1) % n;
    MemRef permRef(perm.data(), 0, {n}); // host memory, read by the host
    api(t).permute(ctx, 2, inRef.desc(), 2, outRef.desc(), kMesh, kAllAxes, 1,
                   permRef.desc());
    expectClose(std::string("permute_") + typeName(t) + " shift by one",
                decode(t, out.download()), input((rank + n - 1) % n, count), 0);
  }
  {
    DeviceBuffer in(count * typeSize(t)), out(count * typeSize(t));
    in.upload(encode(t, input(rank, count)));
    MemRef inRef(in.ptr, 0, shape), outRef(out.ptr, 0, shape);
    int64_t root = n - 1;
    api(t).broadcast(ctx, 2, inRef.desc(), 2, outRef.desc(), kMesh, kAllAxes,
                     root);
    expectClose(std::string("broadcast_") + typeName(t) + " root " +
                    std::to_string(root),
                decode(t, out.download()), input(root, count), 0);
  }
}

void testAsync(Type t) {
  const int64_t n = worldSize;
  std::vector<int64_t> shape = {8, 4};
  int64_t count = product(shape);
  DeviceBuffer in(count * typeSize(t)), sum(count * typeSize(t)),
      gathered(count * n * typeSize(t));
  in.upload(encode(t, input(rank, count)));
  MemRef inRef(in.ptr, 0, shape), sumRef(sum.ptr, 0, shape),
      gatherRef(gathered.ptr, 0, {8, 4 * n});
  int64_t h1 = api(t).startAllReduce(ctx, 2, inRef.desc(), 2, sumRef.desc(),
                                     kMesh, kAllAxes, 0);
  int64_t h2 = api(t).startAllGather(ctx, 2, inRef.desc(), 2, gatherRef.desc(),
                                     kMesh, kAllAxes, 1);
  dtensor_rt_wait(ctx, h2); // out of order
  dtensor_rt_wait(ctx, h1);
  std::vector<float> wantSum(count), wantGather(count * n);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t r = 0; r < n; ++r)
      wantSum[i] += value(r, i);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 4 * n; ++j)
      wantGather[i * 4 * n + j] = value(j / 4, i * 4 + j % 4);
  expectClose(std::string("start_all_reduce_") + typeName(t) + " + wait",
              decode(t, sum.download()), wantSum, 0);
  expectClose(std::string("start_all_gather_") + typeName(t) + " dim 1 + wait",
              decode(t, gathered.download()), wantGather, 0);
}

/// Groups of a 2-D mesh [2, n/2]: along axis 1 (rows) and axis 0 (columns).
void testMeshAxes() {
  const int64_t n = worldSize, cols = n / 2;
  int64_t row = rank / cols, col = rank % cols;
  std::vector<int64_t> shape = {5};
  for (int64_t mask : {1, 2}) {
    DeviceBuffer in(5 * 4), out(5 * 4);
    in.upload(encode(Type::F32, input(rank, 5)));
    MemRef inRef(in.ptr, 0, shape), outRef(out.ptr, 0, shape);
    dtensor_rt_all_reduce_f32(ctx, 1, inRef.desc(), 1, outRef.desc(), kMesh2D,
                              mask, 0);
    std::vector<float> want(5);
    for (int64_t r = 0; r < n; ++r) {
      bool member = mask == 2 ? r / cols == row : r % cols == col;
      if (member)
        for (int64_t i = 0; i < 5; ++i)
          want[i] += value(r, i);
    }
    expectClose("all_reduce_f32 on mesh [2," + std::to_string(cols) +
                    "] axes mask " + std::to_string(mask),
                decode(Type::F32, out.download()), want, 0);
    int64_t expectedIndex = mask == 2 ? col : row;
    int64_t index = dtensor_rt_coord(kMesh2D, mask);
    report(index == expectedIndex,
           "coord on mesh [2," + std::to_string(cols) + "] axes mask " +
               std::to_string(mask),
           "got " + std::to_string(index) + ", expected " +
               std::to_string(expectedIndex));
  }
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

using MatmulFn = void (*)(void *, int64_t, void *, int64_t, void *, int64_t,
                          void *, int64_t);
using MatmulAddFn = void (*)(void *, int64_t, void *, int64_t, void *, int64_t,
                             void *, int64_t, void *);
using MatmulBiasFn = void (*)(void *, int64_t, void *, int64_t, void *, int64_t,
                              void *, int64_t, void *, int64_t);
using MatmulActFn = void (*)(void *, int64_t, void *, int64_t, void *, int64_t,
                             void *, int64_t);

/// What C starts from: C = A.B, C += A.B (matmul_<T> with accumulate),
/// C = A.B + R from a separate residual R (matmul_add_<T>; R unchanged), or
/// C = A.B + bias, bias[j] added to column j (matmul_bias_<T>), that with
/// ReLU or GELU (matmul_bias_<T>'s activation 1 or 2), or ReLU or GELU of
/// A.B (matmul_act_<T>). GELU is the tanh form (CUDARuntime.h); on these
/// products (|A.B| up to ~8) the erf form differs from it by up to 5e-4,
/// above the f32 limit.
enum class Init {
  Zero,
  Accumulate,
  Residual,
  Bias,
  BiasRelu,
  BiasGelu,
  Relu,
  Gelu
};

double geluTanh(double x) {
  return 0.5 * x *
         (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/// A [B?, M, K] x [B?, K, N] product. `transA`/`transB`: the operand is
/// stored transposed (its view has a unit stride on the first matrix
/// dimension); `strided`: both operands are every other element of a buffer
/// twice as large (neither row- nor column-major: packed by the runtime).
void testMatmul(Type t, const char *what, int64_t batch, int64_t m, int64_t k,
                int64_t n, bool transA, bool transB, bool strided,
                Init init = Init::Zero) {
  MatmulFn fn = t == Type::F32    ? dtensor_rt_matmul_f32
                : t == Type::BF16 ? dtensor_rt_matmul_bf16
                                  : dtensor_rt_matmul_f16;
  MatmulAddFn addFn = t == Type::F32    ? dtensor_rt_matmul_add_f32
                      : t == Type::BF16 ? dtensor_rt_matmul_add_bf16
                                        : dtensor_rt_matmul_add_f16;
  MatmulBiasFn biasFn = t == Type::F32    ? dtensor_rt_matmul_bias_f32
                        : t == Type::BF16 ? dtensor_rt_matmul_bias_bf16
                                          : dtensor_rt_matmul_bias_f16;
  MatmulActFn actFn = t == Type::F32    ? dtensor_rt_matmul_act_f32
                      : t == Type::BF16 ? dtensor_rt_matmul_act_bf16
                                        : dtensor_rt_matmul_act_f16;
  int64_t b = std::max<int64_t>(batch, 1);
  int64_t spread = strided ? 2 : 1;
  // Host values in [-1, 1), rounded to the element type.
  auto fill = [&](int64_t count, uint32_t seed) {
    std::vector<float> v(count);
    uint32_t s = seed * 2654435761u + static_cast<uint32_t>(rank);
    for (float &x : v) {
      s = s * 1664525u + 1013904223u;
      x = static_cast<float>(s >> 8) / 8388608.0f - 1.0f;
      x = roundTo(t, x);
    }
    return v;
  };
  // Logical A[b][i][l], B[b][l][j].
  std::vector<float> a = fill(b * m * k, 1), bm = fill(b * k * n, 2),
                     c0 = fill(b * m * n, 3), bias = fill(n, 5);
  // Storage: element (i, l) of batch p of A lives at
  //   p*m*k*spread + (transA ? l*m + i : i*k + l) * spread.
  std::vector<float> aStore(b * m * k * spread, 0.0f),
      bStore(b * k * n * spread, 0.0f);
  for (int64_t p = 0; p < b; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t l = 0; l < k; ++l)
        aStore[(p * m * k + (transA ? l * m + i : i * k + l)) * spread] =
            a[(p * m + i) * k + l];
  for (int64_t p = 0; p < b; ++p)
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < n; ++j)
        bStore[(p * k * n + (transB ? j * k + l : l * n + j)) * spread] =
            bm[(p * k + l) * n + j];
  DeviceBuffer ad(aStore.size() * typeSize(t)), bd(bStore.size() * typeSize(t)),
      cd(c0.size() * typeSize(t)), rd(c0.size() * typeSize(t)),
      biasd(n * typeSize(t));
  ad.upload(encode(t, aStore));
  bd.upload(encode(t, bStore));
  // With a residual or a bias, C starts as garbage (what it held must not
  // count); R holds the values added.
  bool withBias =
      init == Init::Bias || init == Init::BiasRelu || init == Init::BiasGelu;
  bool relu = init == Init::BiasRelu || init == Init::Relu;
  bool gelu = init == Init::BiasGelu || init == Init::Gelu;
  int64_t activation = relu ? 1 : gelu ? 2 : 0;
  bool fresh = init == Init::Residual || withBias || activation;
  cd.upload(encode(t, fresh ? fill(b * m * n, 4) : c0));
  rd.upload(encode(t, c0));
  biasd.upload(encode(t, bias));
  std::vector<int64_t> aSizes = {m, k},
                       aStrides = {transA ? 1 : k, transA ? m : 1};
  std::vector<int64_t> bSizes = {k, n},
                       bStrides = {transB ? 1 : n, transB ? k : 1};
  std::vector<int64_t> cSizes = {m, n};
  for (int64_t &s : aStrides)
    s *= spread;
  for (int64_t &s : bStrides)
    s *= spread;
  if (batch > 0) {
    aSizes.insert(aSizes.begin(), batch);
    aStrides.insert(aStrides.begin(), m * k * spread);
    bSizes.insert(bSizes.begin(), batch);
    bStrides.insert(bStrides.begin(), k * n * spread);
    cSizes.insert(cSizes.begin(), batch);
  }
  int64_t r = static_cast<int64_t>(aSizes.size());
  MemRef aRef(ad.ptr, 0, aSizes, aStrides), bRef(bd.ptr, 0, bSizes, bStrides),
      cRef(cd.ptr, 0, cSizes), rRef(rd.ptr, 0, cSizes),
      biasRef(biasd.ptr, 0, {n});
  if (init == Init::Residual)
    addFn(ctx, r, aRef.desc(), r, bRef.desc(), r, rRef.desc(), r, cRef.desc());
  else if (withBias)
    biasFn(ctx, r, aRef.desc(), r, bRef.desc(), 1, biasRef.desc(), r,
           cRef.desc(), activation);
  else if (activation)
    actFn(ctx, r, aRef.desc(), r, bRef.desc(), r, cRef.desc(), activation);
  else
    fn(ctx, r, aRef.desc(), r, bRef.desc(), r, cRef.desc(),
       init == Init::Accumulate ? 1 : 0);
  std::vector<float> got = decode(t, cd.download());
  if (init == Init::Residual)
    expectClose(std::string("matmul_add_") + typeName(t) + " " + what +
                    ": R unchanged",
                decode(t, rd.download()), c0, 0);
  double maxErr = 0, maxRef = 0;
  for (int64_t p = 0; p < b; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = withBias ? bias[j]
                     : init == Init::Accumulate || init == Init::Residual
                         ? c0[(p * m + i) * n + j]
                         : 0.0;
        for (int64_t l = 0; l < k; ++l)
          acc +=
              double(a[(p * m + i) * k + l]) * double(bm[(p * k + l) * n + j]);
        if (relu)
          acc = std::max(acc, 0.0);
        if (gelu)
          acc = geluTanh(acc);
        maxErr =
            std::max(maxErr, std::fabs(acc - double(got[(p * m + i) * n + j])));
        maxRef = std::max(maxRef, std::fabs(acc));
      }
  double rel = maxErr / std::max(maxRef, 1e-30);
  // f32 without TF32; bf16 and f16 round the output (8 and 11 significant
  // bits) after an f32 accumulation.
  double limit = t == Type::F32 ? 1e-5 : 1e-2;
  char detail[128];
  std::snprintf(detail, sizeof(detail), "relative error %.3g, limit %.0e", rel,
                limit);
  std::string entry = init == Init::Residual ? "matmul_add_"
                      : withBias             ? "matmul_bias_"
                      : activation           ? "matmul_act_"
                                             : "matmul_";
  report(rel < limit,
         entry + typeName(t) +
             (relu   ? " relu "
              : gelu ? " gelu "
                     : " ") +
             what,
         detail);
}

void testMatmuls(Type t) {
  testMatmul(t, "[64x96]x[96x80]", 0, 64, 96, 80, false, false, false);
  testMatmul(t, "transposed A", 0, 48, 72, 40, true, false, false);
  testMatmul(t, "transposed B", 0, 48, 72, 40, false, true, false);
  testMatmul(t, "transposed A and B", 0, 33, 17, 29, true, true, false);
  testMatmul(t, "batched [3x32x40]x[3x40x24]", 3, 32, 40, 24, false, false,
             false);
  testMatmul(t, "batched, transposed B", 2, 16, 24, 8, false, true, false);
  testMatmul(t, "accumulate C += A.B", 0, 40, 56, 24, false, false, false,
             Init::Accumulate);
  testMatmul(t, "strided operands (packed)", 0, 12, 20, 16, false, false, true);
  // Same shape twice: the cached plan.
  testMatmul(t, "[64x96]x[96x80] again (cached plan)", 0, 64, 96, 80, false,
             false, false);
  // The residual in the epilogue: C = A.B + R (a plan of its own beside
  // the same shape's plain and accumulating ones).
  testMatmul(t, "C = A.B + R", 0, 40, 56, 24, false, false, false,
             Init::Residual);
  testMatmul(t, "batched C = A.B + R, transposed B", 2, 16, 24, 8, false, true,
             false, Init::Residual);
  // The bias in the epilogue (every row, every batch).
  testMatmul(t, "C = A.B + bias", 0, 40, 56, 24, false, false, false,
             Init::Bias);
  testMatmul(t, "batched C = A.B + bias, transposed A", 3, 16, 24, 8, true,
             false, false, Init::Bias);
  testMatmul(t, "C = A.B + bias, K = 0", 0, 4, 0, 8, false, false, false,
             Init::Bias);
  // Bias and ReLU in the epilogue (about half the outputs clamped).
  testMatmul(t, "C = max(A.B + bias, 0)", 0, 40, 56, 24, false, false, false,
             Init::BiasRelu);
  testMatmul(t, "batched C = max(A.B + bias, 0), transposed B", 2, 16, 24, 8,
             false, true, false, Init::BiasRelu);
  // GELU (tanh form) after a bias; ReLU and GELU of a plain product.
  testMatmul(t, "C = gelu(A.B + bias)", 0, 40, 56, 24, false, false, false,
             Init::BiasGelu);
  testMatmul(t, "C = max(A.B, 0)", 0, 40, 56, 24, false, false, false,
             Init::Relu);
  testMatmul(t, "C = gelu(A.B)", 0, 40, 56, 24, false, false, false,
             Init::Gelu);
  testMatmul(t, "batched C = gelu(A.B), transposed A", 3, 16, 24, 8, true,
             false, false, Init::Gelu);
  testMatmul(t, "C = gelu(A.B), K = 0", 0, 4, 0, 8, false, false, false,
             Init::Gelu);
}

//===----------------------------------------------------------------------===//
// mgpu*
//===----------------------------------------------------------------------===//

void testMgpu() {
  void *s2 = mgpuStreamCreate();
  report(s2 == stream, "mgpuStreamCreate returns the compute stream", "");
  mgpuStreamDestroy(s2); // a no-op for the compute stream

  const size_t count = 1000;
  void *d = mgpuMemAlloc(count * 4, stream, false);
  mgpuMemset32(d, 0x3f800000u, count, stream); // 1.0f
  std::vector<float> host(count);
  mgpuMemcpy(host.data(), d, count * 4, stream);
  mgpuStreamSynchronize(stream);
  expectClose("mgpuMemset32 + mgpuMemcpy", host,
              std::vector<float>(count, 1.0f), 0);

  // Module from PTX (JIT by the driver), kernel launch on the stream.
  void *module =
      mgpuModuleLoad(const_cast<unsigned char *>(dtensorTestAddOnePtx), 0);
  void *fn = mgpuModuleGetFunction(module, "dtensor_test_add_one");
  long long n = count;
  void *params[] = {&d, &n};
  mgpuLaunchKernel(fn, (count + 127) / 128, 1, 1, 128, 1, 1, 0, stream, params,
                   nullptr, 2);
  void *event = mgpuEventCreate();
  mgpuEventRecord(event, stream);
  mgpuStreamWaitEvent(stream, event);
  mgpuEventSynchronize(event);
  mgpuMemcpy(host.data(), d, count * 4, stream);
  mgpuStreamSynchronize(stream);
  expectClose("mgpuModuleLoad (PTX) + mgpuLaunchKernel + events", host,
              std::vector<float>(count, 2.0f), 0);
  mgpuEventDestroy(event);
  mgpuModuleUnload(module);

  void *jitModule =
      mgpuModuleLoadJIT(const_cast<unsigned char *>(dtensorTestAddOnePtx), 2);
  void *jitFn = mgpuModuleGetFunction(jitModule, "dtensor_test_add_one");
  mgpuLaunchKernel(jitFn, (count + 127) / 128, 1, 1, 128, 1, 1, 0, stream,
                   params, nullptr, 2);
  mgpuMemcpy(host.data(), d, count * 4, stream);
  mgpuStreamSynchronize(stream);
  expectClose("mgpuModuleLoadJIT -O2 + mgpuLaunchKernel", host,
              std::vector<float>(count, 3.0f), 0);
  mgpuModuleUnload(jitModule);

  mgpuMemset16(d, 0x3f80, count * 2, stream); // bf16 1.0 in every half
  std::vector<uint16_t> halves(count * 2);
  mgpuMemcpy(halves.data(), d, count * 4, stream);
  mgpuStreamSynchronize(stream);
  bool ok = std::all_of(halves.begin(), halves.end(),
                        [](uint16_t h) { return h == 0x3f80; });
  report(ok, "mgpuMemset16", ok ? "" : "a half differs from 0x3f80");
  mgpuMemFree(d, stream);

  // Host-shared (managed) memory: written by the host, read back.
  auto *shared = static_cast<float *>(mgpuMemAlloc(count * 4, stream, true));
  for (size_t i = 0; i < count; ++i)
    shared[i] = static_cast<float>(i);
  void *copy = mgpuMemAlloc(count * 4, stream, false);
  mgpuMemcpy(copy, shared, count * 4, stream);
  mgpuMemcpy(host.data(), copy, count * 4, stream);
  mgpuStreamSynchronize(stream);
  std::vector<float> want(count);
  for (size_t i = 0; i < count; ++i)
    want[i] = static_cast<float>(i);
  expectClose("mgpuMemAlloc host-shared", host, want, 0);
  mgpuMemFree(copy, stream);
  mgpuMemFree(shared, stream);
}

// A captured graph's memset nodes become fill kernels (Graph.cpp): the
// graph holds no memset node, and a launch writes exactly what the memsets
// would (1, 2 and 4-byte elements, a pitched 2D memset, bytes around them
// untouched).
void testGraphMemsets() {
  using Memset8 = int (*)(uint64_t, unsigned char, size_t, void *);
  using Memset2D8 =
      int (*)(uint64_t, size_t, unsigned char, size_t, size_t, void *);
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  auto memset8 = cuda
                     ? reinterpret_cast<Memset8>(dlsym(cuda, "cuMemsetD8Async"))
                     : nullptr;
  auto memset2D8 =
      cuda ? reinterpret_cast<Memset2D8>(dlsym(cuda, "cuMemsetD2D8Async"))
           : nullptr;
  if (!memset8 || !memset2D8) {
    report(false, "graph memsets", "cannot load cuMemsetD8Async from libcuda");
    return;
  }
  const size_t bytes = 4096;
  auto *d = static_cast<unsigned char *>(mgpuMemAlloc(bytes, stream, false));
  auto at = [&](size_t offset) {
    return reinterpret_cast<uint64_t>(d + offset);
  };
  mgpuMemset32(d, 0xffffffffu, bytes / 4, stream);
  mgpuStreamSynchronize(stream);

  dtensor_rt_graph_begin(ctx);
  mgpuMemset32(d, 0x11223344u, 256, stream);   // [0, 1024)
  mgpuMemset16(d + 1024, 0x5566, 300, stream); // [1024, 1624)
  memset8(at(2048), 0x77, 5, stream);          // [2048, 2053)
  memset2D8(at(3072), 64, 0x88, 3, 4, stream); // 4 rows of 3
  void *graph = dtensor_rt_graph_end(ctx);

  char text[4096];
  int64_t nodes = dtensor_rt_graph_describe(ctx, graph, text, sizeof(text));
  std::string summary = text;
  std::string counts = summary.substr(0, summary.find(')'));
  report(nodes == 4 && counts.find("memset") == std::string::npos &&
             summary.find("4 kernel") != std::string::npos &&
             summary.find("a straight line") != std::string::npos,
         "graph memset nodes replaced by fill kernels", summary);

  std::vector<unsigned char> want(bytes, 0xff), got(bytes);
  for (size_t i = 0; i < 1024; i += 4) {
    want[i] = 0x44, want[i + 1] = 0x33, want[i + 2] = 0x22, want[i + 3] = 0x11;
  }
  for (size_t i = 1024; i < 1624; i += 2)
    want[i] = 0x66, want[i + 1] = 0x55;
  for (size_t i = 2048; i < 2053; ++i)
    want[i] = 0x77;
  for (size_t row = 0; row < 4; ++row)
    for (size_t col = 0; col < 3; ++col)
      want[3072 + row * 64 + col] = 0x88;
  for (int launch = 0; launch < 2; ++launch) {
    dtensor_rt_graph_launch(ctx, graph);
    mgpuMemcpy(got.data(), d, bytes, stream);
    mgpuStreamSynchronize(stream);
    size_t bad = 0;
    while (bad < bytes && got[bad] == want[bad])
      ++bad;
    report(bad == bytes,
           "graph fill kernels write what the memsets would (launch " +
               std::to_string(launch + 1) + ")",
           bad == bytes ? "" : "byte " + std::to_string(bad) + " differs");
    mgpuMemset32(d, 0xffffffffu, bytes / 4, stream);
  }
  dtensor_rt_graph_destroy(ctx, graph);

  // DTENSOR_RT_GRAPH_MEMSETS=keep leaves the memset nodes (for
  // comparisons); DTENSOR_RT_GRAPH_DOT writes the graph as Graphviz.
  std::string dot = "/tmp/dtensor-rt-test-graph." + std::to_string(rank) + "." +
                    std::to_string(getpid()) + ".dot";
  setenv("DTENSOR_RT_GRAPH_MEMSETS", "keep", 1);
  setenv("DTENSOR_RT_GRAPH_DOT", dot.c_str(), 1);
  dtensor_rt_graph_begin(ctx);
  mgpuMemset32(d, 0x11223344u, 256, stream);
  memset8(at(2048), 0x77, 5, stream);
  graph = dtensor_rt_graph_end(ctx);
  unsetenv("DTENSOR_RT_GRAPH_MEMSETS");
  unsetenv("DTENSOR_RT_GRAPH_DOT");
  dtensor_rt_graph_describe(ctx, graph, text, sizeof(text));
  summary = text;
  report(summary.rfind("2 nodes (2 memset)", 0) == 0,
         "DTENSOR_RT_GRAPH_MEMSETS=keep keeps memset nodes", summary);
  std::string contents;
  if (FILE *f = std::fopen(dot.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
      contents.append(buf, n);
    std::fclose(f);
    std::remove(dot.c_str());
  }
  report(contents.find("digraph") != std::string::npos &&
             contents.find("MEMSET") != std::string::npos,
         "DTENSOR_RT_GRAPH_DOT writes the captured graph",
         contents.empty() ? "no file " + dot : "");
  dtensor_rt_graph_destroy(ctx, graph);
  mgpuMemFree(d, stream);
}

void usage(FILE *out) {
  std::fputs(
      "usage: dtensor-cuda-rt-test [--fault skip-collective|oom|bad-context|\n"
      "                             bad-graph|bad-activation]\n"
      "\n"
      "Tests libdtensor_runtime_cuda on the GPU: collectives and matmuls\n"
      "(f32, bf16, f16), mgpu* wrappers, CUDA graphs. Run one process per\n"
      "rank with the launcher variables set, e.g. scripts/cuda-rt-test.sh N\n"
      "(N ranks on one GPU:\n"
      "DTENSOR_RANK, DTENSOR_WORLD_SIZE, DTENSOR_LOCAL_RANK,\n"
      "DTENSOR_MASTER_ADDR/PORT, DTENSOR_SINGLE_GPU_TEST=1). Prints\n"
      "'rank R: N passed, N failed'; exits 0 if all passed, 1 if a check\n"
      "failed, 2 if the runtime cannot start (no CUDA device, bootstrap\n"
      "failure).\n"
      "\n"
      "  --fault skip-collective  rank 1 skips an all_reduce; the other\n"
      "                           ranks' watchdog must end the job within\n"
      "                           DTENSOR_NCCL_TIMEOUT s.\n"
      "  --fault oom              allocate 1 PiB: must end the job with a\n"
      "                           message naming the size.\n"
      "  --fault bad-context      pass a wrong ctx to all_reduce: must end\n"
      "                           the job with a message.\n"
      "  --fault bad-graph        describe a pointer that is no graph: must\n"
      "                           end the job with a message.\n"
      "  --fault bad-activation   a matmul with activation 7: must end the\n"
      "                           job with a message.\n",
      out);
}

} // namespace

int main(int argc, char **argv) {
  bool skipCollective = false;
  std::string fault;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    if (arg == "--fault" && i + 1 < argc) {
      std::string kind = argv[i + 1];
      if (kind == "skip-collective" || kind == "oom" || kind == "bad-context" ||
          kind == "bad-graph" || kind == "bad-activation") {
        fault = kind;
        skipCollective = kind == "skip-collective";
        ++i;
        continue;
      }
    }
    std::fprintf(stderr, "dtensor-cuda-rt-test: unknown argument '%s'\n",
                 arg.c_str());
    usage(stderr);
    return 2;
  }

  if (dtensor_rt_init("nccl", &argc, &argv) != 0) {
    std::fprintf(stderr, "dtensor-cuda-rt-test: the CUDA runtime did not "
                         "start (see above)\n");
    return 2;
  }
  rank = dtensor_rt_world_rank();
  worldSize = dtensor_rt_world_size();
  ctx = dtensor_rt_context();
  stream = mgpuStreamCreate();
  report(ctx != nullptr, "dtensor_rt_context is set", "");

  int64_t shape1[] = {worldSize};
  if (dtensor_rt_register_mesh(kMesh, 1, shape1, nullptr) != 0)
    return 2;
  bool twoD = worldSize % 2 == 0;
  int64_t shape2[] = {2, worldSize / 2};
  if (twoD && dtensor_rt_register_mesh(kMesh2D, 2, shape2, nullptr) != 0)
    return 2;

  if (fault == "oom") {
    // Must end the job naming the wrapper, the call and the size.
    mgpuMemAlloc(uint64_t(1) << 50, stream, false);
    std::fprintf(stderr, "dtensor-cuda-rt-test: a 1 PiB allocation "
                         "succeeded\n");
    return 3;
  }
  if (fault == "bad-context") {
    // Must end the job: the ctx argument is checked.
    DeviceBuffer buf(16 * 4);
    MemRef ref(buf.ptr, 0, {16});
    int64_t notContext = 0;
    dtensor_rt_all_reduce_f32(&notContext, 1, ref.desc(), 1, ref.desc(), kMesh,
                              kAllAxes, 0);
    std::fprintf(stderr, "dtensor-cuda-rt-test: a wrong context was "
                         "accepted\n");
    return 3;
  }
  if (fault == "bad-graph") {
    // Must end the job: only graphs of dtensor_rt_graph_end are described.
    int notGraph = 0;
    char text[64];
    dtensor_rt_graph_describe(ctx, &notGraph, text, sizeof(text));
    std::fprintf(stderr, "dtensor-cuda-rt-test: a pointer that is no graph "
                         "was described\n");
    return 3;
  }
  if (fault == "bad-activation") {
    // Must end the job: the activation code is checked.
    DeviceBuffer buf(16 * 4);
    MemRef a(buf.ptr, 0, {4, 4}), b(buf.ptr, 0, {4, 4}), c(buf.ptr, 0, {4, 4});
    dtensor_rt_matmul_act_f32(ctx, 2, a.desc(), 2, b.desc(), 2, c.desc(), 7);
    std::fprintf(stderr, "dtensor-cuda-rt-test: activation 7 was "
                         "accepted\n");
    return 3;
  }
  if (skipCollective) {
    // Every rank creates the group with a first all_reduce (group creation
    // is itself collective); then rank 1 skips the second one.
    DeviceBuffer buf(64 * 4);
    buf.upload(encode(Type::F32, input(rank, 64)));
    MemRef ref(buf.ptr, 0, {64});
    dtensor_rt_all_reduce_f32(ctx, 1, ref.desc(), 1, ref.desc(), kMesh,
                              kAllAxes, 0);
    mgpuStreamSynchronize(stream);
    std::printf("rank %lld: fault: %s\n", static_cast<long long>(rank),
                rank == 1 ? "skipping the second all_reduce_f32"
                          : "running the second all_reduce_f32");
    std::fflush(stdout);
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(600));
      std::fprintf(stderr, "dtensor-cuda-rt-test: rank 1: planted fault: no "
                           "watchdog ended the job within 600 s\n");
      return 3;
    }
    dtensor_rt_all_reduce_f32(ctx, 1, ref.desc(), 1, ref.desc(), kMesh,
                              kAllAxes, 0);
    mgpuStreamSynchronize(stream); // the watchdog must end this
    std::fprintf(stderr,
                 "dtensor-cuda-rt-test: rank %lld: the all_reduce "
                 "completed without rank 1\n",
                 static_cast<long long>(rank));
    return 3;
  }

  for (Type t : {Type::F32, Type::BF16, Type::F16}) {
    testAllReduce(t);
    testAllGather(t);
    testReduceScatter(t);
    testAllToAll(t);
    testPermuteBroadcast(t);
    testAsync(t);
  }
  if (twoD)
    testMeshAxes();
  for (Type t : {Type::F32, Type::BF16, Type::F16})
    testMatmuls(t);
  testMgpu();
  testGraphMemsets();

  dtensor_rt_barrier();
  dtensor_rt_finalize();
  std::printf("rank %lld: %d passed, %d failed\n", static_cast<long long>(rank),
              passed, failed);
  return failed ? 1 : 0;
}
