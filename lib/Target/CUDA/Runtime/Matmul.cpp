//===- Matmul.cpp - dtensor_rt_matmul_<T> over cuBLASLt -------------------===//
//
// C = A.B (accumulate == 0) or C += A.B on the compute stream;
// dtensor_rt_matmul_add_<T>: C = A.B + R, R read in the GEMM's epilogue
// (cuBLASLt's C operand with beta = 1, our C its D), R dense row-major of
// C's shape and distinct from it. dtensor_rt_matmul_bias_<T>: C = A.B +
// bias, bias[n] added to every row in the epilogue (CUBLASLT_EPILOGUE_BIAS:
// cuBLASLt's rows are our columns), the bias dense of length N.
// dtensor_rt_matmul_act_<T>: C = act(A.B). The bias and act entries take an
// activation applied last in the epilogue: 0 none, 1 ReLU, 2 GELU in its
// tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (cuBLASLt's
// RELU, GELU, RELU_BIAS and GELU_BIAS epilogues).
//
// Layout. cuBLASLt is column-major; a row-major [R, C] matrix is a
// column-major [C, R] one, so the row-major product C = A.B is computed as
// the column-major C^T = B^T.A^T: cuBLASLt's first operand is our B, its
// second our A, m = N, n = M, k = K, and C^T is column-major [N, M] with
// leading dimension N, i.e. C dense row-major. An operand that is a
// transposed view (unit stride on its first dimension instead of its last)
// is a column-major matrix already: it gets CUBLAS_OP_T and its own leading
// dimension. Operands that are neither (both strides non-unit) are packed
// into a dense stage first (Kernels.h).
//
// Plans. Per (type, shapes, strides, transposes, pointer alignments,
// accumulate) the descriptors and the algorithm are built once and cached.
// The algorithm is autotuned on a scratch output (C untouched), in two
// stages: each of the heuristic's first 32 candidates is timed (median of 5
// after a warm-up); then the 3 fastest and the heuristic's first choice are
// timed again taking turns over 8 rounds (median over rounds), and one
// replaces the heuristic's choice only if at least 1% faster. The minimum
// of 32 noisy times alone favours a candidate that was timed while the
// clocks were high: same kernel, a few percent slower in the program than
// the heuristic's choice. Every timed run starts with the L2 cache evicted
// (a 100 MiB write, untimed), as a program's matmul finds its operands in
// memory, not in the cache. DTENSOR_MATMUL_AUTOTUNE=0 takes the heuristic's
// first choice instead. DTENSOR_MATMUL_CACHE=<file> keeps the choices
// across processes: read at the first matmul (entries of another cuBLASLt
// version or GPU are ignored), each new choice appended; a cached
// algorithm that cuBLASLt no longer accepts for its shape is tuned again.
// Workspace: 32 MiB, allocated once.
//
// Precision: bf16 and f16 inputs and outputs, f32 accumulation
// (CUBLAS_COMPUTE_32F); f32 in CUBLAS_COMPUTE_32F, which excludes TF32,
// unless DTENSOR_MATMUL_TF32=1 (CUBLAS_COMPUTE_32F_FAST_TF32).
//
//===----------------------------------------------------------------------===//

#include "CommBackend.h"
#include "Driver.h"
#include "Kernels.h"
#include "Layouts.h"
#include "MemRef.h"

#pragma GCC visibility push(default)
#include "dtensor/Runtime/CUDARuntime.h"
#pragma GCC visibility pop

#include <cublasLt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace dtensor::rt::cuda {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;
constexpr int kAutotuneCandidates = 32;
constexpr int kAutotuneRepeats = 5;
constexpr int kAutotuneFinalists = 3;
/// Written before each timed run to evict the L2 cache (50 MB on H100 and
/// H200): twice its size.
constexpr size_t kL2FlushBytes = 100u << 20;
constexpr int kAutotuneRounds = 8;
constexpr int kAutotuneRoundRepeats = 3;
constexpr float kAutotuneMargin = 0.99f;

void checkLt(cublasStatus_t status, const char *op, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  cudaFatal(op, std::string(call) +
                    " failed: " + cublasLtGetStatusName(status) + " (" +
                    cublasLtGetStatusString(status) + ")");
}

#define DTENSOR_LT(op, call, ...) checkLt(call(__VA_ARGS__), op, #call)

bool envIs(const char *name, const char *expected) {
  const char *value = std::getenv(name);
  return value && std::string(value) == expected;
}

bool envFlag(const char *name) { return envIs(name, "1"); }

/// The largest power of two up to 256 dividing `p`.
uint32_t alignmentOf(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a)
    a /= 2;
  return a;
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layoutA = nullptr; // cuBLASLt's A: our B
  cublasLtMatrixLayout_t layoutB = nullptr; // cuBLASLt's B: our A
  cublasLtMatrixLayout_t layoutC = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

struct MatmulState {
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  std::unordered_map<std::string, Plan> plans;
  /// DTENSOR_MATMUL_CACHE: its path, the identity line of this process
  /// (cuBLASLt version, device), and the algorithms read from it by key.
  std::string cachePath, cacheIdentity;
  std::unordered_map<std::string, cublasLtMatmulAlgo_t> cached;
  /// kL2FlushBytes of device memory while timing (flushBuffer).
  CUdeviceptr flush = 0;
};

/// The L2-evicting buffer of the timings, allocated at the first use.
CUdeviceptr flushBuffer(MatmulState &st, const char *op) {
  if (!st.flush) {
    CUresult rc = driver(op).cuMemAlloc(&st.flush, kL2FlushBytes);
    if (rc != CUDA_SUCCESS)
      cudaFatal(op, "cuMemAlloc of the " + std::to_string(kL2FlushBytes) +
                        "-byte cache-flush buffer of the matmul timings "
                        "failed: " +
                        describe(rc));
  }
  return st.flush;
}

/// Frees the buffer of flushBuffer once the timings are done (they wait
/// for the stream).
void releaseFlushBuffer(MatmulState &st, const char *op) {
  if (st.flush)
    DTENSOR_CU(op, cuMemFree, st.flush);
  st.flush = 0;
}

/// "# dtensor matmul algorithms: cublasLt <version>, <device name>".
std::string cacheIdentity(DeviceState &dev) {
  char name[256] = {0};
  driver("matmul").cuDeviceGetName(name, sizeof(name) - 1, dev.device);
  return "# dtensor matmul algorithms: cublasLt " +
         std::to_string(cublasLtGetVersion()) + ", " + name;
}

/// Reads the cache file: an identity line, then "<key> <16 hex words>"
/// per line. A file of another identity, or one that does not parse, is
/// ignored (and rewritten by the next choice).
void readCache(MatmulState &st) {
  std::FILE *file = std::fopen(st.cachePath.c_str(), "r");
  if (!file)
    return;
  char line[1024];
  bool first = true, same = false;
  while (std::fgets(line, sizeof(line), file)) {
    std::string text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
      text.pop_back();
    if (first) {
      same = text == st.cacheIdentity;
      first = false;
      if (!same)
        break;
      continue;
    }
    size_t space = text.find(' ');
    if (space == std::string::npos)
      continue;
    cublasLtMatmulAlgo_t algo{};
    const char *cursor = text.c_str() + space;
    bool ok = true;
    for (uint64_t &word : algo.data) {
      char *end = nullptr;
      word = std::strtoull(cursor, &end, 16);
      ok = ok && end != cursor;
      cursor = end;
    }
    if (ok)
      st.cached[text.substr(0, space)] = algo;
  }
  std::fclose(file);
  if (!same)
    st.cached.clear();
}

void appendCache(MatmulState &st, const std::string &key,
                 const cublasLtMatmulAlgo_t &algo) {
  if (st.cachePath.empty())
    return;
  bool fresh = st.cached.empty();
  std::FILE *file = std::fopen(st.cachePath.c_str(), fresh ? "w" : "a");
  if (!file) {
    std::fprintf(stderr,
                 "dtensor runtime: warning: cannot write the matmul cache "
                 "'%s'\n",
                 st.cachePath.c_str());
    st.cachePath.clear();
    return;
  }
  if (fresh)
    std::fprintf(file, "%s\n", st.cacheIdentity.c_str());
  std::fprintf(file, "%s", key.c_str());
  for (uint64_t word : algo.data)
    std::fprintf(file, " %llx", static_cast<unsigned long long>(word));
  std::fprintf(file, "\n");
  std::fclose(file);
  st.cached[key] = algo;
}

MatmulState &matmulState(const char *op) {
  static MatmulState state;
  if (!state.handle) {
    device(op);
    DTENSOR_LT(op, cublasLtCreate, &state.handle);
    CUdeviceptr ws = 0;
    CUresult rc = driver(op).cuMemAlloc(&ws, kWorkspaceBytes);
    if (rc != CUDA_SUCCESS)
      cudaFatal(op, "cuMemAlloc of the " + std::to_string(kWorkspaceBytes) +
                        "-byte matmul workspace failed: " + describe(rc));
    state.workspace = reinterpret_cast<void *>(ws);
    if (const char *path = std::getenv("DTENSOR_MATMUL_CACHE"); path && *path) {
      state.cachePath = path;
      state.cacheIdentity = cacheIdentity(device(op));
      readCache(state);
    }
  }
  return state;
}

cublasLtEpilogue_t epilogueFor(bool bias, int64_t activation) {
  switch (activation) {
  case DTENSOR_RT_ACTIVATION_RELU:
    return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  case DTENSOR_RT_ACTIVATION_GELU_TANH:
    return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  default:
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  }
}

/// The descriptors of one GEMM (the algorithm is chosen apart).
Plan makePlan(cudaDataType_t dataType, bool tf32, const GemmPlan &g,
              const char *op, bool bias = false,
              int64_t activation = DTENSOR_RT_ACTIVATION_NONE) {
  Plan p;
  cublasComputeType_t compute =
      tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  DTENSOR_LT(op, cublasLtMatmulDescCreate, &p.desc, compute, CUDA_R_32F);
  cublasOperation_t opA = g.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = g.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  DTENSOR_LT(op, cublasLtMatmulDescSetAttribute, p.desc,
             CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA));
  DTENSOR_LT(op, cublasLtMatmulDescSetAttribute, p.desc,
             CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB));
  if (bias || activation != DTENSOR_RT_ACTIVATION_NONE) {
    cublasLtEpilogue_t epilogue = epilogueFor(bias, activation);
    DTENSOR_LT(op, cublasLtMatmulDescSetAttribute, p.desc,
               CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  }
  DTENSOR_LT(op, cublasLtMatrixLayoutCreate, &p.layoutA, dataType, g.a.rows,
             g.a.cols, g.a.ld);
  DTENSOR_LT(op, cublasLtMatrixLayoutCreate, &p.layoutB, dataType, g.b.rows,
             g.b.cols, g.b.ld);
  DTENSOR_LT(op, cublasLtMatrixLayoutCreate, &p.layoutC, dataType, g.m, g.n,
             g.ldc);
  if (g.batch > 1) {
    int32_t count = static_cast<int32_t>(g.batch);
    struct {
      cublasLtMatrixLayout_t layout;
      int64_t stride;
    } batched[] = {{p.layoutA, g.a.batchStride},
                   {p.layoutB, g.b.batchStride},
                   {p.layoutC, g.batchStrideC}};
    for (auto &entry : batched) {
      DTENSOR_LT(op, cublasLtMatrixLayoutSetAttribute, entry.layout,
                 CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
      DTENSOR_LT(op, cublasLtMatrixLayoutSetAttribute, entry.layout,
                 CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &entry.stride,
                 sizeof(entry.stride));
    }
  }
  return p;
}

/// Points `p`'s bias epilogue at `bias` (an attribute of the descriptor).
void setBiasPointer(const Plan &p, const void *bias, const char *op) {
  DTENSOR_LT(op, cublasLtMatmulDescSetAttribute, p.desc,
             CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
}

void destroyPlan(Plan &p) {
  cublasLtMatrixLayoutDestroy(p.layoutA);
  cublasLtMatrixLayoutDestroy(p.layoutB);
  cublasLtMatrixLayoutDestroy(p.layoutC);
  cublasLtMatmulDescDestroy(p.desc);
}

/// The search preference: the workspace, and the alignments of our A, B,
/// the accumulated input C (R for matmul_add) and the output D (cuBLASLt's
/// B, A, C and D).
cublasLtMatmulPreference_t makePreference(const void *a, const void *b,
                                          const void *c, const void *d,
                                          const char *op) {
  cublasLtMatmulPreference_t pref = nullptr;
  DTENSOR_LT(op, cublasLtMatmulPreferenceCreate, &pref);
  uint64_t wsBytes = kWorkspaceBytes;
  DTENSOR_LT(op, cublasLtMatmulPreferenceSetAttribute, pref,
             CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes,
             sizeof(wsBytes));
  uint32_t alignA = alignmentOf(b), alignB = alignmentOf(a),
           alignC = alignmentOf(c), alignD = alignmentOf(d);
  struct {
    cublasLtMatmulPreferenceAttributes_t attribute;
    uint32_t *value;
  } alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC},
                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignD}};
  for (auto &entry : alignments)
    DTENSOR_LT(op, cublasLtMatmulPreferenceSetAttribute, pref, entry.attribute,
               entry.value, sizeof(uint32_t));
  return pref;
}

/// Times `algo` computing D = A.B (+ beta C): the median of `repeats` runs
/// after a warm-up, in ms; negative if cuBLASLt refuses it.
float timeAlgorithm(MatmulState &st, const Plan &p,
                    const cublasLtMatmulAlgo_t &algo, const void *a,
                    const void *b, const void *c, void *d, float beta,
                    int repeats, const char *op) {
  DeviceState &dev = device(op);
  float alpha = 1.0f;
  return medianStreamMs(
      [&] {
        // cuBLASLt's A is our B, its B our A (C^T = B^T A^T).
        return cublasLtMatmul(st.handle, p.desc, &alpha, b, p.layoutA, a,
                              p.layoutB, &beta, c, p.layoutC, d, p.layoutC,
                              &algo, st.workspace, kWorkspaceBytes,
                              dev.compute) == CUBLAS_STATUS_SUCCESS;
      },
      repeats, op,
      [&] {
        // A program's matmul reads operands other kernels wrote, mostly
        // from memory: each timed run starts with the L2 cache evicted,
        // so that no candidate wins by finding the last run's operands
        // cached (as timing tools do; on the bench shapes the choices
        // stayed the same).
        DTENSOR_CU(op, cuMemsetD32Async, flushBuffer(st, op), 0,
                   kL2FlushBytes / 4, dev.compute);
      });
}

/// The heuristic's first `wanted` candidates for `p` (at least one, else
/// fatal naming `key`).
std::vector<cublasLtMatmulHeuristicResult_t>
candidates(MatmulState &st, const Plan &p, cublasLtMatmulPreference_t pref,
           int wanted, const std::string &key, const char *op) {
  std::vector<cublasLtMatmulHeuristicResult_t> results(wanted);
  int returned = 0;
  DTENSOR_LT(op, cublasLtMatmulAlgoGetHeuristic, st.handle, p.desc, p.layoutA,
             p.layoutB, p.layoutC, p.layoutC, pref, wanted, results.data(),
             &returned);
  if (returned == 0)
    cudaFatal(op, "cuBLASLt has no algorithm for " + key);
  results.resize(returned);
  return results;
}

/// The fastest candidate, timed into a scratch output (C untouched), or
/// the heuristic's first choice when not autotuning; recorded in the cache.
cublasLtMatmulAlgo_t chooseAlgorithm(MatmulState &st, const Plan &p,
                                     cublasLtMatmulPreference_t pref,
                                     const void *a, const void *b,
                                     const void *c, size_t cBytes, float beta,
                                     bool autotune, const std::string &key,
                                     const char *op) {
  std::vector<cublasLtMatmulHeuristicResult_t> results =
      candidates(st, p, pref, autotune ? kAutotuneCandidates : 1, key, op);
  cublasLtMatmulAlgo_t best = results[0].algo;
  if (!autotune)
    return best;
  if (results.size() > 1) {
    void *scratch = allocAsync(cBytes, op, "autotune scratch");
    // Stage 1: every candidate once.
    std::vector<std::pair<float, size_t>> ranked;
    for (size_t i = 0; i < results.size(); ++i) {
      float ms = timeAlgorithm(st, p, results[i].algo, a, b, c, scratch, beta,
                               kAutotuneRepeats, op);
      if (ms >= 0)
        ranked.push_back({ms, i});
    }
    std::sort(ranked.begin(), ranked.end());
    // Stage 2: the heuristic's choice (index 0) and the fastest few, taking
    // turns.
    std::vector<size_t> finalists = {0};
    for (const auto &[ms, i] : ranked)
      if (i != 0 && finalists.size() <= kAutotuneFinalists)
        finalists.push_back(i);
    std::vector<std::vector<float>> times(finalists.size());
    for (int round = 0; round < kAutotuneRounds; ++round)
      for (size_t f = 0; f < finalists.size(); ++f) {
        float ms = timeAlgorithm(st, p, results[finalists[f]].algo, a, b, c,
                                 scratch, beta, kAutotuneRoundRepeats, op);
        if (ms >= 0)
          times[f].push_back(ms);
      }
    float bestMs = medianOf(times[0]);
    for (size_t f = 1; f < finalists.size(); ++f) {
      float ms = medianOf(times[f]);
      if (ms >= 0 && (bestMs < 0 || ms < kAutotuneMargin * bestMs)) {
        bestMs = ms;
        best = results[finalists[f]].algo;
      }
    }
    freeAsync(scratch, op);
    releaseFlushBuffer(st, op);
  }
  appendCache(st, key, best);
  return best;
}

/// The cached algorithm of `key`, if cuBLASLt accepts it for `p`.
bool lookupCache(MatmulState &st, const std::string &key, Plan &p,
                 const char *op) {
  auto it = st.cached.find(key);
  if (it == st.cached.end())
    return false;
  cublasLtMatmulHeuristicResult_t check{};
  if (cublasLtMatmulAlgoCheck(st.handle, p.desc, p.layoutA, p.layoutB,
                              p.layoutC, p.layoutC, &it->second,
                              &check) != CUBLAS_STATUS_SUCCESS)
    return false;
  p.algo = it->second;
  return true;
}

/// Decodes a rank-2 or rank-3 operand into a [batch, rows, cols] view.
StridedView decode3(int64_t rank, void *descriptor, size_t elem, const char *op,
                    const char *what) {
  StridedView v = decodeMemRef(rank, descriptor, elem, op, what);
  if (rank != 2 && rank != 3)
    cudaFatal(op, std::string(what) + " has rank " + std::to_string(rank) +
                      ", expected 2 ([M,K] x [K,N]) or 3 (a batch)");
  if (rank == 2) {
    v.sizes.insert(v.sizes.begin(), 1);
    v.strides.insert(v.strides.begin(), 0);
  }
  return v;
}

void matmul(void *ctx, cudaDataType_t dataType, ElemType elemType,
            const char *op, int64_t aRank, void *a, int64_t bRank, void *b,
            int64_t cRank, void *c, int64_t accumulate, int64_t rRank = 0,
            void *r = nullptr, int64_t biasRank = 0, void *bias = nullptr,
            int64_t activation = DTENSOR_RT_ACTIVATION_NONE) {
  DeviceState &dev = device(op);
  if (ctx != &dev)
    cudaFatal(op, ctx ? "context argument is not dtensor_rt_context() of "
                        "this process"
                      : "null context (dtensor_rt_init not called?)");
  size_t elem = elemSize(elemType);
  if (activation != DTENSOR_RT_ACTIVATION_NONE &&
      activation != DTENSOR_RT_ACTIVATION_RELU &&
      activation != DTENSOR_RT_ACTIVATION_GELU_TANH)
    cudaFatal(op, "activation " + std::to_string(activation) +
                      " is not 0 (none), 1 (ReLU) or 2 (GELU, tanh form)");
  if (aRank != bRank || aRank != cRank)
    cudaFatal(op, "operand ranks differ (A " + std::to_string(aRank) + ", B " +
                      std::to_string(bRank) + ", C " + std::to_string(cRank) +
                      ")");
  StridedView av = decode3(aRank, a, elem, op, "A");
  StridedView bv = decode3(bRank, b, elem, op, "B");
  StridedView cv = decode3(cRank, c, elem, op, "C");
  int64_t batch = av.sizes[0], m = av.sizes[1], k = av.sizes[2],
          n = bv.sizes[2];
  if (bv.sizes[0] != batch || cv.sizes[0] != batch || bv.sizes[1] != k ||
      cv.sizes[1] != m || cv.sizes[2] != n)
    cudaFatal(op, "shapes do not multiply: A " + formatShape(av.sizes) +
                      ", B " + formatShape(bv.sizes) + ", C " +
                      formatShape(cv.sizes) +
                      " (expected [B,M,K] x [B,K,N] -> [B,M,N])");
  if (!cv.isContiguous())
    cudaFatal(op, "C must be dense row-major (sizes " + formatShape(cv.sizes) +
                      ")");
  // The residual: read as C's layout (same shape, dense), never written.
  const void *residual = nullptr;
  if (r) {
    if (rRank != cRank)
      cudaFatal(op, "R has rank " + std::to_string(rRank) + ", C " +
                        std::to_string(cRank));
    StridedView rv = decode3(rRank, r, elem, op, "R");
    if (rv.sizes != cv.sizes || !rv.isContiguous())
      cudaFatal(op, "R must be dense row-major of C's shape (R " +
                        formatShape(rv.sizes) + ", C " + formatShape(cv.sizes) +
                        ")");
    if (rv.data == cv.data)
      cudaFatal(op, "R and C are the same buffer (use accumulate)");
    residual = rv.data;
    accumulate = 1;
  }
  // The bias: N elements, dense, added to every row.
  void *biasData = nullptr;
  if (bias) {
    StridedView bv1 = decodeMemRef(biasRank, bias, elem, op, "bias");
    if (biasRank != 1 || bv1.sizes[0] != n || !bv1.isContiguous())
      cudaFatal(op, "the bias must be dense of C's last size " +
                        std::to_string(n) + " (got sizes " +
                        formatShape(bv1.sizes) + ")");
    biasData = bv1.data;
  }
  if (batch == 0 || m == 0 || n == 0)
    return;
  if (k == 0) {
    // act(0) is 0 for ReLU and GELU: the plain zero fill below; not so
    // act(bias).
    if (biasData && activation != DTENSOR_RT_ACTIVATION_NONE)
      cudaFatal(op, "a bias with an activation needs K > 0 (got an empty K)");
    if (biasData) {
      StridedView dst = contiguousView(cv.data, cv.sizes, elem);
      StridedView src = dst;
      src.data = static_cast<char *>(biasData);
      src.strides = {0, 0, 1};
      copyOnDevice(dst, src, dev.compute, op);
    } else if (residual) {
      StridedView dst = contiguousView(cv.data, cv.sizes, elem);
      StridedView src =
          contiguousView(const_cast<void *>(residual), cv.sizes, elem);
      copyOnDevice(dst, src, dev.compute, op);
    } else if (!accumulate) {
      size_t count = cv.getNumElements();
      if (elem == 4)
        DTENSOR_CU(op, cuMemsetD32Async, reinterpret_cast<CUdeviceptr>(cv.data),
                   0, count, dev.compute);
      else
        DTENSOR_CU(op, cuMemsetD16Async, reinterpret_cast<CUdeviceptr>(cv.data),
                   0, count, dev.compute);
    }
    return;
  }
  if (batch > INT32_MAX || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    cudaFatal(op, "sizes beyond int32 are not supported by this entry point");

  // Orient A and B; pack what is neither row- nor column-major into a
  // dense stage, freed (stream-ordered) after the matmul.
  StridedView *views[2] = {&av, &bv};
  Orientation orient2[2];
  void *staged[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    StridedView &v = *views[i];
    if (orientMatrix(v.sizes[1], v.sizes[2], v.strides[1], v.strides[2],
                     orient2[i]))
      continue;
    staged[i] = allocAsync(v.getNumBytes(), op, "matmul operand staging");
    StridedView dense = contiguousView(staged[i], v.sizes, elem);
    copyOnDevice(dense, v, dev.compute, op);
    v = dense;
    orientMatrix(v.sizes[1], v.sizes[2], v.strides[1], v.strides[2],
                 orient2[i]);
  }
  int64_t strideA = batch > 1 ? av.strides[0] : 0;
  int64_t strideB = batch > 1 ? bv.strides[0] : 0;
  bool tf32 = elemType == ElemType::F32 && envFlag("DTENSOR_MATMUL_TF32");
  bool autotune = !envIs("DTENSOR_MATMUL_AUTOTUNE", "0");

  MatmulState &st = matmulState(op);
  std::string key = std::to_string(static_cast<int>(dataType));
  for (int64_t v :
       {batch, m, n, k, int64_t(orient2[0].transposed), orient2[0].ld,
        int64_t(orient2[1].transposed), orient2[1].ld, strideA, strideB,
        int64_t(accumulate != 0), int64_t(tf32), int64_t(alignmentOf(av.data)),
        int64_t(alignmentOf(bv.data)), int64_t(alignmentOf(cv.data)),
        int64_t(residual ? alignmentOf(residual) : 0),
        int64_t(biasData ? alignmentOf(biasData) : 0), activation})
    key += "," + std::to_string(v);

  auto found = st.plans.find(key);
  float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  if (found == st.plans.end()) {
    // cuBLASLt's A is our B, its B our A (C^T = B^T A^T); Layouts.h.
    Plan p = makePlan(
        dataType, tf32,
        planGemm(batch, m, k, n, orient2[0], strideA, orient2[1], strideB), op,
        biasData != nullptr, activation);
    if (biasData)
      setBiasPointer(p, biasData, op);
    cublasLtMatmulPreference_t pref = makePreference(
        av.data, bv.data, residual ? residual : cv.data, cv.data, op);
    if (!(autotune && lookupCache(st, key, p, op)))
      p.algo = chooseAlgorithm(st, p, pref, av.data, bv.data,
                               residual ? residual : cv.data, cv.getNumBytes(),
                               beta, autotune, key, op);
    cublasLtMatmulPreferenceDestroy(pref);
    found = st.plans.emplace(key, p).first;
  }
  const Plan &p = found->second;
  // The plan is cached by the bias's alignment, not its address.
  if (biasData)
    setBiasPointer(p, biasData, op);
  DTENSOR_LT(op, cublasLtMatmul, st.handle, p.desc, &alpha, bv.data, p.layoutA,
             av.data, p.layoutB, &beta, residual ? residual : cv.data,
             p.layoutC, cv.data, p.layoutC, &p.algo, st.workspace,
             kWorkspaceBytes, dev.compute);
  for (void *stage : staged)
    freeAsync(stage, op);
}

/// dtensor_rt_matmul_best_ms: dense row-major operands, every candidate
/// timed (not cached: a benchmark wants the floor, not a plan).
float bestMatmulMs(void *ctx, int32_t type, int64_t batch, int64_t m, int64_t n,
                   int64_t k, void *a, void *b, void *c, int32_t wanted,
                   int32_t repeats) {
  const char *op = "matmul_best_ms";
  DeviceState &dev = device(op);
  if (ctx != &dev)
    cudaFatal(op, "context argument is not dtensor_rt_context() of this "
                  "process");
  static const cudaDataType_t types[] = {CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF};
  if (type < 0 || type > 2)
    cudaFatal(op, "type " + std::to_string(type) +
                      " is not 0 (f32), 1 (f16) or 2 (bf16)");
  if (batch < 1 || m < 1 || n < 1 || k < 1 || batch > INT32_MAX ||
      m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || wanted < 1 ||
      repeats < 1)
    cudaFatal(op, "sizes and counts must be positive and below 2^31");
  Orientation rowMajorA{false, k}, rowMajorB{false, n};
  MatmulState &st = matmulState(op);
  Plan p = makePlan(
      types[type], /*tf32=*/false,
      planGemm(batch, m, k, n, rowMajorA, m * k, rowMajorB, k * n), op);
  cublasLtMatmulPreference_t pref = makePreference(a, b, c, c, op);
  std::string what = "A [" + std::to_string(batch) + "," + std::to_string(m) +
                     "," + std::to_string(k) + "] B [.., " + std::to_string(n) +
                     "]";
  float best = -1;
  for (const cublasLtMatmulHeuristicResult_t &r :
       candidates(st, p, pref, wanted, what, op)) {
    float ms = timeAlgorithm(st, p, r.algo, a, b, c, c, 0.0f, repeats, op);
    if (ms >= 0 && (best < 0 || ms < best))
      best = ms;
  }
  releaseFlushBuffer(st, op);
  cublasLtMatmulPreferenceDestroy(pref);
  destroyPlan(p);
  return best;
}

} // namespace

} // namespace dtensor::rt::cuda

using dtensor::rt::ElemType;
using dtensor::rt::cuda::bestMatmulMs;
using dtensor::rt::cuda::matmul;

extern "C" {

void dtensor_rt_matmul_bf16(void *ctx, int64_t aRank, void *a, int64_t bRank,
                            void *b, int64_t cRank, void *c,
                            int64_t accumulate) {
  matmul(ctx, CUDA_R_16BF, ElemType::BF16, "matmul_bf16", aRank, a, bRank, b,
         cRank, c, accumulate);
}

void dtensor_rt_matmul_f16(void *ctx, int64_t aRank, void *a, int64_t bRank,
                           void *b, int64_t cRank, void *c,
                           int64_t accumulate) {
  matmul(ctx, CUDA_R_16F, ElemType::F16, "matmul_f16", aRank, a, bRank, b,
         cRank, c, accumulate);
}

void dtensor_rt_matmul_f32(void *ctx, int64_t aRank, void *a, int64_t bRank,
                           void *b, int64_t cRank, void *c,
                           int64_t accumulate) {
  matmul(ctx, CUDA_R_32F, ElemType::F32, "matmul_f32", aRank, a, bRank, b,
         cRank, c, accumulate);
}

void dtensor_rt_matmul_add_bf16(void *ctx, int64_t aRank, void *a,
                                int64_t bRank, void *b, int64_t rRank, void *r,
                                int64_t cRank, void *c) {
  matmul(ctx, CUDA_R_16BF, ElemType::BF16, "matmul_add_bf16", aRank, a, bRank,
         b, cRank, c, /*accumulate=*/1, rRank, r);
}

void dtensor_rt_matmul_add_f16(void *ctx, int64_t aRank, void *a, int64_t bRank,
                               void *b, int64_t rRank, void *r, int64_t cRank,
                               void *c) {
  matmul(ctx, CUDA_R_16F, ElemType::F16, "matmul_add_f16", aRank, a, bRank, b,
         cRank, c, /*accumulate=*/1, rRank, r);
}

void dtensor_rt_matmul_add_f32(void *ctx, int64_t aRank, void *a, int64_t bRank,
                               void *b, int64_t rRank, void *r, int64_t cRank,
                               void *c) {
  matmul(ctx, CUDA_R_32F, ElemType::F32, "matmul_add_f32", aRank, a, bRank, b,
         cRank, c, /*accumulate=*/1, rRank, r);
}

void dtensor_rt_matmul_bias_bf16(void *ctx, int64_t aRank, void *a,
                                 int64_t bRank, void *b, int64_t biasRank,
                                 void *bias, int64_t cRank, void *c,
                                 int64_t activation) {
  matmul(ctx, CUDA_R_16BF, ElemType::BF16, "matmul_bias_bf16", aRank, a, bRank,
         b, cRank, c, /*accumulate=*/0, 0, nullptr, biasRank, bias, activation);
}

void dtensor_rt_matmul_bias_f16(void *ctx, int64_t aRank, void *a,
                                int64_t bRank, void *b, int64_t biasRank,
                                void *bias, int64_t cRank, void *c,
                                int64_t activation) {
  matmul(ctx, CUDA_R_16F, ElemType::F16, "matmul_bias_f16", aRank, a, bRank, b,
         cRank, c, /*accumulate=*/0, 0, nullptr, biasRank, bias, activation);
}

void dtensor_rt_matmul_bias_f32(void *ctx, int64_t aRank, void *a,
                                int64_t bRank, void *b, int64_t biasRank,
                                void *bias, int64_t cRank, void *c,
                                int64_t activation) {
  matmul(ctx, CUDA_R_32F, ElemType::F32, "matmul_bias_f32", aRank, a, bRank, b,
         cRank, c, /*accumulate=*/0, 0, nullptr, biasRank, bias, activation);
}

void dtensor_rt_matmul_act_bf16(void *ctx, int64_t aRank, void *a,
                                int64_t bRank, void *b, int64_t cRank, void *c,
                                int64_t activation) {
  matmul(ctx, CUDA_R_16BF, ElemType::BF16, "matmul_act_bf16", aRank, a, bRank,
         b, cRank, c, /*accumulate=*/0, 0, nullptr, 0, nullptr, activation);
}

void dtensor_rt_matmul_act_f16(void *ctx, int64_t aRank, void *a, int64_t bRank,
                               void *b, int64_t cRank, void *c,
                               int64_t activation) {
  matmul(ctx, CUDA_R_16F, ElemType::F16, "matmul_act_f16", aRank, a, bRank, b,
         cRank, c, /*accumulate=*/0, 0, nullptr, 0, nullptr, activation);
}

void dtensor_rt_matmul_act_f32(void *ctx, int64_t aRank, void *a, int64_t bRank,
                               void *b, int64_t cRank, void *c,
                               int64_t activation) {
  matmul(ctx, CUDA_R_32F, ElemType::F32, "matmul_act_f32", aRank, a, bRank, b,
         cRank, c, /*accumulate=*/0, 0, nullptr, 0, nullptr, activation);
}

float dtensor_rt_matmul_best_ms(void *ctx, int32_t type, int64_t batch,
                                int64_t m, int64_t n, int64_t k, void *a,
                                void *b, void *c, int32_t candidates,
                                int32_t repeats) {
  return bestMatmulMs(ctx, type, batch, m, n, k, a, b, c, candidates, repeats);
}

} // extern "C"
