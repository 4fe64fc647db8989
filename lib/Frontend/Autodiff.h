//===- Autodiff.h - the pieces of dtensor-autodiff --------------*- C++ -*-===//
//
// Private to lib/Frontend. The `dtensor-autodiff` pass (Autodiff.cpp) is
// built from four parts:
//
// - ScalarDerivatives.cpp: forward-mode derivatives of the scalar arith/math
//   ops of a linalg body (`BodyDifferentiator`);
// - GradientRules.cpp: the gradient rule of each op family, one function
//   per family, dispatched by op type (`applyGradientRule`);
// - ReverseSweep.cpp: the walk over a function in reverse that accumulates
//   the cotangents, recomputes checkpointed ops and writes the joint
//   function's signature (`differentiateFunction`); `Adjoints` is what a
//   gradient rule sees of it;
// - ClosedForms.cpp: exact shortcuts in the normalisations' backward: the
//   stabilising shifts that get no gradient (`findStabilisingShifts`) and
//   the sums of one-hot cotangents taken in closed form
//   (`foldOneHotSums`).
//
// docs/autodiff.md describes the rules and the joint function.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_FRONTEND_AUTODIFF_H
#define DTENSOR_LIB_FRONTEND_AUTODIFF_H

#include "dtensor/Dialect/DTensor/DTensor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::dtensor::autodiff {

//===----------------------------------------------------------------------===//
// Helpers shared by the parts
//===----------------------------------------------------------------------===//

/// The layout of a gradient of a value laid out as `layout`: the gradient of
/// a pending reduction is the same on every rank, so `P(op)` becomes `R`
/// (DTensor keeps such gradients replicated).
inline LayoutAttr getGradLayout(LayoutAttr layout) {
  if (!layout || !layout.hasPartial())
    return layout;
  MLIRContext *ctx = layout.getContext();
  SmallVector<PlacementAttr> placements;
  for (PlacementAttr p : layout.getPlacements())
    placements.push_back(p.isPartial() ? PlacementAttr::getReplicate(ctx) : p);
  return LayoutAttr::get(ctx, layout.getMesh(), placements);
}

/// True for a ranked tensor of floating-point elements.
inline bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// An arith.constant `value` of float type `type`.
inline Value floatConstant(OpBuilder &b, Location loc, Type type,
                           double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

/// A `type` tensor of zeros (a linalg.fill of a tensor.empty).
inline Value createZeros(OpBuilder &b, Location loc, RankedTensorType type) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  Value zero = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(type.getElementType(), 0.0));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

/// `v` converted to the float type `to` (arith.extf to a wider type,
/// arith.truncf to a narrower one); `v` itself where the types agree.
inline Value convertFloat(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (cast<FloatType>(from).getWidth() < cast<FloatType>(to).getWidth())
    return arith::ExtFOp::create(b, loc, to, v);
  return arith::TruncFOp::create(b, loc, to, v);
}

/// True for an arith or math op applied elementwise to tensors of one shape.
bool isElementwiseOnTensors(Operation *op);

/// `tensor` with its float elements converted to `element` (an elementwise
/// linalg.generic); `tensor` itself where the types agree.
Value convertElements(OpBuilder &b, Location loc, Value tensor, Type element);

//===----------------------------------------------------------------------===//
// Scalar derivatives (ScalarDerivatives.cpp)
//===----------------------------------------------------------------------===//

/// A tangent: null is zero; `one` is the seed (the derivative of the
/// argument with respect to itself).
struct Tangent {
  Value value;
  bool one = false;
  bool isZero() const { return !value && !one; }
};

/// Forward-mode differentiation of a linalg body with respect to one block
/// argument, written into a new body. Primal values are cloned into the new
/// body on demand, so only what the derivative needs is recomputed.
class BodyDifferentiator {
public:
  /// `primal` maps the forward body's block arguments to the new body's
  /// values; `active` holds the values (outside the body) that depend on a
  /// differentiated argument.
  BodyDifferentiator(OpBuilder &b, Location loc, Block *body, IRMapping &primal,
                     BlockArgument wrt, const DenseSet<Value> &active)
      : b(b), loc(loc), body(body), primal(primal), wrt(wrt), active(active) {}

  /// The new body's copy of the forward body's `v`.
  Value getPrimal(Value v);

  /// The derivative of the forward body's `v` with respect to `wrt`, built
  /// in the new body; fails with an error for an op without a rule.
  FailureOr<Tangent> getTangent(Value v);

  /// `t` as a value (1.0 for the seed).
  Value materialize(Tangent t, Type type);

private:
  Tangent mul(Tangent t, Value factor);
  Tangent add(Tangent x, Tangent y, Type type);
  Tangent neg(Tangent x, Type type);
  Tangent select(Value cond, Tangent x, Tangent y, Type type);
  FailureOr<Tangent> computeTangent(Value v);

  OpBuilder &b;
  Location loc;
  Block *body;
  IRMapping &primal;
  BlockArgument wrt;
  const DenseSet<Value> &active;
  DenseMap<Value, Tangent> tangents;
};

//===----------------------------------------------------------------------===//
// The adjoints of the reverse sweep (ReverseSweep.cpp)
//===----------------------------------------------------------------------===//

/// The cotangents of one function's values while its backward is written:
/// what a gradient rule reads (the cotangents of an op's results, which
/// values depend on a differentiated argument, the layouts of forward
/// values) and writes (the cotangents of the op's operands).
class Adjoints {
public:
  /// `forwardLayouts`: the layouts propagation gives `func`'s values in the
  /// forward alone; may be empty.
  Adjoints(func::FuncOp func, DenseMap<Value, LayoutAttr> forwardLayouts)
      : func(func), forwardLayouts(std::move(forwardLayouts)) {}

  /// Whether `v` depends on a differentiated argument.
  bool isActive(Value v) const { return active.contains(v); }
  const DenseSet<Value> &getActiveValues() const { return active; }

  /// The cotangent of `v` (null while it has none).
  Value getCotangent(Value v) const { return cotangents.lookup(v); }
  bool hasCotangent(Value v) const { return cotangents.count(v); }

  /// Adds `d` to the cotangent of `v` (a linalg.add after `d` when `v`
  /// already has one); nothing for an inactive `v` or a null `d`.
  void addCotangent(Value v, Value d);

  /// The layout a forward value has: what the op defining it requests, its
  /// argument's `dtensor.layout`, else the one propagation gives it in the
  /// forward alone (DTensor's placement of the value in the forward).
  LayoutAttr getKnownLayout(Value v);

  /// An argument's layout: its `dtensor.layout`, else the layout every
  /// annotation of it requests, else the propagated one.
  LayoutAttr getArgumentLayout(BlockArgument arg);

protected:
  func::FuncOp func;
  DenseSet<Value> active;
  DenseMap<Value, Value> cotangents;
  DenseMap<Value, LayoutAttr> forwardLayouts;
};

//===----------------------------------------------------------------------===//
// Gradient rules (GradientRules.cpp)
//===----------------------------------------------------------------------===//

/// Writes at `b` the gradients of `op`'s active operands from the
/// cotangents of its results and adds them to `adjoints`. Fails with an
/// error naming the op where it has no rule or the rule does not apply.
LogicalResult applyGradientRule(Operation *op, Adjoints &adjoints,
                                OpBuilder &b);

//===----------------------------------------------------------------------===//
// Exact shortcuts in the normalisations' backward (ClosedForms.cpp)
//===----------------------------------------------------------------------===//

/// The results of max and min reductions in `block` that the function's
/// results do not depend on, as proved by shift invariance (the stabilising
/// shift of a softmax, log-softmax or logsumexp): the backward treats them
/// as constants, which is exact.
DenseSet<Value> findStabilisingShifts(Block &block);

/// Rewrites the sums over a loop, among the linalg.generic ops of `block`
/// after `after` (all of them where null), of a tensor that is zero along
/// that loop but at one index (a one-hot cotangent: the gradient of a
/// target pick) as the value at that index, without the loop.
void foldOneHotSums(Block &block, Operation *after);

//===----------------------------------------------------------------------===//
// The reverse sweep (ReverseSweep.cpp)
//===----------------------------------------------------------------------===//

/// Turns `func`, a copy of the forward, into the joint forward + backward
/// function: seed cotangent arguments, the backward before the return, the
/// gradients of the arguments `wrt` as extra results (see docs/autodiff.md).
/// `forwardLayouts`: as for Adjoints. `checkpointed(op)`: whether the
/// backward recomputes `op` instead of reading its forward results.
/// `requestArgumentLayouts`: whether argument gradients are requested in
/// their arguments' layouts.
LogicalResult
differentiateFunction(func::FuncOp func, ArrayRef<unsigned> wrt,
                      DenseMap<Value, LayoutAttr> forwardLayouts,
                      llvm::function_ref<bool(Operation *)> checkpointed,
                      bool requestArgumentLayouts);

} // namespace mlir::dtensor::autodiff

#endif // DTENSOR_LIB_FRONTEND_AUTODIFF_H
