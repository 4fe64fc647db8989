//===- CUDAMatmulToRuntime.cpp - matmuls on buffers to cuBLASLt calls -----===//
//
// The CUDA target never generates matmul kernels: every contraction that is
// a (batched) matmul becomes a call of dtensor_rt_matmul_<T>, which runs
// cuBLASLt on the rank's compute stream; several dimensions of a role (a
// weight gradient's batch and seq, both k) are collapsed into one.
// Contractions that are no matmul (row dots, matrix-vector products,
// integer types) stay for the kernel path, with a remark. Runs after
// bufferization, so the operands are buffers and a zero fill of C can be
// seen and dropped.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "RuntimeCalls.h"
#include "dtensor/Runtime/CUDARuntime.h"
#include "dtensor/Conversion/DTensorToRuntime/Buffers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <optional>
#include <tuple>

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDAMATMULTORUNTIMEPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// The runtime's suffix for a matmul element type, or failure.
static FailureOr<StringRef> matmulSuffix(Type type) {
  if (type.isBF16())
    return StringRef("bf16");
  if (type.isF16())
    return StringRef("f16");
  if (type.isF32())
    return StringRef("f32");
  return failure();
}

/// The roles of a contraction's loop dimensions: the call computes
/// C[batch, m, n] (+)= A[batch, m, k] * B[batch, k, n], each role a group of
/// loop dimensions (any number of batch dims, one or more of each other).
enum Role : unsigned { Batch, M, N, K, NumRoles };

/// The roles each operand is indexed by, in the order the call takes them.
static constexpr Role kRolesA[] = {Batch, M, K};
static constexpr Role kRolesB[] = {Batch, K, N};
static constexpr Role kRolesC[] = {Batch, M, N};
static ArrayRef<Role> rolesOf(unsigned operand) {
  return operand == 0 ? ArrayRef<Role>(kRolesA)
         : operand == 1 ? ArrayRef<Role>(kRolesB)
                        : ArrayRef<Role>(kRolesC);
}

/// How a contraction maps onto the call. Each role's loop dims are taken in
/// one order (`groups`) by all operands. An operand whose dims of a role are
/// consecutive in that order (in its memory order, its indexing map's
/// results) and collapsible (the strides allow one dim) gets a
/// memref.collapse_shape per role, then a memref.transpose into the call's
/// order (the runtime takes strided A and B); an input where they are not is
/// first copied into a dense buffer in the call's order (a kernel), and a C
/// that is not dense in (batch, m, n) order takes the product in a dense
/// temporary copied into it afterwards. Batch dims that some operand cannot
/// collapse are looped over instead (all but the last: one strided-batch
/// call per iteration).
struct MatmulPlan {
  SmallVector<unsigned> groups[NumRoles];
  /// The loop dim of each dimension of A, B and C, in memory order.
  SmallVector<unsigned> dims[3];
  /// Whether A (B) is copied into a dense buffer in (batch, m, k) ((batch,
  /// k, n)) order first; whether C takes a dense temporary.
  bool dense[3] = {false, false, false};
  bool loopBatch = false;

  /// The loop dims of `operand` in the call's order.
  SmallVector<unsigned> callOrder(unsigned operand) const {
    SmallVector<unsigned> order;
    for (Role role : rolesOf(operand))
      llvm::append_range(order, groups[role]);
    return order;
  }
};

/// Whether the memref `type` is dense row-major (the runtime's requirement
/// on C): an identity layout, or static strides that are the suffix
/// products of static sizes (unit dims aside).
static bool isDenseRowMajor(MemRefType type) {
  if (type.getLayout().isIdentity())
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  int64_t expected = 1;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    int64_t size = type.getDimSize(d);
    if (size == 1)
      continue;
    if (ShapedType::isDynamic(size) || strides[d] != expected)
      return false;
    expected *= size;
  }
  return true;
}

/// Whether `group` (loop dims in order) is a run of consecutive dimensions
/// of an operand indexed by `dims`, in that order, that `type`'s strides let
/// one memref.collapse_shape merge.
static bool collapsible(MemRefType type, ArrayRef<unsigned> dims,
                        ArrayRef<unsigned> group) {
  if (group.size() <= 1)
    return true;
  const unsigned *first = llvm::find(dims, group.front());
  int64_t start = first - dims.begin();
  if (start + group.size() > dims.size() ||
      !llvm::equal(group, dims.slice(start, group.size())))
    return false;
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (d > start && d < start + static_cast<int64_t>(group.size()))
      reassociation.back().push_back(d);
    else
      reassociation.push_back({d});
  }
  return memref::CollapseShapeOp::isGuaranteedCollapsible(type, reassociation);
}

/// The plan of `op`, or failure with the reason in `why`. With `swapped`,
/// the call's A is the op's second input and B its first: the call computes
/// C = B'.A' (the same products, the roles of m and n exchanged), which
/// writes a C laid out (n, m) in place, e.g. a weight gradient dW = X^T.dY
/// written as dW^T = dY^T.X.
static FailureOr<MatmulPlan> planMatmul(linalg::LinalgOp op, std::string &why,
                                        bool swapped = false) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) {
    why = "not a contraction of two inputs into one output";
    return failure();
  }
  if (swapped)
    std::swap(dims->m, dims->n);
  size_t numClassified = dims->batch.size() + dims->m.size() +
                         dims->n.size() + dims->k.size();
  if (numClassified != op.getNumLoops()) {
    why = llvm::formatv("{0} of its loop dimensions index the output only "
                        "(a broadcast)",
                        op.getNumLoops() - numClassified)
              .str();
    return failure();
  }
  if (dims->m.empty() || dims->n.empty() || dims->k.empty()) {
    why = llvm::formatv("the contraction has {0} batch, {1} m, {2} n and {3} "
                        "k dimensions ({4}; cuBLASLt needs one or more m, n "
                        "and k dimensions)",
                        dims->batch.size(), dims->m.size(), dims->n.size(),
                        dims->k.size(),
                        dims->m.empty() && dims->n.empty()
                            ? "a row dot"
                            : "a matrix-vector product")
              .str();
    return failure();
  }
  MatmulPlan plan;
  // Roles of the loop dims.
  SmallVector<int> roleOf(op.getNumLoops(), -1);
  auto assign = [&](ArrayRef<unsigned> loopDims, Role role) {
    for (unsigned d : loopDims)
      roleOf[d] = role;
  };
  assign(dims->batch, Batch);
  assign(dims->m, M);
  assign(dims->n, N);
  assign(dims->k, K);
  // Each operand indexed by exactly the dims of its roles, each once.
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<Value> operands = llvm::to_vector(op->getOperands().take_front(3));
  if (swapped) {
    std::swap(maps[0], maps[1]);
    std::swap(operands[0], operands[1]);
  }
  for (unsigned operand = 0; operand < 3; ++operand) {
    AffineMap map = maps[operand];
    size_t expected = 0;
    for (Role role : rolesOf(operand))
      expected += role == Batch ? dims->batch.size()
                  : role == M   ? dims->m.size()
                  : role == N   ? dims->n.size()
                                : dims->k.size();
    bool ok = map.getNumResults() == expected;
    for (unsigned i = 0; ok && i < map.getNumResults(); ++i) {
      auto d = dyn_cast<AffineDimExpr>(map.getResult(i));
      ok = d && roleOf[d.getPosition()] >= 0 &&
           llvm::is_contained(rolesOf(operand),
                              static_cast<Role>(roleOf[d.getPosition()])) &&
           !llvm::is_contained(plan.dims[operand], d.getPosition());
      if (ok)
        plan.dims[operand].push_back(d.getPosition());
    }
    if (!ok) {
      why = operand == 2 ? "the output is not indexed by exactly its batch, m "
                           "and n dimensions"
                         : "an input is broadcast or indexed by more than its "
                           "(batch, m, k) / (batch, k, n) dimensions";
      return failure();
    }
  }
  SmallVector<MemRefType> types = llvm::map_to_vector(
      operands, [](Value v) { return cast<MemRefType>(v.getType()); });
  // The loop dims of `role` in the memory order of `operand`.
  auto orderIn = [&](unsigned operand, Role role) {
    SmallVector<unsigned> order;
    for (unsigned d : plan.dims[operand])
      if (roleOf[d] == static_cast<int>(role))
        order.push_back(d);
    return order;
  };
  // C is used directly where it is dense and indexed (batch..., m..., n...):
  // then its orders are the groups'.
  bool directC = isDenseRowMajor(types[2]);
  for (unsigned i = 1; directC && i < plan.dims[2].size(); ++i)
    directC = roleOf[plan.dims[2][i - 1]] <= roleOf[plan.dims[2][i]];
  plan.dense[2] = !directC;
  // Batch last: the operands made dense for the other roles take any order.
  for (Role role : {M, N, K, Batch}) {
    SmallVector<unsigned> users;
    for (unsigned operand = 0; operand < 3; ++operand)
      if (llvm::is_contained(rolesOf(operand), role))
        users.push_back(operand);
    // Candidate orders: each user's, C's first (A's first for k).
    SmallVector<SmallVector<unsigned>> candidates;
    for (unsigned operand : {2u, 0u, 1u}) {
      if (!llvm::is_contained(users, operand))
        continue;
      SmallVector<unsigned> order = orderIn(operand, role);
      if (!llvm::is_contained(candidates, order))
        candidates.push_back(order);
      if (operand == 2 && directC)
        break; // C's order is the only one C can take
    }
    auto fits = [&](unsigned operand, ArrayRef<unsigned> order) {
      return plan.dense[operand] ||
             collapsible(types[operand], plan.dims[operand], order);
    };
    unsigned bestScore = 0;
    for (const SmallVector<unsigned> &order : candidates) {
      unsigned score = llvm::count_if(
          users, [&](unsigned operand) { return fits(operand, order); });
      if (plan.groups[role].empty() || score > bestScore) {
        plan.groups[role] = order;
        bestScore = score;
      }
    }
    for (unsigned operand : users) {
      if (fits(operand, plan.groups[role]))
        continue;
      if (role == Batch)
        plan.loopBatch = true;
      else
        plan.dense[operand] = true;
    }
  }
  return plan;
}

/// An activation code of dtensor_rt_matmul_bias_<T> and _act_<T>.
using Activation = DTensorActivation;

/// GELU in its tanh form, cuBLASLt's GELU epilogue (and torch's
/// gelu(approximate="tanh")).
static double geluTanh(double x) {
  return 0.5 * x *
         (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/// The value `result` of `body` (an elementwise generic's, input `in`) at
/// input value `x`, in double, evaluated op by op in order: every op of the
/// body (but its yield) must be one of the smooth operations GELU is
/// written with (arith add, sub, mul, div, neg, float constants, extf and
/// truncf taken exactly; math tanh, and powf and fpowi with a constant
/// exponent), its operands values of the body or constants; none
/// otherwise.
static std::optional<double> evaluateSmooth(Block *body, BlockArgument in,
                                            Value result, double x) {
  DenseMap<Value, double> values;
  values[in] = x;
  auto valueOf = [&](Value v) -> std::optional<double> {
    if (auto it = values.find(v); it != values.end())
      return it->second;
    FloatAttr constant;
    if (matchPattern(v, m_Constant(&constant)))
      return constant.getValueAsDouble();
    return std::nullopt;
  };
  for (Operation &op : body->without_terminator()) {
    if (op.getNumResults() != 1)
      return std::nullopt;
    std::optional<double> y;
    if (op.hasTrait<OpTrait::ConstantLike>()) {
      y = valueOf(op.getResult(0));
    } else if (isa<arith::ExtFOp, arith::TruncFOp, arith::NegFOp,
                   math::TanhOp>(op)) {
      if (std::optional<double> a = valueOf(op.getOperand(0)))
        y = isa<math::TanhOp>(op)    ? std::tanh(*a)
            : isa<arith::NegFOp>(op) ? -*a
                                     : *a;
    } else if (isa<arith::AddFOp, arith::SubFOp, arith::MulFOp,
                   arith::DivFOp>(op)) {
      std::optional<double> a = valueOf(op.getOperand(0)),
                            b = valueOf(op.getOperand(1));
      if (a && b)
        y = isa<arith::AddFOp>(op)   ? *a + *b
            : isa<arith::SubFOp>(op) ? *a - *b
            : isa<arith::MulFOp>(op) ? *a * *b
                                     : *a / *b;
    } else if (isa<math::PowFOp, math::FPowIOp>(op)) {
      APInt intExponent;
      FloatAttr floatExponent;
      std::optional<double> a = valueOf(op.getOperand(0)), e;
      if (matchPattern(op.getOperand(1), m_ConstantInt(&intExponent)))
        e = static_cast<double>(intExponent.getSExtValue());
      else if (matchPattern(op.getOperand(1), m_Constant(&floatExponent)))
        e = floatExponent.getValueAsDouble();
      if (a && e)
        y = std::pow(*a, *e);
    }
    if (!y)
      return std::nullopt;
    values[op.getResult(0)] = *y;
  }
  return valueOf(result);
}

/// Which activation the body of `generic` (one input, elementwise) is:
/// ReLU, `max(x, 0)` (arith.maximumf or maxnumf, either order; through
/// extf and truncf too); GELU's tanh form, however it is written (a body of
/// smooth operations with one tanh, equal to it at sample points from -8
/// to 8 to within 1e-5: the erf form differs by up to 5e-4); or none.
static Activation classifyActivation(linalg::GenericOp generic) {
  Block *body = generic.getBlock();
  BlockArgument in = body->getArgument(0);
  Value result = cast<linalg::YieldOp>(body->getTerminator()).getOperand(0);
  // ReLU.
  Value inner = result;
  bool extended = false;
  if (auto trunc = inner.getDefiningOp<arith::TruncFOp>()) {
    inner = trunc.getIn();
    extended = true;
  }
  if (Operation *max = inner.getDefiningOp();
      isa_and_nonnull<arith::MaximumFOp, arith::MaxNumFOp>(max) &&
      max->getBlock() == body) {
    auto isInput = [&](Value x) {
      if (!extended)
        return x == in;
      auto ext = x.getDefiningOp<arith::ExtFOp>();
      return ext && ext.getIn() == in;
    };
    auto isZero = [](Value x) { return matchPattern(x, m_AnyZeroFloat()); };
    Value lhs = max->getOperand(0), rhs = max->getOperand(1);
    return (isInput(lhs) && isZero(rhs)) || (isZero(lhs) && isInput(rhs))
               ? DTENSOR_RT_ACTIVATION_RELU
               : DTENSOR_RT_ACTIVATION_NONE;
  }
  // GELU, tanh form: a short body with one tanh.
  if (body->getOperations().size() > 32 ||
      llvm::count_if(body->getOperations(), [](Operation &op) {
        return isa<math::TanhOp>(op);
      }) != 1)
    return DTENSOR_RT_ACTIVATION_NONE;
  static const double samples[] = {-8.0, -4.3,  -2.9, -2.1, -1.45, -0.93,
                                   -0.5, -0.17, 0.0,  0.11, 0.42,  0.77,
                                   1.2,  1.75,  2.45, 3.3,  5.1,   8.0};
  for (double x : samples) {
    std::optional<double> y = evaluateSmooth(body, in, result, x);
    double want = geluTanh(x);
    if (!y || std::fabs(*y - want) > 1e-5 * std::max(1.0, std::fabs(want)))
      return DTENSOR_RT_ACTIVATION_NONE;
  }
  return DTENSOR_RT_ACTIVATION_GELU_TANH;
}

/// The activation that may run in the epilogue of `op` (whose output `c`
/// `init`, a zero fill or a bias broadcast, initialises): the next op after
/// `op` but allocations and constants, a linalg.generic of parallel loops
/// and identity maps reading `c` into a fresh allocation of its type, its
/// body an activation of classifyActivation, with `c` used by `op`, `init`
/// and it only.
static std::pair<linalg::GenericOp, Activation>
activationAfter(linalg::LinalgOp op, Value c, Operation *init) {
  Operation *next = op->getNextNode();
  while (next && (isa<memref::AllocOp>(next) ||
                  next->hasTrait<OpTrait::ConstantLike>()))
    next = next->getNextNode();
  auto act = dyn_cast_or_null<linalg::GenericOp>(next);
  if (!act || !act.hasPureBufferSemantics() || act.getNumDpsInputs() != 1 ||
      act.getNumDpsInits() != 1 ||
      act.getNumParallelLoops() != act.getNumLoops() ||
      !llvm::all_of(act.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }) ||
      act.getDpsInputs()[0] != c ||
      act.payloadUsesValueFromOperand(act.getDpsInitOperand(0)))
    return {};
  // The call writes D in the matmul's place: D's allocation must be there
  // already, or movable there (its sizes known before the matmul).
  Value d = act.getDpsInits()[0];
  auto alloc = d.getDefiningOp<memref::AllocOp>();
  if (d.getType() != c.getType() || !alloc ||
      (alloc->getBlock() == op->getBlock() && op->isBeforeInBlock(alloc) &&
       llvm::any_of(alloc->getOperands(), [&](Value size) {
         Operation *def = size.getDefiningOp();
         return def && def->getBlock() == op->getBlock() &&
                !def->isBeforeInBlock(op);
       })))
    return {};
  for (Operation *user : c.getUsers())
    if (user != op.getOperation() && user != init && user != act.getOperation())
      return {};
  Activation kind = classifyActivation(act);
  if (kind == DTENSOR_RT_ACTIVATION_NONE)
    return {};
  return {act, kind};
}

/// What `op` may absorb of the op that writes its output right before it:
/// a zero fill (the call computes C = A.B), a copy into a fresh allocation
/// (`dtensor-cuda-fuse-matmul-epilogue`'s residual: the call computes
/// C = A.B + R from the copy's source R, an identity-layout buffer of C's
/// type), or a bias broadcast into a fresh allocation (the same pass's bias:
/// C = A.B + bias).
struct InitWriter {
  linalg::FillOp fill;
  memref::CopyOp copy;
  linalg::BroadcastOp broadcast;
};

/// Whether `broadcast` writes a bias of the output's columns into a fresh
/// allocation: a dense rank-1 input broadcast over every dimension but the
/// last (then the call computes C = A.B + bias in cuBLASLt's epilogue).
static bool isBiasBroadcast(linalg::BroadcastOp broadcast, Value output) {
  auto input = dyn_cast<MemRefType>(broadcast.getInput().getType());
  auto type = dyn_cast<MemRefType>(output.getType());
  return input && type && output.getDefiningOp<memref::AllocOp>() &&
         input.getRank() == 1 && input.getLayout().isIdentity() &&
         llvm::equal(broadcast.getDimensions(),
                     llvm::seq<int64_t>(0, type.getRank() - 1));
}

/// The writer of exactly `output` that `op` may absorb: in the same block,
/// and no op between them uses `output` or any alias of it (the copy's or
/// broadcast's source is checked apart: sourceTouchedBefore).
static InitWriter findInitWriter(linalg::LinalgOp op, Value output) {
  Operation *prev = getLastUserBefore(op, output);
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(prev);
      fill && fill.getOutputs().front() == output &&
      matchPattern(fill.getInputs().front(), m_AnyZeroFloat()))
    return {fill, nullptr, nullptr};
  if (auto broadcast = dyn_cast_or_null<linalg::BroadcastOp>(prev);
      broadcast && broadcast.getInit() == output &&
      isBiasBroadcast(broadcast, output))
    return {nullptr, nullptr, broadcast};
  if (auto copy = dyn_cast_or_null<memref::CopyOp>(prev);
      copy && copy.getTarget() == output) {
    auto source = dyn_cast<MemRefType>(copy.getSource().getType());
    if (output.getDefiningOp<memref::AllocOp>() && source &&
        source == output.getType() && source.getLayout().isIdentity())
      return {nullptr, copy, nullptr};
  }
  return {};
}

/// Whether an op between `writer` and `op` uses `source` or an alias of it
/// (a write there would change what the writer had taken).
static bool sourceTouchedBefore(Operation *writer, Value source,
                                Operation *op) {
  Operation *last = getLastUserBefore(op, source);
  return last && last != writer && writer->isBeforeInBlock(last);
}

/// The remark on a contraction left to the kernel path.
static void remarkNotMatmul(linalg::LinalgOp op, const Twine &why) {
  op->emitRemark("not a cuBLASLt matmul: ")
      << why << "; lowered as a generated reduction kernel";
}

/// An operand on its way to the call: its buffer and, per dimension, the
/// loop dims it spans (one, or a collapsed group) and their role.
struct OperandView {
  Value value;
  SmallVector<SmallVector<unsigned>> dims;
  SmallVector<Role> roles;
};

struct CUDAMatmulToRuntimePass
    : dtensor::impl::CUDAMatmulToRuntimePassBase<CUDAMatmulToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::LinalgOp> matmuls;
    module.walk([&](linalg::LinalgOp op) {
      if (linalg::isaContractionOpInterface(op))
        matmuls.push_back(op);
    });
    for (linalg::LinalgOp op : matmuls)
      if (failed(lower(op)))
        return signalPassFailure();
  }

  LogicalResult lower(linalg::LinalgOp op) {
    if (!op.hasPureBufferSemantics())
      return op->emitOpError("cannot lower a matmul on tensors to "
                             "dtensor_rt_matmul; bufferize first");
    std::string why;
    FailureOr<MatmulPlan> plan = planMatmul(op, why);
    if (failed(plan)) {
      remarkNotMatmul(op, why);
      return success();
    }
    // A C laid out (n, m) (a weight gradient's dW = X^T.dY into a [out, in]
    // weight): the inputs exchanged make it (m, n), written in place instead
    // of through a temporary and a transposing copy kernel. Taken where it
    // makes fewer dense copies (kernels) than the plan as written.
    bool swapped = false;
    auto copies = [](const MatmulPlan &p) {
      return llvm::count(ArrayRef<bool>(p.dense), true);
    };
    if (plan->dense[2]) {
      std::string ignored;
      FailureOr<MatmulPlan> other = planMatmul(op, ignored, /*swapped=*/true);
      if (succeeded(other) && copies(*other) < copies(*plan)) {
        plan = std::move(other);
        swapped = true;
      }
    }
    Value a = op.getDpsInputs()[swapped ? 1 : 0];
    Value b = op.getDpsInputs()[swapped ? 0 : 1];
    Value c = op.getDpsInits()[0];
    auto typeA = cast<MemRefType>(a.getType());
    auto typeB = cast<MemRefType>(b.getType());
    auto typeC = cast<MemRefType>(c.getType());
    Type element = typeC.getElementType();
    FailureOr<StringRef> suffix = matmulSuffix(element);
    if (failed(suffix) || typeA.getElementType() != element ||
        typeB.getElementType() != element) {
      std::string types;
      llvm::raw_string_ostream os(types);
      os << "element types '" << typeA.getElementType() << "', '"
         << typeB.getElementType() << "' -> '" << element
         << "' (cuBLASLt: bf16, f16 or f32, the same for A, B and C)";
      remarkNotMatmul(op, types);
      return success();
    }
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func)
      return op->emitOpError("cannot lower a matmul outside a func.func");
    bool directC = !plan->dense[2];

    // Before any view of C is made: those are uses between fill and op.
    InitWriter writer = findInitWriter(op, c);
    linalg::FillOp fill = writer.fill;
    // A residual copy folds into the call where C is used directly
    // (otherwise the copy stays, a kernel, and the call accumulates).
    memref::CopyOp residualCopy =
        writer.copy && directC &&
                !sourceTouchedBefore(writer.copy, writer.copy.getSource(), op)
            ? writer.copy
            : nullptr;
    // Likewise a bias broadcast folds into cuBLASLt's bias epilogue, where
    // C's last dim is all of n (the bias is of length N).
    linalg::BroadcastOp biasBroadcast =
        writer.broadcast && directC && plan->groups[N].size() == 1 &&
                !sourceTouchedBefore(writer.broadcast,
                                     writer.broadcast.getInput(), op)
            ? writer.broadcast
            : nullptr;
    // A ReLU or GELU right after a bias epilogue or a plain product (C
    // zero-filled) runs in the epilogue too (cuBLASLt's RELU_BIAS,
    // GELU_BIAS, RELU, GELU), writing the activation's output directly;
    // after a bias not with an empty or dynamic k (the runtime has no
    // kernel for the activation of a bias alone).
    linalg::GenericOp act;
    Activation activation = DTENSOR_RT_ACTIVATION_NONE;
    if (biasBroadcast) {
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (llvm::all_of(plan->groups[K], [&](unsigned d) {
            return !ShapedType::isDynamic(ranges[d]) && ranges[d] > 0;
          }))
        std::tie(act, activation) = activationAfter(op, c, biasBroadcast);
    } else if (fill && !writer.copy && directC) {
      std::tie(act, activation) = activationAfter(op, c, fill);
    }
    Value output = act ? act.getDpsInits()[0] : c;
    if (Operation *alloc = output.getDefiningOp();
        act && alloc->getBlock() == op->getBlock() &&
        op->isBeforeInBlock(alloc))
      alloc->moveBefore(op);
    OpBuilder builder(op);
    Location loc = op.getLoc();
    auto unranked = [&](Value value) -> Value {
      return memref::CastOp::create(builder, loc,
                                    UnrankedMemRefType::get(element, 0), value);
    };
    // `value` (indexed by `dims`) viewed in the order `order` of its loop
    // dims.
    auto permuted = [&](Value value, ArrayRef<unsigned> dims,
                        ArrayRef<unsigned> order) -> Value {
      SmallVector<unsigned> permutation;
      for (unsigned d : order)
        permutation.push_back(llvm::find(dims, d) - dims.begin());
      if (llvm::equal(permutation, llvm::seq<unsigned>(0, permutation.size())))
        return value;
      AffineMap map =
          AffineMap::getPermutationMap(permutation, builder.getContext());
      return memref::TransposeOp::create(builder, loc, value,
                                         AffineMapAttr::get(map));
    };
    // A fresh dense buffer of `view`'s shape.
    auto denseLike = [&](Value view) -> Value {
      auto type = cast<MemRefType>(view.getType());
      SmallVector<Value> dynamicSizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          dynamicSizes.push_back(memref::DimOp::create(builder, loc, view, d));
      return memref::AllocOp::create(
          builder, loc, MemRefType::get(type.getShape(), element),
          dynamicSizes);
    };

    // The operands A, B, C (the output written: C, or the activation's D)
    // and R (the residual, C's type: it takes C's views).
    SmallVector<Value> values = {a, b, output};
    SmallVector<SmallVector<unsigned>> loopDims = {plan->dims[0],
                                                   plan->dims[1],
                                                   plan->dims[2]};
    // Inputs whose groups the strides do not let collapse: a dense copy in
    // the call's order (a kernel). A C that is not dense in (batch, m, n)
    // order: the product goes to a dense temporary in that order (holding
    // C's values first when they are accumulated onto), copied into C's
    // permuted view afterwards; both copies are linalg ops, i.e. kernels.
    Value permutedC, tempC;
    for (unsigned operand = 0; operand < 3; ++operand) {
      if (!plan->dense[operand])
        continue;
      SmallVector<unsigned> order = plan->callOrder(operand);
      Value view = permuted(values[operand], loopDims[operand], order);
      Value copy = denseLike(view);
      if (operand < 2) {
        linalg::CopyOp::create(builder, loc, view, copy);
      } else {
        permutedC = view;
        tempC = copy;
        if (!fill)
          linalg::CopyOp::create(builder, loc, view, copy);
      }
      values[operand] = copy;
      loopDims[operand] = order;
    }
    Value residual = residualCopy ? residualCopy.getSource() : Value();

    // Collapse each role group (the batch group only where it is not looped
    // over) into one dim.
    auto collapse = [&](Value value, ArrayRef<unsigned> dims) {
      OperandView result;
      SmallVector<ReassociationIndices> reassociation;
      for (auto [i, d] : llvm::enumerate(dims)) {
        Role role = Batch;
        for (unsigned r = 0; r < NumRoles; ++r)
          if (llvm::is_contained(plan->groups[r], d))
            role = static_cast<Role>(r);
        bool merge = !result.roles.empty() && result.roles.back() == role &&
                     !(role == Batch && plan->loopBatch);
        if (merge) {
          reassociation.back().push_back(i);
          result.dims.back().push_back(d);
        } else {
          reassociation.push_back({static_cast<int64_t>(i)});
          result.dims.push_back({d});
          result.roles.push_back(role);
        }
      }
      result.value = value;
      if (reassociation.size() != dims.size())
        result.value =
            memref::CollapseShapeOp::create(builder, loc, value, reassociation);
      return result;
    };
    SmallVector<OperandView> views;
    for (unsigned operand = 0; operand < 3; ++operand)
      views.push_back(collapse(values[operand], loopDims[operand]));
    if (residual)
      views.push_back(collapse(residual, loopDims[2]));

    // Batch dims that some operand cannot collapse (attention's heads as a
    // view of [batch, seq, heads, dim]): a loop over all but the last,
    // one strided-batch call per iteration.
    if (plan->loopBatch) {
      ArrayRef<unsigned> looped =
          ArrayRef<unsigned>(plan->groups[Batch]).drop_back();
      SmallVector<Value> ivs;
      for (unsigned d : looped) {
        OperandView &view = views[2];
        int64_t pos = llvm::find_if(view.dims, [&](ArrayRef<unsigned> g) {
                        return g.front() == d;
                      }) -
                      view.dims.begin();
        Value lb = arith::ConstantIndexOp::create(builder, loc, 0);
        Value ub = memref::DimOp::create(builder, loc, view.value, pos);
        Value step = arith::ConstantIndexOp::create(builder, loc, 1);
        auto loop = scf::ForOp::create(builder, loc, lb, ub, step);
        builder.setInsertionPoint(loop.getBody()->getTerminator());
        ivs.push_back(loop.getInductionVar());
      }
      for (OperandView &view : views) {
        auto type = cast<MemRefType>(view.value.getType());
        SmallVector<OpFoldResult> offsets, sizes, strides;
        SmallVector<int64_t> kept;
        OperandView sliced;
        for (int64_t i = 0; i < type.getRank(); ++i) {
          const unsigned *it = llvm::find(looped, view.dims[i].front());
          bool isLooped = view.roles[i] == Batch && it != looped.end();
          offsets.push_back(isLooped ? OpFoldResult(ivs[it - looped.begin()])
                                     : OpFoldResult(builder.getIndexAttr(0)));
          sizes.push_back(isLooped ? OpFoldResult(builder.getIndexAttr(1))
                                   : memref::getMixedSize(builder, loc,
                                                          view.value, i));
          strides.push_back(builder.getIndexAttr(1));
          if (isLooped)
            continue;
          kept.push_back(type.getDimSize(i));
          sliced.dims.push_back(view.dims[i]);
          sliced.roles.push_back(view.roles[i]);
        }
        // The slice's type without the looped dims (named here, not
        // inferred: with other unit dims it is ambiguous which to drop).
        MemRefType full =
            memref::SubViewOp::inferResultType(type, offsets, sizes, strides);
        SmallVector<int64_t> fullStrides, keptStrides;
        int64_t offset;
        if (failed(full.getStridesAndOffset(fullStrides, offset)))
          return op->emitOpError("cannot slice the batch of ")
                 << type << " for dtensor_rt_matmul";
        for (int64_t i = 0; i < type.getRank(); ++i)
          if (!(view.roles[i] == Batch &&
                llvm::is_contained(looped, view.dims[i].front())))
            keptStrides.push_back(fullStrides[i]);
        auto resultType = MemRefType::get(
            kept, element,
            StridedLayoutAttr::get(builder.getContext(), offset, keptStrides),
            type.getMemorySpace());
        sliced.value = memref::SubViewOp::create(builder, loc, resultType,
                                                 view.value, offsets, sizes,
                                                 strides);
        view = std::move(sliced);
      }
    }

    // Each operand in the call's order: A (batch, m, k), B (batch, k, n),
    // C and R (batch, m, n); the runtime takes A and B strided.
    auto inCallOrder = [&](const OperandView &view, unsigned operand) {
      SmallVector<unsigned> heads =
          llvm::map_to_vector(view.dims, [](ArrayRef<unsigned> g) {
            return g.front();
          });
      SmallVector<unsigned> order;
      for (Role role : rolesOf(operand))
        for (auto [i, r] : llvm::enumerate(view.roles))
          if (r == role)
            order.push_back(heads[i]);
      return permuted(view.value, heads, order);
    };
    Value viewA = inCallOrder(views[0], 0), viewB = inCallOrder(views[1], 1);
    Value viewC = inCallOrder(views[2], 2);
    Value viewR = residual ? inCallOrder(views[3], 2) : Value();
    // dtensor_rt_matmul_<T>(ctx, A, B, C, accumulate); C = A.B + R:
    // dtensor_rt_matmul_add_<T>(ctx, A, B, R, C); C = act(A.B + bias):
    // dtensor_rt_matmul_bias_<T>(ctx, A, B, bias, C, activation); C =
    // act(A.B): dtensor_rt_matmul_act_<T>(ctx, A, B, C, activation).
    Value extra = viewR           ? viewR
                  : biasBroadcast ? biasBroadcast.getInput()
                                  : Value();
    // The last argument: accumulate, or the bias or act entry's activation.
    int64_t last = biasBroadcast || act ? int64_t(activation) : fill ? 0 : 1;
    Value flag = viewR ? Value()
                       : arith::ConstantOp::create(
                             builder, loc, builder.getI64IntegerAttr(last));
    SmallVector<Value> args;
    if (withContext)
      args.push_back(cuda::getRuntimeContext(func));
    args.push_back(unranked(viewA));
    args.push_back(unranked(viewB));
    if (extra)
      args.push_back(unranked(extra));
    args.push_back(unranked(viewC));
    if (flag)
      args.push_back(flag);
    cuda::RuntimeEntry entry = viewR           ? cuda::RuntimeEntry::MatmulAdd
                               : biasBroadcast ? cuda::RuntimeEntry::MatmulBias
                               : act           ? cuda::RuntimeEntry::MatmulAct
                                               : cuda::RuntimeEntry::Matmul;
    func::FuncOp callee = cuda::declareRuntimeFunction(
        func->getParentOfType<ModuleOp>(),
        cuda::getRuntimeSymbol(entry, *suffix),
        TypeRange(ValueRange(args)), {});
    func::CallOp::create(builder, loc, callee, args);
    if (permutedC) {
      builder.setInsertionPoint(op);
      linalg::CopyOp::create(builder, loc, tempC, permutedC);
    }
    if (fill)
      fill.erase();
    if (residualCopy)
      residualCopy.erase();
    if (biasBroadcast)
      biasBroadcast.erase();
    op.erase();
    if (act) {
      act.erase();
      // C is not written any more (the call writes the activation's output).
      if (c.use_empty())
        if (Operation *alloc = c.getDefiningOp<memref::AllocOp>())
          alloc->erase();
    }
    return success();
  }
};

} // namespace
