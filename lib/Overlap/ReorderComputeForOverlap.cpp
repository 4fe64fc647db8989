//===- ReorderComputeForOverlap.cpp - compute between collectives ---------===//
//
// The `dtensor-reorder-compute-for-overlap` pass: PyTorch Inductor's
// (legacy) reorder_compute_for_overlap on the segments of per-rank function
// bodies. Between each collective and the next it schedules first the
// compute the next one needs and does not depend on the pending one, then
// more independent compute while the pending collective is modelled to be
// still running, then what the next one needs that depends on the pending
// one; whatever is left comes at the end in program order.
//
// Free ops (constants, coordinates, views, scalar index arithmetic) are not
// scheduled on their own: each comes with the first op that needs it.
// Step 2 considers ops as they become ready (a fill that is scheduled makes
// its matmul a candidate), and it never schedules waits: a wait of another
// collective only ends the overlap early.
//
//===----------------------------------------------------------------------===//

#include "Scheduling.h"

#include "dtensor/Target/Target.h"
#include "dtensor/Overlap/Passes.h"

#include "llvm/ADT/BitVector.h"

#include <optional>
#include <set>

namespace mlir::dtensor {
#define GEN_PASS_DEF_REORDERCOMPUTEFOROVERLAPPASS
#include "dtensor/Overlap/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// Schedules one segment. Every decision that takes an op out of program
/// order is a move the block schedule may refuse for the memory budget: the
/// prospective order (what is scheduled, the op, the rest in program order)
/// must stay within the limit.
class OverlapScheduler {
public:
  OverlapScheduler(Block &body, sched::BlockSchedule &schedule,
                   const sched::BlockSchedule::Segment &segment,
                   CostEstimator &estimator)
      : schedule(schedule), segment(segment),
        graph(body, schedule.getOps(segment)), size(graph.size()),
        scheduled(size) {
    for (unsigned node = 0; node < size; ++node) {
      Operation *op = graph.getOp(node);
      OpResource resource = sched::isCommunication(op)
                                ? OpResource::Communication
                                : estimator.classify(op);
      if (isa<WaitOp>(op))
        resource = OpResource::Wait;
      resources.push_back(resource);
      costs.push_back(resource == OpResource::Free ? 0
                                                   : estimator.estimateUs(op));
      modelIds.push_back(schedule.getModel().getId(op));
    }
  }

  void run();

private:
  bool isFree(unsigned node) const {
    return resources[node] == OpResource::Free;
  }
  /// Whether every producer is scheduled or a free op that is ready.
  bool isReady(unsigned node) const;
  /// `node` and the unscheduled free ops it needs, in program order.
  SmallVector<unsigned> getClosure(unsigned node) const;
  /// Whether scheduling `nodes` next keeps program order.
  bool isInProgramOrder(ArrayRef<unsigned> nodes) const;
  void commit(ArrayRef<unsigned> nodes);
  /// Schedules the ready `node` (and the free ops it needs) next unless the
  /// memory budget refuses the move.
  bool tryMove(unsigned node);
  /// Schedules `node`, after ops in program order as long as the budget
  /// refuses to move it.
  void scheduleRequired(unsigned node);
  /// Schedules the unscheduled non-free nodes of `nodes` (in program
  /// order).
  void scheduleRequired(ArrayRef<unsigned> nodes);
  void scheduleNextInProgramOrder() { commit({nextInProgramOrder}); }

  void applyToSchedule();

  sched::BlockSchedule &schedule;
  const sched::BlockSchedule::Segment &segment;
  sched::DependenceGraph graph;
  unsigned size;
  SmallVector<OpResource> resources;
  SmallVector<double> costs;
  /// The number of each node's op in the memory model.
  SmallVector<unsigned> modelIds;
  llvm::BitVector scheduled;
  SmallVector<unsigned> order;
  /// The first unscheduled node in program order.
  unsigned nextInProgramOrder = 0;
  /// The index of the first collective each node feeds (the number of
  /// collectives: none).
  SmallVector<unsigned> earliestComm;
  /// Unscheduled compute ops that the pending collective does not feed, by
  /// (earliestComm, node): step 2's candidates in the order it wants them.
  std::set<std::pair<unsigned, unsigned>> eligible;
};

} // namespace

bool OverlapScheduler::isReady(unsigned node) const {
  for (unsigned pred : graph.getPredecessors(node))
    if (!scheduled[pred] && !(isFree(pred) && isReady(pred)))
      return false;
  return true;
}

SmallVector<unsigned> OverlapScheduler::getClosure(unsigned node) const {
  llvm::BitVector in(size);
  SmallVector<unsigned> worklist = {node};
  in.set(node);
  while (!worklist.empty()) {
    unsigned current = worklist.pop_back_val();
    for (unsigned pred : graph.getPredecessors(current))
      if (!scheduled[pred] && isFree(pred) && !in[pred]) {
        in.set(pred);
        worklist.push_back(pred);
      }
  }
  // Program order is a topological order.
  SmallVector<unsigned> closure;
  for (unsigned member : in.set_bits())
    closure.push_back(member);
  return closure;
}

bool OverlapScheduler::isInProgramOrder(ArrayRef<unsigned> nodes) const {
  unsigned next = nextInProgramOrder;
  for (unsigned node : nodes) {
    while (next < size && scheduled[next])
      ++next;
    if (next != node)
      return false;
    ++next;
  }
  return true;
}

void OverlapScheduler::commit(ArrayRef<unsigned> nodes) {
  for (unsigned node : nodes) {
    scheduled.set(node);
    order.push_back(node);
    if (!earliestComm.empty())
      eligible.erase({earliestComm[node], node});
  }
  while (nextInProgramOrder < size && scheduled[nextInProgramOrder])
    ++nextInProgramOrder;
}

bool OverlapScheduler::tryMove(unsigned node) {
  SmallVector<unsigned> closure = getClosure(node);
  if (isInProgramOrder(closure)) {
    commit(closure);
    return true;
  }
  // The prospective order: scheduled, the closure, the rest in program
  // order.
  llvm::BitVector taken = scheduled;
  SmallVector<unsigned> ids;
  ids.reserve(size);
  for (unsigned scheduledNode : order)
    ids.push_back(modelIds[scheduledNode]);
  for (unsigned closureNode : closure) {
    ids.push_back(modelIds[closureNode]);
    taken.set(closureNode);
  }
  for (unsigned rest = 0; rest < size; ++rest)
    if (!taken[rest])
      ids.push_back(modelIds[rest]);
  if (!schedule.tryReorderIds(segment, ids))
    return false;
  commit(closure);
  return true;
}

void OverlapScheduler::scheduleRequired(unsigned node) {
  while (!scheduled[node]) {
    if (isReady(node) && tryMove(node))
      return;
    scheduleNextInProgramOrder();
  }
}

void OverlapScheduler::scheduleRequired(ArrayRef<unsigned> nodes) {
  for (unsigned node : nodes)
    if (!scheduled[node] && !isFree(node))
      scheduleRequired(node);
}

void OverlapScheduler::run() {
  ArrayRef<unsigned> comms = graph.getCommunication();
  if (comms.empty())
    return;
  // Every collective depends on the one before it, so the ancestors of
  // collective k contain those of k - 1 and the descendants of k - 1 those
  // of k. Two numbers per node say it all, in time linear in the graph:
  // - earliestComm: the first collective the node feeds (it is an ancestor
  //   of collective k iff earliestComm <= k);
  // - latestComm: one more than the last collective it depends on (it is a
  //   descendant of collective k iff latestComm > k; 0: none).
  unsigned numComms = comms.size();
  earliestComm.assign(size, numComms);
  for (unsigned k = 0; k < numComms; ++k) {
    // Ancestors already numbered have all their ancestors numbered too.
    SmallVector<unsigned> worklist = {comms[k]};
    while (!worklist.empty()) {
      unsigned current = worklist.pop_back_val();
      for (unsigned pred : graph.getPredecessors(current))
        if (earliestComm[pred] == numComms) {
          earliestComm[pred] = k;
          worklist.push_back(pred);
        }
    }
  }
  SmallVector<unsigned> commIndex(size, numComms);
  for (unsigned k = 0; k < numComms; ++k)
    commIndex[comms[k]] = k;
  SmallVector<unsigned> latestComm(size, 0);
  for (unsigned node = 0; node < size; ++node)
    for (unsigned pred : graph.getPredecessors(node))
      latestComm[node] =
          std::max({latestComm[node], latestComm[pred],
                    commIndex[pred] < numComms ? commIndex[pred] + 1 : 0u});
  // The new ancestors of each collective, and the compute ops by the
  // collective from which on step 2 may take them, in program order.
  SmallVector<SmallVector<unsigned>> newAncestors(numComms + 1),
      eligibleFrom(numComms + 2);
  for (unsigned node = 0; node < size; ++node) {
    newAncestors[earliestComm[node]].push_back(node);
    if (resources[node] == OpResource::Compute)
      eligibleFrom[latestComm[node] + 1].push_back(node);
  }
  unsigned eligibleAdded = 0;

  scheduleRequired(newAncestors.front());
  scheduleRequired(comms.front());

  double rolledOver = 0;
  SmallVector<unsigned> skippedAt(size, 0);
  for (unsigned k = 1; k < comms.size(); ++k) {
    unsigned prev = comms[k - 1], next = comms[k];
    // Step 1: what the next collective needs and the pending one does not
    // feed. (What earlier collectives need is scheduled already.)
    SmallVector<unsigned> needed;
    for (unsigned node : newAncestors[k])
      if (latestComm[node] < k)
        needed.push_back(node);
    double total = rolledOver;
    for (unsigned node : needed)
      if (!scheduled[node] && !isFree(node))
        total += costs[node];
    scheduleRequired(needed);
    double step1 = total;

    // Step 2: more compute independent of the pending collective while it
    // is modelled to be running. A synchronous one cannot be overlapped,
    // nor one whose waits are already scheduled.
    for (; eligibleAdded <= k; ++eligibleAdded)
      for (unsigned node : eligibleFrom[eligibleAdded])
        if (!scheduled[node])
          eligible.insert({earliestComm[node], node});
    double prevCost = costs[prev];
    bool pending = isa<AsyncStartOp>(graph.getOp(prev)) &&
                   llvm::any_of(graph.getSuccessors(prev), [&](unsigned succ) {
                     return isa<WaitOp>(graph.getOp(succ)) && !scheduled[succ];
                   });
    if (pending && total < prevCost) {
      while (total < prevCost) {
        // The ready one feeding the earliest collective, ties to program
        // order.
        std::optional<unsigned> best;
        for (auto [feeds, node] : eligible)
          if (skippedAt[node] != k && isReady(node)) {
            best = node;
            break;
          }
        if (!best)
          break;
        double cost = costs[*best];
        // Less than half of it would overlap the pending collective.
        if (prevCost - total <= cost / 2 || !tryMove(*best)) {
          skippedAt[*best] = k;
          continue;
        }
        total += cost;
      }
    }
    double rollable = total - step1;

    // Step 3: the rest the next collective needs; step 4: the collective.
    bool blocked = false;
    for (unsigned node : newAncestors[k])
      blocked |= !scheduled[node] && !isFree(node);
    scheduleRequired(newAncestors[k]);
    scheduleRequired(next);
    rolledOver = blocked ? 0 : rollable;
  }
  while (nextInProgramOrder < size)
    scheduleNextInProgramOrder();
  applyToSchedule();
}

void OverlapScheduler::applyToSchedule() {
  SmallVector<unsigned> ids;
  for (unsigned node : order)
    ids.push_back(modelIds[node]);
  // The moves were checked one by one; what followed them kept program
  // order, so the final order is the last prospective one.
  schedule.tryReorderIds(segment, ids);
}

namespace {

struct ReorderComputeForOverlapPass
    : dtensor::impl::ReorderComputeForOverlapPassBase<
          ReorderComputeForOverlapPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<std::unique_ptr<CostEstimator>> estimator =
        getTargetCostEstimator(getOperation());
    if (failed(estimator))
      return signalPassFailure();
    sched::MemoryBudget budget(memoryBudget);
    sched::rescheduleFunctions(
        getOperation(), getArgument(), budget, reportMemory,
        [&](Block &body, sched::BlockSchedule &schedule,
            const sched::BlockSchedule::Segment &segment) {
          OverlapScheduler(body, schedule, segment, **estimator).run();
        });
  }
};

} // namespace
