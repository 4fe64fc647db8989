//===- CUDAMatmulToRuntime.cpp - matmuls on buffers to cuBLASLt calls -----===//
//
// The CUDA target never generates matmul kernels: every contraction that is
// a (batched) matmul becomes a call of dtensor_rt_matmul_<T>, which runs
// cuBLASLt on the rank's compute stream. Runs after bufferization, so the
// operands are buffers and a zero fill of C can be seen and dropped.
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

/// How a contraction maps onto C[b, m, n] (+)= A[b, m, k] * B[b, k, n]:
/// the view permutation of A and B that puts their dimensions in that order
/// (empty: already in order), and, where b or m is several loop dimensions
/// (attention's [batch, heads, ...]; the nn.Linear form on [batch, seq,
/// hidden] activations), the number of them to collapse into one.
struct MatmulMapping {
  unsigned numBatch = 0;
  unsigned numM = 1;
  SmallVector<int64_t> permA, permB, permC;
};

/// The positions of `wanted` loop dims in `map`'s results, or failure if the
/// map is not exactly a permutation of them.
static FailureOr<SmallVector<int64_t>> operandOrder(AffineMap map,
                                                    ArrayRef<unsigned> wanted) {
  if (map.getNumResults() != wanted.size())
    return failure();
  SmallVector<int64_t> perm;
  for (unsigned dim : wanted) {
    std::optional<unsigned> pos =
        map.getResultPosition(getAffineDimExpr(dim, map.getContext()));
    if (!pos)
      return failure();
    perm.push_back(*pos);
  }
  return perm;
}

static bool isIdentity(ArrayRef<int64_t> perm) {
  return llvm::equal(perm, llvm::seq<int64_t>(0, perm.size()));
}

/// The mapping of `op`, or failure with the reason in `why`.
static FailureOr<MatmulMapping> matchMatmul(linalg::LinalgOp op,
                                            std::string &why) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1) {
    why = "not a contraction of two inputs into one output";
    return failure();
  }
  if (dims->m.empty() || dims->n.size() != 1 || dims->k.size() != 1) {
    why = llvm::formatv("the contraction has {0} batch, {1} m, {2} n and {3} "
                        "k dimensions (supported: any batch, 1 or more m, "
                        "exactly 1 n and 1 k)",
                        dims->batch.size(), dims->m.size(), dims->n.size(),
                        dims->k.size())
              .str();
    return failure();
  }
  MatmulMapping mapping;
  mapping.numBatch = dims->batch.size();
  mapping.numM = dims->m.size();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap mapC = maps[2];
  // C holds the batch, m and n dims in any order: the batch and m dims in
  // the order C has them, then n, is the order A and B must have too. A C in
  // another order than (batch..., m..., n) gets its own view permutation.
  unsigned numC = mapC.getNumResults();
  SmallVector<unsigned> batchOrder, mOrder;
  bool hasN = false, outputOk = numC == mapping.numBatch + mapping.numM + 1;
  for (unsigned i = 0; outputOk && i < numC; ++i) {
    auto d = dyn_cast<AffineDimExpr>(mapC.getResult(i));
    if (!d) {
      outputOk = false;
    } else if (llvm::is_contained(dims->batch, d.getPosition())) {
      batchOrder.push_back(d.getPosition());
    } else if (llvm::is_contained(dims->m, d.getPosition())) {
      mOrder.push_back(d.getPosition());
    } else {
      hasN |= d.getPosition() == dims->n.front();
    }
  }
  if (!outputOk || !hasN) {
    why = "the output is not indexed by exactly its batch, m and n "
          "dimensions";
    return failure();
  }
  SmallVector<unsigned> roleC(batchOrder);
  llvm::append_range(roleC, mOrder);
  roleC.push_back(dims->n.front());
  FailureOr<SmallVector<int64_t>> permC = operandOrder(mapC, roleC);
  if (failed(permC)) {
    why = "the output is not indexed by exactly its batch, m and n "
          "dimensions";
    return failure();
  }
  if (!isIdentity(*permC))
    mapping.permC = *permC;
  SmallVector<unsigned> roleA(batchOrder), roleB(batchOrder);
  llvm::append_range(roleA, mOrder);
  roleA.push_back(dims->k.front());
  roleB.append({dims->k.front(), dims->n.front()});
  FailureOr<SmallVector<int64_t>> permA = operandOrder(maps[0], roleA);
  FailureOr<SmallVector<int64_t>> permB = operandOrder(maps[1], roleB);
  if (failed(permA) || failed(permB)) {
    why = "an input is broadcast or indexed by more than its (batch, m, k) / "
          "(batch, k, n) dimensions";
    return failure();
  }
  if (mapping.numM > 1 && !isIdentity(*permA)) {
    why = "A has several m dimensions and is not indexed (batch, m..., k) "
          "in the order of the output";
    return failure();
  }
  if (!isIdentity(*permA))
    mapping.permA = *permA;
  if (!isIdentity(*permB))
    mapping.permB = *permB;
  return mapping;
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
    FailureOr<MatmulMapping> mapping = matchMatmul(op, why);
    if (failed(mapping))
      return op->emitOpError("cannot lower this contraction to "
                             "dtensor_rt_matmul: ")
             << why;
    Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
    Value c = op.getDpsInits()[0];
    auto typeA = cast<MemRefType>(a.getType());
    auto typeB = cast<MemRefType>(b.getType());
    auto typeC = cast<MemRefType>(c.getType());
    Type element = typeC.getElementType();
    FailureOr<StringRef> suffix = matmulSuffix(element);
    if (failed(suffix) || typeA.getElementType() != element ||
        typeB.getElementType() != element)
      return op->emitOpError("cannot lower this contraction to "
                             "dtensor_rt_matmul: element types ")
             << typeA.getElementType() << ", " << typeB.getElementType()
             << " -> " << element
             << " (supported: bf16, f16 or f32, the same for A, B and C)";
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func)
      return op->emitOpError("cannot lower a matmul outside a func.func");

    // Before any view of C is made: those are uses between fill and op.
    InitWriter writer = findInitWriter(op, c);
    linalg::FillOp fill = writer.fill;
    // A residual copy folds into the call where C is in (batch, m, n)
    // order (otherwise the copy stays, a kernel, and the call accumulates).
    memref::CopyOp residualCopy =
        writer.copy && mapping->permC.empty() &&
                !sourceTouchedBefore(writer.copy, writer.copy.getSource(), op)
            ? writer.copy
            : nullptr;
    // Likewise a bias broadcast folds into cuBLASLt's bias epilogue.
    linalg::BroadcastOp biasBroadcast =
        writer.broadcast && mapping->permC.empty() &&
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
      FailureOr<linalg::ContractionDimensions> dims =
          linalg::inferContractionDims(op);
      int64_t k = op.getStaticLoopRanges()[dims->k.front()];
      if (!ShapedType::isDynamic(k) && k > 0)
        std::tie(act, activation) = activationAfter(op, c, biasBroadcast);
    } else if (fill && !writer.copy && mapping->permC.empty()) {
      std::tie(act, activation) = activationAfter(op, c, fill);
    }
    Value output = act ? act.getDpsInits()[0] : c;
    if (Operation *alloc = output.getDefiningOp();
        act && alloc->getBlock() == op->getBlock() &&
        op->isBeforeInBlock(alloc))
      alloc->moveBefore(op);
    OpBuilder builder(op);
    Location loc = op.getLoc();
    auto view = [&](Value value, ArrayRef<int64_t> perm) -> Value {
      if (perm.empty())
        return value;
      SmallVector<unsigned> permutation(perm.begin(), perm.end());
      AffineMap map =
          AffineMap::getPermutationMap(permutation, builder.getContext());
      return memref::TransposeOp::create(builder, loc, value,
                                         AffineMapAttr::get(map));
    };
    auto unranked = [&](Value value) -> Value {
      return memref::CastOp::create(builder, loc,
                                    UnrankedMemRefType::get(element, 0), value);
    };
    // Several batch or m dims: one of each, by collapsed views. A is
    // (batch..., m..., k), B (batch..., k, n), C (batch..., m..., n).
    Value viewA = view(a, mapping->permA), viewB = view(b, mapping->permB);
    Value viewC = output;
    // R has C's type, so it takes C's views below.
    Value viewR = residualCopy ? residualCopy.getSource() : Value();
    // A C in another order: the product goes to a dense temporary in
    // (batch..., m..., n) order (holding C's values first when they are
    // accumulated onto), copied into C's permuted view afterwards; both
    // copies are linalg ops, i.e. kernels.
    Value permutedC, tempC;
    if (!mapping->permC.empty()) {
      permutedC = view(c, mapping->permC);
      auto type = cast<MemRefType>(permutedC.getType());
      if (!type.hasStaticShape())
        return op->emitOpError("cannot lower this contraction to "
                               "dtensor_rt_matmul: its output is permuted and "
                               "of dynamic shape ")
               << type;
      tempC = viewC = memref::AllocOp::create(
          builder, loc, MemRefType::get(type.getShape(), element));
      if (!fill)
        linalg::CopyOp::create(builder, loc, permutedC, viewC);
    }
    int64_t numBatch = mapping->numBatch, numM = mapping->numM;
    // Batch dims that no single stride spans (attention's heads as a view
    // of [batch, seq, heads, dim]): a loop over all but the innermost, one
    // strided-batch call per iteration.
    if (numBatch > 1 &&
        !llvm::all_of(ValueRange{viewA, viewB, viewC}, [&](Value operand) {
          return memref::CollapseShapeOp::isGuaranteedCollapsible(
              cast<MemRefType>(operand.getType()),
              {llvm::to_vector(llvm::seq<int64_t>(0, numBatch))});
        })) {
      int64_t outer = numBatch - 1;
      SmallVector<Value> ivs;
      for (int64_t d = 0; d < outer; ++d) {
        Value lb = arith::ConstantIndexOp::create(builder, loc, 0);
        Value ub = memref::DimOp::create(builder, loc, viewC, d);
        Value step = arith::ConstantIndexOp::create(builder, loc, 1);
        auto loop = scf::ForOp::create(builder, loc, lb, ub, step);
        builder.setInsertionPoint(loop.getBody()->getTerminator());
        ivs.push_back(loop.getInductionVar());
      }
      auto slice = [&](Value operand) -> Value {
        auto type = cast<MemRefType>(operand.getType());
        SmallVector<OpFoldResult> offsets, sizes, strides;
        for (int64_t d = 0; d < type.getRank(); ++d) {
          offsets.push_back(d < outer ? OpFoldResult(ivs[d])
                                      : OpFoldResult(builder.getIndexAttr(0)));
          sizes.push_back(d < outer ? OpFoldResult(builder.getIndexAttr(1))
                                    : OpFoldResult(builder.getIndexAttr(
                                          type.getDimSize(d))));
          strides.push_back(builder.getIndexAttr(1));
        }
        auto resultType = memref::SubViewOp::inferRankReducedResultType(
            type.getShape().drop_front(outer), type, offsets, sizes, strides);
        return memref::SubViewOp::create(builder, loc,
                                         cast<MemRefType>(resultType), operand,
                                         offsets, sizes, strides);
      };
      viewA = slice(viewA);
      viewB = slice(viewB);
      viewC = slice(viewC);
      if (viewR)
        viewR = slice(viewR);
      numBatch = 1;
    }
    auto run = [](int64_t first, int64_t count) {
      ReassociationIndices group;
      for (int64_t i = 0; i < count; ++i)
        group.push_back(first + i);
      return group;
    };
    auto groupsOf = [&](int64_t numRows) {
      SmallVector<ReassociationIndices> groups;
      if (numBatch)
        groups.push_back(run(0, numBatch));
      groups.push_back(run(numBatch, numRows));
      groups.push_back({numBatch + numRows});
      return groups;
    };
    struct Operand {
      Value *value;
      const char *name;
      int64_t numRows;
    };
    for (Operand operand :
         {Operand{&viewA, "A", numM}, Operand{&viewB, "B", 1},
          Operand{&viewC, "C", numM}, Operand{&viewR, "R", numM}}) {
      if (!*operand.value || (numBatch <= 1 && operand.numRows == 1))
        continue;
      SmallVector<ReassociationIndices> groups = groupsOf(operand.numRows);
      auto type = cast<MemRefType>(operand.value->getType());
      if (!memref::CollapseShapeOp::isGuaranteedCollapsible(type, groups))
        return op->emitOpError("cannot lower this contraction to "
                               "dtensor_rt_matmul: its batch or m dimensions "
                               "of ")
               << operand.name << " are not contiguous (" << type << ")";
      *operand.value =
          memref::CollapseShapeOp::create(builder, loc, *operand.value, groups);
    }
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
