//===- CUDAFuseAttention.cpp - attention chains -> dtensor_rt_attention ---===//
//
// softmax(scale * q k^T [causal mask]) v written as linalg ops (a
// contraction, an elementwise scale/mask, linalg.softmax over the keys, an
// optional element-type cast, a contraction with v) becomes one call of the
// runtime's fused attention kernel, which never materializes the
// [heads, queries, keys] score matrix. Runs on tensors, before softmax is
// decomposed; the operands are handed over with bufferization.to_buffer and
// the result comes back with bufferization.to_tensor, so bufferization
// places the call among the other buffers.
//
// Anything that does not match exactly is left as it is (the materialized
// path computes the same values): the pass never changes what a program
// computes, only how.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/CUDA/Passes.h"

#include "RuntimeCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDAFUSEATTENTIONPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// What a matched chain computes.
struct Attention {
  Value q, k, v;
  float scale = 1.0f;
  bool causal = false;
  linalg::LinalgOp pv;
  SmallVector<Operation *> chain; // to erase, consumers first
};

/// The loop dim of each result of `map`, if every result is a distinct dim.
static std::optional<SmallVector<unsigned>> dimsOf(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || llvm::is_contained(dims, d.getPosition()))
      return std::nullopt;
    dims.push_back(d.getPosition());
  }
  return dims;
}

/// Whether `value` is a tensor filled with zero (a fresh accumulator).
static bool isZeroFill(Value value) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  return matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
         matchPattern(fill.getInputs()[0], m_Zero());
}

/// `op` as a two-input contraction on tensors into a zero fill, with the
/// operands' dims in terms of the output's: `first` and `second` list, per
/// dim of each input, the output dim it is (or `reduced` for the reduction
/// dim), so that callers can check layouts by roles.
struct Contraction {
  Value lhs, rhs;
  SmallVector<int> lhsRoles, rhsRoles; // output dim index, or -1: reduced
};
static std::optional<Contraction> matchContraction(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() ||
      !linalg::isaContractionOpInterface(linalgOp) ||
      linalgOp.getNumDpsInputs() != 2 || linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getNumReductionLoops() != 1 ||
      !isZeroFill(linalgOp.getDpsInits()[0]) || !op->getResult(0).hasOneUse())
    return std::nullopt;
  SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
  std::optional<SmallVector<unsigned>> out = dimsOf(maps[2]);
  if (!out)
    return std::nullopt;
  Contraction c;
  c.lhs = linalgOp.getDpsInputs()[0];
  c.rhs = linalgOp.getDpsInputs()[1];
  for (int i = 0; i < 2; ++i) {
    std::optional<SmallVector<unsigned>> in = dimsOf(maps[i]);
    if (!in)
      return std::nullopt;
    SmallVector<int> &roles = i == 0 ? c.lhsRoles : c.rhsRoles;
    for (unsigned d : *in) {
      auto it = llvm::find(*out, d);
      roles.push_back(it == out->end() ? -1 : int(it - out->begin()));
    }
  }
  return c;
}

/// An elementwise op on tensors of one input into one output, both indexed
/// by the identity, whose result has one use.
static bool isUnaryElementwise(linalg::GenericOp op) {
  return op.getNumDpsInputs() == 1 && op.getNumDpsInits() == 1 &&
         op.getNumReductionLoops() == 0 && op.hasPureTensorSemantics() &&
         llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); }) &&
         op->getResult(0).hasOneUse();
}

/// The scale and mask of the elementwise op between the scores and the
/// softmax: y = x * c (or x / c, or x), optionally
/// select(key > query, -inf, y) with key and query the last two loop
/// indices; x is the input or its extension.
static bool matchScaleMask(linalg::GenericOp op, Attention &a) {
  if (!isUnaryElementwise(op))
    return false;
  unsigned rank = op.getNumLoops();
  Block *body = op.getBody();
  Value value = cast<linalg::YieldOp>(body->getTerminator()).getOperand(0);
  SmallPtrSet<Operation *, 8> used;
  auto indexOf = [&](Value v) -> std::optional<uint64_t> {
    auto index = v.getDefiningOp<linalg::IndexOp>();
    if (!index)
      return std::nullopt;
    used.insert(index);
    return index.getDim();
  };
  if (auto select = value.getDefiningOp<arith::SelectOp>()) {
    auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
    FloatAttr masked;
    if (!cmp || !matchPattern(select.getTrueValue(), m_Constant(&masked)) ||
        !masked.getValue().isInfinity() || !masked.getValue().isNegative())
      return false;
    std::optional<uint64_t> lhs = indexOf(cmp.getLhs()),
                            rhs = indexOf(cmp.getRhs());
    if (!lhs || !rhs)
      return false;
    arith::CmpIPredicate p = cmp.getPredicate();
    bool keyAfterQuery =
        ((p == arith::CmpIPredicate::ugt || p == arith::CmpIPredicate::sgt) &&
         *lhs == rank - 1 && *rhs == rank - 2) ||
        ((p == arith::CmpIPredicate::ult || p == arith::CmpIPredicate::slt) &&
         *lhs == rank - 2 && *rhs == rank - 1);
    if (!keyAfterQuery)
      return false;
    used.insert(select);
    used.insert(cmp);
    used.insert(select.getTrueValue().getDefiningOp());
    a.causal = true;
    value = select.getFalseValue();
  }
  FloatAttr c;
  if (auto mul = value.getDefiningOp<arith::MulFOp>()) {
    Value other;
    if (matchPattern(mul.getRhs(), m_Constant(&c)))
      other = mul.getLhs();
    else if (matchPattern(mul.getLhs(), m_Constant(&c)))
      other = mul.getRhs();
    else
      return false;
    a.scale = c.getValueAsDouble();
    used.insert(mul);
    used.insert(
        (other == mul.getLhs() ? mul.getRhs() : mul.getLhs()).getDefiningOp());
    value = other;
  } else if (auto div = value.getDefiningOp<arith::DivFOp>()) {
    if (!matchPattern(div.getRhs(), m_Constant(&c)) ||
        c.getValueAsDouble() == 0.0)
      return false;
    a.scale = 1.0 / c.getValueAsDouble();
    used.insert(div);
    used.insert(div.getRhs().getDefiningOp());
    value = div.getLhs();
  }
  if (auto ext = value.getDefiningOp<arith::ExtFOp>()) {
    used.insert(ext);
    value = ext.getIn();
  }
  if (value != body->getArgument(0))
    return false;
  // Nothing else in the body.
  for (Operation &nested : body->without_terminator())
    if (!used.contains(&nested))
      return false;
  return true;
}

/// An elementwise cast of the probabilities (truncf/extf of the input).
static bool isCast(linalg::GenericOp op) {
  if (!isUnaryElementwise(op))
    return false;
  Block *body = op.getBody();
  if (body->getOperations().size() != 2)
    return false;
  Operation *cast = &body->front();
  return isa<arith::TruncFOp, arith::ExtFOp>(cast) &&
         cast->getOperand(0) == body->getArgument(0) &&
         body->getTerminator()->getOperand(0) == cast->getResult(0);
}

/// The attention a softmax is the middle of, if the chain matches.
static std::optional<Attention> match(linalg::SoftmaxOp softmax) {
  Attention a;
  auto type = dyn_cast<RankedTensorType>(softmax.getInput().getType());
  if (!type || !softmax->getResult(0).hasOneUse() ||
      (type.getRank() != 3 && type.getRank() != 4) ||
      softmax.getDimension() != uint64_t(type.getRank() - 1))
    return std::nullopt;
  bool batched = type.getRank() == 4;
  // Scores: contraction [b?, h, s, t] of q [b?, s, h, e], k [b?, t, h, e].
  Value scores = softmax.getInput();
  Operation *maskOp = nullptr;
  if (auto generic = scores.getDefiningOp<linalg::GenericOp>();
      generic && !linalg::isaContractionOpInterface(generic)) {
    if (!matchScaleMask(generic, a))
      return std::nullopt;
    maskOp = generic;
    scores = generic.getDpsInputs()[0];
  }
  Operation *qk = scores.getDefiningOp();
  std::optional<Contraction> sc = matchContraction(qk);
  // Output dims of the scores: b?, h, s, t -> roles 0.., with b first.
  int b = batched ? 0 : -2, h = batched ? 1 : 0, s = h + 1, t = h + 2;
  auto roles = [&](std::initializer_list<int> want) {
    SmallVector<int> r;
    for (int w : want)
      if (w != -2)
        r.push_back(w);
    return r;
  };
  if (!sc || sc->lhsRoles != roles({b, s, h, -1}) ||
      sc->rhsRoles != roles({b, t, h, -1}))
    return std::nullopt;
  a.q = sc->lhs;
  a.k = sc->rhs;
  // Probabilities, maybe cast, into the contraction with v.
  Operation *user = *softmax->getResult(0).getUsers().begin();
  Operation *castOp = nullptr;
  if (auto generic = dyn_cast<linalg::GenericOp>(user);
      generic && !linalg::isaContractionOpInterface(generic)) {
    if (!isCast(generic))
      return std::nullopt;
    castOp = generic;
    user = *generic->getResult(0).getUsers().begin();
  }
  // o [b?, s, h, e] = p [b?, h, s, t] . v [b?, t, h, e]: roles of the
  // output o: b? 0, s, h, e.
  std::optional<Contraction> pv = matchContraction(user);
  int ob = batched ? 0 : -2, os = batched ? 1 : 0, oh = os + 1, oe = os + 2;
  if (!pv || pv->lhsRoles != roles({ob, oh, os, -1}) ||
      pv->rhsRoles != roles({ob, -1, oh, oe}))
    return std::nullopt;
  a.v = pv->rhs;
  a.pv = cast<linalg::LinalgOp>(user);
  // Element types and sizes the kernel takes.
  auto qType = cast<RankedTensorType>(a.q.getType());
  Type element = qType.getElementType();
  auto outType = cast<RankedTensorType>(user->getResult(0).getType());
  if (!(element.isBF16() || element.isF16()) ||
      cast<RankedTensorType>(a.k.getType()).getElementType() != element ||
      cast<RankedTensorType>(a.v.getType()).getElementType() != element ||
      outType.getElementType() != element || !qType.hasStaticShape() ||
      !cast<RankedTensorType>(a.k.getType()).hasStaticShape() ||
      !cast<RankedTensorType>(a.v.getType()).hasStaticShape() ||
      !outType.hasStaticShape())
    return std::nullopt;
  int64_t d = qType.getShape().back();
  if ((d != 64 && d != 128) ||
      cast<RankedTensorType>(a.v.getType()).getShape().back() != d)
    return std::nullopt;
  int64_t queries = qType.getShape()[batched ? 1 : 0];
  int64_t keys =
      cast<RankedTensorType>(a.k.getType()).getShape()[batched ? 1 : 0];
  if (a.causal && queries != keys)
    return std::nullopt;
  a.chain = {user};
  if (castOp)
    a.chain.push_back(castOp);
  a.chain.push_back(softmax);
  if (maskOp)
    a.chain.push_back(maskOp);
  a.chain.push_back(qk);
  return a;
}

struct CUDAFuseAttentionPass
    : dtensor::impl::CUDAFuseAttentionPassBase<CUDAFuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Attention> found;
    module.walk([&](linalg::SoftmaxOp softmax) {
      if (std::optional<Attention> a = match(softmax))
        found.push_back(*a);
    });
    for (Attention &a : found)
      rewrite(module, a);
  }

  void rewrite(ModuleOp module, Attention &a) {
    Operation *pv = a.pv;
    OpBuilder builder(pv);
    Location loc = pv->getLoc();
    MLIRContext *ctx = builder.getContext();
    auto outType = cast<RankedTensorType>(pv->getResult(0).getType());
    Type element = outType.getElementType();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto unranked = UnrankedMemRefType::get(element, 0);
    std::string name = cuda::getRuntimeSymbol(cuda::RuntimeEntry::Attention,
                                              element.isBF16() ? "bf16" : "f16");
    func::FuncOp attention = cuda::declareRuntimeFunction(
        module, name,
        {ptr, unranked, unranked, unranked, unranked, builder.getF32Type(),
         builder.getI64Type()},
        {});
    Value context =
        cuda::getRuntimeContext(pv->getParentOfType<func::FuncOp>());
    // Any layout: q, k, v are often views (slices of a fused projection).
    auto buffer = [&](Value tensor) -> Value {
      auto type = cast<RankedTensorType>(tensor.getType());
      SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
      auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides);
      Value memref = bufferization::ToBufferOp::create(
          builder, loc, MemRefType::get(type.getShape(), element, layout),
          tensor, /*read_only=*/true);
      return memref::CastOp::create(builder, loc, unranked, memref);
    };
    Value q = buffer(a.q), k = buffer(a.k), v = buffer(a.v);
    Value out = memref::AllocOp::create(
        builder, loc, MemRefType::get(outType.getShape(), element));
    Value scale = arith::ConstantOp::create(builder, loc,
                                            builder.getF32FloatAttr(a.scale));
    Value causal = arith::ConstantOp::create(
        builder, loc, builder.getI64IntegerAttr(a.causal ? 1 : 0));
    func::CallOp::create(
        builder, loc, attention,
        ValueRange{context, q, k, v,
                   memref::CastOp::create(builder, loc, unranked, out), scale,
                   causal});
    Value result = bufferization::ToTensorOp::create(
        builder, loc, outType, out, /*restrict=*/true, /*writable=*/true);
    pv->getResult(0).replaceAllUsesWith(result);
    for (Operation *op : a.chain) {
      SmallVector<Value> operands(op->getOperands());
      op->erase();
      // Inits (fills, empty tensors) left without users go too.
      while (!operands.empty()) {
        Operation *def = operands.pop_back_val().getDefiningOp();
        if (!def || !def->use_empty() ||
            !isa<linalg::FillOp, tensor::EmptyOp>(def))
          continue;
        llvm::append_range(operands, def->getOperands());
        def->erase();
      }
    }
  }
};

} // namespace
