//===- ClosedForms.cpp - exact shortcuts in the normalisations' backward --===//
//
// Two exact simplifications that keep the backward of a softmax,
// log-softmax, logsumexp or cross-entropy over a sharded dim local, as
// PyTorch's loss_parallel does (docs/autodiff.md, "Normalisations"):
//
// - Stabilising shifts (findStabilisingShifts). The numerically stable
//   forms subtract a row maximum m before exp: m + log(sum exp(x - m)),
//   (x - m) - log(sum exp(x - m)), exp(x - m) / sum exp(x - m). Their value
//   does not depend on m, so m needs no gradient; differentiating it
//   anyway gives reductions over the normalised dim (the tie count of the
//   max, sum_j of m's cotangents) that are zero in exact math and, on a
//   sharded dim, collectives. A max or min reduction is treated as a
//   constant where the function's results are proved not to depend on it:
//   every value reached from m is followed, and how it moves when m moves
//   by delta is derived op by op (still, shifted by k * delta, or scaled by
//   exp(k * delta)); the proof holds when nothing that moves reaches a
//   result.
//
// - One-hot sums (foldOneHotSums). The gradient of a target pick
//   (nll_loss: sum_j (j == t) ? logp[j] : 0) is one-hot along the picked
//   dim, and the normalisation's rule sums it over that dim. A sum over a
//   loop of a tensor that is zero but at one index t of that loop (a
//   select on the loop's linalg.index == t, t independent of the loop) is
//   the value at t: the sum is rewritten without the loop, reading the
//   one-hot tensor's operands instead of it. On a sharded dim the sum, a
//   collective, becomes local arithmetic on replicated values.
//
//===----------------------------------------------------------------------===//

#include "Autodiff.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#include <functional>
#include <optional>

using namespace mlir;
using namespace mlir::dtensor;
using namespace mlir::dtensor::autodiff;

//===----------------------------------------------------------------------===//
// Stabilising shifts
//===----------------------------------------------------------------------===//

namespace {

/// How a value moves when the shift m moves by delta: not at all, by
/// k * delta (a shift), or by the factor exp(k * delta) (a scale). These
/// are exact: the derivative of the value with respect to m is 0, k, or
/// k * value. Constants record whether they stay put under any shift
/// (+-inf: inf + c = inf) or any scale (0: 0 * c = 0).
struct Motion {
  enum Kind { Still, Shift, Scale };
  Kind kind = Still;
  int64_t k = 0;
  bool inf = false, zero = false;

  static Motion make(Kind kind, int64_t k) {
    Motion m;
    if (k != 0) {
      m.kind = kind;
      m.k = k;
    }
    return m;
  }
  bool isStill() const { return kind == Still; }
  /// Whether the value moves as `other` by `by`: a still value moves by 0,
  /// +-inf by any shift, 0 by any scale.
  bool movesAs(Kind other, int64_t by) const {
    if (kind != Still)
      return kind == other && k == by;
    return by == 0 || (other == Shift && inf) || (other == Scale && zero);
  }
  /// k of a value that moves as a shift (still: 0).
  std::optional<int64_t> shiftBy() const {
    if (kind == Scale)
      return std::nullopt;
    return k;
  }
  /// k of a value that moves as a scale (still: 0).
  std::optional<int64_t> scaleBy() const {
    if (kind == Shift)
      return std::nullopt;
    return k;
  }
};

/// A value that moves with the shift: how, and which element of the shift
/// moves each of its elements (a map from its dims to the shift's dims).
struct Tracked {
  Motion motion;
  AffineMap delta;
};

} // namespace

/// The motion of a value that moves as both `a` and `b` do (the sum of two
/// scaled values, a select, a max): none where they move differently.
static std::optional<Motion> common(Motion a, Motion b) {
  if (a.isStill() && b.isStill()) {
    Motion m;
    m.inf = a.inf && b.inf;
    m.zero = a.zero && b.zero;
    return m;
  }
  Motion moving = a.isStill() ? b : a;
  Motion other = a.isStill() ? a : b;
  if (!other.movesAs(moving.kind, moving.k))
    return std::nullopt;
  return Motion::make(moving.kind, moving.k);
}

/// A float constant's motion: still, with its inf/zero flags.
static Motion constantMotion(Attribute attr) {
  Motion m;
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(attr))
    attr = splat.getSplatValue<Attribute>();
  if (auto value = dyn_cast_or_null<FloatAttr>(attr)) {
    m.inf = value.getValue().isInfinity();
    m.zero = value.getValue().isZero();
  }
  return m;
}

/// The motion of a tensor that does not depend on the shift: still, with
/// the flags of the constant that fills it, if any.
static Motion untrackedMotion(Value v) {
  if (auto fill = v.getDefiningOp<linalg::FillOp>()) {
    Attribute value;
    if (matchPattern(fill.getInputs()[0], m_Constant(&value)))
      return constantMotion(value);
    return {};
  }
  Attribute value;
  if (matchPattern(v, m_Constant(&value)))
    return constantMotion(value);
  return {};
}

/// The motion of the result of the scalar (or elementwise) op `op` from its
/// operands' motions; none where the op's derivative in m is not one of
/// the forms Motion describes.
static std::optional<Motion> moveScalar(Operation *op, ArrayRef<Motion> in) {
  if (isa<arith::ExtFOp, arith::TruncFOp>(op))
    return in[0];
  if (llvm::all_of(in, [](const Motion &m) { return m.isStill(); }))
    return Motion();
  auto pair = [&]() { return std::make_pair(in[0], in[1]); };
  if (isa<arith::AddFOp, arith::SubFOp>(op)) {
    auto [a, b] = pair();
    bool sub = isa<arith::SubFOp>(op);
    if (a.shiftBy() && b.shiftBy())
      return Motion::make(Motion::Shift, sub ? *a.shiftBy() - *b.shiftBy()
                                             : *a.shiftBy() + *b.shiftBy());
    // Scaled values add as a scaled value where they scale alike.
    return common(a, b);
  }
  if (isa<arith::NegFOp>(op)) {
    if (in[0].kind == Motion::Shift)
      return Motion::make(Motion::Shift, -in[0].k);
    return in[0];
  }
  if (isa<arith::MulFOp, arith::DivFOp>(op)) {
    auto [a, b] = pair();
    if (a.zero || (isa<arith::MulFOp>(op) && b.zero)) {
      Motion zero;
      zero.zero = true;
      return zero;
    }
    if (!a.scaleBy() || !b.scaleBy())
      return std::nullopt;
    int64_t k = isa<arith::MulFOp>(op) ? *a.scaleBy() + *b.scaleBy()
                                       : *a.scaleBy() - *b.scaleBy();
    return Motion::make(Motion::Scale, k);
  }
  if (isa<math::ExpOp>(op)) {
    if (!in[0].shiftBy())
      return std::nullopt;
    return Motion::make(Motion::Scale, *in[0].shiftBy());
  }
  if (isa<math::LogOp>(op)) {
    if (!in[0].scaleBy())
      return std::nullopt;
    return Motion::make(Motion::Shift, *in[0].scaleBy());
  }
  // An extreme of two values that shift (or scale, by a positive factor)
  // alike shifts (scales) as they do.
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
          arith::MinNumFOp>(op))
    return common(in[0], in[1]);
  if (isa<arith::SelectOp>(op)) {
    if (!in[0].isStill())
      return std::nullopt;
    return common(in[1], in[2]);
  }
  return std::nullopt;
}

static bool isExtremum(Operation *op) {
  return isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
             arith::MinNumFOp>(op);
}

/// Whether `v`, computed in `body`, reads `arg` (directly or through the
/// body's ops).
static bool readsArgument(Value v, BlockArgument arg, Block *body) {
  SmallVector<Value> worklist{v};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value x = worklist.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (x == arg)
      return true;
    if (Operation *def = x.getDefiningOp(); def && def->getBlock() == body)
      llvm::append_range(worklist, def->getOperands());
  }
  return false;
}

/// The motion of a linalg op's result: its operands' motions (which must
/// move each loop iteration by one element of the shift, the same for all
/// of them), followed through the body, the combiner of a reduction, and
/// its result map. Fails where the result moves in a way Motion does not
/// describe.
static FailureOr<Tracked> moveLinalg(linalg::LinalgOp op,
                                     const DenseMap<Value, Tracked> &tracked) {
  if (op->getNumResults() != 1 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics())
    return failure();
  AffineMap loopDelta;
  DenseMap<Value, Motion> scalars;
  for (OpOperand &operand : op->getOpOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(&operand);
    auto it = tracked.find(operand.get());
    if (it == tracked.end()) {
      scalars[arg] = untrackedMotion(operand.get());
      continue;
    }
    AffineMap delta =
        it->second.delta.compose(op.getMatchingIndexingMap(&operand));
    if (loopDelta && delta != loopDelta)
      return failure();
    loopDelta = delta;
    scalars[arg] = it->second.motion;
  }
  Block *body = op.getBlock();
  for (Operation &inner : body->without_terminator()) {
    SmallVector<Motion> in;
    for (Value operand : inner.getOperands())
      in.push_back(scalars.lookup(operand));
    bool moving =
        llvm::any_of(in, [](const Motion &m) { return !m.isStill(); });
    if (inner.getNumResults() != 1 || inner.getNumRegions()) {
      if (moving)
        return failure();
      continue;
    }
    if (Attribute value; matchPattern(&inner, m_Constant(&value))) {
      scalars[inner.getResult(0)] = constantMotion(value);
      continue;
    }
    std::optional<Motion> m = moveScalar(&inner, in);
    if (!m) {
      if (moving)
        return failure();
      m = Motion();
    }
    scalars[inner.getResult(0)] = *m;
  }
  Value yielded = body->getTerminator()->getOperand(0);
  Motion result = scalars.lookup(yielded);
  if (op.getNumReductionLoops() > 0) {
    // y = init (+|max|min) g: a sum of values that scale alike scales as
    // they do (from a zero init), an extreme of values that shift (or
    // scale) alike shifts (scales) as they do (from a +-inf init).
    BlockArgument initArg =
        op.getMatchingBlockArgument(op.getDpsInitOperand(0));
    Operation *combiner = yielded.getDefiningOp();
    Motion init = scalars.lookup(initArg);
    if (!combiner || combiner->getBlock() != body ||
        combiner->getNumOperands() != 2 ||
        (combiner->getOperand(0) != initArg &&
         combiner->getOperand(1) != initArg)) {
      if (!result.isStill())
        return failure();
    } else {
      Value g = combiner->getOperand(0) == initArg ? combiner->getOperand(1)
                                                   : combiner->getOperand(0);
      Motion summand = scalars.lookup(g);
      if (summand.isStill() && init.isStill()) {
        result = Motion();
      } else if (readsArgument(g, initArg, body)) {
        return failure();
      } else if (isa<arith::AddFOp>(combiner) &&
                 summand.kind == Motion::Scale &&
                 init.movesAs(Motion::Scale, summand.k)) {
        result = Motion::make(Motion::Scale, summand.k);
      } else if (isExtremum(combiner) && !summand.isStill() &&
                 (init.movesAs(summand.kind, summand.k) || init.inf)) {
        result = Motion::make(summand.kind, summand.k);
      } else {
        return failure();
      }
    }
  }
  if (result.isStill())
    return Tracked{result, AffineMap()};
  // Each element of the result must move by one element of the shift: the
  // loops that pick it are the result's.
  AffineMap resultMap =
      op.getIndexingMapMatchingResult(cast<OpResult>(op->getResult(0)));
  SmallVector<AffineExpr> exprs;
  for (AffineExpr expr : loopDelta.getResults()) {
    if (isa<AffineConstantExpr>(expr)) {
      exprs.push_back(expr);
      continue;
    }
    std::optional<unsigned> position = resultMap.getResultPosition(expr);
    if (!isa<AffineDimExpr>(expr) || !position)
      return failure();
    exprs.push_back(getAffineDimExpr(*position, op.getContext()));
  }
  return Tracked{result, AffineMap::get(resultMap.getNumResults(), 0, exprs,
                                        op.getContext())};
}

/// The map from a reshape's result dims to its source dims, where each
/// group has at most one dim of size above 1 (unit dims added or dropped):
/// the source index is then a function of the result index.
static FailureOr<AffineMap>
getReshapeSourceIndex(ArrayRef<ReassociationIndices> groups,
                      ArrayRef<int64_t> srcShape, ArrayRef<int64_t> resultShape,
                      bool expand, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs(srcShape.size(), getAffineConstantExpr(0, ctx));
  for (auto [g, group] : llvm::enumerate(groups)) {
    if (expand) {
      // Source dim g became the result dims `group`.
      SmallVector<int64_t> wide;
      for (int64_t d : group)
        if (resultShape[d] != 1)
          wide.push_back(d);
      if (wide.size() > 1)
        return failure();
      if (!wide.empty())
        exprs[g] = getAffineDimExpr(wide.front(), ctx);
    } else {
      // Source dims `group` became result dim g.
      SmallVector<int64_t> wide;
      for (int64_t d : group)
        if (srcShape[d] != 1)
          wide.push_back(d);
      if (wide.size() > 1)
        return failure();
      if (!wide.empty())
        exprs[wide.front()] = getAffineDimExpr(g, ctx);
    }
  }
  return AffineMap::get(resultShape.size(), 0, exprs, ctx);
}

/// How `op`'s result moves, from its operands' (some of which move).
static FailureOr<Tracked> moveOp(Operation *op,
                                 const DenseMap<Value, Tracked> &tracked) {
  MLIRContext *ctx = op->getContext();
  auto lookup = [&](Value v) { return tracked.find(v); };
  if (isa<AnnotateOp, RedistributeOp>(op) && op->getNumOperands() == 1)
    return lookup(op->getOperand(0))->second;
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    FailureOr<AffineMap> source = getReshapeSourceIndex(
        expand.getReassociationIndices(), expand.getSrcType().getShape(),
        expand.getResultType().getShape(), /*expand=*/true, ctx);
    if (failed(source))
      return failure();
    Tracked t = lookup(expand.getSrc())->second;
    return Tracked{t.motion, t.delta.compose(*source)};
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    FailureOr<AffineMap> source = getReshapeSourceIndex(
        collapse.getReassociationIndices(), collapse.getSrcType().getShape(),
        collapse.getResultType().getShape(), /*expand=*/false, ctx);
    if (failed(source))
      return failure();
    Tracked t = lookup(collapse.getSrc())->second;
    return Tracked{t.motion, t.delta.compose(*source)};
  }
  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
    // softmax(x + c) = softmax(x) for c constant along its dim.
    auto it = lookup(softmax.getInput());
    if (it == tracked.end())
      return failure();
    Tracked t = it->second;
    if (t.motion.kind != Motion::Shift ||
        t.delta.isFunctionOfDim(softmax.getDimension()) ||
        lookup(softmax.getOutput()) != tracked.end())
      return failure();
    return Tracked{Motion(), AffineMap()};
  }
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return moveLinalg(linalgOp, tracked);
  if (isElementwiseOnTensors(op)) {
    SmallVector<Motion> in;
    AffineMap delta;
    for (Value operand : op->getOperands()) {
      auto it = lookup(operand);
      if (it == tracked.end()) {
        in.push_back(untrackedMotion(operand));
        continue;
      }
      if (delta && delta != it->second.delta)
        return failure();
      delta = it->second.delta;
      in.push_back(it->second.motion);
    }
    std::optional<Motion> m = moveScalar(op, in);
    if (!m)
      return failure();
    return Tracked{*m, m->isStill() ? AffineMap() : delta};
  }
  return failure();
}

/// Whether the results of the function of `block` do not depend on
/// `shift`: everything reached from it is followed until it stops moving.
static bool isStabilisingShift(Value shift, Block &block) {
  MLIRContext *ctx = shift.getContext();
  auto type = cast<RankedTensorType>(shift.getType());
  DenseMap<Value, Tracked> tracked;
  tracked[shift] = {Motion::make(Motion::Shift, 1),
                    AffineMap::getMultiDimIdentityMap(type.getRank(), ctx)};
  for (Operation &op : llvm::make_range(
           std::next(shift.getDefiningOp()->getIterator()), block.end())) {
    bool reads = llvm::any_of(op.getOperands(),
                              [&](Value v) { return tracked.count(v); });
    if (op.getNumRegions()) {
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(op.getRegions(), captured);
      if (llvm::any_of(captured, [&](Value v) { return tracked.count(v); }))
        return false; // Read inside a region, not as an operand.
    }
    if (!reads)
      continue;
    // A result (or any other use of the terminator) depends on it.
    if (op.hasTrait<OpTrait::IsTerminator>() || op.getNumResults() != 1)
      return false;
    FailureOr<Tracked> moved = moveOp(&op, tracked);
    if (failed(moved))
      return false;
    if (!moved->motion.isStill())
      tracked[op.getResult(0)] = *moved;
  }
  return true;
}

DenseSet<Value> autodiff::findStabilisingShifts(Block &block) {
  DenseSet<Value> shifts;
  for (Operation &op : block.without_terminator()) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
    if (!linalgOp || op.getNumResults() != 1 ||
        linalgOp.getNumReductionLoops() == 0 ||
        !isa<RankedTensorType>(op.getResult(0).getType()))
      continue;
    Operation *combiner =
        linalgOp.getBlock()->getTerminator()->getOperand(0).getDefiningOp();
    if (!combiner || !isExtremum(combiner))
      continue;
    if (isStabilisingShift(op.getResult(0), block))
      shifts.insert(op.getResult(0));
  }
  return shifts;
}

//===----------------------------------------------------------------------===//
// One-hot sums
//===----------------------------------------------------------------------===//

/// Whether `v`, computed in `op`'s body, depends on loop `loop`: reads its
/// linalg.index or an operand indexed by it.
static bool dependsOnLoop(Value v, linalg::LinalgOp op, unsigned loop) {
  Block *body = op.getBlock();
  SmallVector<Value> worklist{v};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value x = worklist.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      if (arg.getOwner() == body &&
          op.getMatchingIndexingMap(op.getMatchingOpOperand(arg))
              .isFunctionOfDim(loop))
        return true;
      continue;
    }
    Operation *def = x.getDefiningOp();
    if (def->getBlock() != body)
      continue;
    if (auto index = dyn_cast<linalg::IndexOp>(def))
      if (index.getDim() == loop)
        return true;
    llvm::append_range(worklist, def->getOperands());
  }
  return false;
}

/// Whether `v`, computed in `op`'s body, is zero where `s` is, whatever
/// the other values it reads (which must not depend on loop `loop`):
/// products, quotients, negations, conversions, sums and selects of `s`.
static bool vanishesWith(Value v, Value s, linalg::LinalgOp op, unsigned loop) {
  if (v == s)
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != op.getBlock())
    return false;
  auto free = [&](Value x) { return !dependsOnLoop(x, op, loop); };
  auto vanishes = [&](Value x) { return vanishesWith(x, s, op, loop); };
  if (isa<arith::MulFOp>(def))
    return (vanishes(def->getOperand(0)) && free(def->getOperand(1))) ||
           (vanishes(def->getOperand(1)) && free(def->getOperand(0)));
  if (isa<arith::DivFOp>(def))
    return vanishes(def->getOperand(0)) && free(def->getOperand(1));
  if (isa<arith::NegFOp, arith::ExtFOp, arith::TruncFOp>(def))
    return vanishes(def->getOperand(0));
  if (isa<arith::AddFOp, arith::SubFOp>(def))
    return vanishes(def->getOperand(0)) && vanishes(def->getOperand(1));
  if (auto select = dyn_cast<arith::SelectOp>(def))
    return free(select.getCondition()) && vanishes(select.getTrueValue()) &&
           vanishes(select.getFalseValue());
  return false;
}

/// Whether `v` is loop `loop`'s linalg.index, possibly cast.
static bool isLoopIndex(Value v, unsigned loop) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto index = dyn_cast<linalg::IndexOp>(def))
      return index.getDim() == loop;
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
             arith::ExtUIOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

namespace {
/// `select (index(loop) == position) ? value : 0` in a body.
struct OneHot {
  arith::SelectOp select;
  Value position, value;
};
} // namespace

static std::optional<OneHot> matchOneHot(arith::SelectOp select,
                                         linalg::LinalgOp op, unsigned loop) {
  auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!cmp || (cmp.getPredicate() != arith::CmpIPredicate::eq &&
               cmp.getPredicate() != arith::CmpIPredicate::ne))
    return std::nullopt;
  Value position;
  if (isLoopIndex(cmp.getLhs(), loop))
    position = cmp.getRhs();
  else if (isLoopIndex(cmp.getRhs(), loop))
    position = cmp.getLhs();
  else
    return std::nullopt;
  if (cmp.getLhs().getType() != position.getType() ||
      dependsOnLoop(position, op, loop))
    return std::nullopt;
  bool eq = cmp.getPredicate() == arith::CmpIPredicate::eq;
  Value value = eq ? select.getTrueValue() : select.getFalseValue();
  Value other = eq ? select.getFalseValue() : select.getTrueValue();
  if (!matchPattern(other, m_AnyZeroFloat()) || dependsOnLoop(value, op, loop))
    return std::nullopt;
  return OneHot{select, position, value};
}

/// Rewrites `sum` (y = init + sum_r h(p[.., r, ..], ...)) where p, one of
/// its inputs, is a parallel generic that is zero along r but at one
/// index t, and h(0) = 0: y = init + h(p at t), read from p's own
/// operands, with no loop r (0 where t is outside the loop).
static bool foldOneHotSum(linalg::GenericOp sum, OpBuilder &b) {
  auto op = cast<linalg::LinalgOp>(sum.getOperation());
  if (sum->getNumResults() != 1 || sum.getNumDpsInits() != 1 ||
      !sum.hasPureTensorSemantics() || sum.getNumReductionLoops() == 0)
    return false;
  Block *body = sum.getBody();
  BlockArgument initArg =
      sum.getMatchingBlockArgument(sum.getDpsInitOperand(0));
  auto combiner =
      body->getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!combiner || combiner->getBlock() != body)
    return false;
  Value g =
      combiner.getLhs() == initArg ? combiner.getRhs() : combiner.getLhs();
  if ((combiner.getLhs() != initArg && combiner.getRhs() != initArg) ||
      readsArgument(g, initArg, body))
    return false;

  unsigned numLoops = sum.getNumLoops();
  SmallVector<utils::IteratorType> iterators = sum.getIteratorTypesArray();
  for (OpOperand *input : sum.getDpsInputOperands()) {
    auto producer = input->get().getDefiningOp<linalg::GenericOp>();
    AffineMap map = sum.getMatchingIndexingMap(input);
    if (!producer || producer->getNumResults() != 1 ||
        producer.getNumDpsInits() != 1 || !producer.hasPureTensorSemantics() ||
        producer.getNumReductionLoops() != 0 ||
        !map.isProjectedPermutation(/*allowZeroInResults=*/false))
      continue;
    AffineMap producerMap = producer.getIndexingMapMatchingResult(
        cast<OpResult>(producer->getResult(0)));
    if (!producerMap.isPermutation())
      continue;
    BlockArgument pArg = sum.getMatchingBlockArgument(input);
    for (unsigned j = 0; j < map.getNumResults(); ++j) {
      unsigned r = map.getDimPosition(j);
      if (iterators[r] != utils::IteratorType::reduction)
        continue;
      // Only p is indexed by r, and the body does not read r's index.
      bool alone = llvm::all_of(sum->getOpOperands(), [&](OpOperand &other) {
        return &other == input ||
               !sum.getMatchingIndexingMap(&other).isFunctionOfDim(r);
      });
      bool indexed = false;
      body->walk(
          [&](linalg::IndexOp index) { indexed |= index.getDim() == r; });
      if (!alone || indexed || !vanishesWith(g, pArg, op, r))
        continue;
      // p's loop along r, and its one-hot select.
      auto pOp = cast<linalg::LinalgOp>(producer.getOperation());
      unsigned pr = producerMap.getDimPosition(j);
      int64_t extent = producer.getStaticLoopRanges()[pr];
      if (ShapedType::isDynamic(extent))
        continue;
      Value yielded = producer.getBody()->getTerminator()->getOperand(0);
      std::optional<OneHot> hot;
      producer.getBody()->walk([&](arith::SelectOp select) {
        if (hot)
          return;
        std::optional<OneHot> candidate = matchOneHot(select, pOp, pr);
        if (candidate && vanishesWith(yielded, select, pOp, pr))
          hot = candidate;
      });
      if (!hot)
        continue;

      // The loops of the rewritten sum: the sum's without r. p's loop q is
      // the sum's loop along the same dim of p.
      MLIRContext *ctx = sum.getContext();
      auto newLoop = [&](unsigned d) { return d < r ? d : d - 1; };
      llvm::SmallBitVector dropped(numLoops);
      dropped.set(r);
      unsigned numPLoops = producer.getNumLoops();
      SmallVector<int64_t> pLoopToSum(numPLoops);
      SmallVector<AffineExpr> pLoops;
      for (unsigned q = 0; q < numPLoops; ++q) {
        unsigned dim = *producerMap.getResultPosition(getAffineDimExpr(q, ctx));
        pLoopToSum[q] = map.getDimPosition(dim);
        pLoops.push_back(q == pr
                             ? getAffineConstantExpr(0, ctx)
                             : getAffineDimExpr(newLoop(pLoopToSum[q]), ctx));
      }
      AffineMap pLoopMap = AffineMap::get(numLoops - 1, 0, pLoops, ctx);

      // p's operands the value at t reads.
      llvm::SetVector<BlockArgument> pArgs;
      {
        SmallVector<Value> worklist{hot->position, yielded};
        DenseSet<Value> seen;
        while (!worklist.empty()) {
          Value x = worklist.pop_back_val();
          if (!seen.insert(x).second)
            continue;
          if (x == hot->select.getResult())
            x = hot->value;
          if (auto arg = dyn_cast<BlockArgument>(x)) {
            if (arg.getOwner() == producer.getBody())
              pArgs.insert(arg);
            continue;
          }
          if (Operation *def = x.getDefiningOp();
              def->getBlock() == producer.getBody())
            llvm::append_range(worklist, def->getOperands());
        }
      }

      SmallVector<Value> inputs;
      SmallVector<AffineMap> maps;
      SmallVector<BlockArgument> sumArgs;
      for (OpOperand *other : sum.getDpsInputOperands()) {
        if (other == input)
          continue;
        inputs.push_back(other->get());
        maps.push_back(
            compressDims(sum.getMatchingIndexingMap(other), dropped));
        sumArgs.push_back(sum.getMatchingBlockArgument(other));
      }
      for (BlockArgument arg : pArgs) {
        OpOperand *operand = producer.getMatchingOpOperand(arg);
        inputs.push_back(operand->get());
        maps.push_back(
            producer.getMatchingIndexingMap(operand).compose(pLoopMap));
      }
      maps.push_back(compressDims(
          sum.getMatchingIndexingMap(sum.getDpsInitOperand(0)), dropped));
      SmallVector<utils::IteratorType> newIterators;
      for (unsigned d = 0; d < numLoops; ++d)
        if (d != r)
          newIterators.push_back(iterators[d]);

      b.setInsertionPoint(sum);
      Location loc = sum.getLoc();
      auto folded = linalg::GenericOp::create(
          b, loc, sum->getResultTypes(), inputs,
          ValueRange{sum.getDpsInitOperand(0)->get()}, maps, newIterators,
          [&](OpBuilder &nb, Location nloc, ValueRange args) {
            // The value at t, cloned from p's body.
            IRMapping fromP;
            unsigned numSumArgs = sumArgs.size();
            for (auto [i, arg] : llvm::enumerate(pArgs))
              fromP.map(arg, args[numSumArgs + i]);
            std::function<Value(Value)> clone = [&](Value x) -> Value {
              if (Value mapped = fromP.lookupOrNull(x))
                return mapped;
              Operation *def = x.getDefiningOp();
              if (!def || def->getBlock() != producer.getBody())
                return x;
              if (auto index = dyn_cast<linalg::IndexOp>(def)) {
                Value v = linalg::IndexOp::create(
                    nb, nloc, newLoop(pLoopToSum[index.getDim()]));
                fromP.map(x, v);
                return v;
              }
              for (Value operand : def->getOperands())
                clone(operand);
              return nb.clone(*def, fromP)
                  ->getResult(cast<OpResult>(x).getResultNumber());
            };
            fromP.map(hot->select.getResult(), clone(hot->value));
            Value position = clone(hot->position);
            Value atT = clone(yielded);
            Type indexType = position.getType();
            Value lower = arith::ConstantOp::create(
                nb, nloc, nb.getIntegerAttr(indexType, 0));
            Value upper = arith::ConstantOp::create(
                nb, nloc, nb.getIntegerAttr(indexType, extent));
            Value above = arith::CmpIOp::create(
                nb, nloc, arith::CmpIPredicate::sge, position, lower);
            Value below = arith::CmpIOp::create(
                nb, nloc, arith::CmpIPredicate::slt, position, upper);
            Value inside = arith::AndIOp::create(nb, nloc, above, below);
            Value p = arith::SelectOp::create(
                nb, nloc, inside, atT,
                floatConstant(nb, nloc, atT.getType(), 0.0));
            // The sum's body on it.
            IRMapping fromSum;
            fromSum.map(pArg, p);
            for (auto [i, arg] : llvm::enumerate(sumArgs))
              fromSum.map(arg, args[i]);
            fromSum.map(initArg, args.back());
            for (Operation &nested : body->without_terminator()) {
              if (auto index = dyn_cast<linalg::IndexOp>(nested)) {
                fromSum.map(
                    index.getResult(),
                    linalg::IndexOp::create(nb, nloc, newLoop(index.getDim())));
                continue;
              }
              nb.clone(nested, fromSum);
            }
            linalg::YieldOp::create(
                nb, nloc,
                fromSum.lookupOrDefault(body->getTerminator()->getOperand(0)));
          });
      sum->getResult(0).replaceAllUsesWith(folded->getResult(0));
      sum.erase();
      if (producer->use_empty())
        producer.erase();
      return true;
    }
  }
  return false;
}

void autodiff::foldOneHotSums(Block &block, Operation *after) {
  SmallVector<linalg::GenericOp> sums;
  Block::iterator begin =
      after ? std::next(after->getIterator()) : block.begin();
  for (Operation &op : llvm::make_range(begin, block.end()))
    if (auto generic = dyn_cast<linalg::GenericOp>(&op))
      sums.push_back(generic);
  OpBuilder b(block.getParentOp()->getContext());
  for (linalg::GenericOp sum : sums)
    (void)foldOneHotSum(sum, b);
}
