//===- BucketCollectives.cpp - coalesce adjacent collectives --------------===//
//
// The `dtensor-bucket-collectives` pass: a collective is merged into the one
// issued just before it when the two are of one kind on one group (same
// mesh, axes, reduction and element type), the bucket stays under the byte
// cap, the cost model says one launch beats two, and the merged op fits
// where one of the two was without moving anything else. Only collectives
// adjacent in issue order merge, so the order of collectives is kept
// (PyTorch's greedy FX bucketing follows the same rule).
//
//===----------------------------------------------------------------------===//

#include "Scheduling.h"

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Analysis/CommAnalysis.h"
#include "dtensor/Target/Target.h"
#include "dtensor/Overlap/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_BUCKETCOLLECTIVESPASS
#include "dtensor/Overlap/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

enum class Family { AllReduce, AllGather, ReduceScatter };

/// A collective as a list of tensors that can join a bucket.
struct Bucketable {
  Family family;
  FlatSymbolRefAttr mesh;
  SmallVector<int64_t> axes;
  std::optional<ReduceKind> reduce;
  Type elementType;
  SmallVector<Value> inputs;
  SmallVector<Type> resultTypes;
  /// Gather or scatter dim per tensor (empty for all_reduce).
  SmallVector<int64_t> dims;

  bool isCompatible(const Bucketable &other) const {
    return family == other.family && mesh == other.mesh && axes == other.axes &&
           reduce == other.reduce && elementType == other.elementType;
  }

  /// Bytes the bucket holds: per tensor the larger of input and output.
  int64_t getBytes() const {
    int64_t bytes = 0;
    bool hasDynamic = false;
    for (auto [input, resultType] : llvm::zip_equal(inputs, resultTypes)) {
      int64_t in =
          getStaticTensorBytes(input.getType(), hasDynamic).value_or(0);
      int64_t out = getStaticTensorBytes(resultType, hasDynamic).value_or(0);
      bytes += std::max(in, out);
    }
    return bytes;
  }
};

} // namespace

static std::optional<Bucketable> getBucketable(Operation *op) {
  Bucketable b;
  bool known = TypeSwitch<Operation *, bool>(op)
                   .Case([&](AllReduceOp ar) {
                     b.family = Family::AllReduce;
                     b.reduce = ar.getReduce();
                     return true;
                   })
                   .Case([&](AllReduceCoalescedOp ar) {
                     b.family = Family::AllReduce;
                     b.reduce = ar.getReduce();
                     return true;
                   })
                   .Case([&](AllGatherOp ag) {
                     b.family = Family::AllGather;
                     b.dims.push_back(ag.getGatherDim());
                     return true;
                   })
                   .Case([&](AllGatherCoalescedOp ag) {
                     b.family = Family::AllGather;
                     llvm::append_range(b.dims, ag.getGatherDims());
                     return true;
                   })
                   .Case([&](ReduceScatterOp rs) {
                     b.family = Family::ReduceScatter;
                     b.reduce = rs.getReduce();
                     b.dims.push_back(rs.getScatterDim());
                     return true;
                   })
                   .Case([&](ReduceScatterCoalescedOp rs) {
                     b.family = Family::ReduceScatter;
                     b.reduce = rs.getReduce();
                     llvm::append_range(b.dims, rs.getScatterDims());
                     return true;
                   })
                   .Default([](Operation *) { return false; });
  if (!known)
    return std::nullopt;
  auto collective = cast<CollectiveOpInterface>(op);
  b.mesh = collective.getMeshAttr();
  llvm::append_range(b.axes, collective.getMeshAxes());
  llvm::append_range(b.inputs, op->getOperands());
  llvm::append_range(b.resultTypes, op->getResultTypes());
  // One element type for the whole bucket (one flat buffer).
  for (Value input : b.inputs) {
    Type element = cast<ShapedType>(input.getType()).getElementType();
    if (b.elementType && b.elementType != element)
      return std::nullopt;
    b.elementType = element;
  }
  if (!b.elementType)
    return std::nullopt;
  return b;
}

/// Builds the coalesced collective of `a` followed by `b`.
static Operation *buildMerged(OpBuilder &builder, Location loc,
                              const Bucketable &a, const Bucketable &b) {
  SmallVector<Value> inputs(a.inputs);
  llvm::append_range(inputs, b.inputs);
  SmallVector<Type> results(a.resultTypes);
  llvm::append_range(results, b.resultTypes);
  SmallVector<int64_t> dims(a.dims);
  llvm::append_range(dims, b.dims);
  auto axes = builder.getDenseI64ArrayAttr(a.axes);
  auto reduce = [&] {
    return ReduceKindAttr::get(builder.getContext(), *a.reduce);
  };
  switch (a.family) {
  case Family::AllReduce:
    return AllReduceCoalescedOp::create(builder, loc, results, inputs, a.mesh,
                                        axes, reduce());
  case Family::AllGather:
    return AllGatherCoalescedOp::create(builder, loc, results, inputs, a.mesh,
                                        axes,
                                        builder.getDenseI64ArrayAttr(dims));
  case Family::ReduceScatter:
    return ReduceScatterCoalescedOp::create(
        builder, loc, results, inputs, a.mesh, axes,
        builder.getDenseI64ArrayAttr(dims), reduce());
  }
  return nullptr;
}

namespace {

class Bucketer {
public:
  Bucketer(Block &body, CostEstimator &estimator, int64_t capBytes,
           int64_t limitBytes)
      : body(body), estimator(estimator), capBytes(capBytes),
        limitBytes(limitBytes) {}

  void run();
  unsigned getNumRefused() const { return refused; }

private:
  /// Merges `second` into `first` (the communication op issued just before
  /// it) and returns the merged op, or null where that does not pay or is
  /// not possible.
  Operation *tryMerge(Operation *first, Operation *second);
  bool isDefinedBefore(Value value, Operation *op);
  bool fitsInMemory(Operation *from, Operation *into);

  Block &body;
  CostEstimator &estimator;
  int64_t capBytes;
  int64_t limitBytes;
  unsigned refused = 0;
};

} // namespace

void Bucketer::run() {
  Operation *previous = nullptr;
  for (Operation *op = &body.front(); op;) {
    Operation *next = op->getNextNode();
    if (sched::isBarrier(op)) {
      previous = nullptr;
    } else if (sched::isCommunication(op)) {
      Operation *merged = previous ? tryMerge(previous, op) : nullptr;
      previous = merged ? merged : op;
    }
    op = next;
  }
}

bool Bucketer::isDefinedBefore(Value value, Operation *op) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return value.getParentBlock() == &body;
  Operation *producer = body.findAncestorOpInBlock(*def);
  return producer && producer != op && producer->isBeforeInBlock(op);
}

bool Bucketer::fitsInMemory(Operation *from, Operation *into) {
  if (limitBytes == std::numeric_limits<int64_t>::max())
    return true;
  SmallVector<Operation *> order;
  for (Operation &op : body)
    if (&op != from)
      order.push_back(&op);
  return sched::MemoryModel(body).getPeak(order, from, into) <= limitBytes;
}

Operation *Bucketer::tryMerge(Operation *first, Operation *second) {
  auto firstStart = dyn_cast<AsyncStartOp>(first);
  auto secondStart = dyn_cast<AsyncStartOp>(second);
  if (static_cast<bool>(firstStart) != static_cast<bool>(secondStart))
    return nullptr;
  Operation *firstCollective = firstStart ? firstStart.getCollective() : first;
  Operation *secondCollective =
      secondStart ? secondStart.getCollective() : second;
  if (!firstCollective || !secondCollective)
    return nullptr;
  std::optional<Bucketable> a = getBucketable(firstCollective);
  std::optional<Bucketable> b = getBucketable(secondCollective);
  if (!a || !b || !a->isCompatible(*b) ||
      a->getBytes() + b->getBytes() > capBytes)
    return nullptr;

  // Where the merged op can go without moving anything else: at the first
  // when the second's operands are ready there, else at the second when
  // nothing in between uses the first's results.
  Operation *at = nullptr;
  if (llvm::all_of(b->inputs, [&](Value input) {
        return isDefinedBefore(input, first);
      })) {
    at = first;
  } else {
    bool usedInBetween = llvm::any_of(first->getUsers(), [&](Operation *user) {
      Operation *consumer = body.findAncestorOpInBlock(*user);
      return consumer && consumer->isBeforeInBlock(second);
    });
    if (usedInBetween)
      return nullptr;
    at = second;
  }
  Operation *other = at == first ? second : first;
  if (!fitsInMemory(other, at)) {
    ++refused;
    return nullptr;
  }

  OpBuilder builder(at);
  Operation *merged = buildMerged(builder, secondCollective->getLoc(), *a, *b);
  double separate = estimator.estimateUs(first) + estimator.estimateUs(second);
  if (!(estimator.estimateUs(merged) < separate)) {
    merged->erase();
    return nullptr;
  }

  unsigned numFirst = a->resultTypes.size();
  if (!firstStart) {
    first->replaceAllUsesWith(merged->getResults().take_front(numFirst));
    second->replaceAllUsesWith(merged->getResults().drop_front(numFirst));
    first->erase();
    second->erase();
    return merged;
  }
  SmallVector<Type> futureTypes;
  for (Type type : merged->getResultTypes())
    futureTypes.push_back(
        FutureType::get(builder.getContext(), cast<RankedTensorType>(type)));
  auto start = AsyncStartOp::create(builder, merged->getLoc(), futureTypes);
  Block *startBody = builder.createBlock(&start.getBody());
  merged->moveBefore(startBody, startBody->end());
  builder.setInsertionPointToEnd(startBody);
  YieldOp::create(builder, merged->getLoc(), merged->getResults());
  first->replaceAllUsesWith(start.getResults().take_front(numFirst));
  second->replaceAllUsesWith(start.getResults().drop_front(numFirst));
  first->erase();
  second->erase();
  return start;
}

namespace {

struct BucketCollectivesPass
    : dtensor::impl::BucketCollectivesPassBase<BucketCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<std::unique_ptr<CostEstimator>> estimator =
        getTargetCostEstimator(getOperation());
    if (failed(estimator))
      return signalPassFailure();
    sched::MemoryBudget budget(memoryBudget);
    sched::forEachSchedulableFunction(
        getOperation(), budget,
        [&](FunctionOpInterface func, Block &body, sched::BlockSchedule &before,
            int64_t peakBefore) {
          // Bucketing rewrites the block: `before` is stale after it.
          int64_t limit = before.getLimit();
          Bucketer bucketer(body, **estimator, bucketCapBytes, limit);
          bucketer.run();
          if (!reportMemory)
            return;
          sched::BlockSchedule after(body);
          after.setLimit(limit);
          for (unsigned i = 0; i < bucketer.getNumRefused(); ++i)
            after.refuse();
          sched::reportMemory(func, getArgument(), peakBefore, after.getPeak(),
                              after);
        });
  }
};

} // namespace
