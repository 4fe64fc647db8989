//===- PropagateLayouts.cpp - assign a layout to every tensor value -------===//
//
// Program-order propagation, as DTensor does it op by op: each op takes the
// sharding strategy whose input redistributions cost least given the layouts
// its operands already have. Values that ops create from scalars (empty,
// splat constants, fills) take the layout their first consumer asks for.
// propagateLayouts (include/dtensor/Partitioning/PropagateLayouts.h) does it
// for one function; the dtensor-propagate-layouts pass for each function of
// a module.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Partitioning/PropagateLayouts.h"

#include "dtensor/Partitioning/Passes.h"
#include "dtensor/Target/Target.h"

#include "dtensor/Sharding/Layout.h"
#include "dtensor/Sharding/Redistribute.h"
#include "dtensor/Sharding/ShardingRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/SmallBitVector.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_PROPAGATELAYOUTSPASS
#include "dtensor/Partitioning/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

/// True for a function argument marked as a model parameter, or a value a
/// loop carries from one (a weight updated step by step).
static bool isParameter(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (auto loop = arg ? dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp())
                      : scf::ForOp())
    if (OpOperand *init = loop.getTiedLoopInit(arg))
      return isParameter(init->get());
  auto func =
      arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  return func && func.getArgAttr(arg.getArgNumber(), kParamAttrName);
}

/// True for a value an op makes from constants alone (tensor.empty, a splat
/// constant, a fill of a constant into a tensor.empty), which can be made
/// again anywhere instead of being redistributed.
static bool isRecreatable(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumResults() != 1)
    return false;
  if (auto empty = dyn_cast<tensor::EmptyOp>(def))
    return empty.getDynamicSizes().empty();
  if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    return dense && dense.isSplat();
  }
  if (auto fill = dyn_cast<linalg::FillOp>(def))
    return fill.hasPureTensorSemantics() &&
           matchPattern(fill.value(), m_Constant()) &&
           fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>() &&
           isRecreatable(fill.getOutputs()[0]);
  return false;
}

/// True if `layout` is one the layout ops reject on `type` (LAYOUT5, a
/// sharded dynamic dim; LAYOUT6, a Partial reduction the element type has
/// none of): strategies that would write one are not candidates.
static bool isUnsupportedLayout(LayoutAttr layout, Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!layout || !tensor)
    return false;
  for (PlacementAttr placement : layout.getPlacements()) {
    if (placement.isShard() && placement.getDim() < tensor.getRank() &&
        tensor.isDynamicDim(placement.getDim()))
      return true;
    if (placement.isPartial() &&
        !partialAllowsElementType(placement.getReduce(),
                                  tensor.getElementType()))
      return true;
  }
  return false;
}

/// The strategies of `op` under `spec` that every operand and result
/// type supports. A reshape keeps an uneven shard only on a dim that is the
/// same on both sides (5x2x2x2 -> 5x2x4 with 5 rows over 4 ranks); a
/// strategy that would split the outer dim of a merged or split group
/// unevenly (S(0) of 8 rows over 4 ranks carried onto the size-2 dim of
/// 8 -> 2x4) is dropped, so propagation gathers first, as DTensor's view
/// rules do, instead of partitioning failing.
static SmallVector<ShardingStrategy>
supportedStrategies(Operation *op, const ShardingSpec &spec, MeshOp mesh) {
  SmallVector<ShardingStrategy> strategies = enumerateStrategies(spec, mesh);
  llvm::erase_if(strategies, [&](const ShardingStrategy &strategy) {
    for (auto [operand, layout] :
         llvm::zip(op->getOperands(), strategy.operands))
      if (isUnsupportedLayout(layout, operand.getType()))
        return true;
    for (auto [result, layout] : llvm::zip(op->getResults(), strategy.results))
      if (isUnsupportedLayout(layout, result.getType()))
        return true;
    return splitsEvenOnlyLoopUnevenly(op, spec, strategy, mesh);
  });
  return strategies;
}

namespace {

class Propagator {
public:
  Propagator(func::FuncOp func, MeshOp mesh, const HardwareModel &hw)
      : func(func), mesh(mesh), hw(hw) {}

  LogicalResult run();

private:
  LayoutAttr replicated() { return getReplicatedLayout(mesh); }

  /// Gives a pending created value (and the init it fills) `layout`.
  void assign(Value value, LayoutAttr layout);
  /// Cost of making `value` available as `layout` (inf if impossible).
  double transitionCost(Value value, LayoutAttr layout);
  /// Cost of redistributing a `type` tensor from `from` to `to`.
  double layoutCost(RankedTensorType type, LayoutAttr from, LayoutAttr to);
  /// Least cost at which the users of `op`'s results can take them if the
  /// results get `resultLayouts`, looking `depth` ops ahead along the uses,
  /// so that a choice that is cheap here but forces a dearer
  /// redistribution a few ops later (reduce_scatter now, all_gather after
  /// an elementwise chain) loses to the cheaper whole.
  double userCost(Operation *op, ArrayRef<LayoutAttr> resultLayouts,
                  unsigned depth);
  /// The strategies of a user `op` (empty if it has no sharding rule).
  ArrayRef<ShardingStrategy> strategiesOf(Operation *op);
  /// `value` as `layout`, inserting (or reusing) a redistribute before
  /// `before`.
  FailureOr<Value> materialize(Value value, LayoutAttr layout,
                               Operation *before);
  LogicalResult visitAnnotate(AnnotateOp op);
  LogicalResult visitRedistribute(RedistributeOp op);
  LogicalResult visitReturn(func::ReturnOp op);
  LogicalResult visitFor(scf::ForOp op);
  LogicalResult visitBlock(Block &block);
  LogicalResult visitOp(Operation *op);
  /// A linalg.softmax whose input arrives sharded along its dimension is
  /// decomposed (upstream's max, exp, sum, divide) and the pieces are
  /// propagated instead: the row statistics, not the input, communicate.
  /// Returns false, touching nothing, for any other op.
  FailureOr<bool> visitSoftmaxOverShards(Operation *op);
  LogicalResult visit(Operation &op);
  void foldRedistributeChains();
  void writeLayouts();

  func::FuncOp func;
  MeshOp mesh;
  const HardwareModel &hw;
  DenseMap<Value, LayoutAttr> layouts;
  llvm::SetVector<Value> pending;
  DenseMap<std::pair<Value, LayoutAttr>, Value> redistributed;
  /// Redistributions that materialize a module boundary (an annotate with
  /// `dtensor.boundary`): chains through them are not folded.
  llvm::SmallPtrSet<Operation *, 8> boundaries;
  DenseMap<std::tuple<LayoutAttr, LayoutAttr, Type>, double> costs;
  DenseMap<Operation *, SmallVector<ShardingStrategy>> userStrategies;
  /// userCost results while one op is visited (op, result layouts, depth).
  DenseMap<std::tuple<Operation *, Attribute, unsigned>, double> lookahead;
};

/// How many ops along the uses the strategy choice looks ahead.
constexpr unsigned kLookaheadDepth = 4;

void Propagator::assign(Value value, LayoutAttr layout) {
  if (!pending.remove(value))
    return;
  layouts[value] = layout;
  if (auto fill = value.getDefiningOp<linalg::FillOp>())
    assign(fill.getOutputs()[0], layout);
}

double Propagator::transitionCost(Value value, LayoutAttr layout) {
  auto type = cast<RankedTensorType>(value.getType());
  LayoutAttr current;
  if (pending.contains(value)) {
    if (creationAllowsLayout(value.getDefiningOp(), layout))
      return 0;
    current = replicated();
  } else {
    current = layouts.lookup(value);
    if (current != layout && isRecreatable(value) &&
        creationAllowsLayout(value.getDefiningOp(), layout))
      return 0;
    // A redistribution made for an earlier user is reused (materialize):
    // the value is already available in that layout (the backward's
    // all_gathered cotangent serves the weight gradient too, as in
    // PyTorch, instead of an all_to_all of the activation).
    if (redistributed.count({value, layout}))
      return 0;
  }
  return layoutCost(type, current, layout);
}

double Propagator::layoutCost(RankedTensorType type, LayoutAttr from,
                              LayoutAttr to) {
  if (from == to)
    return 0;
  auto key = std::make_tuple(from, to, Type(type));
  auto it = costs.find(key);
  if (it != costs.end())
    return it->second;
  FailureOr<RedistributePlan> plan =
      planRedistribution(mesh, type, from, to, hw, nullptr);
  double cost =
      succeeded(plan) ? plan->costUs : std::numeric_limits<double>::infinity();
  costs[key] = cost;
  return cost;
}

ArrayRef<ShardingStrategy> Propagator::strategiesOf(Operation *op) {
  auto it = userStrategies.find(op);
  if (it != userStrategies.end())
    return it->second;
  SmallVector<ShardingStrategy> strategies;
  FailureOr<ShardingSpec> spec = getShardingSpec(op, nullptr);
  if (succeeded(spec) && !spec->isCreation)
    strategies = supportedStrategies(op, *spec, mesh);
  return userStrategies[op] = std::move(strategies);
}

double Propagator::userCost(Operation *op, ArrayRef<LayoutAttr> resultLayouts,
                            unsigned depth) {
  SmallVector<Attribute> key(resultLayouts.begin(), resultLayouts.end());
  auto memoKey = std::make_tuple(
      op, Attribute(ArrayAttr::get(op->getContext(), key)), depth);
  if (auto it = lookahead.find(memoKey); it != lookahead.end())
    return it->second;
  // The layout a result of `op` would have, or null for other values.
  auto candidate = [&](Value value) -> LayoutAttr {
    auto result = dyn_cast<OpResult>(value);
    if (!result || result.getOwner() != op)
      return {};
    return resultLayouts[result.getResultNumber()];
  };
  double total = 0;
  llvm::SmallPtrSet<Operation *, 4> seen;
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type)
      continue;
    LayoutAttr layout = candidate(result);
    for (OpOperand &use : result.getUses()) {
      Operation *user = use.getOwner();
      if (auto annotate = dyn_cast<AnnotateOp>(user)) {
        total += layoutCost(type, layout, annotate.getLayout());
        continue;
      }
      if (auto redistribute = dyn_cast<RedistributeOp>(user)) {
        total += layoutCost(type, layout, redistribute.getTo());
        continue;
      }
      if (isa<func::ReturnOp>(user)) {
        if (auto requested = func.getResultAttrOfType<LayoutAttr>(
                use.getOperandNumber(), kLayoutAttrName))
          total += layoutCost(type, layout, requested);
        continue;
      }
      if (!seen.insert(user).second)
        continue;
      // The user's cheapest strategy given this candidate and the layouts
      // of its other operands known so far (unknown ones cost nothing).
      double best = std::numeric_limits<double>::infinity();
      bool any = false;
      for (const ShardingStrategy &strategy : strategiesOf(user)) {
        any = true;
        double cost = 0;
        for (auto [operand, wanted] :
             llvm::zip_equal(user->getOperands(), strategy.operands)) {
          if (!wanted)
            continue;
          if (LayoutAttr own = candidate(operand))
            cost += layoutCost(cast<RankedTensorType>(operand.getType()), own,
                               wanted);
          else if (pending.contains(operand) || layouts.count(operand))
            cost += transitionCost(operand, wanted);
        }
        if (depth > 1 && !std::isinf(cost))
          cost += userCost(user, strategy.results, depth - 1);
        best = std::min(best, cost);
      }
      if (any && !std::isinf(best))
        total += best;
    }
  }
  return lookahead[memoKey] = total;
}

FailureOr<Value> Propagator::materialize(Value value, LayoutAttr layout,
                                         Operation *before) {
  if (pending.contains(value)) {
    if (creationAllowsLayout(value.getDefiningOp(), layout)) {
      assign(value, layout);
      return value;
    }
    assign(value, replicated());
  }
  LayoutAttr current = layouts.lookup(value);
  if (current == layout)
    return value;
  auto key = std::make_pair(value, layout);
  if (Value cached = redistributed.lookup(key))
    return cached;
  // A value made from scalars is made again in the new layout: a zero init
  // shared by several ops takes each op's layout without communication.
  if (isRecreatable(value) &&
      creationAllowsLayout(value.getDefiningOp(), layout)) {
    OpBuilder builder(before);
    Operation *clone = builder.clone(*value.getDefiningOp());
    if (auto fill = dyn_cast<linalg::FillOp>(clone)) {
      Operation *init = builder.clone(*fill.getOutputs()[0].getDefiningOp());
      clone->moveAfter(init);
      fill.getOutputsMutable()[0].assign(init->getResult(0));
      layouts[init->getResult(0)] = layout;
    }
    Value result = clone->getResult(0);
    layouts[result] = layout;
    redistributed[key] = result;
    return result;
  }
  std::string why;
  auto type = cast<RankedTensorType>(value.getType());
  if (failed(planRedistribution(mesh, type, current, layout, hw, &why)))
    return before->emitError("cannot redistribute operand from ")
           << current << " to " << layout << ": " << why;
  OpBuilder builder(before);
  auto redistribute = RedistributeOp::create(builder, before->getLoc(), type,
                                             value, current, layout);
  layouts[redistribute.getResult()] = layout;
  redistributed[key] = redistribute.getResult();
  return redistribute.getResult();
}

LogicalResult Propagator::visitAnnotate(AnnotateOp op) {
  FailureOr<Value> value = materialize(op.getInput(), op.getLayout(), op);
  if (failed(value))
    return failure();
  if (op->hasAttr(kBoundaryAttrName))
    if (auto redistribute = value->getDefiningOp<RedistributeOp>())
      boundaries.insert(redistribute);
  op.getResult().replaceAllUsesWith(*value);
  op.erase();
  return success();
}

LogicalResult Propagator::visitRedistribute(RedistributeOp op) {
  Value input = op.getInput();
  if (pending.contains(input))
    assign(input, replicated());
  LayoutAttr current = layouts.lookup(input);
  if (std::optional<LayoutAttr> from = op.getFrom(); from && *from != current)
    return op.emitError("'from' layout ")
           << *from << " contradicts the propagated layout " << current
           << " of the operand";
  // A target the propagated source cannot reach is the user's error, named
  // here rather than left to the verifier after the pass.
  if (failed(checkRedistribution(
          current, op.getTo(), op.getInput().getType().getElementType(),
          [&](StringRef id) {
            return op.emitError("cannot redistribute the operand's "
                                "propagated layout ")
                   << current << " to " << op.getTo() << ": [" << id << "] ";
          })))
    return failure();
  op.setFromAttr(current);
  layouts[op.getResult()] = op.getTo();
  return success();
}

LogicalResult Propagator::visitReturn(func::ReturnOp op) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<RankedTensorType>(operand.get().getType()))
      continue;
    unsigned index = operand.getOperandNumber();
    auto requested =
        func.getResultAttrOfType<LayoutAttr>(index, kLayoutAttrName);
    if (!requested) {
      if (pending.contains(operand.get()))
        assign(operand.get(), replicated());
      func.setResultAttr(index, kLayoutAttrName,
                         layouts.lookup(operand.get()));
      continue;
    }
    FailureOr<Value> value = materialize(operand.get(), requested, op);
    if (failed(value))
      return failure();
    operand.set(*value);
  }
  return success();
}

LogicalResult Propagator::visitBlock(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block))
    if (failed(visit(op)))
      return failure();
  return success();
}

LogicalResult Propagator::visitFor(scf::ForOp op) {
  // A carried tensor keeps one layout: its init's on entry, in the body
  // and out of the loop; what the body yields is redistributed to it. A
  // carried value the body does not read whose init is made from scalars
  // (the previous step's loss) takes the layout the body yields instead.
  Block *body = op.getBody();
  llvm::SmallBitVector deferred(op.getNumRegionIterArgs());
  for (auto [i, iterArg] : llvm::enumerate(op.getRegionIterArgs())) {
    if (!isa<RankedTensorType>(iterArg.getType()))
      continue;
    Value init = op.getInitArgs()[i];
    if (pending.contains(init) && iterArg.use_empty()) {
      deferred.set(i);
      continue;
    }
    if (pending.contains(init))
      assign(init, replicated());
    layouts[iterArg] = layouts.lookup(init);
  }
  // Redistributions made in the body do not dominate what follows it.
  auto outside = redistributed;
  if (failed(visitBlock(*body)))
    return failure();
  redistributed = std::move(outside);
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  for (auto [i, iterArg] : llvm::enumerate(op.getRegionIterArgs())) {
    if (!isa<RankedTensorType>(iterArg.getType()))
      continue;
    Value yielded = yield.getOperand(i);
    if (pending.contains(yielded))
      assign(yielded, replicated());
    if (deferred.test(i)) {
      LayoutAttr layout = layouts.lookup(yielded);
      layouts[iterArg] = layout;
      FailureOr<Value> init = materialize(op.getInitArgs()[i], layout, op);
      if (failed(init))
        return failure();
      op.getInitArgsMutable()[i].assign(*init);
    } else {
      FailureOr<Value> value =
          materialize(yielded, layouts.lookup(iterArg), yield);
      if (failed(value))
        return failure();
      yield->setOperand(i, *value);
    }
    layouts[op.getResult(i)] = layouts.lookup(iterArg);
  }
  return success();
}

LogicalResult Propagator::visitOp(Operation *op) {
  bool touchesTensors =
      llvm::any_of(op->getOperandTypes(), llvm::IsaPred<RankedTensorType>) ||
      llvm::any_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>);
  if (!touchesTensors)
    return success();
  if (llvm::any_of(op->getOperandTypes(), llvm::IsaPred<UnrankedTensorType>))
    return op->emitError("unranked tensors cannot be sharded");
  std::string why;
  FailureOr<ShardingSpec> spec = getShardingSpec(op, &why);
  if (failed(spec))
    return op->emitError("cannot propagate layouts through this op: ") << why;
  if (spec->isCreation) {
    for (Value result : op->getResults())
      pending.insert(result);
    // A fill's init takes the fill's layout once that is known.
    if (auto fill = dyn_cast<linalg::FillOp>(op))
      if (pending.contains(fill.getOutputs()[0]) &&
          fill.getOutputs()[0].hasOneUse())
        return success();
    return success();
  }

  SmallVector<ShardingStrategy> strategies =
      supportedStrategies(op, *spec, mesh);
  // Known layouts change from op to op: so does the lookahead.
  lookahead.clear();
  const ShardingStrategy *best = nullptr;
  double bestCost = std::numeric_limits<double>::infinity();
  bool bestMovesParam = false;
  for (const ShardingStrategy &strategy : strategies) {
    double cost = 0;
    bool movesParam = false;
    for (auto [operand, layout] :
         llvm::zip_equal(op->getOperands(), strategy.operands)) {
      if (!layout)
        continue;
      double step = transitionCost(operand, layout);
      cost += step;
      movesParam |= step > 0 && isParameter(operand);
    }
    if (!std::isinf(cost))
      cost += userCost(op, strategy.results, kLookaheadDepth);
    // Parameters stay where they are laid out: a strategy that communicates
    // one loses to any that does not. Then the cheapest wins; ties go to the
    // strategy that splits the work most.
    bool better = false;
    if (!std::isinf(cost) && best && movesParam != bestMovesParam)
      better = !movesParam;
    else
      better = cost < bestCost - 1e-9 ||
               (best && cost <= bestCost + 1e-9 &&
                strategy.splitFactor > best->splitFactor);
    if (better) {
      bestCost = best && movesParam != bestMovesParam
                     ? cost
                     : std::min(cost, bestCost);
      best = &strategy;
      bestMovesParam = movesParam;
    }
  }
  if (!best)
    return op->emitError("no sharding strategy can serve the operand layouts");

  for (auto [operand, layout] :
       llvm::zip_equal(op->getOpOperands(), best->operands)) {
    if (!layout)
      continue;
    FailureOr<Value> value = materialize(operand.get(), layout, op);
    if (failed(value))
      return failure();
    operand.set(*value);
  }
  for (auto [result, layout] : llvm::zip_equal(op->getResults(), best->results))
    layouts[result] = layout;
  return success();
}

LogicalResult Propagator::visit(Operation &op) {
  if (auto annotate = dyn_cast<AnnotateOp>(op))
    return visitAnnotate(annotate);
  if (auto redistribute = dyn_cast<RedistributeOp>(op))
    return visitRedistribute(redistribute);
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    return visitReturn(ret);
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return visitFor(loop);
  if (isa<scf::YieldOp>(op))
    return success(); // The loop's visit handles it.
  FailureOr<bool> decomposed = visitSoftmaxOverShards(&op);
  if (failed(decomposed) || *decomposed)
    return decomposed;
  return visitOp(&op);
}

FailureOr<bool> Propagator::visitSoftmaxOverShards(Operation *op) {
  auto softmax = dyn_cast<linalg::SoftmaxOp>(op);
  if (!softmax || !isa<RankedTensorType>(softmax.getInputOperandType()) ||
      !softmax.getInputOperandType().hasStaticShape())
    return false;
  LayoutAttr input = layouts.lookup(softmax.getInput());
  int64_t dim = softmax.getDimension();
  if (!input || input.hasPartial() ||
      llvm::none_of(input.getPlacements(), [&](PlacementAttr p) {
        return p.isShard() && p.getDim() == dim;
      }))
    return false;
  // Decompose where all-reducing the row maxima and sums costs less than
  // the cheapest layout the whole op can take its input in (at
  // latency-bound sizes one all_gather or all_to_all of a small input is
  // cheaper than two all_reduces).
  auto type = cast<RankedTensorType>(softmax.getInputOperandType());
  SmallVector<int64_t> rowShape(type.getShape());
  rowShape.erase(rowShape.begin() + dim);
  auto rowType = RankedTensorType::get(rowShape, type.getElementType());
  MLIRContext *ctx = op->getContext();
  auto statistics = [&](ReduceKind kind) {
    SmallVector<PlacementAttr> partial, reduced;
    for (PlacementAttr p : input.getPlacements()) {
      if (p.isShard() && p.getDim() >= dim) {
        partial.push_back(p.getDim() == dim
                              ? PlacementAttr::getPartial(ctx, kind)
                              : PlacementAttr::getShard(ctx, p.getDim() - 1));
        reduced.push_back(p.getDim() == dim ? PlacementAttr::getReplicate(ctx)
                                            : partial.back());
        continue;
      }
      partial.push_back(p);
      reduced.push_back(p);
    }
    return layoutCost(rowType, LayoutAttr::get(ctx, input.getMesh(), partial),
                      LayoutAttr::get(ctx, input.getMesh(), reduced));
  };
  // Both sides pay for what the users need of the result too: the pieces
  // leave it in the input's layout.
  lookahead.clear();
  double rows = statistics(ReduceKind::Max) + statistics(ReduceKind::Sum) +
                userCost(op, {input}, kLookaheadDepth);
  double whole = std::numeric_limits<double>::infinity();
  FailureOr<ShardingSpec> spec = getShardingSpec(op, nullptr);
  if (succeeded(spec))
    for (const ShardingStrategy &strategy :
         supportedStrategies(op, *spec, mesh))
      whole = std::min(whole,
                       transitionCost(softmax.getInput(), strategy.operands[0]) +
                           userCost(op, strategy.results, kLookaheadDepth));
  lookahead.clear();
  if (!(rows < whole))
    return false;
  Operation *before = op->getPrevNode();
  OpBuilder builder(op);
  FailureOr<SmallVector<Value>> pieces =
      cast<linalg::AggregatedOpInterface>(op).decomposeOperation(builder);
  if (failed(pieces)) // Upstream's decomposition does not fail: keep it whole.
    return false;
  op->replaceAllUsesWith(*pieces);
  SmallVector<Operation *> created;
  for (Operation *it = before ? before->getNextNode() : &op->getBlock()->front();
       it != op; it = it->getNextNode())
    created.push_back(it);
  // An earlier lookahead may have cached the op's strategies.
  userStrategies.erase(op);
  op->erase();
  for (Operation *piece : created)
    if (failed(visit(*piece)))
      return failure();
  return true;
}

void Propagator::foldRedistributeChains() {
  SmallVector<RedistributeOp> ops;
  func.walk([&](RedistributeOp op) { ops.push_back(op); });
  for (RedistributeOp op : ops) {
    auto inner = op.getInput().getDefiningOp<RedistributeOp>();
    if (!inner || !inner->hasOneUse() || boundaries.contains(inner))
      continue;
    // from -> mid -> to becomes from -> to where that has a plan. Only the
    // next redistribution sees `mid`, even where an annotate asked for it,
    // so P -> R -> S(0) is one reduce_scatter instead of an all_reduce.
    // Module boundaries are kept: a TP plan's RowwiseParallel(output S(0))
    // followed by ColwiseParallel(input S(0)) is a reduce_scatter and an
    // all_gather, as in PyTorch, not one all_reduce.
    LayoutAttr from = *inner.getFrom();
    if (failed(planRedistribution(mesh, op.getInput().getType(), from,
                                  op.getTo(), hw, nullptr)))
      continue;
    op.getInputMutable().assign(inner.getInput());
    op.setFromAttr(from);
    inner.erase();
    if (from == op.getTo()) {
      op.getResult().replaceAllUsesWith(op.getInput());
      op.erase();
    }
  }
}

void Propagator::writeLayouts() {
  for (Value value : pending)
    layouts[value] = replicated();
  pending.clear();
  // The function's ops and those of the loops in it.
  SmallVector<Block *> blocks{&func.getBody().front()};
  while (!blocks.empty()) {
    Block *block = blocks.pop_back_val();
    for (Operation &op : *block) {
      if (auto loop = dyn_cast<scf::ForOp>(op))
        blocks.push_back(loop.getBody());
      if (isa<RedistributeOp, func::ReturnOp>(op) || op.getNumResults() == 0)
        continue;
      if (!llvm::any_of(op.getResultTypes(), llvm::IsaPred<RankedTensorType>))
        continue;
      SmallVector<LayoutAttr> resultLayouts;
      for (Value result : op.getResults())
        resultLayouts.push_back(layouts.lookup(result));
      setResultLayouts(&op, resultLayouts);
    }
  }
}

LogicalResult Propagator::run() {
  Block &body = func.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()))
      continue;
    auto layout = func.getArgAttrOfType<LayoutAttr>(arg.getArgNumber(),
                                                    kLayoutAttrName);
    if (!layout) {
      // An argument only ever annotated one way takes that layout.
      std::optional<LayoutAttr> common;
      for (Operation *user : arg.getUsers()) {
        auto annotate = dyn_cast<AnnotateOp>(user);
        LayoutAttr wanted = annotate ? annotate.getLayout() : LayoutAttr();
        if (!common)
          common = wanted;
        else if (*common != wanted)
          common = LayoutAttr();
      }
      layout = common && *common ? *common : replicated();
      func.setArgAttr(arg.getArgNumber(), kLayoutAttrName, layout);
    }
    layouts[arg] = layout;
  }
  if (failed(visitBlock(body)))
    return failure();
  foldRedistributeChains();
  writeLayouts();
  return success();
}

/// The mesh a function is distributed over: the one its layouts name.
static FailureOr<MeshOp> findMesh(func::FuncOp func,
                                  SymbolTableCollection &symbols,
                                  bool &distributed) {
  SmallVector<LayoutAttr> seen;
  auto note = [&](Attribute attr) {
    if (auto layout = dyn_cast_or_null<LayoutAttr>(attr))
      seen.push_back(layout);
  };
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    note(func.getArgAttr(i, kLayoutAttrName));
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    note(func.getResultAttr(i, kLayoutAttrName));
  func.walk([&](Operation *op) {
    if (auto annotate = dyn_cast<AnnotateOp>(op))
      note(annotate.getLayout());
    if (auto redistribute = dyn_cast<RedistributeOp>(op))
      note(redistribute.getTo());
  });
  distributed = !seen.empty();
  if (!distributed)
    return failure();
  FlatSymbolRefAttr name = seen.front().getMesh();
  for (LayoutAttr layout : seen)
    if (layout.getMesh() != name)
      return func.emitError("layouts on several meshes (")
             << name << ", " << layout.getMesh()
             << ") in one function are not supported";
  if (MeshOp mesh = lookupMesh(func, name, /*diagnose=*/true, &symbols))
    return mesh;
  return failure();
}

} // namespace

LogicalResult dtensor::propagateLayouts(func::FuncOp func,
                                        const HardwareModel &hw,
                                        SymbolTableCollection &symbols) {
  if (func.isExternal())
    return success();
  // Local tensors at the function's boundary become global arguments
  // and results laid out as their from_local/to_local say.
  if (failed(globalizeLocalBoundaries(func)))
    return failure();
  bool distributed = false;
  FailureOr<MeshOp> mesh = findMesh(func, symbols, distributed);
  if (!distributed)
    return success();
  if (failed(mesh))
    return failure();
  if (!func.getBody().hasOneBlock())
    return func.emitError("only single-block functions can be propagated");
  if (failed(verifyLayoutAttrs(func)))
    return failure();
  return Propagator(func, *mesh, hw).run();
}

LogicalResult dtensor::propagateLayouts(func::FuncOp func,
                                        const HardwareModel &hw) {
  SymbolTableCollection symbols;
  return propagateLayouts(func, hw, symbols);
}

namespace {

struct PropagateLayoutsPass
    : dtensor::impl::PropagateLayoutsPassBase<PropagateLayoutsPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<HardwareModel> hw = getTargetHardware(getOperation());
    if (failed(hw))
      return signalPassFailure();
    SymbolTableCollection symbols;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(propagateLayouts(func, *hw, symbols)))
        return signalPassFailure();
  }
};

} // namespace
