//===- smoke-driver.cpp - runs the CUDA smoke module on one GPU -----------===//
//
// Manual smoke test of the CUDA target (scripts/cuda-smoke-build.sh builds
// it into build/gpu-carry/). For each entry point of
// test/Target/CUDA/smoke/smoke.mlir: random inputs, copied to device memory
// with the CUDA driver API, memref descriptors built by hand, the
// _mlir_ciface_ entry called (it enqueues everything on the rank's stream
// and returns at once), the context synchronised, the result copied back
// and compared with a host reference. Prints one line per entry with the
// maximum relative error; exits 0 if all pass, 1 on a mismatch, 2 on a CUDA
// error.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

template <int N>
struct MemRef {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

void check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "smoke: %s failed: %s\n", what,
               name ? name : "unknown error");
  std::exit(2);
}

/// A device copy of `host` as a dense memref of `sizes`.
template <int N>
MemRef<N> toDevice(const std::vector<float> &host,
                   const int64_t (&sizes)[N]) {
  CUdeviceptr ptr = 0;
  check(cuMemAlloc(&ptr, host.size() * sizeof(float)), "cuMemAlloc");
  check(cuMemcpyHtoD(ptr, host.data(), host.size() * sizeof(float)),
        "cuMemcpyHtoD");
  MemRef<N> m;
  m.allocated = m.aligned = reinterpret_cast<float *>(ptr);
  m.offset = 0;
  int64_t stride = 1;
  for (int d = N - 1; d >= 0; --d) {
    m.sizes[d] = sizes[d];
    m.strides[d] = stride;
    stride *= sizes[d];
  }
  return m;
}

template <int N>
std::vector<float> toHost(const MemRef<N> &m) {
  int64_t count = 1;
  for (int d = 0; d < N; ++d)
    count *= m.sizes[d];
  for (int d = N - 1, stride = 1; d >= 0; stride *= m.sizes[d], --d)
    if (m.strides[d] != stride) {
      std::fprintf(stderr, "smoke: result is not a dense buffer\n");
      std::exit(2);
    }
  std::vector<float> host(count);
  check(cuMemcpyDtoH(host.data(),
                     reinterpret_cast<CUdeviceptr>(m.aligned + m.offset),
                     count * sizeof(float)),
        "cuMemcpyDtoH");
  return host;
}

std::vector<float> random(size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// Maximum of |got - want| / max(|want|, 1).
double maxRelError(const std::vector<float> &got,
                   const std::vector<float> &want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double err = std::fabs(double(got[i]) - want[i]) /
                 std::max(1.0, std::fabs(double(want[i])));
    if (!(err <= worst)) // NaN counts as the worst
      worst = std::isnan(err) ? INFINITY : err;
  }
  return worst;
}

} // namespace

extern "C" {
void _mlir_ciface_smoke_mlp(MemRef<2> *result, MemRef<2> *x, MemRef<2> *w,
                            MemRef<1> *b);
void _mlir_ciface_smoke_linear(MemRef<3> *result, MemRef<3> *x,
                               MemRef<2> *w);
void _mlir_ciface_smoke_softmax(MemRef<2> *result, MemRef<2> *x);
void _mlir_ciface_smoke_bf16(MemRef<2> *result, MemRef<2> *x, MemRef<2> *y);
}

namespace {
/// bf16 <-> f32 (round to nearest even; no NaN inputs here).
uint16_t toBF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}
float fromBF16(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
} // namespace

// The project's runtime (libdtensor_runtime_cuda) is initialised like any
// rank (here a single process, rank 0 of 1); the test shim has no init.
extern "C" int dtensor_rt_init(const char *, int *, char ***)
    __attribute__((weak));
extern "C" void dtensor_rt_finalize(void) __attribute__((weak));

int main(int argc, char **argv) {
  double tolerance = argc > 1 ? std::atof(argv[1]) : 1e-3;
  if (dtensor_rt_init && dtensor_rt_init("nccl", &argc, &argv) != 0) {
    std::fprintf(stderr, "smoke: dtensor_rt_init failed\n");
    return 1;
  }
  // The compiled module loaded its kernels at library load (mgpuModuleLoad
  // in a global constructor), on the current device's primary context; use
  // the same context here.
  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  char name[256] = {0};
  cuDeviceGetName(name, sizeof(name), device);
  std::printf("smoke: device 0: %s, tolerance %g\n", name, tolerance);

  std::mt19937 rng(1234);
  bool ok = true;
  auto report = [&](const char *entry, double err, double tol) {
    bool pass = err <= tol;
    ok &= pass;
    std::printf("%s %s: max relative error %.3g (tolerance %.3g)\n",
                pass ? "PASS" : "FAIL", entry, err, tol);
  };

  { // relu(x @ w + b)
    const int64_t M = 256, K = 512, N = 384;
    std::vector<float> x = random(M * K, rng), w = random(K * N, rng),
                       b = random(N, rng);
    MemRef<2> dx = toDevice<2>(x, {M, K}), dw = toDevice<2>(w, {K, N});
    MemRef<1> db = toDevice<1>(b, {N});
    MemRef<2> dy{};
    _mlir_ciface_smoke_mlp(&dy, &dx, &dw, &db);
    check(cuCtxSynchronize(), "cuCtxSynchronize (smoke_mlp)");
    std::vector<float> y = toHost(dy), want(M * N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += double(x[i * K + k]) * w[k * N + j];
        want[i * N + j] = float(std::max(0.0, s + b[j]));
      }
    report("smoke_mlp", maxRelError(y, want), tolerance);
  }

  { // x @ w^T on [2, 64, 256] activations
    const int64_t B = 2, S = 64, K = 256, N = 128;
    std::vector<float> x = random(B * S * K, rng), w = random(N * K, rng);
    MemRef<3> dx = toDevice<3>(x, {B, S, K});
    MemRef<2> dw = toDevice<2>(w, {N, K});
    MemRef<3> dy{};
    _mlir_ciface_smoke_linear(&dy, &dx, &dw);
    check(cuCtxSynchronize(), "cuCtxSynchronize (smoke_linear)");
    std::vector<float> y = toHost(dy), want(B * S * N);
    for (int64_t r = 0; r < B * S; ++r)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += double(x[r * K + k]) * w[j * K + k];
        want[r * N + j] = float(s);
      }
    report("smoke_linear", maxRelError(y, want), tolerance);
  }

  { // softmax over rows
    const int64_t R = 64, C = 1000;
    std::vector<float> x = random(R * C, rng);
    for (float &v : x)
      v *= 8.0f;
    MemRef<2> dx = toDevice<2>(x, {R, C});
    MemRef<2> dy{};
    _mlir_ciface_smoke_softmax(&dy, &dx);
    check(cuCtxSynchronize(), "cuCtxSynchronize (smoke_softmax)");
    std::vector<float> y = toHost(dy), want(R * C);
    for (int64_t r = 0; r < R; ++r) {
      double mx = -INFINITY, sum = 0;
      for (int64_t c = 0; c < C; ++c)
        mx = std::max(mx, double(x[r * C + c]));
      for (int64_t c = 0; c < C; ++c)
        sum += std::exp(double(x[r * C + c]) - mx);
      for (int64_t c = 0; c < C; ++c)
        want[r * C + c] = float(std::exp(double(x[r * C + c]) - mx) / sum);
    }
    report("smoke_softmax", maxRelError(y, want), tolerance);
  }

  { // x * y + x in bf16: 16-byte accesses of 8 lanes
    const int64_t R = 64, C = 512, N = R * C;
    std::vector<float> xf = random(N, rng), yf = random(N, rng);
    std::vector<uint16_t> xb(N), yb(N);
    for (int64_t i = 0; i < N; ++i) {
      xb[i] = toBF16(xf[i]);
      yb[i] = toBF16(yf[i]);
    }
    // The bf16 buffers travel as float memrefs of half the length: only
    // the pointers and sizes matter to the callee.
    CUdeviceptr px = 0, py = 0;
    check(cuMemAlloc(&px, N * 2), "cuMemAlloc");
    check(cuMemAlloc(&py, N * 2), "cuMemAlloc");
    check(cuMemcpyHtoD(px, xb.data(), N * 2), "cuMemcpyHtoD");
    check(cuMemcpyHtoD(py, yb.data(), N * 2), "cuMemcpyHtoD");
    auto desc = [&](CUdeviceptr p) {
      MemRef<2> m;
      m.allocated = m.aligned = reinterpret_cast<float *>(p);
      m.offset = 0;
      m.sizes[0] = R;
      m.sizes[1] = C;
      m.strides[0] = C;
      m.strides[1] = 1;
      return m;
    };
    MemRef<2> dx = desc(px), dy = desc(py), dz{};
    _mlir_ciface_smoke_bf16(&dz, &dx, &dy);
    check(cuCtxSynchronize(), "cuCtxSynchronize (smoke_bf16)");
    std::vector<uint16_t> zb(N);
    check(cuMemcpyDtoH(zb.data(),
                       reinterpret_cast<CUdeviceptr>(dz.aligned) +
                           dz.offset * 2,
                       N * 2),
          "cuMemcpyDtoH");
    std::vector<float> got(N), want(N);
    for (int64_t i = 0; i < N; ++i) {
      got[i] = fromBF16(zb[i]);
      // bf16 rounding after the multiply, then after the add.
      float p = fromBF16(toBF16(fromBF16(xb[i]) * fromBF16(yb[i])));
      want[i] = fromBF16(toBF16(p + fromBF16(xb[i])));
    }
    // Up to one bf16 ulp (2^-7 relative) apart where the rounding differs.
    report("smoke_bf16", maxRelError(got, want), std::max(tolerance, 1.0 / 128));
  }

  std::printf("smoke: %s\n", ok ? "all passed" : "MISMATCH");
  if (dtensor_rt_finalize)
    dtensor_rt_finalize();
  return ok ? 0 : 1;
}
