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
// Training: dtensor_rt_attention_stats_<T> is the same forward that also
// writes each row's softmax statistics (logsumexp of the scaled, masked
// scores, f32 [B, H, S]); dtensor_rt_attention_backward_<T> takes them
// with Q, K, V, O and dO and writes dQ, dK, dV, never materializing the
// scores either: cuDNN's SDPA backward graph (CuDNNGraph.h) where cuDNN
// takes it, else the runtime's backward kernels (Attention.cu). The same
// variables choose and report the path; each call records its own note.
// The two paths' statistics are the same quantity, so a forward on one
// and a backward on the other agree.
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

#include <algorithm>
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
  // [bf16, f16][d64, d128]
  CUfunction kernel[2][2] = {};
  CUfunction delta[2][2] = {}, backwardQ[2][2] = {}, backwardKV[2][2] = {};
};

const AttentionKernels &attentionKernels(const char *op) {
  static std::once_flag once;
  static AttentionKernels m;
  std::call_once(once, [op] {
    device(op);
    DTENSOR_CU(op, cuModuleLoadData, &m.module, dtensorCudaAttentionFatbin);
    const char *types[2] = {"bf16", "f16"};
    int dims[2] = {64, 128};
    auto get = [&](CUfunction &fn, const std::string &name, int smem) {
      DTENSOR_CU(op, cuModuleGetFunction, &fn, m.module, name.c_str());
      if (smem)
        DTENSOR_CU(op, cuFuncSetAttribute, fn,
                   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
    };
    for (int t = 0; t < 2; ++t)
      for (int d = 0; d < 2; ++d) {
        std::string suffix = std::string(types[t]) + "_d" +
                             std::to_string(dims[d]);
        get(m.kernel[t][d], "dtensor_attention_" + suffix,
            dtensorAttentionSmemBytes(dims[d]));
        get(m.delta[t][d], "dtensor_attention_delta_" + suffix, 0);
        get(m.backwardQ[t][d], "dtensor_attention_backward_q_" + suffix,
            dtensorAttentionBackwardSmemBytes(dims[d]));
        get(m.backwardKV[t][d], "dtensor_attention_backward_kv_" + suffix,
            dtensorAttentionBackwardSmemBytes(dims[d]));
      }
  });
  return m;
}

/// The statistics operand, f32 [H, S] or [B, H, S], dense, checked against
/// Q's [B, S, H, D].
float *decodeStats(int64_t rank, void *descriptor, const StridedView &qv,
                   const char *op) {
  StridedView view = decodeMemRef(rank, descriptor, 4, op, "the statistics");
  std::vector<int64_t> want{qv.sizes[0], qv.sizes[2], qv.sizes[1]};
  if (rank == 2)
    want.erase(want.begin());
  if ((rank != 2 && rank != 3) || view.sizes != want ||
      (rank == 2 && qv.sizes[0] != 1))
    cudaFatal(op, "the statistics have shape " + formatShape(view.sizes) +
                      ", expected " + formatShape(want) +
                      " ([B, H, S] of Q " + formatShape(qv.sizes) + ")");
  if (!view.isContiguous())
    cudaFatal(op, "the statistics must be dense and row-major");
  return reinterpret_cast<float *>(view.data);
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
                  const StridedView &vv, const StridedView &ov, float *lse,
                  float scale, bool causal) {
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
  args.lse = lse;
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

/// The runtime's backward kernels (Attention.cu) on checked views: delta
/// into a scratch buffer, then dQ and dK, dV.
void launchBackwardKernels(DeviceState &dev, int typeSlot, const char *op,
                           const StridedView *views[8], const float *lse,
                           float scale, bool causal) {
  const StridedView &qv = *views[0], &kv = *views[1];
  int64_t batch = qv.sizes[0], sq = qv.sizes[1], heads = qv.sizes[2],
          d = qv.sizes[3], skv = kv.sizes[1];
  int64_t rows = std::max(sq, skv);
  if (batch > 65535 || heads > 65535 ||
      (rows + DTENSOR_ATTENTION_ROWS - 1) / DTENSOR_ATTENTION_ROWS >
          INT32_MAX ||
      batch * heads * sq / (DTENSOR_ATTENTION_THREADS / 32) + 1 > INT32_MAX)
    cudaFatal(op, "too many batches, heads or rows for one launch");
  DTensorAttentionBackwardArgs args{};
  const void **in[5] = {&args.q, &args.k, &args.v, &args.o, &args.dO};
  void **out[3] = {&args.dq, &args.dk, &args.dv};
  int64_t *strides[8] = {args.qStrides,  args.kStrides,  args.vStrides,
                         args.oStrides,  args.dOStrides, args.dqStrides,
                         args.dkStrides, args.dvStrides};
  bool vectorized = true;
  for (int i = 0; i < 8; ++i) {
    if (i < 5)
      *in[i] = views[i]->data;
    else
      *out[i - 5] = views[i]->data;
    for (int j = 0; j < 3; ++j)
      strides[i][j] = views[i]->strides[j];
    // cp.async reads q, k, v, dO by 16 bytes.
    if (i == 0 || i == 1 || i == 2 || i == 4) {
      for (int j = 0; j < 3; ++j)
        vectorized &= strides[i][j] % 8 == 0;
      vectorized &= reinterpret_cast<uintptr_t>(views[i]->data) % 16 == 0;
    }
  }
  args.lse = lse;
  args.batch = batch;
  args.heads = heads;
  args.sq = sq;
  args.skv = skv;
  args.scale = scale;
  args.causal = causal;
  args.vectorized = vectorized;
  args.delta = static_cast<float *>(
      allocAsync(size_t(batch * heads * sq) * sizeof(float), op,
                 "attention backward row sums"));
  const AttentionKernels &m = attentionKernels(op);
  int dSlot = d == 64 ? 0 : 1;
  void *params[] = {&args};
  unsigned rowsPerBlock = DTENSOR_ATTENTION_THREADS / 32;
  DTENSOR_CU(op, cuLaunchKernel, m.delta[typeSlot][dSlot],
             static_cast<unsigned>((batch * heads * sq + rowsPerBlock - 1) /
                                   rowsPerBlock),
             1, 1, DTENSOR_ATTENTION_THREADS, 1, 1, 0, dev.compute, params,
             nullptr);
  unsigned smem = static_cast<unsigned>(dtensorAttentionBackwardSmemBytes(
      static_cast<int>(d)));
  auto blocks = [](int64_t n) {
    return static_cast<unsigned>((n + DTENSOR_ATTENTION_ROWS - 1) /
                                 DTENSOR_ATTENTION_ROWS);
  };
  DTENSOR_CU(op, cuLaunchKernel, m.backwardQ[typeSlot][dSlot], blocks(sq),
             static_cast<unsigned>(heads), static_cast<unsigned>(batch),
             DTENSOR_ATTENTION_THREADS, 1, 1, smem, dev.compute, params,
             nullptr);
  DTENSOR_CU(op, cuLaunchKernel, m.backwardKV[typeSlot][dSlot], blocks(skv),
             static_cast<unsigned>(heads), static_cast<unsigned>(batch),
             DTENSOR_ATTENTION_THREADS, 1, 1, smem, dev.compute, params,
             nullptr);
  freeAsync(args.delta, op);
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

/// Enqueues one cuDNN execution of `plan`: for the backward, in a scratch
/// of its own (allocated here, dQ_accum zeroed first) unless `scratch` is
/// given.
bool executeOnce(CudnnAttention &st, const SdpaGraph &graph,
                 const SdpaPlan &plan, const SdpaProblem &p,
                 SdpaPointers ptrs, float scale, void *ws, void *scratch,
                 const char *op, std::string &error) {
  void *own = nullptr;
  if (p.kind == SdpaKind::Backward) {
    if (!scratch)
      scratch = own = allocAsync(size_t(sdpaBackwardScratchBytes(p)), op,
                                 "cuDNN attention backward scratch");
    ptrs.scratch = scratch;
    DTENSOR_CU(op, cuMemsetD32Async,
               reinterpret_cast<CUdeviceptr>(static_cast<char *>(scratch) +
                                             sdpaBackwardAccumOffset(p)),
               0, size_t(p.batch * p.heads * p.sq * p.d),
               device(op).compute);
  }
  bool ok = executeSdpa(graph, plan, st.handle, ptrs, scale, ws, error);
  if (own)
    freeAsync(own, op);
  return ok;
}

/// A form of the graph to offer cuDNN.
struct GraphForm {
  SdpaIndexMath indexMath = SdpaIndexMath::F32;
  SdpaMaskOrder maskOrder = SdpaMaskOrder::AfterStats;
};

/// Builds the plans of `p` and chooses one (the fastest of the first
/// kAutotunePlans when timing is allowed, else the heuristics' first).
void buildEntry(CudnnAttention &st, CudnnEntry &entry, const SdpaProblem &p,
                const SdpaPointers &ptrs, float scale, const char *op) {
  bool capturing = computeStreamCapturing(op);
  const char *autotuneEnv = std::getenv("DTENSOR_ATTENTION_AUTOTUNE");
  bool autotune =
      !capturing && !(autotuneEnv && std::string(autotuneEnv) == "0");
  // The graph's forms, in order, until one gets plans (the index math and
  // the place of the mask only exist with a causal mask).
  std::vector<GraphForm> forms{{SdpaIndexMath::F32, SdpaMaskOrder::AfterStats}};
  if (p.causal) {
    forms.push_back({SdpaIndexMath::I32, SdpaMaskOrder::AfterStats});
    if (p.kind == SdpaKind::Backward) {
      forms.push_back({SdpaIndexMath::F32, SdpaMaskOrder::BeforeStats});
      forms.push_back({SdpaIndexMath::I32, SdpaMaskOrder::BeforeStats});
    }
  }
  auto describeForm = [&](const GraphForm &form) {
    std::string text = describeIndexMath(form.indexMath);
    if (p.kind == SdpaKind::Backward)
      text += std::string(", ") + describeMaskOrder(form.maskOrder);
    return text;
  };
  std::vector<SdpaPlan> plans;
  std::string refusals, failures;
  for (const GraphForm &form : forms) {
    entry.graph = std::make_unique<SdpaGraph>();
    std::string error, formRefusals;
    std::string where = p.describe() + ", " + describeForm(form);
    traceStage(op, "tensors and operations of " + where);
    bool ok = buildSdpaOperations(*st.table, p, form.indexMath, *entry.graph,
                                  error, form.maskOrder);
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
    std::string label = p.causal ? describeForm(form) + ": " : std::string();
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
    void *scratch = p.kind == SdpaKind::Backward
                        ? allocAsync(size_t(sdpaBackwardScratchBytes(p)), op,
                                     "cuDNN attention backward scratch")
                        : nullptr;
    float bestMs = -1;
    for (size_t i = 0; i < plans.size(); ++i) {
      traceStage(op, "timing " + plans[i].origin);
      std::string runError;
      float ms = medianStreamMs(
          [&] {
            return executeOnce(st, *entry.graph, plans[i], p, ptrs, scale, ws,
                               scratch, op, runError);
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
    freeAsync(scratch, op);
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
/// then). `note` describes the plan on success. `views` are the operands
/// in sdpaOperandCount order.
bool runCudnn(DeviceState &dev, const SdpaProblem &p,
              const StridedView *const *views, void *stats, float scale,
              const char *op, std::string &why, std::string &note) {
  const void *addresses[8] = {};
  for (int i = 0; i < sdpaOperandCount(p); ++i)
    addresses[i] = views[i]->data;
  why = sdpaUnsupported(p, addresses);
  if (!why.empty())
    return false;
  if (p.kind != SdpaKind::Inference &&
      reinterpret_cast<uintptr_t>(stats) % 16 != 0) {
    why = "the statistics are not 16-byte aligned";
    return false;
  }
  SdpaPointers ptrs;
  ptrs.q = views[0]->data;
  ptrs.k = views[1]->data;
  ptrs.v = views[2]->data;
  ptrs.o = views[3]->data;
  ptrs.stats = stats;
  if (p.kind == SdpaKind::Backward) {
    ptrs.dO = views[4]->data;
    ptrs.dq = views[5]->data;
    ptrs.dk = views[6]->data;
    ptrs.dv = views[7]->data;
  }
  CudnnAttention &st = cudnnAttention(dev);
  if (!st.failure.empty()) {
    why = st.failure;
    return false;
  }
  auto [it, fresh] = st.entries.try_emplace(p.key());
  CudnnEntry &entry = it->second;
  if (fresh)
    buildEntry(st, entry, p, ptrs, scale, op);
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
  bool ok = executeOnce(st, *entry.graph, entry.plan, p, ptrs, scale, ws,
                        nullptr, op, error);
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

/// Checks the context and returns the device.
DeviceState &checkedDevice(void *ctx, const char *op) {
  DeviceState &dev = device(op);
  if (ctx != &dev)
    cudaFatal(op, ctx ? "context argument is not dtensor_rt_context() of "
                        "this process"
                      : "null context (dtensor_rt_init not called?)");
  return dev;
}

/// Checks the shapes of Q, K, V, O (and the backward's dO, dQ, dK, dV when
/// `views` has 8): fatal on a mismatch.
void checkShapes(const StridedView *const *views, int count, int64_t causal,
                 const char *op) {
  const StridedView &qv = *views[0], &kv = *views[1], &vv = *views[2],
                    &ov = *views[3];
  int64_t batch = qv.sizes[0], sq = qv.sizes[1], heads = qv.sizes[2],
          d = qv.sizes[3], skv = kv.sizes[1];
  if (ov.sizes != qv.sizes || kv.sizes != vv.sizes || kv.sizes[0] != batch ||
      kv.sizes[2] != heads || kv.sizes[3] != d)
    cudaFatal(op, "shapes do not match: Q " + formatShape(qv.sizes) + ", K " +
                      formatShape(kv.sizes) + ", V " + formatShape(vv.sizes) +
                      ", O " + formatShape(ov.sizes) +
                      " (expected Q, O [B,S,H,D] and K, V [B,Skv,H,D])");
  if (count == 8 &&
      (views[4]->sizes != qv.sizes || views[5]->sizes != qv.sizes ||
       views[6]->sizes != kv.sizes || views[7]->sizes != kv.sizes))
    cudaFatal(op, "shapes do not match: dO " + formatShape(views[4]->sizes) +
                      ", dQ " + formatShape(views[5]->sizes) + ", dK " +
                      formatShape(views[6]->sizes) + ", dV " +
                      formatShape(views[7]->sizes) + " (expected dO, dQ " +
                      formatShape(qv.sizes) + " and dK, dV " +
                      formatShape(kv.sizes) + ")");
  if (d != 64 && d != 128)
    cudaFatal(op, "head dim " + std::to_string(d) + " (supported: 64, 128)");
  if (causal && sq != skv)
    cudaFatal(op, "a causal mask needs as many queries as keys (" +
                      std::to_string(sq) + " and " + std::to_string(skv) + ")");
  for (int i = 0; i < count; ++i)
    if (views[i]->strides[3] != 1 && views[i]->sizes[3] > 1)
      cudaFatal(op, "the head dim must have unit stride");
}

/// DTENSOR_ATTENTION: "", "cudnn" or "kernel"; fatal otherwise.
std::string attentionMode(const char *op) {
  const char *modeEnv = std::getenv("DTENSOR_ATTENTION");
  std::string mode = modeEnv ? modeEnv : "";
  if (!mode.empty() && mode != "cudnn" && mode != "kernel")
    cudaFatal(op, "DTENSOR_ATTENTION='" + mode +
                      "' is neither 'cudnn' nor 'kernel'");
  return mode;
}

/// The problem of checked views (sdpaOperandCount(kind) of them).
SdpaProblem makeProblem(SdpaKind kind, int typeSlot,
                        const StridedView *const *views, int64_t causal) {
  SdpaProblem p;
  p.kind = kind;
  p.type = typeSlot == 0 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  p.batch = views[0]->sizes[0];
  p.heads = views[0]->sizes[2];
  p.sq = views[0]->sizes[1];
  p.skv = views[1]->sizes[1];
  p.d = views[0]->sizes[3];
  p.causal = causal != 0;
  int64_t *strides[8] = {p.q, p.k, p.v, p.o, p.dO, p.dq, p.dk, p.dv};
  for (int i = 0; i < sdpaOperandCount(p); ++i)
    for (int j = 0; j < 3; ++j)
      strides[i][j] = views[i]->strides[j];
  canonicalizeSdpaStrides(p);
  return p;
}

/// The forward: inference (`stats` null) or training (it writes them).
void attention(void *ctx, int typeSlot, const char *op, int64_t qRank, void *q,
               int64_t kRank, void *k, int64_t vRank, void *v, int64_t oRank,
               void *o, int64_t statsRank, void *stats, float scale,
               int64_t causal) {
  DeviceState &dev = checkedDevice(ctx, op);
  StridedView qv = decode4(qRank, q, op, "Q"), kv = decode4(kRank, k, op, "K"),
              vv = decode4(vRank, v, op, "V"), ov = decode4(oRank, o, op, "O");
  const StridedView *views[4] = {&qv, &kv, &vv, &ov};
  checkShapes(views, 4, causal, op);
  float *lse = stats ? decodeStats(statsRank, stats, qv, op) : nullptr;
  std::string mode = attentionMode(op);
  if (qv.sizes[0] == 0 || qv.sizes[1] == 0 || qv.sizes[2] == 0)
    return;
  bool verbose = attentionVerbosity() > 0;
  SdpaProblem p = makeProblem(lse ? SdpaKind::Training : SdpaKind::Inference,
                              typeSlot, views, causal);
  std::string key = p.key(), why, note;
  if (mode != "kernel") {
    if (runCudnn(dev, p, views, lse, scale, op, why, note)) {
      record(1, key, "cudnn for " + p.describe() + ": " + note, verbose, op);
      return;
    }
  } else {
    why = "DTENSOR_ATTENTION=kernel";
  }
  launchKernel(dev, typeSlot, op, qv, kv, vv, ov, lse, scale, causal != 0);
  record(0, key,
         "kernel for " + p.describe() +
             (mode == "kernel" ? ": " : ": cuDNN not used: ") + why,
         verbose || mode == "cudnn", op);
}

/// The backward: dQ, dK, dV from Q, K, V, O, dO and the statistics.
void attentionBackward(void *ctx, int typeSlot, const char *op,
                       const int64_t ranks[8], void *const descriptors[8],
                       int64_t statsRank, void *stats, float scale,
                       int64_t causal) {
  DeviceState &dev = checkedDevice(ctx, op);
  const char *names[8] = {"Q", "K", "V", "O", "dO", "dQ", "dK", "dV"};
  StridedView decoded[8];
  const StridedView *views[8];
  for (int i = 0; i < 8; ++i) {
    decoded[i] = decode4(ranks[i], descriptors[i], op, names[i]);
    views[i] = &decoded[i];
  }
  checkShapes(views, 8, causal, op);
  const float *lse = decodeStats(statsRank, stats, decoded[0], op);
  std::string mode = attentionMode(op);
  if (decoded[0].sizes[0] == 0 || decoded[0].sizes[2] == 0)
    return;
  if (decoded[0].sizes[1] == 0 || decoded[1].sizes[1] == 0) {
    // No queries or no keys: every gradient is zero.
    for (int i = 5; i < 8; ++i)
      if (decoded[i].getNumElements() > 0)
        for (int64_t b = 0; b < decoded[i].sizes[0]; ++b)
          for (int64_t s = 0; s < decoded[i].sizes[1]; ++s)
            for (int64_t h = 0; h < decoded[i].sizes[2]; ++h)
              DTENSOR_CU(op, cuMemsetD16Async,
                         reinterpret_cast<CUdeviceptr>(
                             decoded[i].data +
                             2 * (b * decoded[i].strides[0] +
                                  s * decoded[i].strides[1] +
                                  h * decoded[i].strides[2])),
                         0, size_t(decoded[i].sizes[3]), dev.compute);
    return;
  }
  bool verbose = attentionVerbosity() > 0;
  SdpaProblem p = makeProblem(SdpaKind::Backward, typeSlot, views, causal);
  std::string key = p.key(), why, note;
  if (mode != "kernel") {
    if (runCudnn(dev, p, views, const_cast<float *>(lse), scale, op, why,
                 note)) {
      record(1, key, "cudnn for " + p.describe() + ": " + note, verbose, op);
      return;
    }
  } else {
    why = "DTENSOR_ATTENTION=kernel";
  }
  launchBackwardKernels(dev, typeSlot, op, views, lse, scale, causal != 0);
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
                               vRank, v, oRank, o, 0, nullptr, scale, causal);
}

void dtensor_rt_attention_f16(void *ctx, int64_t qRank, void *q, int64_t kRank,
                              void *k, int64_t vRank, void *v, int64_t oRank,
                              void *o, float scale, int64_t causal) {
  dtensor::rt::cuda::attention(ctx, 1, "attention_f16", qRank, q, kRank, k,
                               vRank, v, oRank, o, 0, nullptr, scale, causal);
}

void dtensor_rt_attention_stats_bf16(void *ctx, int64_t qRank, void *q,
                                     int64_t kRank, void *k, int64_t vRank,
                                     void *v, int64_t oRank, void *o,
                                     int64_t statsRank, void *stats,
                                     float scale, int64_t causal) {
  if (!stats)
    dtensor::rt::cuda::cudaFatal("attention_stats_bf16",
                                 "null statistics descriptor");
  dtensor::rt::cuda::attention(ctx, 0, "attention_stats_bf16", qRank, q,
                               kRank, k, vRank, v, oRank, o, statsRank, stats,
                               scale, causal);
}

void dtensor_rt_attention_stats_f16(void *ctx, int64_t qRank, void *q,
                                    int64_t kRank, void *k, int64_t vRank,
                                    void *v, int64_t oRank, void *o,
                                    int64_t statsRank, void *stats,
                                    float scale, int64_t causal) {
  if (!stats)
    dtensor::rt::cuda::cudaFatal("attention_stats_f16",
                                 "null statistics descriptor");
  dtensor::rt::cuda::attention(ctx, 1, "attention_stats_f16", qRank, q, kRank,
                               k, vRank, v, oRank, o, statsRank, stats, scale,
                               causal);
}

void dtensor_rt_attention_backward_bf16(
    void *ctx, int64_t qRank, void *q, int64_t kRank, void *k, int64_t vRank,
    void *v, int64_t oRank, void *o, int64_t dORank, void *dO,
    int64_t statsRank, void *stats, int64_t dqRank, void *dq, int64_t dkRank,
    void *dk, int64_t dvRank, void *dv, float scale, int64_t causal) {
  int64_t ranks[8] = {qRank, kRank, vRank, oRank, dORank, dqRank, dkRank,
                      dvRank};
  void *descriptors[8] = {q, k, v, o, dO, dq, dk, dv};
  dtensor::rt::cuda::attentionBackward(ctx, 0, "attention_backward_bf16",
                                       ranks, descriptors, statsRank, stats,
                                       scale, causal);
}

void dtensor_rt_attention_backward_f16(
    void *ctx, int64_t qRank, void *q, int64_t kRank, void *k, int64_t vRank,
    void *v, int64_t oRank, void *o, int64_t dORank, void *dO,
    int64_t statsRank, void *stats, int64_t dqRank, void *dq, int64_t dkRank,
    void *dk, int64_t dvRank, void *dv, float scale, int64_t causal) {
  int64_t ranks[8] = {qRank, kRank, vRank, oRank, dORank, dqRank, dkRank,
                      dvRank};
  void *descriptors[8] = {q, k, v, o, dO, dq, dk, dv};
  dtensor::rt::cuda::attentionBackward(ctx, 1, "attention_backward_f16",
                                       ranks, descriptors, statsRank, stats,
                                       scale, causal);
}

int32_t dtensor_rt_attention_last(void *ctx, char *note, int64_t capacity) {
  return dtensor::rt::cuda::lastAttention(ctx, note, capacity);
}

} // extern "C"
