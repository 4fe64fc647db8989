//===- ScalarDerivatives.cpp - derivatives of linalg body ops ------------===//
//
// Forward-mode derivatives of the scalar arith and math ops of a linalg
// body, with respect to one block argument: the derivative rule of each op
// (docs/autodiff.md, "scalar ops in bodies"). The gradient rule of a linalg
// op (GradientRules.cpp) builds its operands' gradients from these.
//
//===----------------------------------------------------------------------===//

#include "Autodiff.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::dtensor;
using namespace mlir::dtensor::autodiff;

Value BodyDifferentiator::getPrimal(Value v) {
  if (Value mapped = primal.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != body)
    return v; // Defined above the linalg op.
  for (Value operand : def->getOperands())
    getPrimal(operand);
  Operation *clone = b.clone(*def, primal);
  return clone->getResult(cast<OpResult>(v).getResultNumber());
}

FailureOr<Tangent> BodyDifferentiator::getTangent(Value v) {
  auto it = tangents.find(v);
  if (it != tangents.end())
    return it->second;
  FailureOr<Tangent> t = computeTangent(v);
  if (succeeded(t))
    tangents[v] = *t;
  return t;
}

Value BodyDifferentiator::materialize(Tangent t, Type type) {
  if (t.one)
    return floatConstant(b, loc, type, 1.0);
  if (!t.value)
    return floatConstant(b, loc, type, 0.0);
  return t.value;
}

Tangent BodyDifferentiator::mul(Tangent t, Value factor) {
  if (t.isZero())
    return {};
  if (t.one)
    return {factor};
  return {arith::MulFOp::create(b, loc, t.value, factor)};
}
Tangent BodyDifferentiator::add(Tangent x, Tangent y, Type type) {
  if (x.isZero())
    return y;
  if (y.isZero())
    return x;
  return {arith::AddFOp::create(b, loc, materialize(x, type),
                                materialize(y, type))};
}
Tangent BodyDifferentiator::neg(Tangent x, Type type) {
  if (x.isZero())
    return {};
  return {arith::NegFOp::create(b, loc, materialize(x, type))};
}
Tangent BodyDifferentiator::select(Value cond, Tangent x, Tangent y,
                                   Type type) {
  if (x.isZero() && y.isZero())
    return {};
  return {arith::SelectOp::create(b, loc, cond, materialize(x, type),
                                  materialize(y, type))};
}

FailureOr<Tangent> BodyDifferentiator::computeTangent(Value v) {
  if (v == wrt)
    return Tangent{Value(), true};
  if (isa<BlockArgument>(v))
    return Tangent{};
  Operation *op = v.getDefiningOp();
  if (op->getBlock() != body) {
    // A scalar captured from above: fine while it does not depend on what
    // is differentiated.
    if (active.contains(v))
      return op->emitError("autodiff: cannot differentiate through a "
                           "captured scalar that depends on a "
                           "differentiated argument"),
             failure();
    return Tangent{};
  }
  Type type = v.getType();
  if (!isa<FloatType>(type))
    return Tangent{}; // Integers, predicates, indices: no derivative.

  SmallVector<Tangent> ts;
  for (Value operand : op->getOperands()) {
    FailureOr<Tangent> t = getTangent(operand);
    if (failed(t))
      return failure();
    ts.push_back(*t);
  }
  if (llvm::all_of(ts, [](const Tangent &t) { return t.isZero(); }))
    return Tangent{};
  auto p = [&](unsigned i) { return getPrimal(op->getOperand(i)); };

  if (isa<arith::AddFOp>(op))
    return add(ts[0], ts[1], type);
  if (isa<arith::SubFOp>(op))
    return add(ts[0], neg(ts[1], type), type);
  if (isa<arith::NegFOp>(op))
    return neg(ts[0], type);
  if (isa<arith::MulFOp>(op))
    return add(mul(ts[0], p(1)), mul(ts[1], p(0)), type);
  if (isa<arith::DivFOp>(op)) {
    // d(a/b) = da/b - db*(a/b)/b.
    Tangent first;
    if (!ts[0].isZero())
      first = {arith::DivFOp::create(b, loc, materialize(ts[0], type), p(1))};
    Tangent second;
    if (!ts[1].isZero()) {
      Value quotient = getPrimal(v);
      Value scaled = arith::DivFOp::create(b, loc, quotient, p(1));
      second = mul(ts[1], scaled);
    }
    return add(first, neg(second, type), type);
  }
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op)) {
    // The first operand's derivative where it is strictly greater (relu's
    // convention at 0), else the second's.
    Value cond =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, p(0), p(1));
    return select(cond, ts[0], ts[1], type);
  }
  if (isa<arith::MinimumFOp, arith::MinNumFOp>(op)) {
    Value cond =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, p(0), p(1));
    return select(cond, ts[0], ts[1], type);
  }
  if (isa<arith::SelectOp>(op)) {
    if (!ts[0].isZero())
      return op->emitError("autodiff: cannot differentiate the condition "
                           "of 'arith.select'"),
             failure();
    return select(p(0), ts[1], ts[2], type);
  }
  if (isa<arith::ExtFOp>(op))
    return Tangent{arith::ExtFOp::create(b, loc, type,
                                         materialize(ts[0], p(0).getType()))};
  if (isa<arith::TruncFOp>(op))
    return Tangent{arith::TruncFOp::create(b, loc, type,
                                           materialize(ts[0], p(0).getType()))};
  if (isa<math::SqrtOp>(op)) {
    // d sqrt(a) = da / (2 sqrt(a)).
    Value twice = arith::MulFOp::create(
        b, loc, floatConstant(b, loc, type, 2.0), getPrimal(v));
    return Tangent{
        arith::DivFOp::create(b, loc, materialize(ts[0], type), twice)};
  }
  if (isa<math::RsqrtOp>(op)) {
    // d a^-1/2 = -1/2 a^-3/2 da = -1/2 r^3 da.
    Value r = getPrimal(v);
    Value r3 =
        arith::MulFOp::create(b, loc, r, arith::MulFOp::create(b, loc, r, r));
    Value factor =
        arith::MulFOp::create(b, loc, floatConstant(b, loc, type, -0.5), r3);
    return mul(ts[0], factor);
  }
  if (isa<math::ExpOp>(op))
    return mul(ts[0], getPrimal(v));
  if (isa<math::LogOp>(op))
    return Tangent{
        arith::DivFOp::create(b, loc, materialize(ts[0], type), p(0))};
  if (isa<math::TanhOp>(op)) {
    Value r = getPrimal(v);
    Value factor =
        arith::SubFOp::create(b, loc, floatConstant(b, loc, type, 1.0),
                              arith::MulFOp::create(b, loc, r, r));
    return mul(ts[0], factor);
  }
  if (isa<math::AbsFOp>(op)) {
    Value negative =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, p(0),
                              floatConstant(b, loc, type, 0.0));
    return select(negative, neg(ts[0], type), ts[0], type);
  }
  if (isa<math::SinOp>(op))
    return mul(ts[0], math::CosOp::create(b, loc, p(0)));
  if (isa<math::CosOp>(op))
    return neg(mul(ts[0], math::SinOp::create(b, loc, p(0))), type);
  return op->emitError("autodiff: cannot differentiate '")
             << op->getName() << "'",
         failure();
}
