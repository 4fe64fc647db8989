//===- GradientRules.cpp - the gradient rule of each op ------------------===//
//
// The gradient rules of dtensor-autodiff, one function per op family
// (dtensor layout ops, linalg ops through the LinalgOp interface,
// linalg.softmax, elementwise arith/math ops on tensors, tensor reshapes,
// slices and pads, embedding lookups, concatenations), and the table that
// picks an op's rule by its type (applyGradientRule). A rule reads the
// cotangent of the op's result and adds the gradients of its active
// operands to the Adjoints of the reverse sweep. docs/autodiff.md, "Rules".
//
//===----------------------------------------------------------------------===//

#include "Autodiff.h"

#include "dtensor/Sharding/Layout.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::dtensor;
using namespace mlir::dtensor::autodiff;

//===----------------------------------------------------------------------===//
// linalg ops
//===----------------------------------------------------------------------===//

namespace {

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
} // namespace

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
Value autodiff::convertElements(OpBuilder &b, Location loc, Value tensor,
                                Type element) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (type.getElementType() == element)
    return tensor;
  auto resultType = type.clone(element);
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext());
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), element);
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultType}, ValueRange{tensor},
             ValueRange{empty}, ArrayRef<AffineMap>{identity, identity},
             SmallVector<utils::IteratorType>(type.getRank(),
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(
                   nb, nloc, convertFloat(nb, nloc, args[0], element));
             })
      .getResult(0);
}

/// The gradient of operand `k` of `op`: a linalg.generic over `op`'s loops
/// multiplying the cotangent `dy` by the derivative of the summand `g` with
/// respect to the operand's block argument, summed over the loops the
/// operand does not index. Mixed precision, as PyTorch's autocast: the
/// derivative is taken of the value the body computes before a final
/// narrowing `arith.truncf` (so a bf16 output computed in f32 is
/// differentiated in f32), the product is formed in that computation type
/// (the cotangent converted to it), summed in it where the wider of it and
/// the operand's type, and stored in the operand's type.
static FailureOr<Value>
buildOperandGradient(Adjoints &adjoints, linalg::LinalgOp op, Value dy,
                     ArrayRef<Value> operands, ArrayRef<AffineMap> operandMaps,
                     ArrayRef<BlockArgument> blockArgs, unsigned k, Value g,
                     const ReductionScale &scale, OpBuilder &b) {
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
  SmallVector<AffineMap> maps{
      op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0)))};
  llvm::append_range(inputs, operands);
  llvm::append_range(maps, operandMaps);
  AffineMap resultMap = maps.front();
  for (Value extra : scale.extras) {
    inputs.push_back(extra);
    maps.push_back(resultMap);
  }
  maps.push_back(map);
  // The computation type: the body's value before a final narrowing.
  Value wide = g;
  if (scale.kind == Combiner::Sum)
    if (auto trunc = g.getDefiningOp<arith::TruncFOp>();
        trunc && trunc->getBlock() == op.getBlock())
      wide = trunc.getIn();
  Type element = type.getElementType();
  Type computeType = wide.getType();
  if (!isa<FloatType>(computeType))
    return op->emitError("autodiff: cannot differentiate '")
               << op->getName() << "': its body computes a "
               << computeType << " value",
           failure();
  // Sums are kept in the wider of the two types, stored in the operand's.
  Type sumType = element;
  if (accumulate && cast<FloatType>(computeType).getWidth() >
                        cast<FloatType>(element).getWidth())
    sumType = computeType;
  auto sumTensorType = type.clone(sumType);
  Value init = accumulate
                   ? createZeros(b, loc, sumTensorType)
                   : Value(tensor::EmptyOp::create(b, loc, type.getShape(),
                                                   element));

  bool failedBody = false, zero = false;
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IRMapping primal;
        for (auto [i, arg] : llvm::enumerate(blockArgs))
          primal.map(arg, args[i + 1]);
        BodyDifferentiator diff(nb, nloc, op.getBlock(), primal, blockArgs[k],
                                adjoints.getActiveValues());
        FailureOr<Tangent> t = diff.getTangent(wide);
        Value result;
        if (failed(t)) {
          failedBody = true;
        } else if (t->isZero()) {
          zero = true;
        } else {
          Value cotangent = convertFloat(nb, nloc, args[0], computeType);
          result = t->one
                       ? cotangent
                       : arith::MulFOp::create(nb, nloc, cotangent, t->value)
                             .getResult();
          if (scale.kind != Combiner::Sum) {
            ValueRange extras =
                args.slice(1 + operands.size(), scale.extras.size());
            Value factor = buildScaleFactor(nb, nloc, scale.kind,
                                            diff.getPrimal(g), extras);
            result = arith::MulFOp::create(
                nb, nloc, result,
                convertFloat(nb, nloc, factor, computeType));
          }
          if (accumulate) {
            result = arith::AddFOp::create(
                nb, nloc, args.back(),
                convertFloat(nb, nloc, result, sumType));
          } else {
            result = convertFloat(nb, nloc, result, element);
          }
        }
        if (!result)
          result = floatConstant(nb, nloc, sumTensorType.getElementType(), 0.0);
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
  // Primal values cloned for a factor whose tangent turned out zero are
  // dead: erase them, so that the operands only they read are not kept
  // (an input kept for nothing pins the loops to its sharding).
  Block *body = generic.getBlock();
  SmallVector<Operation *> bodyOps;
  for (Operation &nested : body->without_terminator())
    bodyOps.push_back(&nested);
  for (Operation *nested : llvm::reverse(bodyOps)) // users before defs
    if (isOpTriviallyDead(nested))
      nested->erase();
  if (!accumulate &&
      body->getTerminator()->getOperand(0) == body->getArgument(0) &&
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
    return convertElements(b, loc, generic.getResult(0), element);

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
  auto pruned = linalg::GenericOp::create(b, loc, TypeRange{init.getType()},
                                          keptInputs, ValueRange{init},
                                          keptMaps, iterators);
  pruned.getRegion().takeBody(generic.getRegion());
  pruned.getBlock()->eraseArguments(erase);
  generic.erase();
  return convertElements(b, loc, pruned.getResult(0), element);
}

static SmallVector<Value>
buildReductionAux(Adjoints &adjoints, linalg::LinalgOp op,
                  ArrayRef<Value> operands, ArrayRef<AffineMap> operandMaps,
                  ArrayRef<BlockArgument> blockArgs, Value g, Combiner kind,
                  OpBuilder &b) {
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
                                blockArgs.front(), adjoints.getActiveValues());
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
                         arith::SelectOp::create(nb, nloc, isZero, args[n + 1],
                                                 product)
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

static LogicalResult linalgRule(linalg::LinalgOp op, Value dy,
                                Adjoints &adjoints, OpBuilder &b) {
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
                   << op->getName() << "': its summand reads the accumulator",
               failure();
      if (Operation *def = v.getDefiningOp())
        if (def->getBlock() == body)
          llvm::append_range(worklist, def->getOperands());
    }
    if (scale.kind == Combiner::Sum) {
      adjoints.addCotangent(initOperand->get(), dy);
    } else {
      if (adjoints.isActive(initOperand->get()))
        return op->emitError("autodiff: cannot differentiate '")
                   << op->getName()
                   << "': the init of a max, min or product reduction "
                      "depends on a differentiated argument",
               failure();
      if (operands.empty())
        return op->emitError("autodiff: cannot differentiate '")
                   << op->getName() << "': a reduction without inputs",
               failure();
      if (llvm::any_of(operands, [&](Value v) { return adjoints.isActive(v); }))
        scale.extras = buildReductionAux(adjoints, op, operands, maps,
                                         blockArgs, g, scale.kind, b);
    }
  } else if (!initArg.use_empty()) {
    // An elementwise op reading its init: the init is one more input.
    operands.push_back(initOperand->get());
    maps.push_back(op.getMatchingIndexingMap(initOperand));
    blockArgs.push_back(initArg);
  }

  for (unsigned k = 0; k < operands.size(); ++k) {
    if (!adjoints.isActive(operands[k]))
      continue;
    FailureOr<Value> grad = buildOperandGradient(
        adjoints, op, dy, operands, maps, blockArgs, k, g, scale, b);
    if (failed(grad))
      return failure();
    adjoints.addCotangent(operands[k], *grad);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// linalg.softmax
//===----------------------------------------------------------------------===//

/// dx = y * (dy - sum_d(dy * y)).
static LogicalResult softmaxRule(linalg::SoftmaxOp op, Value dy,
                                 Adjoints &adjoints, OpBuilder &b) {
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
  adjoints.addCotangent(op.getInput(), dx);
  return success();
}

//===----------------------------------------------------------------------===//
// dtensor ops
//===----------------------------------------------------------------------===//

/// DTensor's redistribute backward: the gradient goes back to the layout the
/// value had before, Partial replaced by Replicate.
static LogicalResult annotateRule(AnnotateOp annotate, Value dy,
                                  Adjoints &adjoints, OpBuilder &b) {
  Value d = dy;
  if (LayoutAttr before = adjoints.getKnownLayout(annotate.getInput())) {
    auto request = AnnotateOp::create(b, annotate.getLoc(), d.getType(), d,
                                      getGradLayout(before));
    if (Operation *def = annotate.getInput().getDefiningOp())
      if (def->hasAttr(kBoundaryAttrName))
        request->setAttr(kBoundaryAttrName, b.getUnitAttr());
    d = request.getResult();
  }
  adjoints.addCotangent(annotate.getInput(), d);
  return success();
}

static LogicalResult redistributeRule(RedistributeOp redistribute, Value dy,
                                      Adjoints &adjoints, OpBuilder &b) {
  Value d = dy;
  LayoutAttr before = redistribute.getFromAttr();
  if (!before)
    before = adjoints.getKnownLayout(redistribute.getInput());
  if (before)
    d = AnnotateOp::create(b, redistribute.getLoc(), d.getType(), d,
                           getGradLayout(before));
  adjoints.addCotangent(redistribute.getInput(), d);
  return success();
}

/// The local gradient is viewed as a global one laid out as the forward's
/// layout, or as `dtensor.grad_layout` where given.
static LogicalResult toLocalRule(ToLocalOp toLocal, Value dy,
                                 Adjoints &adjoints, OpBuilder &b) {
  Operation *op = toLocal;
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
  Value d = FromLocalOp::create(b, toLocal.getLoc(),
                                toLocal.getInput().getType(), dy, layout);
  adjoints.addCotangent(toLocal.getInput(), d);
  return success();
}

static LogicalResult fromLocalRule(FromLocalOp fromLocal, Value dy,
                                   Adjoints &adjoints, OpBuilder &b) {
  Location loc = fromLocal.getLoc();
  LayoutAttr layout = getGradLayout(fromLocal.getLayout());
  Value global = AnnotateOp::create(b, loc, dy.getType(), dy, layout);
  Value d =
      ToLocalOp::create(b, loc, fromLocal.getInput().getType(), global, layout);
  adjoints.addCotangent(fromLocal.getInput(), d);
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise arith and math ops on whole tensors
//===----------------------------------------------------------------------===//

bool autodiff::isElementwiseOnTensors(Operation *op) {
  if (!isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) ||
      op->getNumResults() != 1 || op->getNumRegions() != 0 ||
      op->getNumOperands() == 0)
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return type && llvm::all_of(op->getOperandTypes(), [&](Type t) {
           auto operandType = dyn_cast<RankedTensorType>(t);
           return operandType && operandType.getShape() == type.getShape();
         });
}

/// Differentiated as the linalg.generic that applies the op to every element
/// (built here and dropped once its gradients are written).
static LogicalResult elementwiseRule(Operation *op, Value dy,
                                     Adjoints &adjoints, OpBuilder &b) {
  Location loc = op->getLoc();
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(type.getRank(), op->getContext());
  SmallVector<AffineMap> maps(op->getNumOperands() + 1, identity);
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
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
  LogicalResult result = linalgRule(
      cast<linalg::LinalgOp>(generic.getOperation()), dy, adjoints, b);
  generic.erase();
  empty.erase();
  return result;
}

//===----------------------------------------------------------------------===//
// tensor ops
//===----------------------------------------------------------------------===//

static LogicalResult collapseShapeRule(tensor::CollapseShapeOp collapse,
                                       Value dy, Adjoints &adjoints,
                                       OpBuilder &b) {
  Value d =
      tensor::ExpandShapeOp::create(b, collapse.getLoc(), collapse.getSrcType(),
                                    dy, collapse.getReassociationIndices());
  adjoints.addCotangent(collapse.getSrc(), d);
  return success();
}

static LogicalResult expandShapeRule(tensor::ExpandShapeOp expand, Value dy,
                                     Adjoints &adjoints, OpBuilder &b) {
  Value d =
      tensor::CollapseShapeOp::create(b, expand.getLoc(), expand.getSrcType(),
                                      dy, expand.getReassociationIndices());
  adjoints.addCotangent(expand.getSrc(), d);
  return success();
}

static FailureOr<SmallVector<int64_t>>
getStaticValues(Operation *op, ArrayRef<int64_t> values) {
  if (llvm::any_of(values, ShapedType::isDynamic))
    return op->emitError("autodiff: cannot differentiate '")
               << op->getName() << "' with dynamic offsets or sizes",
           failure();
  return SmallVector<int64_t>(values);
}

/// A slice's gradient is the cotangent put back where the slice took it,
/// zeros elsewhere, with ops that have sharding rules: the dims a
/// rank-reducing slice dropped come back as unit dims (expand_shape); a dim
/// taken with stride s > 1 spreads its n elements s apart (each element
/// padded with s - 1 zeros on a new unit dim, collapsed, and the trailing
/// zeros cut); then the zeros before and after (pad).
static LogicalResult extractSliceRule(tensor::ExtractSliceOp slice, Value dy,
                                      Adjoints &adjoints, OpBuilder &b) {
  Operation *op = slice;
  Location loc = slice.getLoc();
  RankedTensorType srcType = slice.getSourceType();
  int64_t rank = srcType.getRank();
  FailureOr<SmallVector<int64_t>> offsets =
      getStaticValues(op, slice.getStaticOffsets());
  FailureOr<SmallVector<int64_t>> sizes =
      getStaticValues(op, slice.getStaticSizes());
  FailureOr<SmallVector<int64_t>> strides =
      getStaticValues(op, slice.getStaticStrides());
  if (failed(offsets) || failed(sizes) || failed(strides))
    return failure();
  Type element = srcType.getElementType();
  Value zero = floatConstant(b, loc, element, 0.0);
  Value d = dy;

  // Dropped dims back as unit dims: each kept dim's group takes the dropped
  // dims before it (the last group those after it).
  llvm::SmallBitVector dropped = slice.getDroppedDims();
  if (dropped.any()) {
    SmallVector<ReassociationIndices> groups;
    ReassociationIndices pending;
    for (int64_t dim = 0; dim < rank; ++dim) {
      pending.push_back(dim);
      if (!dropped.test(dim)) {
        groups.push_back(pending);
        pending.clear();
      }
    }
    // Every dim dropped (one element): a 0-d value expands with no groups.
    if (!groups.empty())
      llvm::append_range(groups.back(), pending);
    d = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(*sizes, element), d, groups);
  }

  // Strided dims: element i of the slice at i * stride.
  SmallVector<int64_t> spread(*sizes);
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t stride = (*strides)[dim], size = (*sizes)[dim];
    if (stride == 1 || size <= 1)
      continue;
    auto type = cast<RankedTensorType>(d.getType());
    SmallVector<int64_t> split(type.getShape());
    split.insert(split.begin() + dim + 1, 1);
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i < rank; ++i)
      groups.push_back(i == dim ? ReassociationIndices{i, i + 1}
                                : ReassociationIndices{i < dim ? i : i + 1});
    Value expanded = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(split, element), d, groups);
    SmallVector<int64_t> padded(split);
    padded[dim + 1] = stride;
    SmallVector<OpFoldResult> low(rank + 1, b.getIndexAttr(0));
    SmallVector<OpFoldResult> high(rank + 1, b.getIndexAttr(0));
    high[dim + 1] = b.getIndexAttr(stride - 1);
    Value spaced =
        tensor::PadOp::create(b, loc, RankedTensorType::get(padded, element),
                              expanded, low, high, zero);
    SmallVector<int64_t> flat(type.getShape());
    flat[dim] = size * stride;
    Value collapsed = tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get(flat, element), spaced, groups);
    spread[dim] = (size - 1) * stride + 1;
    SmallVector<OpFoldResult> zeros(rank, b.getIndexAttr(0)), ones(rank,
                                                             b.getIndexAttr(1));
    SmallVector<OpFoldResult> cut;
    for (int64_t extent : flat)
      cut.push_back(b.getIndexAttr(extent));
    cut[dim] = b.getIndexAttr(spread[dim]);
    flat[dim] = spread[dim];
    d = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(flat, element), collapsed, zeros, cut,
        ones);
  }

  SmallVector<OpFoldResult> low, high;
  for (int64_t dim = 0; dim < rank; ++dim) {
    low.push_back(b.getIndexAttr((*offsets)[dim]));
    high.push_back(b.getIndexAttr(srcType.getDimSize(dim) - (*offsets)[dim] -
                                  spread[dim]));
  }
  d = tensor::PadOp::create(b, loc, srcType, d, low, high, zero);
  adjoints.addCotangent(slice.getSource(), d);
  return success();
}

/// An insertion's gradients: the source's is the slice of the cotangent
/// the insertion wrote (rank-reducing and strided alike), the
/// destination's the cotangent with that slice zeroed.
static LogicalResult insertSliceRule(tensor::InsertSliceOp insert, Value dy,
                                     Adjoints &adjoints, OpBuilder &b) {
  Location loc = insert.getLoc();
  RankedTensorType srcType = insert.getSourceType();
  if (adjoints.isActive(insert.getSource())) {
    Value d = tensor::ExtractSliceOp::create(
        b, loc, srcType, dy, insert.getMixedOffsets(), insert.getMixedSizes(),
        insert.getMixedStrides());
    adjoints.addCotangent(insert.getSource(), d);
  }
  if (adjoints.isActive(insert.getDest())) {
    Value d = tensor::InsertSliceOp::create(
        b, loc, createZeros(b, loc, srcType), dy, insert.getMixedOffsets(),
        insert.getMixedSizes(), insert.getMixedStrides());
    adjoints.addCotangent(insert.getDest(), d);
  }
  return success();
}

/// A constant pad's gradient is the slice of the cotangent it padded.
static LogicalResult padRule(tensor::PadOp pad, Value dy, Adjoints &adjoints,
                             OpBuilder &b) {
  Operation *op = pad;
  if (Value padValue = pad.getConstantPaddingValue();
      !padValue || adjoints.isActive(padValue))
    return op->emitError("autodiff: cannot differentiate 'tensor.pad' "
                         "without a constant padding value"),
           failure();
  FailureOr<SmallVector<int64_t>> low = getStaticValues(op, pad.getStaticLow());
  if (failed(low))
    return failure();
  RankedTensorType srcType = pad.getSourceType();
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t d = 0; d < srcType.getRank(); ++d) {
    offsets.push_back(b.getIndexAttr((*low)[d]));
    sizes.push_back(b.getIndexAttr(srcType.getDimSize(d)));
    strides.push_back(b.getIndexAttr(1));
  }
  Value d = tensor::ExtractSliceOp::create(b, pad.getLoc(), srcType, dy,
                                           offsets, sizes, strides);
  adjoints.addCotangent(pad.getSource(), d);
  return success();
}

/// An embedding lookup out[b..., h] = table[ids[b..., 0], h]: the table's
/// gradient is the scatter-add of the cotangent rows,
/// dtable[v, h] = sum_b (ids[b] == v) * dout[b, h], written as a generic
/// over (b..., v, h) that compares the ids with a constant 0..V-1 (a
/// constant, so that a vocabulary shard compares with its own range).
static LogicalResult gatherRule(tensor::GatherOp gather, Value dy,
                                Adjoints &adjoints, OpBuilder &b) {
  Operation *op = gather;
  Location loc = gather.getLoc();
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
  if (!adjoints.isActive(gather.getSource()))
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
  if (LayoutAttr layout = adjoints.getKnownLayout(gather.getSource())) {
    SmallVector<PlacementAttr> replicated(layout.getPlacements().size(),
                                          PlacementAttr::getReplicate(ctx));
    iota =
        AnnotateOp::create(b, loc, iotaType, iota,
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
          b, loc, TypeRange{table}, ValueRange{gather.getIndices(), iota, dy},
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
  adjoints.addCotangent(gather.getSource(), grad);
  return success();
}

/// A concatenation's gradient is one slice of the cotangent per input.
static LogicalResult concatRule(tensor::ConcatOp concat, Value dy,
                                Adjoints &adjoints, OpBuilder &b) {
  Location loc = concat.getLoc();
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
    if (!adjoints.isActive(input))
      continue;
    Value d = tensor::ExtractSliceOp::create(b, loc, inputType, dy, offsets,
                                             sizes, strides);
    adjoints.addCotangent(input, d);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The table of rules
//===----------------------------------------------------------------------===//

LogicalResult autodiff::applyGradientRule(Operation *op, Adjoints &adjoints,
                                          OpBuilder &b) {
  // Cotangents are static tensors, and so are the gradients the rules
  // build for the operands.
  auto isStatic = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape();
  };
  for (Value result : op->getResults())
    if (adjoints.hasCotangent(result) && !isStatic(result.getType()))
      return op->emitError("autodiff: dynamic shapes are not supported"),
             failure();
  for (Value operand : op->getOperands())
    if (adjoints.isActive(operand) && isa<TensorType>(operand.getType()) &&
        !isStatic(operand.getType()))
      return op->emitError("autodiff: dynamic shapes are not supported"),
             failure();

  // Every rule reads the cotangent of the op's one result.
  Value dy = adjoints.getCotangent(op->getResult(0));
  auto rule = [&](auto fn) {
    return [&, fn](auto typed) { return fn(typed, dy, adjoints, b); };
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // dtensor ops.
      .Case<AnnotateOp>(rule(annotateRule))
      .Case<RedistributeOp>(rule(redistributeRule))
      .Case<ToLocalOp>(rule(toLocalRule))
      .Case<FromLocalOp>(rule(fromLocalRule))
      // linalg ops: softmax, then everything the LinalgOp interface reads.
      .Case<linalg::SoftmaxOp>(rule(softmaxRule))
      .Case<linalg::LinalgOp>(rule(linalgRule))
      // tensor ops.
      .Case<tensor::CollapseShapeOp>(rule(collapseShapeRule))
      .Case<tensor::ExpandShapeOp>(rule(expandShapeRule))
      .Case<tensor::ExtractSliceOp>(rule(extractSliceRule))
      .Case<tensor::InsertSliceOp>(rule(insertSliceRule))
      .Case<tensor::PadOp>(rule(padRule))
      .Case<tensor::GatherOp>(rule(gatherRule))
      .Case<tensor::ConcatOp>(rule(concatRule))
      // Elementwise arith and math ops on tensors; anything else has no rule.
      .Default([&](Operation *op) -> LogicalResult {
        if (isElementwiseOnTensors(op))
          return elementwiseRule(op, dy, adjoints, b);
        return op->emitError("autodiff: cannot differentiate '")
                   << op->getName() << "'",
               failure();
      });
}
