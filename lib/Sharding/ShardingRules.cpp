//===- ShardingRules.cpp - how ops may be sharded -------------------------===//

#include "dtensor/Sharding/ShardingRules.h"

#include "dtensor/Sharding/Layout.h"
#include "dtensor/Support/ChunkMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::dtensor;

static SmallVector<int64_t> identityDims(int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(0, rank));
}

/// Starts a spec with `numLoops` parallel loops and room for `op`'s operands.
static ShardingSpec makeSpec(Operation *op, int64_t numLoops) {
  ShardingSpec spec;
  spec.loops.resize(numLoops);
  unsigned n = op->getNumOperands();
  spec.operandDims.resize(n);
  spec.operandIsTensor.assign(n, false);
  spec.operandIsInit.assign(n, false);
  spec.operandIsLinear.assign(n, false);
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    spec.operandIsTensor[i] = isa<RankedTensorType>(operand.getType());
  return spec;
}

/// The reduction a linalg body applies to output `init`, if it is one of the
/// known combiners `yield op(x, init)`.
static std::optional<ReduceKind> getCombiner(linalg::LinalgOp op,
                                             unsigned initIndex) {
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  Value yielded = yield.getOperand(initIndex);
  Operation *combiner = yielded.getDefiningOp();
  if (!combiner || combiner->getNumOperands() != 2)
    return std::nullopt;
  Value init = op.getMatchingBlockArgument(op.getDpsInitOperand(initIndex));
  if (combiner->getOperand(0) != init && combiner->getOperand(1) != init)
    return std::nullopt;
  if (isa<arith::AddFOp, arith::AddIOp>(combiner))
    return ReduceKind::Sum;
  if (isa<arith::MulFOp, arith::MulIOp>(combiner))
    return ReduceKind::Product;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(combiner))
    return ReduceKind::Max;
  if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(combiner))
    return ReduceKind::Min;
  return std::nullopt;
}

namespace {
/// How a value of a linalg body depends on one input `x`: not at all,
/// linearly (f(x + y) = f(x) + f(y), f(a x) = a f(x): x * c, x / c, -x,
/// sums of such; not x + c or x * x), or otherwise.
enum class Dependence { None, Linear, Other };

/// How a value of a linalg body is built from the op's tensor inputs by max
/// or min alone: not from them at all, as one input itself (`Leaf`), as a
/// max (min) of inputs and of values of the first kind, or otherwise.
enum class Selection { None, Leaf, Max, Min, Other };
} // namespace

/// Classifies the values of `op`'s body forward, in order. `classifyArg`
/// gives the class of each block argument; values defined outside the body
/// are `none` when they are scalars (rank-invariant in a global-view
/// program) and `other` otherwise; `classifyOp` gives the class of the
/// results of a pure, region-free body op from its operands' classes.
/// Returns the classes of the yielded values.
template <typename Class>
static SmallVector<Class> classifyBody(
    linalg::LinalgOp op, Class none, Class other,
    function_ref<Class(BlockArgument)> classifyArg,
    function_ref<Class(Operation *, ArrayRef<Class>)> classifyOp) {
  Block *body = op.getBlock();
  DenseMap<Value, Class> classes;
  auto classOf = [&](Value v) -> Class {
    if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == body)
      return classifyArg(arg);
    auto it = classes.find(v);
    if (it != classes.end())
      return it->second;
    // Defined outside the body.
    return isa<ShapedType>(v.getType()) ? other : none;
  };
  for (Operation &inner : body->without_terminator()) {
    SmallVector<Class> operands;
    for (Value operand : inner.getOperands())
      operands.push_back(classOf(operand));
    Class result = other;
    if (inner.getNumRegions() == 0 && isMemoryEffectFree(&inner)) {
      if (llvm::all_of(operands, [&](Class c) { return c == none; }))
        result = none;
      else
        result = classifyOp(&inner, operands);
    }
    for (Value v : inner.getResults())
      classes[v] = result;
  }
  SmallVector<Class> yielded;
  for (Value v : body->getTerminator()->getOperands())
    yielded.push_back(classOf(v));
  return yielded;
}

/// True if every result of `op` is linear in its input `inputIndex` (the
/// other inputs held fixed), read off the body.
static bool isLinearInInput(linalg::LinalgOp op, unsigned inputIndex) {
  using D = Dependence;
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<D> yielded = classifyBody<D>(
      op, D::None, D::Other,
      [&](BlockArgument arg) {
        if (arg.getArgNumber() == inputIndex)
          return D::Linear;
        // Other inputs are held fixed; the inits' values are not known.
        return arg.getArgNumber() < numInputs ? D::None : D::Other;
      },
      [](Operation *inner, ArrayRef<D> args) {
        auto is = [&](ArrayRef<D> expected) {
          return args == expected;
        };
        if (isa<arith::MulFOp, arith::MulIOp>(inner) &&
            (is({D::Linear, D::None}) || is({D::None, D::Linear})))
          return D::Linear;
        if (isa<arith::DivFOp>(inner) && is({D::Linear, D::None}))
          return D::Linear;
        if (isa<arith::NegFOp>(inner) && is({D::Linear}))
          return D::Linear;
        if (isa<arith::AddFOp, arith::SubFOp, arith::AddIOp, arith::SubIOp>(
                inner) &&
            is({D::Linear, D::Linear}))
          return D::Linear;
        return D::Other;
      });
  return !yielded.empty() &&
         llvm::all_of(yielded, [](D d) { return d == D::Linear; });
}

/// The reduction every result of `op` applies to its tensor inputs and to
/// replicated values (max or min), if there is one.
static std::optional<ReduceKind> getSelection(linalg::LinalgOp op) {
  using S = Selection;
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<S> yielded = classifyBody<S>(
      op, S::None, S::Other,
      [&](BlockArgument arg) {
        if (arg.getArgNumber() >= numInputs)
          return S::Other;
        Value input = op.getDpsInputOperand(arg.getArgNumber())->get();
        return isa<RankedTensorType>(input.getType()) ? S::Leaf : S::None;
      },
      [](Operation *inner, ArrayRef<S> args) {
        S kind = S::Other;
        if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(inner))
          kind = S::Max;
        else if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(
                     inner))
          kind = S::Min;
        if (kind == S::Other ||
            !llvm::all_of(args, [&](S arg) {
              return arg == S::None || arg == S::Leaf || arg == kind;
            }))
          return S::Other;
        return kind;
      });
  if (yielded.empty())
    return std::nullopt;
  if (llvm::all_of(yielded, [](S s) { return s == S::Max; }))
    return ReduceKind::Max;
  if (llvm::all_of(yielded, [](S s) { return s == S::Min; }))
    return ReduceKind::Min;
  return std::nullopt;
}

/// Linearity of a linalg op in its inputs, read off its body.
static void setLinearity(linalg::LinalgOp op, ShardingSpec &spec) {
  if (linalg::isaContractionOpInterface(op)) {
    for (OpOperand *input : op.getDpsInputOperands())
      spec.operandIsLinear[input->getOperandNumber()] = true;
    return;
  }
  for (OpOperand *input : op.getDpsInputOperands())
    if (isa<RankedTensorType>(input->get().getType()) &&
        isLinearInInput(op, input->getOperandNumber()))
      spec.operandIsLinear[input->getOperandNumber()] = true;
  spec.selects = getSelection(op);
  // A sum of inputs: x + y, x - y.
  Block *body = op.getBlock();
  if (op.getNumDpsInits() != 1 || body->getOperations().size() != 2)
    return;
  Operation *inner = body->getTerminator()->getOperand(0).getDefiningOp();
  if (!inner || inner->getBlock() != body ||
      !isa<arith::AddFOp, arith::SubFOp, arith::AddIOp, arith::SubIOp>(inner))
    return;
  spec.isAdditive = llvm::all_of(inner->getOperands(), [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == body &&
           arg.getArgNumber() < op.getNumDpsInputs() &&
           isa<RankedTensorType>(
               op.getDpsInputOperand(arg.getArgNumber())->get().getType());
  });
}

static FailureOr<ShardingSpec> getLinalgSpec(linalg::LinalgOp op,
                                             std::string *why) {
  if (!op.hasPureTensorSemantics()) {
    *why = "linalg op on buffers";
    return failure();
  }
  ShardingSpec spec = makeSpec(op, op.getNumLoops());
  // Reductions are splittable only with a known combiner.
  std::optional<ReduceKind> combiner;
  bool combinerKnown = op.getNumDpsInits() > 0;
  for (unsigned i = 0; i < op.getNumDpsInits(); ++i) {
    std::optional<ReduceKind> kind = getCombiner(op, i);
    if (!kind || (combiner && *combiner != *kind))
      combinerKnown = false;
    combiner = kind;
  }
  for (auto [loop, type] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (type == utils::IteratorType::reduction) {
      spec.loops[loop].kind = combinerKnown ? ShardingLoop::Kind::Reduction
                                            : ShardingLoop::Kind::Opaque;
      if (combinerKnown)
        spec.loops[loop].combiner = *combiner;
    }
  }
  // Operand dims from the indexing maps; loops used in compound index
  // expressions (convolutions, shifted windows) cannot be split.
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned index = operand.getOperandNumber();
    if (!spec.operandIsTensor[index])
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    SmallVector<int64_t> dims;
    for (AffineExpr expr : map.getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
        dims.push_back(dim.getPosition());
        continue;
      }
      dims.push_back(-1);
      expr.walk([&](AffineExpr sub) {
        if (auto dim = dyn_cast<AffineDimExpr>(sub))
          spec.loops[dim.getPosition()].kind = ShardingLoop::Kind::Opaque;
      });
    }
    spec.operandDims[index] = dims;
    spec.operandIsInit[index] = op.isDpsInit(&operand);
  }
  for (OpOperand &init : op.getDpsInitsMutable())
    spec.resultDims.push_back(spec.operandDims[init.getOperandNumber()]);
  setLinearity(op, spec);
  if (auto fill = dyn_cast<linalg::FillOp>(op.getOperation()))
    spec.isCreation = matchPattern(fill.value(), m_Constant());
  return spec;
}

/// Elementwise ops on same-shaped tensors (arith, math).
static FailureOr<ShardingSpec> getElementwiseSpec(Operation *op,
                                                  std::string *why) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type) {
    *why = "elementwise op without a ranked tensor result";
    return failure();
  }
  for (Value operand : op->getOperands()) {
    auto operandType = dyn_cast<RankedTensorType>(operand.getType());
    if (!operandType || operandType.getShape() != type.getShape()) {
      *why = "elementwise op mixing tensors of different shapes or scalars";
      return failure();
    }
  }
  ShardingSpec spec = makeSpec(op, type.getRank());
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    spec.operandDims[i] = identityDims(type.getRank());
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    spec.resultDims.push_back(identityDims(type.getRank()));
  if (isa<arith::AddFOp, arith::SubFOp, arith::AddIOp, arith::SubIOp>(op))
    spec.isAdditive = true;
  else if (isa<arith::MulFOp, arith::MulIOp>(op))
    spec.operandIsLinear.assign(op->getNumOperands(), true);
  else if (isa<arith::DivFOp, arith::NegFOp>(op))
    spec.operandIsLinear[0] = true;
  else if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(op))
    spec.selects = ReduceKind::Max;
  else if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(op))
    spec.selects = ReduceKind::Min;
  return spec;
}

/// Reshapes: in each reassociation group the first non-unit dim carries the
/// sharding; the other dims of the group must stay whole. A carrier with
/// whole non-unit dims inside it in its group splits only evenly (DTensor's
/// view rules: the leftmost dim of a flatten, the first dim of a split,
/// must divide by the mesh); a carrier alone in its group but for unit
/// dims is the same dim on both sides and splits any way.
static ShardingSpec getReshapeSpec(Operation *op, RankedTensorType collapsed,
                                   RankedTensorType expanded,
                                   ArrayRef<ReassociationIndices> groups,
                                   bool expanding) {
  // One loop per expanded dim.
  ShardingSpec spec = makeSpec(op, expanded.getRank());
  SmallVector<int64_t> collapsedDims(collapsed.getRank(), -1);
  for (auto [groupIndex, group] : llvm::enumerate(groups)) {
    std::optional<int64_t> carrier;
    bool othersWhole = false;
    for (int64_t dim : group) {
      if (!carrier && expanded.getDimSize(dim) != 1) {
        carrier = dim;
        continue;
      }
      othersWhole |= expanded.getDimSize(dim) != 1;
      spec.loops[dim].kind = ShardingLoop::Kind::Opaque;
    }
    if (carrier)
      spec.loops[*carrier].evenOnly = othersWhole;
    collapsedDims[groupIndex] = carrier ? *carrier : -1;
  }
  SmallVector<int64_t> expandedDims = identityDims(expanded.getRank());
  spec.operandDims[0] = expanding ? collapsedDims : expandedDims;
  spec.resultDims.push_back(expanding ? expandedDims : collapsedDims);
  spec.operandIsLinear[0] = true;
  return spec;
}

static FailureOr<ShardingSpec> getGatherSpec(tensor::GatherOp op,
                                             std::string *why) {
  // Embedding lookup: out[b..., j] = table[ids[b..., 0], j]. As a one-hot
  // matmul the vocabulary is a sum reduction: a row-sharded table gives a
  // Partial(sum) result after masking out-of-range ids.
  RankedTensorType table = op.getSourceType();
  RankedTensorType indices = op.getIndicesType();
  if (table.getRank() != 2 || op.getGatherDims() != ArrayRef<int64_t>{0} ||
      indices.getShape().back() != 1 || !op.getResult().getType().hasRank() ||
      op.getResultType().getRank() != indices.getRank()) {
    *why = "tensor.gather other than a rank-reduced embedding lookup "
           "(2-D table, gather_dims([0]), indices ...x1)";
    return failure();
  }
  int64_t batch = indices.getRank() - 1;
  // Loops: batch dims, then the vocabulary, then the feature dim.
  ShardingSpec spec = makeSpec(op, batch + 2);
  int64_t vocab = batch, feature = batch + 1;
  spec.loops[vocab].kind = ShardingLoop::Kind::Reduction;
  spec.loops[vocab].combiner = ReduceKind::Sum;
  spec.operandDims[0] = {vocab, feature};
  SmallVector<int64_t> indexDims = identityDims(batch);
  indexDims.push_back(-1);
  spec.operandDims[1] = indexDims;
  SmallVector<int64_t> resultDims = identityDims(batch);
  resultDims.push_back(feature);
  spec.resultDims.push_back(resultDims);
  spec.operandIsLinear[0] = true;
  return spec;
}

/// Ops that keep some dims whole and map the others one to one.
static ShardingSpec getPartialIdentitySpec(Operation *op, int64_t rank,
                                           ArrayRef<bool> opaque) {
  ShardingSpec spec = makeSpec(op, rank);
  for (int64_t dim = 0; dim < rank; ++dim)
    if (opaque[dim])
      spec.loops[dim].kind = ShardingLoop::Kind::Opaque;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (spec.operandIsTensor[i])
      spec.operandDims[i] = identityDims(rank);
  spec.resultDims.push_back(identityDims(rank));
  return spec;
}

FailureOr<ShardingSpec> mlir::dtensor::getShardingSpec(Operation *op,
                                                       std::string *why) {
  std::string ignored;
  if (!why)
    why = &ignored;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return getLinalgSpec(linalgOp, why);
  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(op)) {
    int64_t rank = softmax.getInputOperandType().getRank();
    SmallVector<bool> opaque(rank, false);
    opaque[softmax.getDimension()] = true;
    return getPartialIdentitySpec(op, rank, opaque);
  }
  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    if (!empty.getDynamicSizes().empty()) {
      *why = "tensor.empty with dynamic sizes in a global-view program";
      return failure();
    }
    ShardingSpec spec = makeSpec(op, empty.getType().getRank());
    spec.resultDims.push_back(identityDims(empty.getType().getRank()));
    spec.isCreation = true;
    return spec;
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!type || !dense) {
      *why = "only dense tensor constants can be laid out";
      return failure();
    }
    // Another constant is replicated: each rank holds its whole value, and
    // a consumer that wants a shard takes it by a local chunk.
    if (!dense.isSplat())
      return getPartialIdentitySpec(op, type.getRank(),
                                    SmallVector<bool>(type.getRank(), true));
    ShardingSpec spec = makeSpec(op, type.getRank());
    spec.resultDims.push_back(identityDims(type.getRank()));
    spec.isCreation = true;
    return spec;
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return getReshapeSpec(op, collapse.getResultType(), collapse.getSrcType(),
                          collapse.getReassociationIndices(),
                          /*expanding=*/false);
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return getReshapeSpec(op, expand.getSrcType(), expand.getResultType(),
                          expand.getReassociationIndices(),
                          /*expanding=*/true);
  if (auto gather = dyn_cast<tensor::GatherOp>(op))
    return getGatherSpec(gather, why);
  if (auto routed = dyn_cast<RoutedMatmulOp>(op)) {
    // y[t, k, f] = sum_h x[t, h] * w[ids[t, k], h, f]. Loops t, k, f
    // (parallel), h (sum) and the experts e, which only split together
    // with the tokens: each rank then holds its tokens and its experts,
    // and the partitioner routes tokens to experts (all_to_all_v).
    enum { T, K, F, H, E };
    ShardingSpec spec = makeSpec(op, 5);
    spec.loops[H].kind = ShardingLoop::Kind::Reduction;
    spec.loops[H].combiner = ReduceKind::Sum;
    spec.loops[E].kind = ShardingLoop::Kind::Opaque;
    spec.operandDims[0] = {T, H};
    spec.operandDims[1] = {T, K};
    spec.operandDims[2] = {E, H, F};
    spec.resultDims.push_back({T, K, F});
    spec.operandIsLinear[0] = true;
    spec.operandIsLinear[2] = true;
    spec.jointSplits.push_back({T, E});
    return spec;
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    int64_t rank = concat.getResultType().getRank();
    SmallVector<bool> opaque(rank, false);
    opaque[concat.getDim()] = true;
    ShardingSpec spec = getPartialIdentitySpec(op, rank, opaque);
    spec.movesElements = true;
    return spec;
  }
  if (auto pad = dyn_cast<tensor::PadOp>(op)) {
    int64_t rank = pad.getResultType().getRank();
    SmallVector<bool> opaque(rank, false);
    for (int64_t dim = 0; dim < rank; ++dim) {
      std::optional<int64_t> low = getConstantIntValue(pad.getMixedLowPad()[dim]);
      std::optional<int64_t> high =
          getConstantIntValue(pad.getMixedHighPad()[dim]);
      opaque[dim] = !low || !high || *low != 0 || *high != 0;
    }
    return getPartialIdentitySpec(op, rank, opaque);
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
    RankedTensorType source = slice.getSourceType();
    ShardingSpec spec = makeSpec(op, source.getRank());
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    SmallVector<int64_t> resultDims;
    for (int64_t dim = 0; dim < source.getRank(); ++dim) {
      std::optional<int64_t> offset =
          getConstantIntValue(slice.getMixedOffsets()[dim]);
      std::optional<int64_t> size =
          getConstantIntValue(slice.getMixedSizes()[dim]);
      std::optional<int64_t> stride =
          getConstantIntValue(slice.getMixedStrides()[dim]);
      bool whole = offset == 0 && stride == 1 && size &&
                   *size == source.getDimSize(dim);
      // A dropped dim has no result dim to carry its shard.
      if (!whole || dropped.test(dim))
        spec.loops[dim].kind = ShardingLoop::Kind::Opaque;
      if (!dropped.test(dim))
        resultDims.push_back(dim);
    }
    spec.operandDims[0] = identityDims(source.getRank());
    spec.resultDims.push_back(resultDims);
    spec.operandIsLinear[0] = true;
    return spec;
  }
  if (op->hasTrait<OpTrait::Elementwise>() && op->getNumResults() == 1 &&
      isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
    return getElementwiseSpec(op, why);
  *why = "no sharding rule for '" + op->getName().getStringRef().str() + "'";
  return failure();
}

/// True if a value created by `op` from scalars may be given `layout`
/// without communication: Partial needs the reduction's identity.
bool mlir::dtensor::creationAllowsLayout(Operation *op, LayoutAttr layout) {
  std::optional<ReduceKind> partial = layout.getPartialKind();
  if (!partial || isa<tensor::EmptyOp>(op))
    return true;
  Attribute value;
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    matchPattern(fill.value(), m_Constant(&value));
  else if (auto constant = dyn_cast<arith::ConstantOp>(op))
    if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
      value = dense.getSplatValue<Attribute>();
  auto isValue = [&](double expected) {
    if (auto f = dyn_cast_or_null<FloatAttr>(value))
      return f.getValueAsDouble() == expected;
    if (auto i = dyn_cast_or_null<IntegerAttr>(value))
      return i.getValue().getSExtValue() == static_cast<int64_t>(expected);
    return false;
  };
  switch (*partial) {
  case ReduceKind::Sum:
    return isValue(0);
  case ReduceKind::Product:
    return isValue(1);
  case ReduceKind::Avg:
  case ReduceKind::Min:
  case ReduceKind::Max:
    return value != nullptr;
  }
  return false;
}

namespace {
/// What one mesh axis does in a strategy.
struct AxisChoice {
  /// The loops it splits (one, or a joint group); none for no split.
  SmallVector<int64_t> loops;
  /// Or the Partial it passes through `through` (and the inits).
  std::optional<ReduceKind> partial;
  SmallVector<bool> through;
};
} // namespace

SmallVector<ShardingStrategy>
mlir::dtensor::enumerateStrategies(const ShardingSpec &spec, MeshOp mesh) {
  MLIRContext *ctx = mesh.getContext();
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  int64_t numLoops = spec.loops.size();
  unsigned numOperands = spec.operandDims.size();
  auto replicate = PlacementAttr::getReplicate(ctx);

  // The choices of one mesh axis, in order of preference where costs tie.
  SmallVector<AxisChoice> choices = {AxisChoice()};
  for (int64_t loop = 0; loop < numLoops; ++loop)
    if (spec.loops[loop].kind != ShardingLoop::Kind::Opaque)
      choices.push_back({{loop}, std::nullopt, {}});
  auto passThrough = [&](ReduceKind kind, std::optional<unsigned> operand) {
    AxisChoice choice;
    choice.partial = kind;
    choice.through.assign(numOperands, !operand.has_value());
    if (operand)
      choice.through[*operand] = true;
    choices.push_back(choice);
  };
  SmallVector<unsigned> linear, inputs;
  for (unsigned i = 0; i < numOperands; ++i) {
    if (!spec.operandIsTensor[i] || spec.operandIsInit[i])
      continue;
    inputs.push_back(i);
    if (spec.operandIsLinear[i])
      linear.push_back(i);
  }
  for (unsigned i = 0; i < numOperands; ++i)
    if (spec.operandIsLinear[i] && spec.operandIsTensor[i])
      passThrough(ReduceKind::Sum, i);
  if (spec.isAdditive)
    passThrough(ReduceKind::Sum, std::nullopt);
  // Every operand Partial of each kind.
  const SmallVector<ReduceKind> kinds = {ReduceKind::Sum, ReduceKind::Avg,
                                         ReduceKind::Product, ReduceKind::Min,
                                         ReduceKind::Max};
  if (spec.movesElements)
    for (ReduceKind kind : kinds)
      passThrough(kind, std::nullopt);
  for (const SmallVector<int64_t> &group : spec.jointSplits)
    choices.push_back({group, std::nullopt, {}});
  // An average passes through whatever a sum does.
  for (unsigned i : linear)
    passThrough(ReduceKind::Avg, i);
  if (spec.isAdditive)
    passThrough(ReduceKind::Avg, std::nullopt);
  // A max (min) of one Partial input and replicated ones, or of all.
  if (spec.selects) {
    for (unsigned i : inputs)
      passThrough(*spec.selects, i);
    if (inputs.size() > 1)
      passThrough(*spec.selects, std::nullopt);
  }

  SmallVector<ShardingStrategy> strategies;
  int64_t rank = mesh.getRank();
  SmallVector<size_t> pick(rank, 0);
  while (true) {
    // Placements per operand/result and axis.
    SmallVector<SmallVector<PlacementAttr>> operandPl(
        numOperands, SmallVector<PlacementAttr>(rank, replicate));
    SmallVector<SmallVector<PlacementAttr>> resultPl(
        spec.resultDims.size(), SmallVector<PlacementAttr>(rank, replicate));
    int64_t split = 1;
    for (int64_t axis = 0; axis < rank; ++axis) {
      const AxisChoice &choice = choices[pick[axis]];
      if (!choice.loops.empty()) {
        // Split one loop, or a joint group of them: each shards the dims
        // it indexes; a split reduction leaves the results (and the inits)
        // Partial.
        ArrayRef<int64_t> loops = choice.loops;
        std::optional<PlacementAttr> partial;
        if (loops.size() == 1 &&
            spec.loops[loops[0]].kind == ShardingLoop::Kind::Reduction)
          partial = PlacementAttr::getPartial(ctx, spec.loops[loops[0]].combiner);
        split *= mesh.getShape()[axis];
        auto shardOf = [&](ArrayRef<int64_t> dims) -> std::optional<int64_t> {
          for (auto [dim, loop] : llvm::enumerate(dims))
            if (llvm::is_contained(loops, loop))
              return dim;
          return std::nullopt;
        };
        for (unsigned i = 0; i < numOperands; ++i) {
          if (!spec.operandIsTensor[i])
            continue;
          if (std::optional<int64_t> dim = shardOf(spec.operandDims[i]))
            operandPl[i][axis] = PlacementAttr::getShard(ctx, *dim);
          else if (partial && spec.operandIsInit[i])
            operandPl[i][axis] = *partial;
        }
        for (auto [r, dims] : llvm::enumerate(spec.resultDims)) {
          if (std::optional<int64_t> dim = shardOf(dims))
            resultPl[r][axis] = PlacementAttr::getShard(ctx, *dim);
          else if (partial)
            resultPl[r][axis] = *partial;
        }
        continue;
      }
      if (!choice.partial)
        continue;
      // Partial pass-through.
      PlacementAttr partial = PlacementAttr::getPartial(ctx, *choice.partial);
      for (unsigned i = 0; i < numOperands; ++i)
        if (spec.operandIsTensor[i] &&
            (choice.through[i] || spec.operandIsInit[i]))
          operandPl[i][axis] = partial;
      for (auto &placements : resultPl)
        placements[axis] = partial;
    }

    // Drop strategies that would mix Partial reductions.
    auto mixed = [](ArrayRef<PlacementAttr> placements) {
      return mixesPartialReductions(placements);
    };
    bool valid = llvm::none_of(operandPl, mixed) && llvm::none_of(resultPl, mixed);
    if (valid) {
      ShardingStrategy strategy;
      strategy.splitFactor = split;
      for (unsigned i = 0; i < numOperands; ++i)
        strategy.operands.push_back(
            spec.operandIsTensor[i]
                ? LayoutAttr::get(ctx, meshRef, operandPl[i])
                : LayoutAttr());
      for (auto &placements : resultPl)
        strategy.results.push_back(LayoutAttr::get(ctx, meshRef, placements));
      strategies.push_back(strategy);
    }

    // Next combination.
    int64_t axis = rank - 1;
    while (axis >= 0 && ++pick[axis] == choices.size()) {
      pick[axis] = 0;
      --axis;
    }
    if (axis < 0)
      break;
  }
  return strategies;
}

bool mlir::dtensor::splitsEvenOnlyLoopUnevenly(
    Operation *op, const ShardingSpec &spec, const ShardingStrategy &strategy,
    MeshOp mesh) {
  auto uneven = [&](Value value, LayoutAttr layout, ArrayRef<int64_t> dims) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!layout || !type)
      return false;
    for (auto [dim, splits] :
         llvm::enumerate(splitsPerDim(layout, mesh, type.getRank()))) {
      if (splits.empty() || dim >= dims.size() || dims[dim] < 0 ||
          !spec.loops[dims[dim]].evenOnly)
        continue;
      if (type.isDynamicDim(dim) ||
          !uniformChunkSize(type.getDimSize(dim), splits))
        return true;
    }
    return false;
  };
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (i < strategy.operands.size() && spec.operandIsTensor[i] &&
        uneven(operand, strategy.operands[i], spec.operandDims[i]))
      return true;
  for (auto [r, result] : llvm::enumerate(op->getResults()))
    if (r < strategy.results.size() && r < spec.resultDims.size() &&
        uneven(result, strategy.results[r], spec.resultDims[r]))
      return true;
  return false;
}
