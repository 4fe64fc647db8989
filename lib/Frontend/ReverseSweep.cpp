//===- ReverseSweep.cpp - the backward of one function -------------------===//
//
// The reverse sweep of dtensor-autodiff over a copy of the forward: which
// values depend on a differentiated argument (not the stabilising shifts,
// ClosedForms.cpp), one seed cotangent argument per result, the gradient
// rule of every op with a cotangent applied in reverse order
// (GradientRules.cpp) with the cotangents of values used more than once
// summed, the sums of one-hot cotangents taken in closed form, the
// checkpointed ops recomputed just before their first backward reader, and
// the argument gradients returned. docs/autodiff.md, "The joint function",
// "Normalisations", "Gradient layouts" and "Activation checkpointing".
//
//===----------------------------------------------------------------------===//

#include "Autodiff.h"

#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::dtensor;
using namespace mlir::dtensor::autodiff;

namespace {

/// The reverse sweep over one function: the adjoints, and what writes them.
class ReverseSweep : public Adjoints {
public:
  ReverseSweep(func::FuncOp func, ArrayRef<unsigned> wrt,
               DenseMap<Value, LayoutAttr> forwardLayouts,
               llvm::function_ref<bool(Operation *)> checkpointed,
               bool requestArgumentLayouts)
      : Adjoints(func, std::move(forwardLayouts)), wrt(wrt.begin(), wrt.end()),
        checkpointed(checkpointed),
        requestArgumentLayouts(requestArgumentLayouts) {}

  LogicalResult run();

private:
  /// Marks the values that depend on a differentiated argument.
  void computeActivity();

  SmallVector<unsigned> wrt;
  llvm::function_ref<bool(Operation *)> checkpointed;
  bool requestArgumentLayouts;
};

} // namespace

void ReverseSweep::computeActivity() {
  Block &entry = func.getBody().front();
  // Stabilising shifts get no gradient: the results do not depend on them.
  DenseSet<Value> constants = findStabilisingShifts(entry);
  for (unsigned i : wrt)
    active.insert(entry.getArgument(i));
  for (Operation &op : entry.without_terminator()) {
    bool isActive = llvm::any_of(op.getOperands(),
                                 [&](Value v) { return active.contains(v); });
    if (!isActive && op.getNumRegions()) {
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(op.getRegions(), captured);
      isActive =
          llvm::any_of(captured, [&](Value v) { return active.contains(v); });
    }
    if (isActive)
      for (Value result : op.getResults())
        if (!constants.contains(result))
          active.insert(result);
  }
}

void Adjoints::addCotangent(Value v, Value d) {
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

LayoutAttr Adjoints::getKnownLayout(Value v) {
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

LayoutAttr Adjoints::getArgumentLayout(BlockArgument arg) {
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

LogicalResult ReverseSweep::run() {
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
    if (failed(applyGradientRule(op, *this, b)))
      return failure();
  }

  // Sums of one-hot cotangents (a target pick's) in closed form.
  foldOneHotSums(entry, lastForward);

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

LogicalResult autodiff::differentiateFunction(
    func::FuncOp func, ArrayRef<unsigned> wrt,
    DenseMap<Value, LayoutAttr> forwardLayouts,
    llvm::function_ref<bool(Operation *)> checkpointed,
    bool requestArgumentLayouts) {
  return ReverseSweep(func, wrt, std::move(forwardLayouts), checkpointed,
                      requestArgumentLayouts)
      .run();
}
