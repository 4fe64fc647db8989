//===- MakeCollectivesAsync.cpp - collectives as async_start + wait -------===//
//
// The `dtensor-async-collectives` pass: every synchronous collective at the
// top level of a single-block function body becomes a dtensor.async_start
// at the same place, and each of its results a dtensor.wait right before
// the result's first use (or the next barrier). The scheduling passes then
// move the starts and the waits apart.
//
//===----------------------------------------------------------------------===//

#include "Scheduling.h"

#include "dtensor/Overlap/Passes.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_MAKECOLLECTIVESASYNCPASS
#include "dtensor/Overlap/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

/// Wraps `op`, a collective at the top level of `block`, in an async_start
/// and waits for each result right before its first use in `block`, not
/// later than `limit`, the next barrier. `position` numbers the ops of the
/// block as they were before any was wrapped (wrapping keeps their relative
/// order).
static void makeAsync(Block &block, Operation *op, Operation *limit,
                      const DenseMap<Operation *, unsigned> &position) {
  // Where each result's wait goes, decided before anything moves.
  SmallVector<Operation *> waitPoints;
  for (Value result : op->getResults()) {
    Operation *first = limit;
    for (OpOperand &use : result.getUses()) {
      Operation *user = block.findAncestorOpInBlock(*use.getOwner());
      if (user && position.lookup(user) < position.lookup(first))
        first = user;
    }
    waitPoints.push_back(first);
  }

  OpBuilder builder(op);
  SmallVector<Type> futureTypes;
  for (Type type : op->getResultTypes())
    futureTypes.push_back(
        FutureType::get(op->getContext(), cast<RankedTensorType>(type)));
  auto start = AsyncStartOp::create(builder, op->getLoc(), futureTypes);
  Block *body = builder.createBlock(&start.getBody());
  op->moveBefore(body, body->end());
  builder.setInsertionPointToEnd(body);
  auto yield = YieldOp::create(builder, op->getLoc(), op->getResults());

  for (auto [result, future, point] :
       llvm::zip_equal(op->getResults(), start.getFutures(), waitPoints)) {
    builder.setInsertionPoint(point);
    auto wait = WaitOp::create(builder, op->getLoc(), result.getType(), future);
    result.replaceAllUsesExcept(wait.getResult(), yield);
  }
}

/// Makes every collective at the top level of `block` asynchronous.
static void makeAllAsync(Block &block) {
  // Each collective with the barrier after it.
  SmallVector<std::pair<Operation *, Operation *>> collectives;
  DenseMap<Operation *, unsigned> position;
  for (Operation &op : block)
    position[&op] = position.size();
  Operation *barrier = &block.back();
  for (Operation &op : llvm::reverse(block)) {
    if (sched::isBarrier(&op))
      barrier = &op;
    else if (isa<CollectiveOpInterface>(op))
      collectives.emplace_back(&op, barrier);
  }
  for (auto [op, limit] : llvm::reverse(collectives))
    makeAsync(block, op, limit, position);
}

namespace {

struct MakeCollectivesAsyncPass
    : dtensor::impl::MakeCollectivesAsyncPassBase<MakeCollectivesAsyncPass> {
  using Base::Base;

  void runOnOperation() override {
    // The pass does not change the peak (a collective's buffer is live from
    // where it is issued to the last use of its result either way), but as
    // the first scheduling pass run on a function it records the baseline
    // of the budget there.
    sched::MemoryBudget budget(-1);
    sched::forEachSchedulableFunction(getOperation(), budget,
                                      [](FunctionOpInterface, Block &body,
                                         sched::BlockSchedule &,
                                         int64_t) { makeAllAsync(body); });
  }
};

} // namespace
