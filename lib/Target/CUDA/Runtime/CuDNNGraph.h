//===- CuDNNGraph.h - cuDNN's fused attention as a backend graph -*- C++ -*-===//
//
// Forward scaled dot-product attention for inference as a cuDNN backend
// operation graph, in the form cuDNN's fused flash-attention engines
// recognise (the structure cudnn-frontend's SDPA node lowers to for cuDNN
// 9 before the unified softmax/mask operations of 9.21):
//
//   S  = Q . K^T                      matmul, f32 compute     [b,h,s,t] f32
//   S1 = S * scale                    pointwise MUL, by-value f32 scalar
//   (causal)  r = GEN_INDEX(S1, axis 2), c = GEN_INDEX(S1, axis 3)   i32
//             m = CMP_GE(r, c)                                  boolean
//             S1 = BINARY_SELECT(S1, -inf (by value), m)
//   M  = reduce MAX over t (S1)                                [b,h,s,1]
//   E  = EXP(S1 - M);  Z = reduce ADD over t (E)                [b,h,s,1]
//   L  = M + LOG(Z)                   the softmax statistics (virtual)
//   P  = E / Z                        in the I/O type (bf16/f16)
//   O  = P . V                        matmul, f32 compute
//
// Q, K, V and O are the caller's [B, S, H, D] views mapped to cuDNN's
// [b, h, s, d] dimensions with their real strides; K enters transposed,
// [b, h, d, t], by swapping its last two dimensions and strides. Every
// other tensor is virtual. The attention scale and -inf are by-value
// scalars passed in the variant pack at each execution, so one plan serves
// every scale.
//
// Every backend call goes through one checker that names the step
// ("tensor Q: set CUDNN_ATTR_TENSOR_STRIDES", "operation bmm1: finalize",
// "execution plan (heuristics mode A, config 2, engine 8): finalize") and
// cuDNN's status and last error message, so one failing run on a GPU
// machine tells which descriptor or attribute cuDNN refused.
//
// For training the forward also writes the statistics L (non-virtual, f32
// [b, h, s, 1]), and the backward is a second graph, the form
// cudnn-frontend's composite SDPA backward node lowers to before the
// unified SDPA_BWD operation of cuDNN 9.17 (the one PyTorch's SDPA
// backward runs on cuDNN 9):
//
//   D  = reduce ADD over d (dO * O) * 1     softmax_sum, f32 [b,h,s,1]
//                                           (non-virtual: our scratch)
//   S1 = (Q . K^T) * scale [masked]  E = EXP(S1 - L)   (the mask before
//        or after the subtraction: both forms are offered, see below)
//   dV = reshape(E)^T . dO                  P^T in the I/O type
//   dS = ((dO . V^T) - D) * E * scale
//   dK = reshape(dS)^T . Q                  dS^T in the I/O type
//   dQa = dS . reshape(K^T)                 f32 [b,h,s,d] (our scratch,
//   dQ = IDENTITY(dQa)                      zeroed before each run)
//
// with dO, dQ, dK, dV the caller's [B, S, H, D] views like Q, K, V, O.
//
// Building the tensors and operations needs no GPU and no handle (tested
// on machines without one); the operation graph, the heuristics, the plans
// and execution need a cuDNN handle, hence a device.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_TARGET_CUDA_RUNTIME_CUDNNGRAPH_H
#define DTENSOR_LIB_TARGET_CUDA_RUNTIME_CUDNNGRAPH_H

#include "CuDNN.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtensor::rt::cuda {

/// Which graph: the forward for inference (statistics virtual), the
/// forward for training (it writes the statistics), or the backward.
enum class SdpaKind { Inference, Training, Backward };

/// One attention problem: the I/O type, sizes, and the strides (elements)
/// of the caller's [B, S, H, D] views along B, S and H (D has stride 1).
struct SdpaProblem {
  SdpaKind kind = SdpaKind::Inference;
  cudnnDataType_t type = CUDNN_DATA_BFLOAT16; // or CUDNN_DATA_HALF
  int64_t batch = 0, heads = 0, sq = 0, skv = 0, d = 0;
  int64_t q[3] = {}, k[3] = {}, v[3] = {}, o[3] = {}; // B, S, H strides
  /// The backward's: dO and dQ like Q, dK and dV like K.
  int64_t dO[3] = {}, dq[3] = {}, dk[3] = {}, dv[3] = {};
  bool causal = false;

  /// The cache key: everything a plan depends on (not the scale, which is
  /// a by-value input of every execution, nor the pointers).
  std::string key() const;
  /// "B1 S4096 Skv4096 H8 D128 bf16 causal" (+ " training"/" backward").
  std::string describe() const;
};

/// The operands of `p`'s graph that the caller binds: Q, K, V, O (4), and
/// for the backward also dO, dQ, dK, dV (8).
int sdpaOperandCount(const SdpaProblem &p);

/// Gives every dimension of size 1 of the views a canonical stride
/// (the view's extent; rank-3 operands come with batch stride 0), so that
/// equal layouts get equal keys and cuDNN sees no zero stride.
void canonicalizeSdpaStrides(SdpaProblem &p);

/// Why cuDNN's fused attention cannot take `p` with these operand
/// addresses (sdpaOperandCount of them, in its order), or an empty string:
/// the checks of cudnn-frontend's SDPA support surface for Hopper bf16/f16
/// (head dim a multiple of 8 up to 256) and 16-byte alignment of the
/// operands' addresses and strides.
std::string sdpaUnsupported(const SdpaProblem &p, const void *const *ptrs);

/// A backend descriptor owned through the loaded table.
class CudnnDescriptor {
public:
  CudnnDescriptor() = default;
  CudnnDescriptor(const CudnnTable *table, cudnnBackendDescriptor_t desc)
      : table(table), desc(desc) {}
  CudnnDescriptor(CudnnDescriptor &&other) noexcept
      : table(other.table), desc(other.desc) {
    other.desc = nullptr;
  }
  CudnnDescriptor &operator=(CudnnDescriptor &&other) noexcept;
  CudnnDescriptor(const CudnnDescriptor &) = delete;
  CudnnDescriptor &operator=(const CudnnDescriptor &) = delete;
  ~CudnnDescriptor();
  cudnnBackendDescriptor_t get() const { return desc; }

private:
  const CudnnTable *table = nullptr;
  cudnnBackendDescriptor_t desc = nullptr;
};

/// The tensors, operations and (once a handle is given) the operation
/// graph of one SdpaProblem. Owns every descriptor: plans built from it
/// keep it alive with them.
struct SdpaGraph {
  const CudnnTable *table = nullptr;
  SdpaKind kind = SdpaKind::Inference;
  bool causal = false;
  float negInf = 0; // the masked score, passed by value at each execution
  int64_t accumOffset = 0; // backward: dQ_accum's offset in the scratch
  /// The tensors and the matmul, pointwise and reduction descriptors.
  std::vector<CudnnDescriptor> owned;
  std::vector<CudnnDescriptor> operations; // in graph order
  std::vector<std::string> operationNames; // parallel to `operations`
  CudnnDescriptor operationGraph;
};

/// Unique ids of the tensors an execution binds.
enum SdpaUid : int64_t {
  kSdpaQ = 1,
  kSdpaK = 2,
  kSdpaV = 3,
  kSdpaO = 4,
  kSdpaScale = 5,
  kSdpaNegInf = 6,
  kSdpaStats = 7,       // training forward and backward: L, f32 [b,h,s,1]
  kSdpaDO = 8,          // backward from here on
  kSdpaDQ = 9,
  kSdpaDK = 10,
  kSdpaDV = 11,
  kSdpaOne = 12,        // by value: 1.0f (the dropout-less scale of D)
  kSdpaSoftmaxSum = 13, // D = rowsum(dO * O), f32 [b,h,s,1], scratch
  kSdpaDQAccum = 14,    // f32 [b,h,s,d] dense, scratch, zeroed per run
};

/// Where the causal mask goes in the backward graph: on the scaled scores
/// before the statistics are subtracted (as in the forward, and as
/// cudnn-frontend's backward wrote it until its diagonal-band masks), or
/// after (as it writes it now). The same values either way; Attention.cpp
/// offers cuDNN both, in this order.
enum class SdpaMaskOrder { AfterStats, BeforeStats };

/// "mask after the statistics", "mask before the statistics".
const char *describeMaskOrder(SdpaMaskOrder order);

/// How the causal mask computes its row and column indices: GEN_INDEX in
/// f32, as cudnn-frontend writes it today, or in i32, as its releases up
/// to 1.5 did. Both are kept so that a cuDNN that does not fuse the one
/// may be offered the other (Attention.cpp tries them in this order).
enum class SdpaIndexMath { F32, I32 };

/// "f32 GEN_INDEX", "i32 GEN_INDEX".
const char *describeIndexMath(SdpaIndexMath math);

/// Creates and finalizes every tensor and operation of `p`'s graph (the
/// forward or, for SdpaKind::Backward, the backward; `maskOrder` matters
/// only there). No handle, no device needed. False with `error` naming the
/// failing step.
bool buildSdpaOperations(const CudnnTable &table, const SdpaProblem &p,
                         SdpaIndexMath indexMath, SdpaGraph &graph,
                         std::string &error,
                         SdpaMaskOrder maskOrder = SdpaMaskOrder::AfterStats);

/// Bytes of the backward's own scratch (softmax_sum, then dQ_accum, each
/// 256-byte aligned) that an execution needs besides the plan's workspace.
int64_t sdpaBackwardScratchBytes(const SdpaProblem &p);
/// The offset of dQ_accum in that scratch (its B*H*S*D floats are zeroed
/// before each execution).
int64_t sdpaBackwardAccumOffset(const SdpaProblem &p);

/// Finalizes the operation graph of built operations on `handle`.
bool buildSdpaOperationGraph(SdpaGraph &graph, cudnnHandle_t handle,
                             std::string &error);

/// One finalized execution plan.
struct SdpaPlan {
  CudnnDescriptor config; // the engine configuration it was built from
  CudnnDescriptor plan;
  int64_t workspaceBytes = 0;
  int64_t engine = -1; // cuDNN's global engine index, -1 if unknown
  std::string origin;  // "heuristics mode A, config 0"
};

/// Asks cuDNN's heuristics (mode A, then the fallback mode if mode A gives
/// nothing that finalizes) for engine configurations and finalizes them
/// into plans in the heuristics' order, until `wanted` plans finalized.
/// False with `error` (every refusal, by step) when none finalized;
/// `refusals` lists the configurations cuDNN refused also on success.
bool buildSdpaPlans(SdpaGraph &graph, cudnnHandle_t handle, int wanted,
                    std::vector<SdpaPlan> &plans, std::string &refusals,
                    std::string &error);

/// The device pointers of one execution (those of the graph's kind).
struct SdpaPointers {
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  void *stats = nullptr;                  // training and backward
  void *dO = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr;
  void *scratch = nullptr; // backward: sdpaBackwardScratchBytes, dQ_accum
                           // zeroed by the caller
};

/// Enqueues one execution of `plan` on the handle's stream.
bool executeSdpa(const SdpaGraph &graph, const SdpaPlan &plan,
                 cudnnHandle_t handle, const SdpaPointers &ptrs, float scale,
                 void *workspace, std::string &error);

} // namespace dtensor::rt::cuda

#endif // DTENSOR_LIB_TARGET_CUDA_RUNTIME_CUDNNGRAPH_H
