//===- Matmul.cpp - dtensor_rt_matmul_<T> over cuBLASLt -------------------===//
//
// C = A.B (accumulate == 0) or C += A.B on the compute stream.
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
// accumulate) the descriptors and the algorithm are built once and cached:
// the heuristic's first choice, or with DTENSOR_MATMUL_AUTOTUNE=1 the
// fastest of its first 8 (each timed once per plan, on a scratch output so
// that C is untouched). Workspace: 32 MiB, allocated once.
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
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace dtensor::rt::cuda {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;
constexpr int kAutotuneCandidates = 8;

void checkLt(cublasStatus_t status, const char *op, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  cudaFatal(op, std::string(call) +
                    " failed: " + cublasLtGetStatusName(status) + " (" +
                    cublasLtGetStatusString(status) + ")");
}

#define DTENSOR_LT(op, call, ...) checkLt(call(__VA_ARGS__), op, #call)

bool envFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && std::string(value) == "1";
}

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
};

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
  }
  return state;
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
            int64_t cRank, void *c, int64_t accumulate) {
  DeviceState &dev = device(op);
  if (ctx != &dev)
    cudaFatal(op, ctx ? "context argument is not dtensor_rt_context() of "
                        "this process"
                      : "null context (dtensor_rt_init not called?)");
  size_t elem = elemSize(elemType);
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
  if (batch == 0 || m == 0 || n == 0)
    return;
  if (k == 0) {
    if (!accumulate) {
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
  bool autotune = envFlag("DTENSOR_MATMUL_AUTOTUNE");

  MatmulState &st = matmulState(op);
  std::string key = std::to_string(static_cast<int>(dataType));
  for (int64_t v :
       {batch, m, n, k, int64_t(orient2[0].transposed), orient2[0].ld,
        int64_t(orient2[1].transposed), orient2[1].ld, strideA, strideB,
        int64_t(accumulate != 0), int64_t(tf32), int64_t(alignmentOf(av.data)),
        int64_t(alignmentOf(bv.data)), int64_t(alignmentOf(cv.data))})
    key += "," + std::to_string(v);

  auto found = st.plans.find(key);
  float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  if (found == st.plans.end()) {
    Plan p;
    cublasComputeType_t compute =
        tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    DTENSOR_LT(op, cublasLtMatmulDescCreate, &p.desc, compute, CUDA_R_32F);
    // cuBLASLt's A is our B, its B our A (C^T = B^T A^T); Layouts.h.
    GemmPlan g =
        planGemm(batch, m, k, n, orient2[0], strideA, orient2[1], strideB);
    cublasOperation_t opA = g.a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opB = g.b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    DTENSOR_LT(op, cublasLtMatmulDescSetAttribute, p.desc,
               CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA));
    DTENSOR_LT(op, cublasLtMatmulDescSetAttribute, p.desc,
               CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB));
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
    cublasLtMatmulPreference_t pref = nullptr;
    DTENSOR_LT(op, cublasLtMatmulPreferenceCreate, &pref);
    uint64_t wsBytes = kWorkspaceBytes;
    DTENSOR_LT(op, cublasLtMatmulPreferenceSetAttribute, pref,
               CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes,
               sizeof(wsBytes));
    uint32_t alignA = alignmentOf(bv.data), alignB = alignmentOf(av.data),
             alignC = alignmentOf(cv.data);
    DTENSOR_LT(op, cublasLtMatmulPreferenceSetAttribute, pref,
               CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA,
               sizeof(alignA));
    DTENSOR_LT(op, cublasLtMatmulPreferenceSetAttribute, pref,
               CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB,
               sizeof(alignB));
    DTENSOR_LT(op, cublasLtMatmulPreferenceSetAttribute, pref,
               CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
               sizeof(alignC));
    DTENSOR_LT(op, cublasLtMatmulPreferenceSetAttribute, pref,
               CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
               sizeof(alignC));
    cublasLtMatmulHeuristicResult_t results[kAutotuneCandidates] = {};
    int returned = 0;
    DTENSOR_LT(op, cublasLtMatmulAlgoGetHeuristic, st.handle, p.desc, p.layoutA,
               p.layoutB, p.layoutC, p.layoutC, pref,
               autotune ? kAutotuneCandidates : 1, results, &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    if (returned == 0)
      cudaFatal(op, "cuBLASLt has no algorithm for A " + formatShape(av.sizes) +
                        ", B " + formatShape(bv.sizes) + " (" + key + ")");
    p.algo = results[0].algo;
    if (autotune && returned > 1) {
      // Time each candidate once, into a scratch D so C stays as it is.
      void *scratch = allocAsync(cv.getNumBytes(), op, "autotune scratch");
      CUevent startEv = nullptr, stopEv = nullptr;
      DTENSOR_CU(op, cuEventCreate, &startEv, CU_EVENT_DEFAULT);
      DTENSOR_CU(op, cuEventCreate, &stopEv, CU_EVENT_DEFAULT);
      float best = -1;
      for (int i = 0; i < returned; ++i) {
        float ms = 0;
        bool ok = true;
        for (int rep = 0; rep < 2 && ok; ++rep) { // warm-up, then timed
          DTENSOR_CU(op, cuEventRecord, startEv, dev.compute);
          ok = cublasLtMatmul(st.handle, p.desc, &alpha, bv.data, p.layoutA,
                              av.data, p.layoutB, &beta, cv.data, p.layoutC,
                              scratch, p.layoutC, &results[i].algo,
                              st.workspace, kWorkspaceBytes,
                              dev.compute) == CUBLAS_STATUS_SUCCESS;
          DTENSOR_CU(op, cuEventRecord, stopEv, dev.compute);
        }
        if (!ok)
          continue;
        DTENSOR_CU(op, cuEventSynchronize, stopEv);
        DTENSOR_CU(op, cuEventElapsedTime, &ms, startEv, stopEv);
        if (best < 0 || ms < best) {
          best = ms;
          p.algo = results[i].algo;
        }
      }
      DTENSOR_CU(op, cuEventDestroy, startEv);
      DTENSOR_CU(op, cuEventDestroy, stopEv);
      freeAsync(scratch, op);
    }
    found = st.plans.emplace(key, p).first;
  }
  const Plan &p = found->second;
  DTENSOR_LT(op, cublasLtMatmul, st.handle, p.desc, &alpha, bv.data, p.layoutA,
             av.data, p.layoutB, &beta, cv.data, p.layoutC, cv.data, p.layoutC,
             &p.algo, st.workspace, kWorkspaceBytes, dev.compute);
  for (void *stage : staged)
    freeAsync(stage, op);
}

} // namespace

} // namespace dtensor::rt::cuda

using dtensor::rt::ElemType;
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

} // extern "C"
