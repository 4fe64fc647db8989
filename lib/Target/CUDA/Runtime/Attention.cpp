//===- Attention.cpp - dtensor_rt_attention_<T> ---------------------------===//
//
// O = softmax(scale * Q K^T [+ causal mask]) V on the compute stream, for
// the attention the CUDA lowering recognises (dtensor-cuda-fuse-attention),
// without a score matrix in memory: with cuDNN's fused flash attention
// (CuDNNGraph.h) where cuDNN loads (CuDNN.h) and accepts the problem, else
// with the runtime's own kernel (Attention.cu).
//
// Operands are memrefs in the ABI of Runtime.h: Q and O [S, H, D] or
// [B, S, H, D], K and V [Skv, H, D] or [B, Skv, H, D], any strides with a
// unit stride along D (Q, K, V are typically views of one fused qkv
// projection). D is 64 or 128, the element type bf16 or f16; a causal mask
// needs S == Skv (query i sees keys 0..i).
//
// Choice of path, per call: DTENSOR_ATTENTION=kernel takes the kernel;
// unset or =cudnn take cuDNN unless it cannot (not loadable, operands not
// 16-byte aligned, no plan for the shape, an execution error), in which
// case the kernel runs. DTENSOR_ATTENTION_VERBOSE=1 prints one line per
// shape and path saying which ran and why (cuDNN's status and the failing
// step); with DTENSOR_ATTENTION=cudnn a fallback is printed without it.
// DTENSOR_ATTENTION_VERBOSE=2 also traces each cuDNN stage before it
// runs (to place a crash inside cuDNN).
// dtensor_rt_attention_last returns the same note to a host.
//
// cuDNN plans: one per problem (SdpaProblem::key), built on the problem's
// first call: the heuristics' candidates are finalized in order and, unless
// DTENSOR_ATTENTION_AUTOTUNE=0 or the stream is being captured, the first
// kAutotunePlans of them are timed (median of kAutotuneRepeats after a
// warm-up) and the fastest kept. A problem cuDNN refuses is remembered and
// runs on the kernel without asking again. The workspace comes from the
// stream-ordered pool at each call (capturable). The first call of a shape
// builds plans, creates the handle and times with events: make it before
// a CUDA graph capture (as for matmuls). A first call inside a capture
// takes the first plan untimed (events would break the capture), but
// cuDNN's plan building is not known to be capture-safe.
//
//===----------------------------------------------------------------------===//

#include "CuDNNGraph.h"
#include "Driver.h"
#include "KernelArgs.h"
#include "Layouts.h"
#include "MemRef.h"

#pragma GCC visibility push(default)
#include "dtensor/Runtime/CUDARuntime.h"
#pragma GCC visibility pop

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

extern "C" const unsigned char dtensorCudaAttentionFatbin[];

namespace dtensor::rt::cuda {

namespace {

struct AttentionKernels {
  CUmodule module = nullptr;
  CUfunction kernel[2][2] = {}; // [bf16, f16][d64, d128]
};

const AttentionKernels &attentionKernels(const char *op) {
  static std::once_flag once;
  static AttentionKernels m;
  std::call_once(once, [op] {
    device(op);
    DTENSOR_CU(op, cuModuleLoadData, &m.module, dtensorCudaAttentionFatbin);
    const char *names[2][2] = {
        {"dtensor_attention_bf16_d64", "dtensor_attention_bf16_d128"},
        {"dtensor_attention_f16_d64", "dtensor_attention_f16_d128"}};
    int dims[2] = {64, 128};
    for (int t = 0; t < 2; ++t)
      for (int d = 0; d < 2; ++d) {
        DTENSOR_CU(op, cuModuleGetFunction, &m.kernel[t][d], m.module,
                   names[t][d]);
        DTENSOR_CU(op, cuFuncSetAttribute, m.kernel[t][d],
                   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                   dtensorAttentionSmemBytes(dims[d]));
      }
  });
  return m;
}

/// A [S, H, D] or [B, S, H, D] operand as [B, S, H, D].
StridedView decode4(int64_t rank, void *descriptor, const char *op,
                    const char *what) {
  StridedView v = decodeMemRef(rank, descriptor, 2, op, what);
  if (rank != 3 && rank != 4)
    cudaFatal(op, std::string(what) + " has rank " + std::to_string(rank) +
                      ", expected 3 ([S, H, D]) or 4 ([B, S, H, D])");
  if (rank == 3) {
    v.sizes.insert(v.sizes.begin(), 1);
    v.strides.insert(v.strides.begin(), 0);
  }
  return v;
}

/// The runtime's kernel (Attention.cu) on checked [B, S, H, D] views.
void launchKernel(DeviceState &dev, int typeSlot, const char *op,
                  const StridedView &qv, const StridedView &kv,
                  const StridedView &vv, const StridedView &ov, float scale,
                  bool causal) {
  int64_t batch = qv.sizes[0], sq = qv.sizes[1], heads = qv.sizes[2],
          d = qv.sizes[3], skv = kv.sizes[1];
  if (batch > 65535 || heads > 65535 ||
      (sq + DTENSOR_ATTENTION_ROWS - 1) / DTENSOR_ATTENTION_ROWS > INT32_MAX)
    cudaFatal(op, "too many batches, heads or rows for one launch");

  DTensorAttentionArgs args{};
  args.q = qv.data;
  args.k = kv.data;
  args.v = vv.data;
  args.o = ov.data;
  args.batch = batch;
  args.heads = heads;
  args.sq = sq;
  args.skv = skv;
  bool vectorized = true;
  const StridedView *views[4] = {&qv, &kv, &vv, &ov};
  int64_t *strides[4] = {args.qStrides, args.kStrides, args.vStrides,
                         args.oStrides};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      strides[i][j] = views[i]->strides[j];
      vectorized &= strides[i][j] % 8 == 0; // 16 bytes of 16-bit elements
    }
    vectorized &= reinterpret_cast<uintptr_t>(views[i]->data) % 16 == 0;
  }
  args.scale = scale;
  args.causal = causal;
  args.vectorized = vectorized;
  CUfunction fn = attentionKernels(op).kernel[typeSlot][d == 64 ? 0 : 1];
  void *params[] = {&args};
  DTENSOR_CU(op, cuLaunchKernel, fn,
             static_cast<unsigned>((sq + DTENSOR_ATTENTION_ROWS - 1) /
                                   DTENSOR_ATTENTION_ROWS),
             static_cast<unsigned>(heads), static_cast<unsigned>(batch),
             DTENSOR_ATTENTION_THREADS, 1, 1,
             static_cast<unsigned>(dtensorAttentionSmemBytes(int(d))),
             dev.compute, params, nullptr);
}

//===----------------------------------------------------------------------===//
// cuDNN
//===----------------------------------------------------------------------===//

constexpr int kAutotunePlans = 4;
constexpr int kAutotuneRepeats = 5;

/// One problem's cuDNN plan, or why cuDNN cannot run it.
struct CudnnEntry {
  std::unique_ptr<SdpaGraph> graph;
  SdpaPlan plan;
  std::string failure; // non-empty: run the kernel
  std::string summary; // the chosen engine, timings, refusals
};

struct CudnnAttention {
  bool started = false;
  const CudnnTable *table = nullptr;
  cudnnHandle_t handle = nullptr;
  std::string failure; // cuDNN unusable in this process: why
  std::unordered_map<std::string, CudnnEntry> entries;
};

/// DTENSOR_ATTENTION_VERBOSE: 0 (unset or other), 1 or 2.
int attentionVerbosity() {
  const char *level = std::getenv("DTENSOR_ATTENTION_VERBOSE");
  std::string value = level ? level : "";
  return value == "1" ? 1 : value == "2" ? 2 : 0;
}

/// "dtensor runtime: rank R: <op>: <text>" on stderr.
void printNote(const char *op, const std::string &text) {
  int64_t rank = messageRank();
  std::fprintf(stderr, "dtensor runtime: rank %s: %s: %s\n",
               rank >= 0 ? std::to_string(rank).c_str() : "?", op,
               text.c_str());
  std::fflush(stderr);
}

/// DTENSOR_ATTENTION_VERBOSE=2: "cuDNN stage: <what>" before a stage.
void traceStage(const char *op, const std::string &what) {
  if (attentionVerbosity() == 2)
    printNote(op, "cuDNN stage: " + what);
}

CudnnAttention &cudnnAttention(DeviceState &dev) {
  // Never destroyed: at exit, the dlopened cuDNN is finalized before this
  // library, so destroying descriptors then would call into a torn-down
  // cuDNN. The process's end releases everything.
  static CudnnAttention &st = *new CudnnAttention;
  if (st.started)
    return st;
  st.started = true;
  traceStage("attention", "loading cuDNN and creating its handle");
  std::string error;
  st.table = loadCudnn(error);
  if (!st.table) {
    st.failure = error;
    return st;
  }
  const CudnnTable &t = *st.table;
  cudnnStatus_t rc = t.cudnnCreate(&st.handle);
  if (rc != CUDNN_STATUS_SUCCESS) {
    st.failure = "cudnnCreate (cuDNN " + formatCudnnVersion(t.version) +
                 ", " + t.path + "): " + describeCudnn(t, rc);
    st.handle = nullptr;
    return st;
  }
  rc = t.cudnnSetStream(st.handle, dev.compute);
  if (rc != CUDNN_STATUS_SUCCESS)
    st.failure = "cudnnSetStream: " + describeCudnn(t, rc);
  return st;
}

std::string formatMs(float ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", ms);
  return text;
}

/// Builds the plans of `p` and chooses one (the fastest of the first
/// kAutotunePlans when timing is allowed, else the heuristics' first).
void buildEntry(CudnnAttention &st, CudnnEntry &entry, const SdpaProblem &p,
                void *q, void *k, void *v, void *o, float scale,
                const char *op) {
  bool capturing = computeStreamCapturing(op);
  const char *autotuneEnv = std::getenv("DTENSOR_ATTENTION_AUTOTUNE");
  bool autotune =
      !capturing && !(autotuneEnv && std::string(autotuneEnv) == "0");
  // The graph's forms, in order, until one gets plans (the index math only
  // exists with a causal mask).
  std::vector<SdpaIndexMath> forms{SdpaIndexMath::F32};
  if (p.causal)
    forms.push_back(SdpaIndexMath::I32);
  std::vector<SdpaPlan> plans;
  std::string refusals, failures;
  for (SdpaIndexMath form : forms) {
    entry.graph = std::make_unique<SdpaGraph>();
    std::string error, formRefusals;
    std::string where = p.describe() + ", " + describeIndexMath(form);
    traceStage(op, "tensors and operations of " + where);
    bool ok = buildSdpaOperations(*st.table, p, form, *entry.graph, error);
    if (ok) {
      traceStage(op, "operation graph of " + where);
      ok = buildSdpaOperationGraph(*entry.graph, st.handle, error);
    }
    if (ok) {
      traceStage(op, "heuristics and execution plans of " + where);
      ok = buildSdpaPlans(*entry.graph, st.handle,
                          autotune ? kAutotunePlans : 1, plans, formRefusals,
                          error);
    }
    std::string label = p.causal ? std::string(describeIndexMath(form)) + ": "
                                 : std::string();
    if (ok) {
      if (!formRefusals.empty())
        refusals = label + formRefusals;
      if (!failures.empty())
        refusals += (refusals.empty() ? "" : "; ") + failures;
      break;
    }
    failures += (failures.empty() ? "" : "; ") + label + error;
  }
  if (plans.empty()) {
    entry.failure = failures;
    return;
  }
  size_t best = 0;
  std::string timings;
  if (plans.size() > 1) {
    int64_t wsBytes = 0;
    for (const SdpaPlan &plan : plans)
      wsBytes = std::max(wsBytes, plan.workspaceBytes);
    void *ws = wsBytes ? allocAsync(size_t(wsBytes), op,
                                    "cuDNN attention autotune workspace")
                       : nullptr;
    float bestMs = -1;
    for (size_t i = 0; i < plans.size(); ++i) {
      traceStage(op, "timing " + plans[i].origin);
      std::string runError;
      float ms = medianStreamMs(
          [&] {
            return executeSdpa(*entry.graph, plans[i], st.handle, q, k, v, o,
                               scale, ws, runError);
          },
          kAutotuneRepeats, op);
      timings += (timings.empty() ? "" : ", ") + std::string("engine ") +
                 std::to_string(plans[i].engine) + " " +
                 (ms < 0 ? "failed: " + runError : formatMs(ms) + " ms");
      if (ms >= 0 && (bestMs < 0 || ms < bestMs)) {
        bestMs = ms;
        best = i;
      }
    }
    freeAsync(ws, op);
    if (bestMs < 0) {
      entry.failure = "every timed plan failed to execute (" + timings + ")";
      return;
    }
  }
  entry.plan = std::move(plans[best]);
  entry.summary = "engine " + std::to_string(entry.plan.engine) + " (" +
                  entry.plan.origin + "), workspace " +
                  std::to_string(entry.plan.workspaceBytes) + " bytes";
  if (!timings.empty())
    entry.summary += ", fastest of " + timings;
  else
    entry.summary += autotune ? ", the only plan that finalized"
                              : (capturing ? ", untimed (first call inside a "
                                             "graph capture)"
                                           : ", untimed "
                                             "(DTENSOR_ATTENTION_AUTOTUNE=0)");
  if (!refusals.empty())
    entry.summary += "; refused: " + refusals;
}

/// Runs `p` on cuDNN; false with `why` when it cannot (nothing enqueued
/// then). `note` describes the plan on success.
bool runCudnn(DeviceState &dev, const SdpaProblem &p, const StridedView &qv,
              const StridedView &kv, const StridedView &vv,
              const StridedView &ov, float scale, const char *op,
              std::string &why, std::string &note) {
  const void *ptrs[4] = {qv.data, kv.data, vv.data, ov.data};
  why = sdpaUnsupported(p, ptrs);
  if (!why.empty())
    return false;
  CudnnAttention &st = cudnnAttention(dev);
  if (!st.failure.empty()) {
    why = st.failure;
    return false;
  }
  auto [it, fresh] = st.entries.try_emplace(p.key());
  CudnnEntry &entry = it->second;
  if (fresh)
    buildEntry(st, entry, p, qv.data, kv.data, vv.data, ov.data, scale, op);
  if (!entry.failure.empty()) {
    why = entry.failure;
    return false;
  }
  int64_t wsBytes = entry.plan.workspaceBytes;
  void *ws = wsBytes
                 ? allocAsync(size_t(wsBytes), op, "cuDNN attention workspace")
                 : nullptr;
  std::string error;
  if (fresh)
    traceStage(op, "first execution of " + entry.plan.origin);
  bool ok = executeSdpa(*entry.graph, entry.plan, st.handle, qv.data, kv.data,
                        vv.data, ov.data, scale, ws, error);
  freeAsync(ws, op);
  if (!ok) {
    entry.failure = error;
    why = error;
    return false;
  }
  note = "cuDNN " + formatCudnnVersion(st.table->version) + " (" +
         st.table->path + "), " + entry.summary;
  return true;
}

/// The last call's path and note (dtensor_rt_attention_last), and the
/// (path, problem) pairs already noted on stderr.
struct AttentionRecord {
  int32_t path = -1;
  std::string note;
  std::unordered_set<std::string> printed;
};

AttentionRecord &attentionRecord() {
  static AttentionRecord record;
  return record;
}

/// Records the path of this call; prints its note once per path and
/// problem when asked to.
void record(int32_t path, const std::string &key, const std::string &note,
            bool print, const char *op) {
  AttentionRecord &r = attentionRecord();
  r.path = path;
  r.note = note;
  if (print && r.printed.insert(std::to_string(path) + key).second)
    printNote(op, note);
}

void attention(void *ctx, int typeSlot, const char *op, int64_t qRank, void *q,
               int64_t kRank, void *k, int64_t vRank, void *v, int64_t oRank,
               void *o, float scale, int64_t causal) {
  DeviceState &dev = device(op);
  if (ctx != &dev)
    cudaFatal(op, ctx ? "context argument is not dtensor_rt_context() of "
                        "this process"
                      : "null context (dtensor_rt_init not called?)");
  StridedView qv = decode4(qRank, q, op, "Q"), kv = decode4(kRank, k, op, "K"),
              vv = decode4(vRank, v, op, "V"), ov = decode4(oRank, o, op, "O");
  int64_t batch = qv.sizes[0], sq = qv.sizes[1], heads = qv.sizes[2],
          d = qv.sizes[3], skv = kv.sizes[1];
  if (ov.sizes != qv.sizes || kv.sizes != vv.sizes || kv.sizes[0] != batch ||
      kv.sizes[2] != heads || kv.sizes[3] != d)
    cudaFatal(op, "shapes do not match: Q " + formatShape(qv.sizes) + ", K " +
                      formatShape(kv.sizes) + ", V " + formatShape(vv.sizes) +
                      ", O " + formatShape(ov.sizes) +
                      " (expected Q, O [B,S,H,D] and K, V [B,Skv,H,D])");
  if (d != 64 && d != 128)
    cudaFatal(op, "head dim " + std::to_string(d) + " (supported: 64, 128)");
  if (causal && sq != skv)
    cudaFatal(op, "a causal mask needs as many queries as keys (" +
                      std::to_string(sq) + " and " + std::to_string(skv) + ")");
  for (StridedView *view : {&qv, &kv, &vv, &ov})
    if (view->strides[3] != 1 && view->sizes[3] > 1)
      cudaFatal(op, "the head dim must have unit stride");
  const char *modeEnv = std::getenv("DTENSOR_ATTENTION");
  std::string mode = modeEnv ? modeEnv : "";
  if (!mode.empty() && mode != "cudnn" && mode != "kernel")
    cudaFatal(op, "DTENSOR_ATTENTION='" + mode +
                      "' is neither 'cudnn' nor 'kernel'");
  if (batch == 0 || sq == 0 || heads == 0)
    return;
  bool verbose = attentionVerbosity() > 0;

  SdpaProblem p;
  p.type = typeSlot == 0 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  p.batch = batch;
  p.heads = heads;
  p.sq = sq;
  p.skv = skv;
  p.d = d;
  p.causal = causal != 0;
  const StridedView *views[4] = {&qv, &kv, &vv, &ov};
  int64_t *strides[4] = {p.q, p.k, p.v, p.o};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      strides[i][j] = views[i]->strides[j];
  canonicalizeSdpaStrides(p);
  std::string key = p.key(), why, note;
  if (mode != "kernel") {
    if (runCudnn(dev, p, qv, kv, vv, ov, scale, op, why, note)) {
      record(1, key, "cudnn for " + p.describe() + ": " + note, verbose, op);
      return;
    }
  } else {
    why = "DTENSOR_ATTENTION=kernel";
  }
  launchKernel(dev, typeSlot, op, qv, kv, vv, ov, scale, causal != 0);
  record(0, key,
         "kernel for " + p.describe() +
             (mode == "kernel" ? ": " : ": cuDNN not used: ") + why,
         verbose || mode == "cudnn", op);
}

int32_t lastAttention(void *ctx, char *note, int64_t capacity) {
  const char *op = "attention_last";
  if (ctx != &device(op))
    cudaFatal(op, "context argument is not dtensor_rt_context() of this "
                  "process");
  const AttentionRecord &r = attentionRecord();
  if (note && capacity > 0) {
    size_t n = std::min(r.note.size(), size_t(capacity - 1));
    std::memcpy(note, r.note.data(), n);
    note[n] = '\0';
  }
  return r.path;
}

} // namespace

} // namespace dtensor::rt::cuda

extern "C" {

void dtensor_rt_attention_bf16(void *ctx, int64_t qRank, void *q, int64_t kRank,
                               void *k, int64_t vRank, void *v, int64_t oRank,
                               void *o, float scale, int64_t causal) {
  dtensor::rt::cuda::attention(ctx, 0, "attention_bf16", qRank, q, kRank, k,
                               vRank, v, oRank, o, scale, causal);
}

void dtensor_rt_attention_f16(void *ctx, int64_t qRank, void *q, int64_t kRank,
                              void *k, int64_t vRank, void *v, int64_t oRank,
                              void *o, float scale, int64_t causal) {
  dtensor::rt::cuda::attention(ctx, 1, "attention_f16", qRank, q, kRank, k,
                               vRank, v, oRank, o, scale, causal);
}

int32_t dtensor_rt_attention_last(void *ctx, char *note, int64_t capacity) {
  return dtensor::rt::cuda::lastAttention(ctx, note, capacity);
}

} // extern "C"
