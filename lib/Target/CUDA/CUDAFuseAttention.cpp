//===- CUDAFuseAttention.cpp - attention chains -> dtensor_rt_attention ---===//
//
// softmax(scale * q k^T [causal mask]) v written as linalg ops (a
// contraction, an elementwise scale/mask, linalg.softmax over the keys, an
// optional element-type cast, a contraction with v) becomes one call of
// the runtime's fused attention, which never materializes the
// [heads, queries, keys] score matrix. Runs on tensors, before softmax is
// decomposed; the operands are handed over with bufferization.to_buffer and
// the results come back with bufferization.to_tensor, so bufferization
// places the calls among the other buffers.
//
// When the probabilities have other uses, they must be exactly the chain
// that dtensor-autodiff emits for the attention's backward (the joint
// function of a training step): dV = P^T dO, dP = dO V^T, the softmax
// backward dS = P (dP - rowsum(dP P)), the backward of the scale and mask,
// dQ = dS K and dK = dS^T Q. Forward and backward then become the forward
// call that also saves the softmax statistics (dtensor_rt_attention_stats)
// and one backward call writing dQ, dK and dV
// (dtensor_rt_attention_backward): the scores are not materialized either
// way.
//
// Anything that does not match exactly is left as it is (the materialized
// path computes the same values): the pass never changes what a program
// computes, only how. A forward whose probabilities have uses that are not
// such a backward gets a remark saying why it stays materialized.
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

#include <cmath>

namespace mlir::dtensor {
#define GEN_PASS_DEF_CUDAFUSEATTENTIONPASS
#include "dtensor/Target/CUDA/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// The backward of a matched attention.
struct Backward {
  Value dO;
  linalg::LinalgOp dq, dk, dv; // their results are replaced
  Operation *first = nullptr;  // the first op of the chain in its block
};

/// What a matched chain computes.
struct Attention {
  Value q, k, v;
  float scale = 1.0f;
  bool causal = false;
  linalg::LinalgOp pv;
  SmallVector<Operation *> chain; // to erase (forward and backward)
  std::optional<Backward> backward;
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
/// operands' dims in terms of the output's: `lhsRoles` and `rhsRoles`
/// list, per dim of each input, the output dim it is (or -1 for the
/// reduction dim), so that callers can check layouts by roles. The uses of
/// the result are the caller's business.
struct Contraction {
  Value lhs, rhs;
  SmallVector<int> lhsRoles, rhsRoles; // output dim index, or -1: reduced

  /// The roles of input `value` (lhs or rhs), or null if it is neither.
  const SmallVector<int> *rolesOf(Value value) const {
    return value == lhs ? &lhsRoles : value == rhs ? &rhsRoles : nullptr;
  }
  /// The input that is not `value`.
  Value other(Value value) const { return value == lhs ? rhs : lhs; }
};
static std::optional<Contraction> matchContraction(Operation *op) {
  auto linalgOp = dyn_cast_or_null<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() ||
      !linalg::isaContractionOpInterface(linalgOp) ||
      linalgOp.getNumDpsInputs() != 2 || linalgOp.getNumDpsInits() != 1 ||
      linalgOp.getNumReductionLoops() != 1 ||
      !isZeroFill(linalgOp.getDpsInits()[0]))
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

/// Roles of a [b?, ...] operand: `want` with the batch entry (-2) dropped.
static SmallVector<int> roles(std::initializer_list<int> want) {
  SmallVector<int> r;
  for (int w : want)
    if (w != -2)
      r.push_back(w);
  return r;
}

/// An elementwise op on tensors of one input into one output, both indexed
/// by the identity.
static bool isUnaryElementwise(linalg::GenericOp op) {
  return op.getNumDpsInputs() == 1 && op.getNumDpsInits() == 1 &&
         op.getNumReductionLoops() == 0 && op.hasPureTensorSemantics() &&
         llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); });
}

/// Whether `cmp` compares the key index (the last loop dim of a rank-`rank`
/// op) as greater than the query index (the one before): the causal mask.
static bool isKeyAfterQuery(arith::CmpIOp cmp, unsigned rank,
                            SmallPtrSetImpl<Operation *> *used = nullptr) {
  auto indexOf = [&](Value v) -> std::optional<uint64_t> {
    auto index = v.getDefiningOp<linalg::IndexOp>();
    if (!index)
      return std::nullopt;
    if (used)
      used->insert(index);
    return index.getDim();
  };
  std::optional<uint64_t> lhs = indexOf(cmp.getLhs()),
                          rhs = indexOf(cmp.getRhs());
  if (!lhs || !rhs)
    return false;
  arith::CmpIPredicate p = cmp.getPredicate();
  return ((p == arith::CmpIPredicate::ugt || p == arith::CmpIPredicate::sgt) &&
          *lhs == rank - 1 && *rhs == rank - 2) ||
         ((p == arith::CmpIPredicate::ult || p == arith::CmpIPredicate::slt) &&
          *lhs == rank - 2 && *rhs == rank - 1);
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
  if (auto select = value.getDefiningOp<arith::SelectOp>()) {
    auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
    FloatAttr masked;
    if (!cmp || !matchPattern(select.getTrueValue(), m_Constant(&masked)) ||
        !masked.getValue().isInfinity() || !masked.getValue().isNegative())
      return false;
    if (!isKeyAfterQuery(cmp, rank, &used))
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

/// An elementwise cast (truncf/extf of the input).
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

//===----------------------------------------------------------------------===//
// The backward chain
//===----------------------------------------------------------------------===//

/// The value of a floating-point expression of constants only (constants,
/// extf/truncf of one, +, -, *, / of two), wherever they are defined.
static std::optional<double> evalConstant(Value value) {
  FloatAttr c;
  if (matchPattern(value, m_Constant(&c)))
    return c.getValueAsDouble();
  Operation *op = value.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (isa<arith::ExtFOp, arith::TruncFOp>(op))
    return evalConstant(op->getOperand(0));
  if (!isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(op))
    return std::nullopt;
  std::optional<double> lhs = evalConstant(op->getOperand(0)),
                        rhs = evalConstant(op->getOperand(1));
  if (!lhs || !rhs)
    return std::nullopt;
  if (isa<arith::AddFOp>(op))
    return *lhs + *rhs;
  if (isa<arith::SubFOp>(op))
    return *lhs - *rhs;
  if (isa<arith::MulFOp>(op))
    return *lhs * *rhs;
  return *lhs / *rhs;
}

/// The yielded value of a linalg op's body.
static Value yielded(linalg::LinalgOp op) {
  return op.getBlock()->getTerminator()->getOperand(0);
}

/// Whether `a` and `b` are the operands of `op` (a two-operand op), in
/// either order.
static bool operandsAre(Operation *op, Value a, Value b) {
  return op && op->getNumOperands() == 2 &&
         ((op->getOperand(0) == a && op->getOperand(1) == b) ||
          (op->getOperand(0) == b && op->getOperand(1) == a));
}

/// The row map of a rank-`rank` op: every loop dim but the last.
static bool isRowMap(AffineMap map, unsigned rank) {
  SmallVector<AffineExpr> rows;
  for (unsigned i = 0; i + 1 < rank; ++i)
    rows.push_back(getAffineDimExpr(i, map.getContext()));
  return map == AffineMap::get(rank, 0, rows, map.getContext());
}

/// `op` as rowsum(x * y) over the last dim into a zero fill: the two inputs
/// (any order) indexed by the identity, the output by the row map.
static std::optional<std::pair<Value, Value>> matchRowDot(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 2 || generic.getNumDpsInits() != 1 ||
      !isZeroFill(generic.getDpsInits()[0]))
    return std::nullopt;
  unsigned rank = generic.getNumLoops();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators =
      generic.getIteratorTypesArray();
  for (unsigned i = 0; i < rank; ++i)
    if (iterators[i] != (i + 1 == rank ? utils::IteratorType::reduction
                                       : utils::IteratorType::parallel))
      return std::nullopt;
  if (!maps[0].isIdentity() || !maps[1].isIdentity() ||
      !isRowMap(maps[2], rank))
    return std::nullopt;
  Block *body = generic.getBody();
  auto add = yielded(generic).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  Value acc = body->getArgument(2);
  Value product = add.getLhs() == acc   ? add.getRhs()
                  : add.getRhs() == acc ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul || !operandsAre(mul, body->getArgument(0), body->getArgument(1)))
    return std::nullopt;
  return std::make_pair(generic.getDpsInputs()[0], generic.getDpsInputs()[1]);
}

/// Whether `op` is the softmax backward p * (dp - r) (either product
/// order) of `p`, `dp` (identity maps) and the row value `r` (row map),
/// inputs in any order, into an identity output.
static bool isSoftmaxGrad(Operation *op, Value p, Value dp, Value r) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 3 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0)
    return false;
  unsigned rank = generic.getNumLoops();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  Block *body = generic.getBody();
  Value argP, argDp, argR;
  for (unsigned i = 0; i < 3; ++i) {
    Value input = generic.getDpsInputs()[i];
    Value arg = body->getArgument(i);
    if (input == p && !argP && maps[i].isIdentity())
      argP = arg;
    else if (input == dp && !argDp && maps[i].isIdentity())
      argDp = arg;
    else if (input == r && !argR && isRowMap(maps[i], rank))
      argR = arg;
    else
      return false;
  }
  if (!argP || !argDp || !argR || !maps[3].isIdentity())
    return false;
  auto mul = yielded(generic).getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value diff = mul.getLhs() == argP   ? mul.getRhs()
               : mul.getRhs() == argP ? mul.getLhs()
                                      : Value();
  auto sub = diff ? diff.getDefiningOp<arith::SubFOp>() : nullptr;
  return sub && sub.getLhs() == argDp && sub.getRhs() == argR;
}

/// The backward of the forward's scale and mask, the gradient of the
/// scores: an elementwise op of dS alone computing (truncf of) dS * c (or
/// dS / c, or dS) with the causal form select(key > query, 0, c) as the
/// factor or select(key > query, 0, ...) around the product. True when its
/// scale and mask are `a`'s.
static bool matchScoresGrad(linalg::GenericOp op, const Attention &a,
                            std::string &why) {
  if (!isUnaryElementwise(op)) {
    why = "the gradient of the scores is not an elementwise op of dS";
    return false;
  }
  unsigned rank = op.getNumLoops();
  Value in = op.getBody()->getArgument(0);
  Value value = yielded(op);
  if (auto trunc = value.getDefiningOp<arith::TruncFOp>())
    value = trunc.getIn();
  bool causal = false;
  // select(key > query, 0, x): x.
  auto unmask = [&](Value v, Value &rest) {
    auto select = v.getDefiningOp<arith::SelectOp>();
    auto cmp = select ? select.getCondition().getDefiningOp<arith::CmpIOp>()
                      : nullptr;
    std::optional<double> zero =
        select ? evalConstant(select.getTrueValue()) : std::nullopt;
    if (!cmp || !zero || *zero != 0.0 || !isKeyAfterQuery(cmp, rank))
      return false;
    rest = select.getFalseValue();
    return true;
  };
  if (value.getDefiningOp<arith::SelectOp>()) {
    if (!unmask(value, value)) {
      why = "the gradient of the scores selects by another condition than "
            "the causal mask";
      return false;
    }
    causal = true;
  }
  double scale = 1.0;
  if (auto mul = value.getDefiningOp<arith::MulFOp>()) {
    Value factor = mul.getLhs() == in   ? mul.getRhs()
                   : mul.getRhs() == in ? mul.getLhs()
                                        : Value();
    if (!factor) {
      why = "the gradient of the scores is not dS times a factor";
      return false;
    }
    if (std::optional<double> c = evalConstant(factor)) {
      scale = *c;
    } else {
      Value rest;
      std::optional<double> masked;
      if (causal || !unmask(factor, rest) ||
          !(masked = evalConstant(rest))) {
        why = "the factor of the gradient of the scores is neither a "
              "constant nor the causal mask of one";
        return false;
      }
      causal = true;
      scale = *masked;
    }
  } else if (auto div = value.getDefiningOp<arith::DivFOp>()) {
    std::optional<double> c = evalConstant(div.getRhs());
    if (div.getLhs() != in || !c || *c == 0.0) {
      why = "the gradient of the scores is not dS divided by a constant";
      return false;
    }
    scale = 1.0 / *c;
  } else if (value != in) {
    why = "the gradient of the scores is not dS times a constant";
    return false;
  }
  if (causal != a.causal) {
    why = a.causal ? "the forward is causal, the backward is not masked"
                   : "the backward is masked, the forward is not causal";
    return false;
  }
  if (std::abs(scale - double(a.scale)) > 1e-6 * std::abs(double(a.scale))) {
    why = "the backward scales by " + std::to_string(scale) +
          ", the forward by " + std::to_string(a.scale);
    return false;
  }
  return true;
}

/// The users of `value` that are not in `skip`, each once.
static SmallVector<Operation *> usersBut(Value value,
                                         ArrayRef<Operation *> skip) {
  SmallVector<Operation *> users;
  for (Operation *user : value.getUsers())
    if (!llvm::is_contained(skip, user) && !llvm::is_contained(users, user))
      users.push_back(user);
  return users;
}

/// Matches the backward of forward `a` (probabilities `p` from the
/// softmax, `pc` the ones the p v contraction takes, maybe `p` itself),
/// given the extra users of `p` and `pc`. Adds its ops to `a.chain`.
static bool matchBackward(Attention &a, Value p, Value pc, bool batched,
                          std::string &why) {
  auto fail = [&](const std::string &text) {
    why = text;
    return false;
  };
  SmallVector<Operation *> forwardChain(a.chain);
  // Users of pc besides p v: dV = pc^T dO.
  // Output dims of dV [b?, t, h, e]: b 0, t, h, e.
  int b = batched ? 0 : -2, t = batched ? 1 : 0, h = t + 1, e = t + 2;
  // Of the scores [b?, h, s, t] and the gradients of q [b?, s, h, e]: the
  // same numbering.
  int sh = batched ? 1 : 0, ss = sh + 1, st = sh + 2;
  int qs = batched ? 1 : 0, qh = qs + 1, qe = qs + 2;
  SmallVector<Operation *> pcUsers = usersBut(pc, forwardChain);
  SmallVector<Operation *> pUsers =
      pc == p ? pcUsers : usersBut(p, forwardChain);
  Operation *dvOp = nullptr;
  std::optional<Contraction> dv;
  for (Operation *user : pcUsers) {
    std::optional<Contraction> c = matchContraction(user);
    const SmallVector<int> *pcRoles = c ? c->rolesOf(pc) : nullptr;
    if (!pcRoles || *pcRoles != roles({b, h, -1, t}) ||
        *c->rolesOf(c->other(pc)) != roles({b, -1, h, e}))
      continue;
    if (dvOp)
      return fail("two contractions take the probabilities like dV = P^T dO");
    dvOp = user;
    dv = c;
  }
  if (!dvOp)
    return fail("no contraction dV = P^T dO takes the probabilities");
  Value dO = dv->other(pc);
  // The rowsum of dP * P and the softmax backward, users of p.
  Operation *rowOp = nullptr, *dsOp = nullptr;
  Value dpf;
  for (Operation *user : pUsers) {
    if (user == dvOp)
      continue;
    if (std::optional<std::pair<Value, Value>> ins = matchRowDot(user)) {
      if (rowOp || (ins->first != p && ins->second != p))
        return fail("the probabilities have an unexpected row reduction");
      rowOp = user;
      dpf = ins->first == p ? ins->second : ins->first;
    }
  }
  if (!rowOp)
    return fail("no rowsum(dP * P) of the softmax backward");
  for (Operation *user : pUsers)
    if (user != dvOp && user != rowOp) {
      if (dsOp || !isSoftmaxGrad(user, p, dpf, rowOp->getResult(0)))
        return fail("the probabilities have a use that is not the softmax "
                    "backward P * (dP - rowsum(dP * P))");
      dsOp = user;
    }
  if (!dsOp)
    return fail("no softmax backward P * (dP - rowsum(dP * P))");
  // dP, maybe extended: a contraction dO . V^T.
  Operation *dpCast = nullptr;
  Value dp = dpf;
  if (auto generic = dpf.getDefiningOp<linalg::GenericOp>();
      generic && !linalg::isaContractionOpInterface(generic)) {
    if (!isCast(generic))
      return fail("dP is neither a contraction nor its cast");
    dpCast = generic;
    dp = generic.getDpsInputs()[0];
  }
  Operation *dpOp = dp.getDefiningOp();
  std::optional<Contraction> dpc = matchContraction(dpOp);
  if (!dpc || !dpc->rolesOf(dO) || !dpc->rolesOf(a.v) || dO == a.v ||
      *dpc->rolesOf(dO) != roles({b, ss, sh, -1}) ||
      *dpc->rolesOf(a.v) != roles({b, st, sh, -1}))
    return fail("dP is not the contraction dO . V^T of dV's dO");
  // The gradient of the scores: the backward of the scale and mask, or dS
  // itself when the forward has neither.
  Value ds = dsOp->getResult(0);
  Operation *scoresGradOp = nullptr;
  Value g = ds;
  SmallVector<Operation *> dsUsers(ds.getUsers());
  if (dsUsers.size() == 1) {
    auto generic = dyn_cast<linalg::GenericOp>(dsUsers.front());
    if (!generic || linalg::isaContractionOpInterface(generic))
      return fail("dS has one use, not the backward of the scale and mask");
    if (!matchScoresGrad(generic, a, why))
      return false;
    scoresGradOp = generic;
    g = generic->getResult(0);
  } else if (a.causal || a.scale != 1.0f) {
    return fail("dS is not scaled and masked like the forward's scores");
  }
  // dQ = g K and dK = g^T Q.
  Operation *dqOp = nullptr, *dkOp = nullptr;
  for (Operation *user : g.getUsers()) {
    std::optional<Contraction> c = matchContraction(user);
    const SmallVector<int> *gRoles = c ? c->rolesOf(g) : nullptr;
    if (!gRoles)
      return fail("the gradient of the scores has a use that is not dQ or dK");
    Value other = c->other(g);
    const SmallVector<int> &otherRoles = *c->rolesOf(other);
    if (!dqOp && other == a.k && *gRoles == roles({b, qh, qs, -1}) &&
        otherRoles == roles({b, -1, qh, qe}))
      dqOp = user;
    else if (!dkOp && other == a.q && *gRoles == roles({b, qh, -1, qs}) &&
             otherRoles == roles({b, -1, qh, qe}))
      dkOp = user;
    else
      return fail("the gradient of the scores has a use that is not dQ = dS "
                  "K or dK = dS^T Q");
  }
  if (!dqOp || !dkOp)
    return fail("dQ = dS K or dK = dS^T Q is missing");
  // Types and shapes: dO like o, the gradients like q, k, v.
  if (dO.getType() != a.pv->getResult(0).getType() ||
      dqOp->getResult(0).getType() != a.q.getType() ||
      dkOp->getResult(0).getType() != a.k.getType() ||
      dvOp->getResult(0).getType() != a.v.getType())
    return fail("dO, dQ, dK or dV is not of the type of o, q, k or v");
  // One block, the backward after the forward.
  SmallVector<Operation *> backward{dpOp, dvOp, rowOp, dsOp, dqOp, dkOp};
  if (dpCast)
    backward.push_back(dpCast);
  if (scoresGradOp)
    backward.push_back(scoresGradOp);
  Block *block = a.pv->getBlock();
  Operation *first = nullptr;
  for (Operation *op : backward) {
    if (op->getBlock() != block)
      return fail("the backward is not in the forward's block");
    if (!first || op->isBeforeInBlock(first))
      first = op;
  }
  if (first->isBeforeInBlock(a.pv))
    return fail("the backward starts before the forward's p v");
  // Every intermediate used only inside the chain.
  SmallVector<Operation *> all(a.chain);
  llvm::append_range(all, backward);
  for (Operation *op : all) {
    if (op == a.pv || op == dqOp || op == dkOp || op == dvOp)
      continue;
    for (Operation *user : op->getResult(0).getUsers())
      if (!llvm::is_contained(all, user))
        return fail("an intermediate of the chain has another use");
  }
  a.chain = all;
  a.backward = Backward{dO, cast<linalg::LinalgOp>(dqOp),
                        cast<linalg::LinalgOp>(dkOp),
                        cast<linalg::LinalgOp>(dvOp), first};
  return true;
}

//===----------------------------------------------------------------------===//
// The forward chain
//===----------------------------------------------------------------------===//

/// The attention a softmax is the middle of, if the chain matches (with a
/// remark on the softmax when only the backward does not).
static std::optional<Attention> match(linalg::SoftmaxOp softmax) {
  Attention a;
  auto type = dyn_cast<RankedTensorType>(softmax.getInput().getType());
  if (!type || (type.getRank() != 3 && type.getRank() != 4) ||
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
  if (!sc || sc->lhsRoles != roles({b, s, h, -1}) ||
      sc->rhsRoles != roles({b, t, h, -1}))
    return std::nullopt;
  a.q = sc->lhs;
  a.k = sc->rhs;
  // Probabilities, maybe cast, into the contraction with v:
  // o [b?, s, h, e] = p [b?, h, s, t] . v [b?, t, h, e]: roles of the
  // output o: b? 0, s, h, e.
  int ob = batched ? 0 : -2, os = batched ? 1 : 0, oh = os + 1, oe = os + 2;
  auto asPv = [&](Operation *op, Value probs) -> std::optional<Contraction> {
    std::optional<Contraction> pv = matchContraction(op);
    if (!pv || pv->lhs != probs || pv->lhsRoles != roles({ob, oh, os, -1}) ||
        pv->rhsRoles != roles({ob, -1, oh, oe}))
      return std::nullopt;
    return pv;
  };
  Value p = softmax->getResult(0), pc = p;
  Operation *castOp = nullptr, *pvOp = nullptr;
  std::optional<Contraction> pv;
  for (Operation *user : p.getUsers()) {
    if (auto generic = dyn_cast<linalg::GenericOp>(user);
        generic && !linalg::isaContractionOpInterface(generic) &&
        isCast(generic)) {
      for (Operation *castUser : generic->getResult(0).getUsers())
        if (std::optional<Contraction> c =
                asPv(castUser, generic->getResult(0))) {
          castOp = generic;
          pvOp = castUser;
          pv = c;
        }
    } else if (std::optional<Contraction> c = asPv(user, p)) {
      pvOp = user;
      pv = c;
    }
    if (pvOp)
      break;
  }
  if (!pvOp)
    return std::nullopt;
  if (castOp)
    pc = castOp->getResult(0);
  a.v = pv->rhs;
  a.pv = cast<linalg::LinalgOp>(pvOp);
  // Element types and sizes the kernel takes.
  auto qType = cast<RankedTensorType>(a.q.getType());
  Type element = qType.getElementType();
  auto outType = cast<RankedTensorType>(pvOp->getResult(0).getType());
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
  a.chain = {pvOp};
  if (castOp)
    a.chain.push_back(castOp);
  a.chain.push_back(softmax);
  if (maskOp)
    a.chain.push_back(maskOp);
  a.chain.push_back(qk);
  // The scores and the masked scores feed the softmax alone.
  if (!qk->getResult(0).hasOneUse() ||
      (maskOp && !maskOp->getResult(0).hasOneUse()))
    return std::nullopt;
  // The probabilities feed p v alone (inference), or also exactly their
  // backward (training).
  bool extra = !usersBut(p, a.chain).empty() ||
               (castOp && !usersBut(pc, a.chain).empty());
  if (!extra)
    return a;
  std::string why;
  if (matchBackward(a, p, pc, batched, why))
    return a;
  softmax.emitRemark() << "attention not fused: the probabilities have other "
                          "uses than a recognised attention backward ("
                       << why << "); the materialized chain stays";
  return std::nullopt;
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
    StringRef suffix = element.isBF16() ? "bf16" : "f16";
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto unranked = UnrankedMemRefType::get(element, 0);
    auto unrankedF32 = UnrankedMemRefType::get(builder.getF32Type(), 0);
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
    // A fresh dense buffer of `type` and its tensor.
    auto fresh = [&](RankedTensorType type) -> std::pair<Value, Value> {
      Value memref = memref::AllocOp::create(
          builder, loc, MemRefType::get(type.getShape(), element));
      return {memref, memref::CastOp::create(builder, loc, unranked, memref)};
    };
    auto toTensor = [&](Value memref, RankedTensorType type) -> Value {
      return bufferization::ToTensorOp::create(builder, loc, type, memref,
                                               /*restrict=*/true,
                                               /*writable=*/true);
    };
    Value q = buffer(a.q), k = buffer(a.k), v = buffer(a.v);
    Value out = memref::AllocOp::create(
        builder, loc, MemRefType::get(outType.getShape(), element));
    Value scale = arith::ConstantOp::create(builder, loc,
                                            builder.getF32FloatAttr(a.scale));
    Value causal = arith::ConstantOp::create(
        builder, loc, builder.getI64IntegerAttr(a.causal ? 1 : 0));
    Value outU = memref::CastOp::create(builder, loc, unranked, out);
    Value stats;
    if (!a.backward) {
      func::FuncOp attention = cuda::declareRuntimeFunction(
          module,
          cuda::getRuntimeSymbol(cuda::RuntimeEntry::Attention, suffix),
          {ptr, unranked, unranked, unranked, unranked, builder.getF32Type(),
           builder.getI64Type()},
          {});
      func::CallOp::create(builder, loc, attention,
                           ValueRange{context, q, k, v, outU, scale, causal});
    } else {
      // The statistics: [b?, h, s] f32, dense.
      SmallVector<int64_t> shape(outType.getShape());
      int64_t s = shape[shape.size() - 3], h = shape[shape.size() - 2];
      shape.resize(shape.size() - 3);
      shape.append({h, s});
      stats = memref::AllocOp::create(
          builder, loc, MemRefType::get(shape, builder.getF32Type()));
      func::FuncOp attention = cuda::declareRuntimeFunction(
          module,
          cuda::getRuntimeSymbol(cuda::RuntimeEntry::AttentionStats, suffix),
          {ptr, unranked, unranked, unranked, unranked, unrankedF32,
           builder.getF32Type(), builder.getI64Type()},
          {});
      func::CallOp::create(
          builder, loc, attention,
          ValueRange{context, q, k, v, outU,
                     memref::CastOp::create(builder, loc, unrankedF32, stats),
                     scale, causal});
    }
    Value result = toTensor(out, outType);
    pv->getResult(0).replaceAllUsesWith(result);

    if (a.backward) {
      Backward &bw = *a.backward;
      builder.setInsertionPoint(bw.first);
      loc = bw.first->getLoc();
      Value qb = buffer(a.q), kb = buffer(a.k), vb = buffer(a.v),
            ob = buffer(result), dOb = buffer(bw.dO);
      SmallVector<Value> grads;
      SmallVector<Value> gradBuffers;
      for (linalg::LinalgOp op : {bw.dq, bw.dk, bw.dv}) {
        auto [memref, memrefU] =
            fresh(cast<RankedTensorType>(op->getResult(0).getType()));
        grads.push_back(memref);
        gradBuffers.push_back(memrefU);
      }
      func::FuncOp backward = cuda::declareRuntimeFunction(
          module,
          cuda::getRuntimeSymbol(cuda::RuntimeEntry::AttentionBackward,
                                 suffix),
          {ptr, unranked, unranked, unranked, unranked, unranked, unrankedF32,
           unranked, unranked, unranked, builder.getF32Type(),
           builder.getI64Type()},
          {});
      Value scaleB = arith::ConstantOp::create(
          builder, loc, builder.getF32FloatAttr(a.scale));
      Value causalB = arith::ConstantOp::create(
          builder, loc, builder.getI64IntegerAttr(a.causal ? 1 : 0));
      func::CallOp::create(
          builder, loc, backward,
          ValueRange{context, qb, kb, vb, ob, dOb,
                     memref::CastOp::create(builder, loc, unrankedF32, stats),
                     gradBuffers[0], gradBuffers[1], gradBuffers[2], scaleB,
                     causalB});
      linalg::LinalgOp ops[3] = {bw.dq, bw.dk, bw.dv};
      for (int i = 0; i < 3; ++i)
        ops[i]->getResult(0).replaceAllUsesWith(toTensor(
            grads[i], cast<RankedTensorType>(ops[i]->getResult(0).getType())));
    }

    // Erase the chain, each op once nothing uses it (every use of an
    // intermediate is an op of the chain; the results are replaced).
    SmallVector<Operation *> pending(a.chain);
    while (!pending.empty()) {
      auto it = llvm::find_if(pending, [](Operation *op) {
        return op->use_empty();
      });
      if (it == pending.end())
        break; // not reached: matching checked every use
      Operation *op = *it;
      pending.erase(it);
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
