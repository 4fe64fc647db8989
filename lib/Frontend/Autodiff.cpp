//===- Autodiff.cpp - reverse-mode differentiation on the global view -----===//
//
// The `dtensor-autodiff` pass. For a global-view function @f it writes
// @f_grad: @f's body (the forward), then the backward in the same
// global-view ops, returning @f's results and the gradients of the
// differentiable arguments. Propagation, planning and partitioning then run
// on the joint function unchanged, so the backward's communication is
// whatever its layouts need. See docs/autodiff.md.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/CommAnalysis.h"
#include "dtensor/Sharding/Layout.h"
#include "dtensor/Frontend/Passes.h"
#include "dtensor/Partitioning/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "dtensor/Frontend/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;


/// The layout of a gradient of a value laid out as `layout`: the gradient of
/// a pending reduction is the same on every rank, so `P(op)` becomes `R`
/// (DTensor keeps such gradients replicated).
static LayoutAttr getGradLayout(LayoutAttr layout) {
  if (!layout || !layout.hasPartial())
    return layout;
  MLIRContext *ctx = layout.getContext();
  SmallVector<PlacementAttr> placements;
  for (PlacementAttr p : layout.getPlacements())
    placements.push_back(p.isPartial() ? PlacementAttr::getReplicate(ctx) : p);
  return LayoutAttr::get(ctx, layout.getMesh(), placements);
}

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

static Value createZeros(OpBuilder &b, Location loc, RankedTensorType type) {
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType());
  Value zero = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(type.getElementType(), 0.0));
  return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
}

static Value floatConstant(OpBuilder &b, Location loc, Type type,
                           double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

//===----------------------------------------------------------------------===//
// Scalar derivatives of linalg bodies
//===----------------------------------------------------------------------===//

namespace {

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
  BodyDifferentiator(OpBuilder &b, Location loc, Block *body, IRMapping &primal,
                     BlockArgument wrt, const DenseSet<Value> &active)
      : b(b), loc(loc), body(body), primal(primal), wrt(wrt), active(active) {}

  /// The new body's copy of the forward body's `v`.
  Value getPrimal(Value v) {
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

  FailureOr<Tangent> getTangent(Value v) {
    auto it = tangents.find(v);
    if (it != tangents.end())
      return it->second;
    FailureOr<Tangent> t = computeTangent(v);
    if (succeeded(t))
      tangents[v] = *t;
    return t;
  }

  /// `t` as a value (1.0 for the seed).
  Value materialize(Tangent t, Type type) {
    if (t.one)
      return floatConstant(b, loc, type, 1.0);
    if (!t.value)
      return floatConstant(b, loc, type, 0.0);
    return t.value;
  }

private:
  Tangent mul(Tangent t, Value factor) {
    if (t.isZero())
      return {};
    if (t.one)
      return {factor};
    return {arith::MulFOp::create(b, loc, t.value, factor)};
  }
  Tangent add(Tangent x, Tangent y, Type type) {
    if (x.isZero())
      return y;
    if (y.isZero())
      return x;
    return {arith::AddFOp::create(b, loc, materialize(x, type),
                                  materialize(y, type))};
  }
  Tangent neg(Tangent x, Type type) {
    if (x.isZero())
      return {};
    return {arith::NegFOp::create(b, loc, materialize(x, type))};
  }
  Tangent select(Value cond, Tangent x, Tangent y, Type type) {
    if (x.isZero() && y.isZero())
      return {};
    return {arith::SelectOp::create(b, loc, cond, materialize(x, type),
                                    materialize(y, type))};
  }

  FailureOr<Tangent> computeTangent(Value v) {
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
      Value cond = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                         p(0), p(1));
      return select(cond, ts[0], ts[1], type);
    }
    if (isa<arith::MinimumFOp, arith::MinNumFOp>(op)) {
      Value cond = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                         p(0), p(1));
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
      return Tangent{
          arith::ExtFOp::create(b, loc, type, materialize(ts[0], p(0).getType()))};
    if (isa<arith::TruncFOp>(op))
      return Tangent{arith::TruncFOp::create(
          b, loc, type, materialize(ts[0], p(0).getType()))};
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
      Value r3 = arith::MulFOp::create(
          b, loc, r, arith::MulFOp::create(b, loc, r, r));
      Value factor = arith::MulFOp::create(
          b, loc, floatConstant(b, loc, type, -0.5), r3);
      return mul(ts[0], factor);
    }
    if (isa<math::ExpOp>(op))
      return mul(ts[0], getPrimal(v));
    if (isa<math::LogOp>(op))
      return Tangent{
          arith::DivFOp::create(b, loc, materialize(ts[0], type), p(0))};
    if (isa<math::TanhOp>(op)) {
      Value r = getPrimal(v);
      Value factor = arith::SubFOp::create(
          b, loc, floatConstant(b, loc, type, 1.0),
          arith::MulFOp::create(b, loc, r, r));
      return mul(ts[0], factor);
    }
    if (isa<math::AbsFOp>(op)) {
      Value negative = arith::CmpFOp::create(
          b, loc, arith::CmpFPredicate::OLT, p(0),
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

  OpBuilder &b;
  Location loc;
  Block *body;
  IRMapping &primal;
  BlockArgument wrt;
  const DenseSet<Value> &active;
  DenseMap<Value, Tangent> tangents;
};

//===----------------------------------------------------------------------===//
// The reverse sweep over one function
//===----------------------------------------------------------------------===//

/// How a reduction combines its elements into its init.
enum class Combiner { Sum, Max, Min, Product };

/// What the gradient of a reduction's element is scaled by, besides the
/// cotangent: nothing for a sum; for max/min the tie mask over the number
/// of ties (`extras` = result, init, count of elements equal to the
/// result); for a product the product of the other factors (`extras` =
/// count of zero elements, product of the init and the nonzero elements).
/// `extras` are tensors indexed like the result.
struct ReductionScale {
  Combiner kind = Combiner::Sum;
  SmallVector<Value> extras;
};

/// The factor d(result)/d(g) of a max/min/product reduction for the
/// element `gp` (the primal of the combined value), from the `extras` of
/// `kind` as block arguments.
static Value buildScaleFactor(OpBuilder &b, Location loc, Combiner kind,
                              Value gp, ValueRange extras) {
  Type type = gp.getType();
  Value zero = floatConstant(b, loc, type, 0.0);
  Value one = floatConstant(b, loc, type, 1.0);
  auto eq = [&](Value x, Value y) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, y)
        .getResult();
  };
  if (kind == Combiner::Max || kind == Combiner::Min) {
    // Ties share the gradient equally, the init counting as one of them.
    Value y = extras[0], init = extras[1], count = extras[2];
    Value initTie = arith::SelectOp::create(b, loc, eq(init, y), one, zero);
    Value ties = arith::AddFOp::create(b, loc, count, initTie);
    Value share = arith::DivFOp::create(b, loc, one, ties);
    return arith::SelectOp::create(b, loc, eq(gp, y), share, zero);
  }
  // Product: the product of the other factors, exact with zeros among them.
  Value zeros = extras[0], nonzero = extras[1];
  Value quotient = arith::DivFOp::create(b, loc, nonzero, gp);
  Value onlyZero = arith::AndIOp::create(b, loc, eq(zeros, one), eq(gp, zero));
  Value withZero = arith::SelectOp::create(b, loc, onlyZero, nonzero, zero);
  return arith::SelectOp::create(b, loc, eq(zeros, zero), quotient, withZero);
}

class FunctionDifferentiator {
public:
  /// `forwardLayouts`: the layouts propagation gives the forward's values
  /// (keyed by the joint function's copies); may be empty.
  /// `checkpointed(op)`: whether the backward recomputes `op` instead of
  /// reading its forward results.
  /// `requestArgumentLayouts`: whether argument gradients are requested in
  /// their arguments' layouts.
  FunctionDifferentiator(func::FuncOp func, ArrayRef<unsigned> wrt,
                         DenseMap<Value, LayoutAttr> forwardLayouts,
                         std::function<bool(Operation *)> checkpointed,
                         bool requestArgumentLayouts)
      : func(func), wrt(wrt.begin(), wrt.end()),
        forwardLayouts(std::move(forwardLayouts)),
        checkpointed(std::move(checkpointed)),
        requestArgumentLayouts(requestArgumentLayouts) {}

  LogicalResult run();

private:
  void computeActivity();
  void addCotangent(Value v, Value d);
  LogicalResult differentiate(Operation *op, OpBuilder &b);
  LogicalResult differentiateLinalg(linalg::LinalgOp op, Value dy,
                                    OpBuilder &b);
  FailureOr<Value> buildOperandGradient(linalg::LinalgOp op, Value dy,
                                        ArrayRef<Value> operands,
                                        ArrayRef<AffineMap> operandMaps,
                                        ArrayRef<BlockArgument> blockArgs,
                                        unsigned k, Value g,
                                        const ReductionScale &scale,
                                        OpBuilder &b);
  SmallVector<Value> buildReductionAux(linalg::LinalgOp op,
                                       ArrayRef<Value> operands,
                                       ArrayRef<AffineMap> operandMaps,
                                       ArrayRef<BlockArgument> blockArgs,
                                       Value g, Combiner kind, OpBuilder &b);
  LogicalResult differentiateSoftmax(linalg::SoftmaxOp op, Value dy,
                                     OpBuilder &b);
  LayoutAttr getArgumentLayout(BlockArgument arg);
  LayoutAttr getKnownLayout(Value v);

  func::FuncOp func;
  SmallVector<unsigned> wrt;
  DenseSet<Value> active;
  DenseMap<Value, Value> cotangents;
  DenseMap<Value, LayoutAttr> forwardLayouts;
  std::function<bool(Operation *)> checkpointed;
  bool requestArgumentLayouts;
};

} // namespace

void FunctionDifferentiator::computeActivity() {
  Block &entry = func.getBody().front();
  for (unsigned i : wrt)
    active.insert(entry.getArgument(i));
  for (Operation &op : entry.without_terminator()) {
    bool isActive = llvm::any_of(op.getOperands(),
                                 [&](Value v) { return active.contains(v); });
    if (!isActive && op.getNumRegions()) {
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(op.getRegions(), captured);
      isActive = llvm::any_of(captured,
                              [&](Value v) { return active.contains(v); });
    }
    if (isActive)
      for (Value result : op.getResults())
        active.insert(result);
  }
}

void FunctionDifferentiator::addCotangent(Value v, Value d) {
  if (!active.contains(v) || !d)
    return;
  auto [it, inserted] = cotangents.try_emplace(v, d);
  if (inserted)
    return;
  OpBuilder b(d.getContext());
  b.setInsertionPointAfterValue(d);
  auto type = cast<RankedTensorType>(d.getType());
  Value empty = tensor::EmptyOp::create(b, d.getLoc(), type.getShape(),
                                        type.getElementType());
  it->second = linalg::AddOp::create(b, d.getLoc(), ValueRange{it->second, d},
                                     ValueRange{empty})
                   .getResult(0);
}

/// The layout a forward value has: what the op defining it requests, its
/// argument's `dtensor.layout`, else the one propagation gives it in the
/// forward alone (DTensor's placement of the value in the forward).
LayoutAttr FunctionDifferentiator::getKnownLayout(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto layout = func.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(),
                                                        kLayoutAttrName))
      return layout;
  } else {
    Operation *def = v.getDefiningOp();
    if (auto annotate = dyn_cast<AnnotateOp>(def))
      return annotate.getLayout();
    if (auto redistribute = dyn_cast<RedistributeOp>(def))
      return redistribute.getTo();
    if (auto fromLocal = dyn_cast<FromLocalOp>(def))
      return fromLocal.getLayout();
  }
  return forwardLayouts.lookup(v);
}

/// An argument's layout: its `dtensor.layout`, else the layout every
/// annotation of it requests, else the propagated one.
LayoutAttr FunctionDifferentiator::getArgumentLayout(BlockArgument arg) {
  if (auto layout = func.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(),
                                                      kLayoutAttrName))
    return layout;
  LayoutAttr common;
  for (Operation *user : arg.getUsers()) {
    auto annotate = dyn_cast<AnnotateOp>(user);
    if (!annotate)
      continue;
    if (common && common != annotate.getLayout())
      return {};
    common = annotate.getLayout();
  }
  return common ? common : forwardLayouts.lookup(arg);
}

FailureOr<Value> FunctionDifferentiator::buildOperandGradient(
    linalg::LinalgOp op, Value dy, ArrayRef<Value> operands,
    ArrayRef<AffineMap> operandMaps, ArrayRef<BlockArgument> blockArgs,
    unsigned k, Value g, const ReductionScale &scale, OpBuilder &b) {
  Location loc = op.getLoc();
  auto type = dyn_cast<RankedTensorType>(operands[k].getType());
  if (!type)
    return op->emitError("autodiff: cannot differentiate with respect to a "
                         "scalar operand of '")
               << op->getName() << "'",
           failure();
  if (!type.hasStaticShape())
    return op->emitError("autodiff: dynamic shapes are not supported"),
           failure();
  AffineMap map = operandMaps[k];
  if (!map.isProjectedPermutation(/*allowZeroInResults=*/false))
    return op->emitError("autodiff: cannot differentiate '")
               << op->getName() << "': operand " << k
               << " is not indexed by a projected permutation",
           failure();

  unsigned numLoops = op.getNumLoops();
  llvm::SmallBitVector inMap(numLoops);
  for (AffineExpr expr : map.getResults())
    inMap.set(cast<AffineDimExpr>(expr).getPosition());
  bool accumulate = !inMap.all();
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < numLoops; ++d)
    iterators.push_back(inMap.test(d) ? utils::IteratorType::parallel
                                      : utils::IteratorType::reduction);

  SmallVector<Value> inputs{dy};
  SmallVector<AffineMap> maps{op.getIndexingMapMatchingResult(
      cast<OpResult>(op->getResult(0)))};
  llvm::append_range(inputs, operands);
  llvm::append_range(maps, operandMaps);
  AffineMap resultMap = maps.front();
  for (Value extra : scale.extras) {
    inputs.push_back(extra);
    maps.push_back(resultMap);
  }
  maps.push_back(map);
  Value init = accumulate
                   ? createZeros(b, loc, type)
                   : Value(tensor::EmptyOp::create(b, loc, type.getShape(),
                                                   type.getElementType()));

  bool failedBody = false, zero = false;
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IRMapping primal;
        for (auto [i, arg] : llvm::enumerate(blockArgs))
          primal.map(arg, args[i + 1]);
        BodyDifferentiator diff(nb, nloc, op.getBlock(), primal, blockArgs[k],
                                active);
        FailureOr<Tangent> t = diff.getTangent(g);
        Value result;
        if (failed(t)) {
          failedBody = true;
        } else if (t->isZero()) {
          zero = true;
        } else {
          result = t->one ? args[0]
                          : arith::MulFOp::create(nb, nloc, args[0], t->value)
                                .getResult();
          if (scale.kind != Combiner::Sum) {
            ValueRange extras =
                args.slice(1 + operands.size(), scale.extras.size());
            Value factor = buildScaleFactor(nb, nloc, scale.kind,
                                            diff.getPrimal(g), extras);
            result = arith::MulFOp::create(nb, nloc, result, factor);
          }
          if (accumulate)
            result = arith::AddFOp::create(nb, nloc, args.back(), result);
        }
        if (!result)
          result = floatConstant(nb, nloc, type.getElementType(), 0.0);
        linalg::YieldOp::create(nb, nloc, result);
      });
  if (failedBody || zero) {
    generic.erase();
    if (failedBody)
      return failure();
    return Value();
  }

  // A plain pass-through (the gradient of a copy, an add, a permutation
  // that the cotangent already has) is the cotangent itself.
  Block *body = generic.getBlock();
  if (!accumulate && body->getTerminator()->getOperand(0) ==
                         body->getArgument(0) &&
      maps.front() == map) {
    generic.erase();
    init.getDefiningOp()->erase();
    return dy;
  }

  // Keep only the inputs the body reads, and one for every loop no kept
  // operand indexes (linalg infers loop bounds from the operands).
  Block *block = body;
  unsigned numInputs = inputs.size();
  llvm::SmallBitVector keep(numInputs);
  llvm::SmallBitVector covered(numLoops);
  auto cover = [&](AffineMap m) {
    for (AffineExpr expr : m.getResults())
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        covered.set(dim.getPosition());
  };
  cover(map);
  for (unsigned i = 0; i < numInputs; ++i)
    if (!block->getArgument(i).use_empty()) {
      keep.set(i);
      cover(maps[i]);
    }
  for (unsigned i = 0; i < numInputs && !covered.all(); ++i) {
    if (keep.test(i))
      continue;
    llvm::SmallBitVector before = covered;
    cover(maps[i]);
    if (covered != before)
      keep.set(i);
  }
  if (keep.all())
    return generic.getResult(0);

  SmallVector<Value> keptInputs;
  SmallVector<AffineMap> keptMaps;
  llvm::BitVector erase(block->getNumArguments());
  for (unsigned i = 0; i < numInputs; ++i) {
    if (keep.test(i)) {
      keptInputs.push_back(inputs[i]);
      keptMaps.push_back(maps[i]);
    } else {
      erase.set(i);
    }
  }
  keptMaps.push_back(map);
  auto pruned = linalg::GenericOp::create(b, loc, TypeRange{type}, keptInputs,
                                          ValueRange{init}, keptMaps,
                                          iterators);
  pruned.getRegion().takeBody(generic.getRegion());
  pruned.getBlock()->eraseArguments(erase);
  generic.erase();
  return pruned.getResult(0);
}

SmallVector<Value> FunctionDifferentiator::buildReductionAux(
    linalg::LinalgOp op, ArrayRef<Value> operands,
    ArrayRef<AffineMap> operandMaps, ArrayRef<BlockArgument> blockArgs,
    Value g, Combiner kind, OpBuilder &b) {
  // One pass over the forward's loops: for max/min the number of elements
  // equal to the result, for a product the number of zero elements and the
  // product of the init and the nonzero ones.
  Location loc = op.getLoc();
  Value y = op->getResult(0);
  Value init = op.getDpsInitOperand(0)->get();
  auto type = cast<RankedTensorType>(y.getType());
  AffineMap resultMap =
      op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0)));
  SmallVector<Value> inputs(operands);
  SmallVector<AffineMap> maps(operandMaps);
  SmallVector<Value> outs{createZeros(b, loc, type)};
  if (kind == Combiner::Product) {
    outs.push_back(init);
  } else {
    inputs.push_back(y);
    maps.push_back(resultMap);
  }
  maps.append(outs.size(), resultMap);
  SmallVector<Type> resultTypes(outs.size(), type);
  auto aux = linalg::GenericOp::create(
      b, loc, resultTypes, inputs, outs, maps, op.getIteratorTypesArray(),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IRMapping primal;
        for (auto [i, arg] : llvm::enumerate(blockArgs))
          primal.map(arg, args[i]);
        BodyDifferentiator diff(nb, nloc, op.getBlock(), primal,
                                blockArgs.front(), active);
        Value gp = diff.getPrimal(g);
        Type element = gp.getType();
        Value zero = floatConstant(nb, nloc, element, 0.0);
        Value one = floatConstant(nb, nloc, element, 1.0);
        unsigned n = operands.size();
        auto countIf = [&](Value acc, Value cond) {
          Value inc = arith::SelectOp::create(nb, nloc, cond, one, zero);
          return arith::AddFOp::create(nb, nloc, acc, inc).getResult();
        };
        if (kind == Combiner::Product) {
          Value isZero = arith::CmpFOp::create(
              nb, nloc, arith::CmpFPredicate::OEQ, gp, zero);
          Value product = arith::MulFOp::create(nb, nloc, args[n + 1], gp);
          linalg::YieldOp::create(
              nb, nloc,
              ValueRange{countIf(args[n], isZero),
                         arith::SelectOp::create(nb, nloc, isZero,
                                                 args[n + 1], product)
                             .getResult()});
          return;
        }
        Value tie = arith::CmpFOp::create(nb, nloc, arith::CmpFPredicate::OEQ,
                                          gp, args[n]);
        linalg::YieldOp::create(nb, nloc,
                                ValueRange{countIf(args[n + 1], tie)});
      });
  if (kind == Combiner::Product)
    return {aux.getResult(0), aux.getResult(1)};
  return {y, init, aux.getResult(0)};
}

LogicalResult FunctionDifferentiator::differentiateLinalg(linalg::LinalgOp op,
                                                          Value dy,
                                                          OpBuilder &b) {
  if (op->getNumResults() != 1 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics())
    return op->emitError("autodiff: cannot differentiate '")
               << op->getName() << "' with " << op->getNumResults()
               << " results (one tensor result is supported)",
           failure();
  Block *body = op.getBlock();
  OpOperand *initOperand = op.getDpsInitOperand(0);
  BlockArgument initArg = op.getMatchingBlockArgument(initOperand);
  Value yielded = body->getTerminator()->getOperand(0);
  bool hasReduction = op.getNumReductionLoops() > 0;

  // The value to differentiate and which operands it depends on.
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  SmallVector<BlockArgument> blockArgs;
  for (OpOperand *input : op.getDpsInputOperands()) {
    operands.push_back(input->get());
    maps.push_back(op.getMatchingIndexingMap(input));
    blockArgs.push_back(op.getMatchingBlockArgument(input));
  }
  Value g = yielded;
  ReductionScale scale;
  if (hasReduction) {
    // y = init (+|max|min|*) g over the reduction loops. A sum gives
    // dy/dg = 1 and dy/dinit = 1; max/min and product scale dy/dg.
    Operation *combiner = yielded.getDefiningOp();
    if (!combiner || combiner->getBlock() != body ||
        combiner->getNumOperands() != 2 ||
        (combiner->getOperand(0) != initArg &&
         combiner->getOperand(1) != initArg))
      return op->emitError("autodiff: cannot differentiate '")
                 << op->getName()
                 << "': a reduction must combine with its init",
             failure();
    if (isa<arith::AddFOp>(combiner))
      scale.kind = Combiner::Sum;
    else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
      scale.kind = Combiner::Max;
    else if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
      scale.kind = Combiner::Min;
    else if (isa<arith::MulFOp>(combiner))
      scale.kind = Combiner::Product;
    else
      return op->emitError("autodiff: cannot differentiate '")
                 << op->getName() << "': a reduction combined with '"
                 << combiner->getName()
                 << "' (sums, max, min and products are supported)",
             failure();
    g = combiner->getOperand(0) == initArg ? combiner->getOperand(1)
                                           : combiner->getOperand(0);
    // The init must not feed the summand.
    SmallVector<Value> worklist{g};
    DenseSet<Value> seen;
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      if (v == initArg)
        return op->emitError("autodiff: cannot differentiate '")
                   << op->getName()
                   << "': its summand reads the accumulator",
               failure();
      if (Operation *def = v.getDefiningOp())
        if (def->getBlock() == body)
          llvm::append_range(worklist, def->getOperands());
    }
    if (scale.kind == Combiner::Sum) {
      addCotangent(initOperand->get(), dy);
    } else {
      if (active.contains(initOperand->get()))
        return op->emitError("autodiff: cannot differentiate '")
                   << op->getName()
                   << "': the init of a max, min or product reduction "
                      "depends on a differentiated argument",
               failure();
      if (operands.empty())
        return op->emitError("autodiff: cannot differentiate '")
                   << op->getName() << "': a reduction without inputs",
               failure();
      if (llvm::any_of(operands, [&](Value v) { return active.contains(v); }))
        scale.extras = buildReductionAux(op, operands, maps, blockArgs, g,
                                         scale.kind, b);
    }
  } else if (!initArg.use_empty()) {
    // An elementwise op reading its init: the init is one more input.
    operands.push_back(initOperand->get());
    maps.push_back(op.getMatchingIndexingMap(initOperand));
    blockArgs.push_back(initArg);
  }

  for (unsigned k = 0; k < operands.size(); ++k) {
    if (!active.contains(operands[k]))
      continue;
    FailureOr<Value> grad =
        buildOperandGradient(op, dy, operands, maps, blockArgs, k, g, scale,
                             b);
    if (failed(grad))
      return failure();
    addCotangent(operands[k], *grad);
  }
  return success();
}

LogicalResult FunctionDifferentiator::differentiateSoftmax(
    linalg::SoftmaxOp op, Value dy, OpBuilder &b) {
  // dx = y * (dy - sum_d(dy * y)).
  Location loc = op.getLoc();
  Value y = op.getResult()[0];
  auto type = cast<RankedTensorType>(y.getType());
  if (!type.hasStaticShape())
    return op->emitError("autodiff: dynamic shapes are not supported"),
           failure();
  int64_t rank = type.getRank(), dim = op.getDimension();
  MLIRContext *ctx = op.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<AffineExpr> reducedExprs;
  SmallVector<int64_t> reducedShape;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) {
      reducedExprs.push_back(getAffineDimExpr(d, ctx));
      reducedShape.push_back(type.getDimSize(d));
    }
  AffineMap reduced = AffineMap::get(rank, 0, reducedExprs, ctx);
  auto reducedType = RankedTensorType::get(reducedShape, type.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[dim] = utils::IteratorType::reduction;
  Value sum =
      linalg::GenericOp::create(
          b, loc, TypeRange{reducedType}, ValueRange{dy, y},
          ValueRange{createZeros(b, loc, reducedType)},
          ArrayRef<AffineMap>{identity, identity, reduced}, iterators,
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            Value p = arith::MulFOp::create(nb, nloc, args[0], args[1]);
            linalg::YieldOp::create(
                nb, nloc,
                ValueRange{arith::AddFOp::create(nb, nloc, args[2], p)});
          })
          .getResult(0);
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  Value dx =
      linalg::GenericOp::create(
          b, loc, TypeRange{type}, ValueRange{y, dy, sum}, ValueRange{empty},
          ArrayRef<AffineMap>{identity, identity, reduced, identity}, parallel,
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            Value diff = arith::SubFOp::create(nb, nloc, args[1], args[2]);
            linalg::YieldOp::create(
                nb, nloc,
                ValueRange{arith::MulFOp::create(nb, nloc, args[0], diff)});
          })
          .getResult(0);
  addCotangent(op.getInput(), dx);
  return success();
}

static FailureOr<SmallVector<int64_t>> getStaticValues(Operation *op,
                                                       ArrayRef<int64_t> values) {
  if (llvm::any_of(values, ShapedType::isDynamic))
    return op->emitError("autodiff: cannot differentiate '")
               << op->getName() << "' with dynamic offsets or sizes",
           failure();
  return SmallVector<int64_t>(values);
}

LogicalResult FunctionDifferentiator::differentiate(Operation *op,
                                                    OpBuilder &b) {
  Location loc = op->getLoc();
  auto cotangentOf = [&](unsigned i) {
    return cotangents.lookup(op->getResult(i));
  };
  // Cotangents are static tensors, and so are the gradients the rules
  // build for the operands.
  auto isStatic = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape();
  };
  for (Value result : op->getResults())
    if (cotangents.count(result) && !isStatic(result.getType()))
      return op->emitError("autodiff: dynamic shapes are not supported"),
             failure();
  for (Value operand : op->getOperands())
    if (active.contains(operand) && isa<TensorType>(operand.getType()) &&
        !isStatic(operand.getType()))
      return op->emitError("autodiff: dynamic shapes are not supported"),
             failure();

  if (auto annotate = dyn_cast<AnnotateOp>(op)) {
    Value d = cotangentOf(0);
    // DTensor's redistribute backward: the gradient goes back to the
    // layout the value had before, Partial replaced by Replicate.
    if (LayoutAttr before = getKnownLayout(annotate.getInput())) {
      auto request =
          AnnotateOp::create(b, loc, d.getType(), d, getGradLayout(before));
      if (Operation *def = annotate.getInput().getDefiningOp())
        if (def->hasAttr(kBoundaryAttrName))
          request->setAttr(kBoundaryAttrName, b.getUnitAttr());
      d = request.getResult();
    }
    addCotangent(annotate.getInput(), d);
    return success();
  }
  if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
    Value d = cotangentOf(0);
    LayoutAttr before = redistribute.getFromAttr();
    if (!before)
      before = getKnownLayout(redistribute.getInput());
    if (before)
      d = AnnotateOp::create(b, loc, d.getType(), d, getGradLayout(before));
    addCotangent(redistribute.getInput(), d);
    return success();
  }
  if (auto toLocal = dyn_cast<ToLocalOp>(op)) {
    // The local gradient is viewed as a global one laid out as the
    // forward's layout, or as `dtensor.grad_layout` where given.
    LayoutAttr layout = toLocal.getLayout();
    if (Attribute attr = op->getAttr(kGradLayoutAttrName)) {
      auto grad = dyn_cast<LayoutAttr>(attr);
      MeshOp mesh =
          grad ? lookupMesh(op, grad.getMesh(), /*diagnose=*/false) : MeshOp();
      if (!grad || !mesh)
        return op->emitError("autodiff: '")
                   << kGradLayoutAttrName << "' must be a layout on a mesh",
               failure();
      auto globalType = cast<RankedTensorType>(toLocal.getInput().getType());
      if (getLocalType(globalType, grad, mesh) !=
          getLocalType(globalType, layout, mesh))
        return op->emitError("autodiff: the gradient layout ")
                   << grad << " gives another local shape than " << layout,
               failure();
      layout = grad;
    }
    Value d = FromLocalOp::create(b, loc, toLocal.getInput().getType(),
                                  cotangentOf(0), layout);
    addCotangent(toLocal.getInput(), d);
    return success();
  }
  if (auto fromLocal = dyn_cast<FromLocalOp>(op)) {
    LayoutAttr layout = getGradLayout(fromLocal.getLayout());
    Value global = AnnotateOp::create(b, loc, cotangentOf(0).getType(),
                                      cotangentOf(0), layout);
    Value d = ToLocalOp::create(b, loc, fromLocal.getInput().getType(),
                                global, layout);
    addCotangent(fromLocal.getInput(), d);
    return success();
  }
  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op))
    return differentiateSoftmax(softmax, cotangentOf(0), b);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return differentiateLinalg(linalgOp, cotangentOf(0), b);
  if (isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) &&
      op->getNumResults() == 1 && op->getNumRegions() == 0 &&
      op->getNumOperands() > 0) {
    // An elementwise op on whole tensors: differentiated as the
    // linalg.generic that applies it to every element (built here and
    // dropped once its gradients are written).
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    bool elementwise = type && llvm::all_of(op->getOperandTypes(), [&](Type t) {
      auto operandType = dyn_cast<RankedTensorType>(t);
      return operandType && operandType.getShape() == type.getShape();
    });
    if (elementwise) {
      AffineMap identity =
          AffineMap::getMultiDimIdentityMap(type.getRank(), op->getContext());
      SmallVector<AffineMap> maps(op->getNumOperands() + 1, identity);
      SmallVector<utils::IteratorType> iterators(
          type.getRank(), utils::IteratorType::parallel);
      auto empty = tensor::EmptyOp::create(b, loc, type.getShape(),
                                           type.getElementType());
      auto generic = linalg::GenericOp::create(
          b, loc, TypeRange{type}, op->getOperands(), ValueRange{empty}, maps,
          iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
            OperationState state(nloc, op->getName());
            state.addOperands(args.drop_back());
            state.addTypes(type.getElementType());
            state.addAttributes(op->getAttrs());
            Operation *scalar = nb.create(state);
            linalg::YieldOp::create(nb, nloc, scalar->getResults());
          });
      LogicalResult result = differentiateLinalg(
          cast<linalg::LinalgOp>(generic.getOperation()), cotangentOf(0), b);
      generic.erase();
      empty.erase();
      return result;
    }
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    Value d = tensor::ExpandShapeOp::create(
        b, loc, collapse.getSrcType(), cotangentOf(0),
        collapse.getReassociationIndices());
    addCotangent(collapse.getSrc(), d);
    return success();
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    Value d = tensor::CollapseShapeOp::create(
        b, loc, expand.getSrcType(), cotangentOf(0),
        expand.getReassociationIndices());
    addCotangent(expand.getSrc(), d);
    return success();
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    RankedTensorType srcType = slice.getSourceType();
    if (slice.getType().getRank() != srcType.getRank() ||
        llvm::any_of(slice.getStaticStrides(),
                     [](int64_t s) { return s != 1; }))
      return op->emitError("autodiff: cannot differentiate a rank-reducing or "
                           "strided 'tensor.extract_slice'"),
             failure();
    FailureOr<SmallVector<int64_t>> offsets =
        getStaticValues(op, slice.getStaticOffsets());
    FailureOr<SmallVector<int64_t>> sizes =
        getStaticValues(op, slice.getStaticSizes());
    if (failed(offsets) || failed(sizes))
      return failure();
    SmallVector<OpFoldResult> low, high;
    for (int64_t d = 0; d < srcType.getRank(); ++d) {
      low.push_back(b.getIndexAttr((*offsets)[d]));
      high.push_back(b.getIndexAttr(srcType.getDimSize(d) - (*offsets)[d] -
                                    (*sizes)[d]));
    }
    Value zero = floatConstant(b, loc, srcType.getElementType(), 0.0);
    Value d = tensor::PadOp::create(b, loc, srcType, cotangentOf(0), low, high,
                                    zero);
    addCotangent(slice.getSource(), d);
    return success();
  }
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    if (Value padValue = pad.getConstantPaddingValue();
        !padValue || active.contains(padValue))
      return op->emitError("autodiff: cannot differentiate 'tensor.pad' "
                           "without a constant padding value"),
             failure();
    FailureOr<SmallVector<int64_t>> low =
        getStaticValues(op, pad.getStaticLow());
    if (failed(low))
      return failure();
    RankedTensorType srcType = pad.getSourceType();
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (int64_t d = 0; d < srcType.getRank(); ++d) {
      offsets.push_back(b.getIndexAttr((*low)[d]));
      sizes.push_back(b.getIndexAttr(srcType.getDimSize(d)));
      strides.push_back(b.getIndexAttr(1));
    }
    Value d = tensor::ExtractSliceOp::create(b, loc, srcType, cotangentOf(0),
                                             offsets, sizes, strides);
    addCotangent(pad.getSource(), d);
    return success();
  }
  if (auto gather = dyn_cast<tensor::GatherOp>(op)) {
    // An embedding lookup out[b..., h] = table[ids[b..., 0], h]: the
    // table's gradient is the scatter-add of the cotangent rows,
    // dtable[v, h] = sum_b (ids[b] == v) * dout[b, h], written as a
    // generic over (b..., v, h) that compares the ids with a constant
    // 0..V-1 (a constant, so that a vocabulary shard compares with its own
    // range).
    RankedTensorType table = gather.getSourceType();
    RankedTensorType indices = gather.getIndicesType();
    if (table.getRank() != 2 || gather.getGatherDims() != ArrayRef<int64_t>{0} ||
        indices.getShape().back() != 1 ||
        gather.getResultType().getRank() != indices.getRank() ||
        !indices.hasStaticShape())
      return op->emitError("autodiff: cannot differentiate a 'tensor.gather' "
                           "other than an embedding lookup (2-D table, "
                           "gather_dims([0]), indices ...x1, rank-reduced "
                           "result)"),
             failure();
    if (!active.contains(gather.getSource()))
      return success();
    MLIRContext *ctx = op->getContext();
    int64_t batch = indices.getRank() - 1, vocab = table.getDimSize(0);
    Type idType = indices.getElementType();
    auto iotaType = RankedTensorType::get({vocab}, idType);
    SmallVector<Attribute> iotaValues;
    for (int64_t v = 0; v < vocab; ++v)
      iotaValues.push_back(IntegerAttr::get(idType, v));
    Value iota = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(iotaType, iotaValues));
    // Propagation shards only splat constants: the 0..V-1 constant is
    // requested replicated, and a vocabulary shard takes its part of it by a
    // local chunk.
    if (LayoutAttr layout = getKnownLayout(gather.getSource())) {
      SmallVector<PlacementAttr> replicated(
          layout.getPlacements().size(), PlacementAttr::getReplicate(ctx));
      iota = AnnotateOp::create(
          b, loc, iotaType, iota,
          LayoutAttr::get(ctx, layout.getMesh(), replicated));
    }
    SmallVector<AffineExpr> idExprs, dyExprs;
    for (int64_t d = 0; d < batch; ++d) {
      idExprs.push_back(getAffineDimExpr(d, ctx));
      dyExprs.push_back(getAffineDimExpr(d, ctx));
    }
    idExprs.push_back(getAffineConstantExpr(0, ctx));
    AffineExpr v = getAffineDimExpr(batch, ctx),
               h = getAffineDimExpr(batch + 1, ctx);
    dyExprs.push_back(h);
    unsigned numLoops = batch + 2;
    SmallVector<AffineMap> maps{AffineMap::get(numLoops, 0, idExprs, ctx),
                                AffineMap::get(numLoops, 0, {v}, ctx),
                                AffineMap::get(numLoops, 0, dyExprs, ctx),
                                AffineMap::get(numLoops, 0, {v, h}, ctx)};
    SmallVector<utils::IteratorType> iterators(batch,
                                               utils::IteratorType::reduction);
    iterators.push_back(utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::parallel);
    Type elementType = table.getElementType();
    Value grad =
        linalg::GenericOp::create(
            b, loc, TypeRange{table},
            ValueRange{gather.getIndices(), iota, cotangentOf(0)},
            ValueRange{createZeros(b, loc, table)}, maps, iterators,
            [&](OpBuilder &nb, Location nloc, ValueRange args) {
              Value same = arith::CmpIOp::create(
                  nb, nloc, arith::CmpIPredicate::eq, args[0], args[1]);
              Value picked = arith::SelectOp::create(
                  nb, nloc, same, args[2],
                  floatConstant(nb, nloc, elementType, 0.0));
              linalg::YieldOp::create(
                  nb, nloc,
                  ValueRange{arith::AddFOp::create(nb, nloc, args[3], picked)});
            })
            .getResult(0);
    addCotangent(gather.getSource(), grad);
    return success();
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    int64_t dim = concat.getDim();
    int64_t offset = 0;
    for (Value input : concat.getInputs()) {
      auto inputType = cast<RankedTensorType>(input.getType());
      SmallVector<OpFoldResult> offsets, sizes, strides;
      for (int64_t d = 0; d < inputType.getRank(); ++d) {
        offsets.push_back(b.getIndexAttr(d == dim ? offset : 0));
        sizes.push_back(b.getIndexAttr(inputType.getDimSize(d)));
        strides.push_back(b.getIndexAttr(1));
      }
      offset += inputType.getDimSize(dim);
      if (!active.contains(input))
        continue;
      Value d = tensor::ExtractSliceOp::create(b, loc, inputType,
                                               cotangentOf(0), offsets, sizes,
                                               strides);
      addCotangent(input, d);
    }
    return success();
  }
  return op->emitError("autodiff: cannot differentiate '")
             << op->getName() << "'",
         failure();
}

LogicalResult FunctionDifferentiator::run() {
  Block &entry = func.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  computeActivity();

  MLIRContext *ctx = func.getContext();
  FunctionType type = func.getFunctionType();
  unsigned numArgs = type.getNumInputs();
  unsigned numResults = type.getNumResults();
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  func.getAllArgAttrs(argAttrs);
  func.getAllResultAttrs(resultAttrs);
  SmallVector<Type> argTypes(type.getInputs());
  SmallVector<Type> resultTypes(type.getResults());
  SmallVector<Value> returned(ret.getOperands());

  // One seed cotangent per floating-point tensor result, laid out as the
  // gradient of the result.
  Builder builder(ctx);
  for (unsigned i = 0; i < numResults; ++i) {
    Type resultType = type.getResult(i);
    if (!isFloatTensor(resultType))
      continue;
    if (!cast<RankedTensorType>(resultType).hasStaticShape())
      return func.emitError("autodiff: dynamic shapes are not supported"),
             failure();
    NamedAttrList attrs;
    attrs.set(kCotangentAttrName, builder.getI64IntegerAttr(i));
    LayoutAttr layout =
        func.getResultAttrOfType<LayoutAttr>(i, kLayoutAttrName);
    if (!layout)
      layout = getKnownLayout(returned[i]);
    if (LayoutAttr grad = getGradLayout(layout))
      attrs.set(kLayoutAttrName, grad);
    BlockArgument seed = entry.addArgument(resultType, func.getLoc());
    argTypes.push_back(resultType);
    argAttrs.push_back(attrs.getDictionary(ctx));
    addCotangent(returned[i], seed);
  }

  OpBuilder b(ret);
  Operation *lastForward = ret->getPrevNode();
  SmallVector<Operation *> forwardOps = llvm::to_vector(llvm::map_range(
      entry.without_terminator(), [](Operation &op) { return &op; }));

  // Activation checkpointing: the checkpointed ops again, at the start of
  // the backward, reading recomputed values where those exist.
  IRMapping recomputed;
  SmallVector<Operation *> recomputedOps;
  for (Operation *op : forwardOps) {
    if (!checkpointed(op))
      continue;
    Operation *clone = b.clone(*op, recomputed);
    clone->setAttr(kRecomputedAttrName, b.getUnitAttr());
    recomputedOps.push_back(clone);
  }

  for (Operation *op : llvm::reverse(forwardOps)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value v) { return cotangents.count(v); }))
      continue;
    if (failed(differentiate(op, b)))
      return failure();
  }

  // The backward reads the recomputed values; recomputations nothing reads
  // are dropped.
  for (Operation *op : forwardOps) {
    if (!checkpointed(op))
      continue;
    for (Value result : op->getResults()) {
      Value copy = recomputed.lookup(result);
      result.replaceUsesWithIf(copy, [&](OpOperand &use) {
        Operation *owner = entry.findAncestorOpInBlock(*use.getOwner());
        return owner && owner != ret.getOperation() &&
               lastForward->isBeforeInBlock(owner);
      });
    }
  }
  // Each recomputation moves down to just before its first reader, as
  // PyTorch recomputes a checkpointed region right before its backward (in
  // reverse order, so that a recomputed operand moves before its reader).
  for (Operation *clone : llvm::reverse(recomputedOps)) {
    if (clone->use_empty()) {
      if (isPure(clone))
        clone->erase();
      continue;
    }
    Operation *first = nullptr;
    for (Operation *user : clone->getUsers()) {
      Operation *owner = entry.findAncestorOpInBlock(*user);
      if (owner && (!first || owner->isBeforeInBlock(first)))
        first = owner;
    }
    if (first)
      clone->moveBefore(first);
  }

  SmallVector<Value> results(returned);
  for (unsigned i : wrt) {
    BlockArgument arg = entry.getArgument(i);
    auto argType = cast<RankedTensorType>(arg.getType());
    Value grad = cotangents.lookup(arg);
    if (!grad)
      grad = createZeros(b, func.getLoc(), argType);
    results.push_back(grad);
    resultTypes.push_back(argType);
    NamedAttrList attrs;
    attrs.set(kGradOfAttrName, builder.getI64IntegerAttr(i));
    if (LayoutAttr layout = getGradLayout(getArgumentLayout(arg));
        layout && requestArgumentLayouts)
      attrs.set(kLayoutAttrName, layout);
    resultAttrs.push_back(attrs.getDictionary(ctx));
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  (void)numArgs;
  func.setType(FunctionType::get(ctx, argTypes, resultTypes));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  func->setAttr(kForwardResultsAttrName, builder.getI64IntegerAttr(numResults));
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct AutodiffPass : dtensor::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  /// The layouts propagation gives `func`'s values when the forward is
  /// compiled alone: a copy of the module, nested in this one for the
  /// time being, is propagated and its layouts read back, keyed by `func`'s
  /// values. Ops propagation replaces (annotations) are left out.
  FailureOr<DenseMap<Value, LayoutAttr>> probeForwardLayouts(func::FuncOp func) {
    DenseMap<Value, LayoutAttr> layouts;
    ModuleOp module = getOperation();
    if (module.getOps<MeshOp>().empty())
      return layouts;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (op->getParentOp() == func)
        ops.push_back(op);
    });
    IRMapping mapping;
    auto copy = cast<ModuleOp>(module->clone(mapping));
    OpBuilder b(module.getContext());
    for (auto [i, op] : llvm::enumerate(ops))
      mapping.lookup(op)->setAttr(kAutodiffIdAttrName, b.getI64IntegerAttr(i));
    auto copyFunc = cast<func::FuncOp>(mapping.lookup(func.getOperation()));
    // Only the function itself is propagated.
    for (auto other : llvm::make_early_inc_range(copy.getOps<func::FuncOp>()))
      if (other != copyFunc)
        other.erase();
    module.getBody()->push_back(copy);
    OpPassManager pm(ModuleOp::getOperationName());
    pm.addPass(createPropagateLayoutsPass());
    LogicalResult result = runPipeline(pm, copy);
    if (succeeded(result)) {
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (auto layout =
                copyFunc.getArgAttrOfType<LayoutAttr>(i, kLayoutAttrName))
          layouts[func.getArgument(i)] = layout;
      copyFunc.walk([&](Operation *op) {
        auto id = op->getAttrOfType<IntegerAttr>(kAutodiffIdAttrName);
        if (!id)
          return;
        Operation *original = ops[id.getInt()];
        for (auto [r, result] : llvm::enumerate(op->getResults()))
          if (LayoutAttr layout = getLayoutOf(result))
            layouts[original->getResult(r)] = layout;
      });
    }
    copy.erase();
    if (failed(result))
      return func.emitError("autodiff: propagating the forward's layouts "
                            "failed"),
             failure();
    return layouts;
  }

  /// The arguments to differentiate with respect to.
  FailureOr<SmallVector<unsigned>> getWrt(func::FuncOp func) {
    SmallVector<unsigned> result;
    unsigned numArgs = func.getNumArguments();
    if (!wrt.empty()) {
      for (int64_t index : wrt) {
        if (index < 0 || index >= numArgs)
          return func.emitError("autodiff: argument ")
                     << index << " is out of range (@" << func.getSymName()
                     << " has " << numArgs << " arguments)",
                 failure();
        if (!isFloatTensor(func.getArgument(index).getType()))
          return func.emitError("autodiff: argument ")
                     << index << " is not a floating-point tensor",
                 failure();
        if (!cast<RankedTensorType>(func.getArgument(index).getType())
                 .hasStaticShape())
          return func.emitError("autodiff: dynamic shapes are not supported"),
                 failure();
        if (!llvm::is_contained(result, index))
          result.push_back(index);
      }
      return result;
    }
    for (unsigned i = 0; i < numArgs; ++i)
      if (func.getArgAttr(i, kParamAttrName) ||
          func.getArgAttr(i, kRequiresGradAttrName)) {
        if (!isFloatTensor(func.getArgument(i).getType()))
          return func.emitError("autodiff: argument ")
                     << i << " is marked differentiable but is not a "
                        "floating-point tensor",
                 failure();
        result.push_back(i);
      }
    if (result.empty())
      for (unsigned i = 0; i < numArgs; ++i)
        if (isFloatTensor(func.getArgument(i).getType()))
          result.push_back(i);
    for (unsigned i : result)
      if (!cast<RankedTensorType>(func.getArgument(i).getType())
               .hasStaticShape())
        return func.emitError("autodiff: dynamic shapes are not supported"),
               failure();
    return result;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (gradLayouts != "argument" && gradLayouts != "free") {
      module.emitError("autodiff: unknown grad-layouts '")
          << gradLayouts << "' (expected argument or free)";
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> targets;
    if (functions.empty()) {
      for (auto func : module.getOps<func::FuncOp>())
        if (!func.isExternal())
          targets.push_back(func);
    } else {
      for (const std::string &name : functions) {
        auto func = symbols.lookup<func::FuncOp>(name);
        if (!func || func.isExternal()) {
          module.emitError("autodiff: no function @") << name << " with a body";
          return signalPassFailure();
        }
        targets.push_back(func);
      }
    }
    for (func::FuncOp func : targets) {
      std::string name = (func.getSymName() + suffix).str();
      if (symbols.lookup(name)) {
        func.emitError("autodiff: @") << name << " already exists";
        return signalPassFailure();
      }
      WalkResult propagated = func.walk([](Operation *op) {
        return op->hasAttr(kLayoutsAttrName) ? WalkResult::interrupt()
                                             : WalkResult::advance();
      });
      if (propagated.wasInterrupted()) {
        func.emitError("autodiff: @")
            << func.getSymName()
            << " has propagated layouts: differentiate the global view "
               "before dtensor-propagate-layouts";
        return signalPassFailure();
      }
      if (!func.getBody().hasOneBlock()) {
        func.emitError("autodiff: functions with more than one block are not "
                       "supported");
        return signalPassFailure();
      }
      FailureOr<SmallVector<unsigned>> args = getWrt(func);
      if (failed(args))
        return signalPassFailure();
      FailureOr<DenseMap<Value, LayoutAttr>> probed =
          probeForwardLayouts(func);
      if (failed(probed))
        return signalPassFailure();
      IRMapping mapping;
      auto joint = cast<func::FuncOp>(func->clone(mapping));
      joint.setSymName(name);
      symbols.insert(joint, std::next(Block::iterator(func)));
      DenseMap<Value, LayoutAttr> forwardLayouts;
      for (auto [value, layout] : *probed)
        forwardLayouts[mapping.lookup(value)] = layout;
      auto checkpointed = [&](Operation *op) {
        if (op->hasAttr(kCheckpointAttrName))
          return true;
        auto module = op->getAttrOfType<StringAttr>(kModuleAttrName);
        if (!module)
          return false;
        return llvm::any_of(checkpoint, [&](const std::string &name) {
          StringRef rest = module.getValue();
          return rest.consume_front(name) &&
                 (rest.empty() || rest.starts_with("."));
        });
      };
      if (failed(FunctionDifferentiator(joint, *args, std::move(forwardLayouts),
                                        checkpointed,
                                        gradLayouts == "argument")
                     .run())) {
        // The diagnostics point into the joint function; drop it.
        symbols.erase(joint);
        return signalPassFailure();
      }
    }
  }
};
} // namespace
