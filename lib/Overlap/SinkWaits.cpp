//===- SinkWaits.cpp - waits as late as possible --------------------------===//
//
// The `dtensor-sink-waits` pass: each dtensor.wait moves to just before the
// first op that uses its result (or before the next barrier), so that the
// compute in between runs while the collective is in flight. PyTorch
// Inductor's sink_waits on per-rank programs.
//
//===----------------------------------------------------------------------===//

#include "Scheduling.h"

#include "dtensor/Overlap/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_SINKWAITSPASS
#include "dtensor/Overlap/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

/// Sinks the waits of one segment, in program order, each as one move.
static void sinkWaits(Block &body, sched::BlockSchedule &schedule,
                      const sched::BlockSchedule::Segment &segment) {
  SmallVector<Operation *> waits;
  for (Operation *op : schedule.getOps(segment))
    if (isa<WaitOp>(op))
      waits.push_back(op);
  for (Operation *wait : waits) {
    llvm::SmallPtrSet<Operation *, 4> consumers;
    for (Operation *user : wait->getResult(0).getUsers())
      if (Operation *consumer = body.findAncestorOpInBlock(*user))
        consumers.insert(consumer);
    SmallVector<Operation *> ops(schedule.getOps(segment));
    unsigned from = llvm::find(ops, wait) - ops.begin();
    // Right before the first consumer, or at the end of the segment.
    unsigned to = ops.size();
    for (unsigned i = from + 1; i < ops.size(); ++i) {
      if (consumers.contains(ops[i])) {
        to = i;
        break;
      }
    }
    if (to == from + 1)
      continue;
    ops.erase(ops.begin() + from);
    ops.insert(ops.begin() + (to - 1), wait);
    schedule.tryReorder(segment, ops);
  }
}

namespace {

struct SinkWaitsPass : dtensor::impl::SinkWaitsPassBase<SinkWaitsPass> {
  using Base::Base;

  void runOnOperation() override {
    sched::MemoryBudget budget(memoryBudget);
    sched::rescheduleFunctions(getOperation(), getArgument(), budget,
                               reportMemory, sinkWaits);
  }
};

} // namespace
