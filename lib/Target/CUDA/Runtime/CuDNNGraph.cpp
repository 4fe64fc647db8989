//===- CuDNNGraph.cpp - cuDNN's fused attention as a backend graph --------===//

#include "CuDNNGraph.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

namespace dtensor::rt::cuda {

CudnnDescriptor &CudnnDescriptor::operator=(CudnnDescriptor &&other) noexcept {
  if (this != &other) {
    if (desc)
      table->cudnnBackendDestroyDescriptor(desc);
    table = other.table;
    desc = other.desc;
    other.desc = nullptr;
  }
  return *this;
}

CudnnDescriptor::~CudnnDescriptor() {
  if (desc)
    table->cudnnBackendDestroyDescriptor(desc);
}

namespace {

using Dims = std::array<int64_t, 4>;

constexpr int64_t kAlignmentBytes = 16;

/// Virtual tensors get ids from here on.
constexpr int64_t kFirstVirtualUid = 100;

const char *typeName(cudnnDataType_t type) {
  return type == CUDNN_DATA_BFLOAT16 ? "bf16"
         : type == CUDNN_DATA_HALF   ? "f16"
                                     : "?";
}

/// Records the first failing step of a sequence of backend calls; every
/// call after a failure is skipped.
class Builder {
public:
  Builder(const CudnnTable &table, std::string &error)
      : table(table), error(error) {}

  bool ok() const { return good; }

  bool check(cudnnStatus_t status, const std::string &step) {
    if (!good)
      return false;
    if (status == CUDNN_STATUS_SUCCESS)
      return true;
    error = step + ": " + describeCudnn(table, status);
    good = false;
    return false;
  }

  CudnnDescriptor create(cudnnBackendDescriptorType_t type,
                         const std::string &what) {
    cudnnBackendDescriptor_t desc = nullptr;
    if (!good)
      return {};
    if (!check(table.cudnnBackendCreateDescriptor(type, &desc),
               what + ": cudnnBackendCreateDescriptor"))
      return {};
    return CudnnDescriptor(&table, desc);
  }

  /// One attribute to set; a null `value` is left unset.
  struct Attribute {
    cudnnBackendAttributeName_t attribute;
    const char *name;
    cudnnBackendAttributeType_t type;
    int64_t count;
    const void *value;
  };

  /// Creates a descriptor of `type`, sets `attributes` and finalizes it.
  CudnnDescriptor make(cudnnBackendDescriptorType_t type,
                       const std::string &what,
                       std::initializer_list<Attribute> attributes) {
    CudnnDescriptor d = create(type, what);
    for (const Attribute &a : attributes)
      if (good && a.value)
        check(table.cudnnBackendSetAttribute(d.get(), a.attribute, a.type,
                                             a.count, a.value),
              what + ": set " + a.name);
    if (good)
      check(table.cudnnBackendFinalize(d.get()), what + ": finalize");
    return d;
  }

  const CudnnTable &table;

private:
  std::string &error;
  bool good = true;
};

/// A Builder::Attribute naming its attribute.
#define DTENSOR_CUDNN_ATTR(attr, type, count, value)                           \
  Builder::Attribute { attr, #attr, type, count, value }

/// A descriptor-valued attribute: `desc` (an lvalue), unset when null.
#define DTENSOR_CUDNN_PORT(attr, desc)                                         \
  DTENSOR_CUDNN_ATTR(attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,                   \
                     (desc) ? &(desc) : nullptr)

/// Builds the graph's tensors and operations into `graph`.
class SdpaBuilder {
public:
  SdpaBuilder(Builder &b, SdpaGraph &graph) : b(b), graph(graph) {}

  cudnnBackendDescriptor_t tensor(const std::string &name, int64_t uid,
                                  cudnnDataType_t type, const Dims &dims,
                                  const Dims &strides, bool isVirtual,
                                  bool byValue = false) {
    int64_t alignment = kAlignmentBytes;
    bool yes = true;
    return keep(b.make(
        CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor " + name,
        {DTENSOR_CUDNN_ATTR(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                            &type),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4,
                            dims.data()),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4,
                            strides.data()),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1,
                            &uid),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64,
                            1, &alignment),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1,
                            isVirtual ? &yes : nullptr),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN,
                            1, byValue ? &yes : nullptr)}));
  }

  /// A virtual tensor with the next free id.
  cudnnBackendDescriptor_t virtualTensor(const std::string &name,
                                         cudnnDataType_t type, const Dims &dims,
                                         const Dims &strides) {
    return tensor(name, nextVirtualUid++, type, dims, strides, true);
  }

  void matmul(const std::string &name, cudnnBackendDescriptor_t a,
              cudnnBackendDescriptor_t bMatrix, cudnnBackendDescriptor_t c) {
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t desc = keep(
        b.make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul descriptor of " + name,
               {DTENSOR_CUDNN_ATTR(CUDNN_ATTR_MATMUL_COMP_TYPE,
                                   CUDNN_TYPE_DATA_TYPE, 1, &f32)}));
    operation(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, name, "matmul",
              {DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a),
               DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_MATMUL_BDESC, bMatrix),
               DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c),
               DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_MATMUL_DESC, desc)});
  }

  /// y = mode(x[, in1][, mask]); `axis` (for GEN_INDEX) when non-negative.
  void pointwise(const std::string &name, cudnnPointwiseMode_t mode,
                 cudnnDataType_t compute, cudnnBackendDescriptor_t x,
                 cudnnBackendDescriptor_t in1, cudnnBackendDescriptor_t mask,
                 cudnnBackendDescriptor_t y, int64_t axis = -1) {
    cudnnBackendDescriptor_t desc = keep(b.make(
        CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise descriptor of " + name,
        {DTENSOR_CUDNN_ATTR(CUDNN_ATTR_POINTWISE_MODE,
                            CUDNN_TYPE_POINTWISE_MODE, 1, &mode),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_POINTWISE_MATH_PREC,
                            CUDNN_TYPE_DATA_TYPE, 1, &compute),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1,
                            axis >= 0 ? &axis : nullptr)}));
    // cudnn-frontend always sets both alphas (1 by default); so do we.
    float one = 1.0f;
    operation(
        CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, name, "pointwise",
        {DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc),
         DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x),
         DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, in1),
         DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, mask),
         DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1,
                            CUDNN_TYPE_FLOAT, 1, &one),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2,
                            CUDNN_TYPE_FLOAT, 1, &one)});
  }

  /// y = x in another shape, layout or type (a transpose of the scores).
  void reshape(const std::string &name, cudnnBackendDescriptor_t x,
               cudnnBackendDescriptor_t y) {
    operation(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, name, "reshape",
              {DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x),
               DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y)});
  }

  void reduction(const std::string &name, cudnnReduceTensorOp_t reduce,
                 cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t desc = keep(b.make(
        CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction descriptor of " + name,
        {DTENSOR_CUDNN_ATTR(CUDNN_ATTR_REDUCTION_OPERATOR,
                            CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &reduce),
         DTENSOR_CUDNN_ATTR(CUDNN_ATTR_REDUCTION_COMP_TYPE,
                            CUDNN_TYPE_DATA_TYPE, 1, &f32)}));
    operation(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, name, "reduction",
              {DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x),
               DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y),
               DTENSOR_CUDNN_PORT(CUDNN_ATTR_OPERATION_REDUCTION_DESC, desc)});
  }

private:
  cudnnBackendDescriptor_t keep(CudnnDescriptor d) {
    cudnnBackendDescriptor_t raw = d.get();
    graph.owned.push_back(std::move(d));
    return raw;
  }

  /// Creates, connects and finalizes operation `name` of `type`.
  void operation(cudnnBackendDescriptorType_t type, const std::string &name,
                 const char *kind,
                 std::initializer_list<Builder::Attribute> ports) {
    graph.operations.push_back(
        b.make(type, "operation " + name + " (" + kind + ")", ports));
    graph.operationNames.push_back(name);
  }

  Builder &b;
  SdpaGraph &graph;
  int64_t nextVirtualUid = kFirstVirtualUid;
};

/// cuDNN's [b, h, s, d] strides of a [B, S, H, D] view.
Dims bhsdStrides(const int64_t strides[3]) {
  return {strides[0], strides[2], strides[1], 1};
}

/// Canonical strides of one [B, S, H, D] view (canonicalizeSdpaStrides).
void canonicalize(int64_t strides[3], int64_t b, int64_t s, int64_t h,
                  int64_t d) {
  int64_t sizes[3] = {b, s, h};
  int64_t extent = d;
  for (int i = 0; i < 3; ++i)
    if (sizes[i] > 1)
      extent = std::max(extent, sizes[i] * strides[i]);
  for (int i = 0; i < 3; ++i)
    if (sizes[i] == 1)
      strides[i] = extent;
}

} // namespace

void canonicalizeSdpaStrides(SdpaProblem &p) {
  canonicalize(p.q, p.batch, p.sq, p.heads, p.d);
  canonicalize(p.o, p.batch, p.sq, p.heads, p.d);
  canonicalize(p.k, p.batch, p.skv, p.heads, p.d);
  canonicalize(p.v, p.batch, p.skv, p.heads, p.d);
  if (p.kind == SdpaKind::Backward) {
    canonicalize(p.dO, p.batch, p.sq, p.heads, p.d);
    canonicalize(p.dq, p.batch, p.sq, p.heads, p.d);
    canonicalize(p.dk, p.batch, p.skv, p.heads, p.d);
    canonicalize(p.dv, p.batch, p.skv, p.heads, p.d);
  }
}

int sdpaOperandCount(const SdpaProblem &p) {
  return p.kind == SdpaKind::Backward ? 8 : 4;
}

namespace {
/// The strides of `p`'s operands in sdpaOperandCount order.
std::array<const int64_t *, 8> operandStrides(const SdpaProblem &p) {
  return {p.q, p.k, p.v, p.o, p.dO, p.dq, p.dk, p.dv};
}
const char *const kOperandNames[8] = {"Q",  "K",  "V",  "O",
                                      "dO", "dQ", "dK", "dV"};
} // namespace

std::string SdpaProblem::key() const {
  std::string s = typeName(type);
  for (int64_t x :
       {int64_t(kind), batch, heads, sq, skv, d, int64_t(causal)})
    s += "," + std::to_string(x);
  std::array<const int64_t *, 8> strides = operandStrides(*this);
  for (int i = 0; i < sdpaOperandCount(*this); ++i)
    for (int j = 0; j < 3; ++j)
      s += "," + std::to_string(strides[i][j]);
  return s;
}

std::string SdpaProblem::describe() const {
  return "B" + std::to_string(batch) + " S" + std::to_string(sq) + " Skv" +
         std::to_string(skv) + " H" + std::to_string(heads) + " D" +
         std::to_string(d) + " " + typeName(type) +
         (causal ? " causal" : " non-causal") +
         (kind == SdpaKind::Training   ? " training"
          : kind == SdpaKind::Backward ? " backward"
                                       : "");
}

std::string sdpaUnsupported(const SdpaProblem &p, const void *const *ptrs) {
  if (p.type != CUDNN_DATA_BFLOAT16 && p.type != CUDNN_DATA_HALF)
    return "element type is not bf16 or f16";
  if (p.d % 8 != 0 || p.d > 256)
    return "head dim " + std::to_string(p.d) +
           " (cuDNN: a multiple of 8, at most 256)";
  const char *const *names = kOperandNames;
  std::array<const int64_t *, 8> strides = operandStrides(p);
  // As PyTorch's cuDNN attention backward: dO laid out like O.
  if (p.kind == SdpaKind::Backward &&
      !std::equal(p.o, p.o + 3, p.dO))
    return "dO is not laid out like O (strides " + std::to_string(p.dO[0]) +
           ", " + std::to_string(p.dO[1]) + ", " + std::to_string(p.dO[2]) +
           " against " + std::to_string(p.o[0]) + ", " +
           std::to_string(p.o[1]) + ", " + std::to_string(p.o[2]) + ")";
  for (int i = 0; i < sdpaOperandCount(p); ++i) {
    if (reinterpret_cast<uintptr_t>(ptrs[i]) % kAlignmentBytes != 0)
      return std::string(names[i]) + " is not 16-byte aligned";
    for (int j = 0; j < 3; ++j)
      if (strides[i][j] % (kAlignmentBytes / 2) != 0)
        return std::string(names[i]) + " has stride " +
               std::to_string(strides[i][j]) +
               ", not a multiple of 16 bytes";
  }
  return std::string();
}

const char *describeIndexMath(SdpaIndexMath math) {
  return math == SdpaIndexMath::F32 ? "f32 GEN_INDEX" : "i32 GEN_INDEX";
}

const char *describeMaskOrder(SdpaMaskOrder order) {
  return order == SdpaMaskOrder::AfterStats ? "mask after the statistics"
                                            : "mask before the statistics";
}

namespace {
constexpr int64_t kScratchAlignment = 256;
int64_t alignScratch(int64_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment *
         kScratchAlignment;
}

/// The causal mask of `scores` (GEN_INDEX of its rows and columns, CMP_GE,
/// BINARY_SELECT with the by-value -inf): the masked scores.
cudnnBackendDescriptor_t causalMask(SdpaBuilder &g, SdpaIndexMath indexMath,
                                    cudnnBackendDescriptor_t scores,
                                    const Dims &dims, const Dims &strides) {
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const Dims scalar{1, 1, 1, 1};
  auto negInf = g.tensor("-inf (by value)", kSdpaNegInf, f32, scalar, scalar,
                         false, true);
  auto row = g.virtualTensor("row index", CUDNN_DATA_INT32, dims, strides);
  cudnnDataType_t indexType =
      indexMath == SdpaIndexMath::F32 ? f32 : CUDNN_DATA_INT32;
  g.pointwise("gen_row_index", CUDNN_POINTWISE_GEN_INDEX, indexType, scores,
              nullptr, nullptr, row, /*axis=*/2);
  auto col = g.virtualTensor("column index", CUDNN_DATA_INT32, dims, strides);
  g.pointwise("gen_col_index", CUDNN_POINTWISE_GEN_INDEX, indexType, scores,
              nullptr, nullptr, col, /*axis=*/3);
  auto keep =
      g.virtualTensor("row >= column", CUDNN_DATA_BOOLEAN, dims, strides);
  g.pointwise("causal row >= column", CUDNN_POINTWISE_CMP_GE,
              CUDNN_DATA_BOOLEAN, row, col, nullptr, keep);
  auto masked = g.virtualTensor("masked S", f32, dims, strides);
  g.pointwise("causal binary_select", CUDNN_POINTWISE_BINARY_SELECT, f32,
              scores, negInf, keep, masked);
  return masked;
}

bool buildBackward(const CudnnTable &table, const SdpaProblem &p,
                   SdpaIndexMath indexMath, SdpaMaskOrder maskOrder,
                   SdpaGraph &graph, std::string &error) {
  Builder b(table, error);
  SdpaBuilder g(b, graph);
  const int64_t B = p.batch, H = p.heads, S = p.sq, T = p.skv, D = p.d;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT, io = p.type;
  const Dims scoreDims{B, H, S, T}, scoreStrides{H * S * T, S * T, T, 1};
  // The scores transposed: [b, h, t, s] over the same memory.
  const Dims scoreTDims{B, H, T, S}, scoreTStrides{H * S * T, S * T, 1, T};
  const Dims rowDims{B, H, S, 1}, rowStrides{H * S, S, 1, 1};
  const Dims scalar{1, 1, 1, 1};
  auto swapped = [](const int64_t strides[3]) {
    Dims t = bhsdStrides(strides);
    std::swap(t[2], t[3]);
    return t;
  };

  auto q = g.tensor("Q", kSdpaQ, io, {B, H, S, D}, bhsdStrides(p.q), false);
  auto kT = g.tensor("K^T", kSdpaK, io, {B, H, D, T}, swapped(p.k), false);
  auto vT = g.tensor("V^T", kSdpaV, io, {B, H, D, T}, swapped(p.v), false);
  auto o = g.tensor("O", kSdpaO, io, {B, H, S, D}, bhsdStrides(p.o), false);
  auto dO =
      g.tensor("dO", kSdpaDO, io, {B, H, S, D}, bhsdStrides(p.dO), false);
  auto stats = g.tensor("Stats", kSdpaStats, f32, rowDims, rowStrides, false);
  auto dQ =
      g.tensor("dQ", kSdpaDQ, io, {B, H, S, D}, bhsdStrides(p.dq), false);
  auto dK =
      g.tensor("dK", kSdpaDK, io, {B, H, T, D}, bhsdStrides(p.dk), false);
  auto dV =
      g.tensor("dV", kSdpaDV, io, {B, H, T, D}, bhsdStrides(p.dv), false);
  auto scale = g.tensor("scale (by value)", kSdpaScale, f32, scalar, scalar,
                        false, true);
  auto one =
      g.tensor("1 (by value)", kSdpaOne, f32, scalar, scalar, false, true);
  auto softmaxSum = g.tensor("softmax_sum", kSdpaSoftmaxSum, f32, rowDims,
                             rowStrides, false);
  auto dQAccum = g.tensor("dQ_accum", kSdpaDQAccum, f32, {B, H, S, D},
                          {H * S * D, S * D, D, 1}, false);

  // softmax_sum = rowsum(dO * O) * 1.
  auto dOO = g.virtualTensor("dO*O", f32, {B, H, S, D},
                             {H * S * D, S * D, H * D, 1});
  g.pointwise("mul_dO_O", CUDNN_POINTWISE_MUL, f32, dO, o, nullptr, dOO);
  auto rowDot = g.virtualTensor("rowsum(dO*O)", f32, rowDims, rowStrides);
  g.reduction("reduce_dO_o", CUDNN_REDUCE_TENSOR_ADD, dOO, rowDot);
  g.pointwise("scale_dropout_inv", CUDNN_POINTWISE_MUL, f32, rowDot, one,
              nullptr, softmaxSum);

  // E = exp(S * scale [masked] - L): the probabilities, recomputed.
  auto s = g.virtualTensor("S", f32, scoreDims, scoreStrides);
  g.matmul("matmul_Q_KT", q, kT, s);
  auto logits = g.virtualTensor("S*scale", f32, scoreDims, scoreStrides);
  g.pointwise("mul_s_attn_scale", CUDNN_POINTWISE_MUL, f32, s, scale, nullptr,
              logits);
  if (p.causal && maskOrder == SdpaMaskOrder::BeforeStats)
    logits = causalMask(g, indexMath, logits, scoreDims, scoreStrides);
  auto shifted = g.virtualTensor("S - L", f32, scoreDims, scoreStrides);
  g.pointwise("sub_s_m", CUDNN_POINTWISE_SUB, f32, logits, stats, nullptr,
              shifted);
  if (p.causal && maskOrder == SdpaMaskOrder::AfterStats)
    shifted = causalMask(g, indexMath, shifted, scoreDims, scoreStrides);
  auto e = g.virtualTensor("E = exp(S - L)", f32, scoreDims, scoreStrides);
  g.pointwise("exp_s", CUDNN_POINTWISE_EXP, f32, shifted, nullptr, nullptr,
              e);

  // dV = E^T . dO (E^T in the I/O type).
  auto pT = g.virtualTensor("P^T", io, scoreTDims, scoreTStrides);
  g.reshape("reshape_p", e, pT);
  g.matmul("matmul_pT_dO", pT, dO, dV);

  // dS = (dO . V^T - softmax_sum) * E * scale.
  auto dP = g.virtualTensor("dP", f32, scoreDims, scoreStrides);
  g.matmul("matmul_dO_VT", dO, vT, dP);
  auto centered =
      g.virtualTensor("dP - softmax_sum", f32, scoreDims, scoreStrides);
  g.pointwise("sub_dP_softmax_sum", CUDNN_POINTWISE_SUB, f32, dP, softmaxSum,
              nullptr, centered);
  auto dPE = g.virtualTensor("(dP - softmax_sum) * E", f32, scoreDims,
                             scoreStrides);
  g.pointwise("mul_dP_exp_s", CUDNN_POINTWISE_MUL, f32, centered, e, nullptr,
              dPE);
  auto dS = g.virtualTensor("dS", f32, scoreDims, scoreStrides);
  g.pointwise("mul_dS_attn_scale", CUDNN_POINTWISE_MUL, f32, dPE, scale,
              nullptr, dS);

  // dK = dS^T . Q (dS^T in the I/O type).
  auto dST = g.virtualTensor("dS^T", io, scoreTDims, scoreTStrides);
  g.reshape("reshape_dS", dS, dST);
  g.matmul("matmul_dST_Q", dST, q, dK);

  // dQ = dS . K, accumulated in f32, then converted.
  auto k = g.virtualTensor("K", f32, {B, H, T, D}, bhsdStrides(p.k));
  g.reshape("reshape_k", kT, k);
  g.matmul("matmul_dS_K", dS, k, dQAccum);
  g.pointwise("identity_dQ", CUDNN_POINTWISE_IDENTITY, f32, dQAccum, nullptr,
              nullptr, dQ);
  return b.ok();
}
} // namespace

int64_t sdpaBackwardAccumOffset(const SdpaProblem &p) {
  return alignScratch(p.batch * p.heads * p.sq * int64_t(sizeof(float)));
}

int64_t sdpaBackwardScratchBytes(const SdpaProblem &p) {
  return sdpaBackwardAccumOffset(p) +
         alignScratch(p.batch * p.heads * p.sq * p.d *
                      int64_t(sizeof(float)));
}

bool buildSdpaOperations(const CudnnTable &table, const SdpaProblem &p,
                         SdpaIndexMath indexMath, SdpaGraph &graph,
                         std::string &error, SdpaMaskOrder maskOrder) {
  graph.table = &table;
  graph.kind = p.kind;
  graph.causal = p.causal;
  graph.accumOffset = sdpaBackwardAccumOffset(p);
  // cudnn-frontend masks with -inf from cuDNN 9.10 on, before with the
  // lowest finite float.
  graph.negInf = table.version >= 91000
                     ? -std::numeric_limits<float>::infinity()
                     : std::numeric_limits<float>::lowest();
  if (p.kind == SdpaKind::Backward)
    return buildBackward(table, p, indexMath, maskOrder, graph, error);
  Builder b(table, error);
  SdpaBuilder g(b, graph);
  const int64_t B = p.batch, H = p.heads, S = p.sq, T = p.skv, D = p.d;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT, io = p.type;
  const Dims scoreDims{B, H, S, T}, scoreStrides{H * S * T, S * T, T, 1};
  const Dims rowDims{B, H, S, 1}, rowStrides{H * S, S, 1, 1};
  const Dims scalar{1, 1, 1, 1};

  auto q = g.tensor("Q", kSdpaQ, io, {B, H, S, D}, bhsdStrides(p.q), false);
  Dims kStrides = bhsdStrides(p.k);
  std::swap(kStrides[2], kStrides[3]);
  auto kT = g.tensor("K^T", kSdpaK, io, {B, H, D, T}, kStrides, false);
  auto v = g.tensor("V", kSdpaV, io, {B, H, T, D}, bhsdStrides(p.v), false);
  auto o = g.tensor("O", kSdpaO, io, {B, H, S, D}, bhsdStrides(p.o), false);
  auto scale = g.tensor("scale (by value)", kSdpaScale, f32, scalar, scalar,
                        false, true);

  auto s = g.virtualTensor("S", f32, scoreDims, scoreStrides);
  g.matmul("bmm1 (S = Q K^T)", q, kT, s);
  auto scaled = g.virtualTensor("S*scale", f32, scoreDims, scoreStrides);
  g.pointwise("attn_scale", CUDNN_POINTWISE_MUL, f32, s, scale, nullptr,
              scaled);
  auto logits = scaled;
  if (p.causal)
    logits = causalMask(g, indexMath, scaled, scoreDims, scoreStrides);
  auto rowMax = g.virtualTensor("row max", f32, rowDims, rowStrides);
  g.reduction("softmax max", CUDNN_REDUCE_TENSOR_MAX, logits, rowMax);
  auto shifted = g.virtualTensor("S - max", f32, scoreDims, scoreStrides);
  g.pointwise("softmax sub", CUDNN_POINTWISE_SUB, f32, logits, rowMax, nullptr,
              shifted);
  auto e = g.virtualTensor("exp(S - max)", f32, scoreDims, scoreStrides);
  g.pointwise("softmax exp", CUDNN_POINTWISE_EXP, f32, shifted, nullptr,
              nullptr, e);
  auto rowSum = g.virtualTensor("row sum", f32, rowDims, rowStrides);
  g.reduction("softmax sum", CUDNN_REDUCE_TENSOR_ADD, e, rowSum);
  auto logSum = g.virtualTensor("log(row sum)", f32, rowDims, rowStrides);
  g.pointwise("softmax log", CUDNN_POINTWISE_LOG, f32, rowSum, nullptr,
              nullptr, logSum);
  // Written for training (the backward's input), else virtual.
  auto stats = p.kind == SdpaKind::Training
                   ? g.tensor("Stats", kSdpaStats, f32, rowDims, rowStrides,
                              false)
                   : g.virtualTensor("softmax stats", f32, rowDims,
                                     rowStrides);
  g.pointwise("softmax stats add", CUDNN_POINTWISE_ADD, f32, rowMax, logSum,
              nullptr, stats);
  // The engines take the probabilities into bmm2 in the I/O type.
  auto probs = g.virtualTensor("P", io, scoreDims, scoreStrides);
  g.pointwise("softmax div", CUDNN_POINTWISE_DIV, f32, e, rowSum, nullptr,
              probs);
  g.matmul("bmm2 (O = P V)", probs, v, o);
  return b.ok();
}

bool buildSdpaOperationGraph(SdpaGraph &graph, cudnnHandle_t handle,
                             std::string &error) {
  Builder b(*graph.table, error);
  const std::string what = "operation graph";
  std::vector<cudnnBackendDescriptor_t> ops;
  for (const CudnnDescriptor &op : graph.operations)
    ops.push_back(op.get());
  CudnnDescriptor og = b.make(
      CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what,
      {DTENSOR_CUDNN_ATTR(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE,
                          1, &handle),
       DTENSOR_CUDNN_ATTR(CUDNN_ATTR_OPERATIONGRAPH_OPS,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()),
                          ops.data())});
  if (!b.ok())
    return false;
  graph.operationGraph = std::move(og);
  return true;
}

namespace {

/// The engine configurations cuDNN's heuristics propose in `mode`, best
/// first.
bool engineConfigs(const SdpaGraph &graph, cudnnBackendHeurMode_t mode,
                   const std::string &what,
                   std::vector<CudnnDescriptor> &configs, std::string &error) {
  const CudnnTable &t = *graph.table;
  Builder b(t, error);
  cudnnBackendDescriptor_t og = graph.operationGraph.get();
  CudnnDescriptor heur = b.make(
      CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what,
      {DTENSOR_CUDNN_PORT(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, og),
       DTENSOR_CUDNN_ATTR(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                          &mode)});
  int64_t count = 0;
  b.check(t.cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                     nullptr),
          what + ": get the count of CUDNN_ATTR_ENGINEHEUR_RESULTS");
  if (!b.ok())
    return false;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count && b.ok(); ++i) {
    configs.push_back(b.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                               what + ": engine configuration " +
                                   std::to_string(i)));
    raw.push_back(configs.back().get());
  }
  int64_t returned = 0;
  if (count > 0)
    b.check(t.cudnnBackendGetAttribute(
                heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()),
            what + ": get CUDNN_ATTR_ENGINEHEUR_RESULTS");
  if (!b.ok())
    return false;
  configs.resize(std::min<int64_t>(returned, int64_t(configs.size())));
  return true;
}

/// cuDNN's global index of the engine of `config`, -1 if it will not say.
int64_t engineIndex(const CudnnTable &t, const CudnnDescriptor &config) {
  cudnnBackendDescriptor_t engine = nullptr;
  if (t.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR,
                                     &engine) != CUDNN_STATUS_SUCCESS)
    return -1;
  CudnnDescriptor owned(&t, engine);
  int64_t n = 0, index = -1;
  if (t.cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                 &engine) != CUDNN_STATUS_SUCCESS ||
      t.cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                 CUDNN_TYPE_INT64, 1, &n,
                                 &index) != CUDNN_STATUS_SUCCESS)
    return -1;
  return index;
}

} // namespace

bool buildSdpaPlans(SdpaGraph &graph, cudnnHandle_t handle, int wanted,
                    std::vector<SdpaPlan> &plans, std::string &refusals,
                    std::string &error) {
  const CudnnTable &t = *graph.table;
  struct {
    cudnnBackendHeurMode_t mode;
    const char *name;
  } modes[] = {{CUDNN_HEUR_MODE_A, "heuristics mode A"},
               {CUDNN_HEUR_MODE_FALLBACK, "heuristics fallback mode"}};
  auto refuse = [&refusals](const std::string &why) {
    refusals += (refusals.empty() ? "" : "; ") + why;
  };
  for (const auto &m : modes) {
    std::vector<CudnnDescriptor> configs;
    std::string heurError;
    if (!engineConfigs(graph, m.mode, m.name, configs, heurError)) {
      refuse(heurError);
      continue;
    }
    if (configs.empty())
      refuse(std::string(m.name) + ": no engine configuration");
    for (size_t i = 0; i < configs.size() && int(plans.size()) < wanted;
         ++i) {
      SdpaPlan p;
      p.engine = engineIndex(t, configs[i]);
      p.origin = std::string(m.name) + ", config " + std::to_string(i) +
                 ", engine " + std::to_string(p.engine);
      std::string what = "execution plan (" + p.origin + ")";
      std::string planError;
      Builder b(t, planError);
      cudnnBackendDescriptor_t cfg = configs[i].get();
      CudnnDescriptor plan = b.make(
          CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, what,
          {DTENSOR_CUDNN_ATTR(CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                              CUDNN_TYPE_HANDLE, 1, &handle),
           DTENSOR_CUDNN_PORT(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg)});
      int64_t n = 0;
      b.check(t.cudnnBackendGetAttribute(
                  plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                  CUDNN_TYPE_INT64, 1, &n, &p.workspaceBytes),
              what + ": get CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE");
      if (!b.ok()) {
        refuse(planError);
        continue;
      }
      p.config = std::move(configs[i]);
      p.plan = std::move(plan);
      plans.push_back(std::move(p));
    }
    if (!plans.empty())
      return true;
  }
  error = "no execution plan finalized (" + refusals + ")";
  return false;
}

bool executeSdpa(const SdpaGraph &graph, const SdpaPlan &plan,
                 cudnnHandle_t handle, const SdpaPointers &ptrs, float scale,
                 void *workspace, std::string &error) {
  const CudnnTable &t = *graph.table;
  Builder b(t, error);
  const std::string what = "variant pack";
  float negInf = graph.negInf, one = 1.0f;
  std::vector<int64_t> uids{kSdpaQ, kSdpaK, kSdpaV, kSdpaO, kSdpaScale};
  std::vector<void *> pointers{ptrs.q, ptrs.k, ptrs.v, ptrs.o, &scale};
  if (graph.causal) {
    uids.push_back(kSdpaNegInf);
    pointers.push_back(&negInf);
  }
  if (graph.kind != SdpaKind::Inference) {
    uids.push_back(kSdpaStats);
    pointers.push_back(ptrs.stats);
  }
  if (graph.kind == SdpaKind::Backward) {
    char *scratch = static_cast<char *>(ptrs.scratch);
    for (auto [uid, pointer] :
         std::initializer_list<std::pair<int64_t, void *>>{
             {kSdpaDO, ptrs.dO},
             {kSdpaDQ, ptrs.dq},
             {kSdpaDK, ptrs.dk},
             {kSdpaDV, ptrs.dv},
             {kSdpaOne, &one},
             {kSdpaSoftmaxSum, scratch},
             {kSdpaDQAccum, scratch + graph.accumOffset}}) {
      uids.push_back(uid);
      pointers.push_back(pointer);
    }
  }
  int64_t count = int64_t(uids.size());
  CudnnDescriptor pack = b.make(
      CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, what,
      {DTENSOR_CUDNN_ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                          count, uids.data()),
       DTENSOR_CUDNN_ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                          CUDNN_TYPE_VOID_PTR, count, pointers.data()),
       DTENSOR_CUDNN_ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                          CUDNN_TYPE_VOID_PTR, 1, &workspace)});
  b.check(t.cudnnBackendExecute(handle, plan.plan.get(), pack.get()),
          "cudnnBackendExecute (" + plan.origin + ")");
  return b.ok();
}

} // namespace dtensor::rt::cuda
