//===- RaiseComms.cpp - async starts as early as possible -----------------===//
//
// The `dtensor-raise-comms` pass: each dtensor.async_start moves up to right
// after the last op it depends on (the producers of its operands, the
// previous collective, the previous barrier), so that the compute it passes
// runs while the collective is in flight. PyTorch Inductor's raise_comms on
// per-rank programs.
//
//===----------------------------------------------------------------------===//

#include "Scheduling.h"

#include "dtensor/Overlap/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_RAISECOMMSPASS
#include "dtensor/Overlap/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

/// Raises the starts of one segment, in program order, each as one move.
static void raiseComms(Block &body, sched::BlockSchedule &schedule,
                       const sched::BlockSchedule::Segment &segment) {
  SmallVector<Operation *> starts;
  for (Operation *op : schedule.getOps(segment))
    if (isa<AsyncStartOp>(op))
      starts.push_back(op);
  for (Operation *start : starts) {
    SmallVector<Operation *> producerList =
        sched::getProducersInBlock(body, start);
    llvm::SmallPtrSet<Operation *, 8> producers(producerList.begin(),
                                                producerList.end());
    SmallVector<Operation *> ops(schedule.getOps(segment));
    unsigned from = llvm::find(ops, start) - ops.begin();
    // Right after the last producer or collective before it.
    unsigned to = 0;
    for (unsigned i = 0; i < from; ++i)
      if (producers.contains(ops[i]) || sched::isCommunication(ops[i]))
        to = i + 1;
    if (to == from)
      continue;
    ops.erase(ops.begin() + from);
    ops.insert(ops.begin() + to, start);
    schedule.tryReorder(segment, ops);
  }
}

namespace {

struct RaiseCommsPass : dtensor::impl::RaiseCommsPassBase<RaiseCommsPass> {
  using Base::Base;

  void runOnOperation() override {
    sched::MemoryBudget budget(memoryBudget);
    sched::rescheduleFunctions(getOperation(), getArgument(), budget,
                               reportMemory, raiseComms);
  }
};

} // namespace
