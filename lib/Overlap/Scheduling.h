//===- Scheduling.h - shared machinery of the overlap passes ----*- C++ -*-===//
//
// What the scheduling passes (async-collectives, sink-waits, raise-comms,
// reorder-compute-for-overlap, bucket-collectives) share:
//
// - which ops may move: the top-level ops of a single-block function body,
//   split into segments at barriers (ops with regions other than
//   dtensor.async_start and element-body ops such as linalg, ops with side
//   effects other than the dtensor communication ops, the terminator);
//   nothing crosses a barrier;
// - the dependences between the ops of a segment: data (uses inside regions
//   included) plus a chain through the communication ops (synchronous
//   collectives and async starts), so that no pass changes the order in
//   which a rank issues its collectives;
// - the peak live memory of an order of a block and the budget the passes
//   keep it under, whose baseline each function carries as an attribute;
// - the loop over the schedulable functions of a module, and the run of a
//   reordering pass over their segments;
// - the cost estimator the cost-driven passes build from their options.
//
// docs/scheduling.md describes the passes and their invariants.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_OVERLAP_SCHEDULING_H
#define DTENSOR_LIB_OVERLAP_SCHEDULING_H

#include "dtensor/Analysis/CostEstimator.h"
#include "dtensor/Overlap/Overlap.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <limits>
#include <memory>

namespace mlir::dtensor {

namespace sched {

/// A synchronous collective or a dtensor.async_start: the ops whose
/// relative order every rank must keep.
bool isCommunication(Operation *op);

/// Whether no op may move across `op` (see the file comment). Terminators
/// are barriers.
bool isBarrier(Operation *op);

/// Calls `fn` for every value `op` uses: its operands and the values its
/// regions use that are defined outside `op`.
void forEachUsedValue(Operation *op, function_ref<void(Value)> fn);

/// The ops of `block` (in `order`, a permutation of the block's ops) that
/// `op` depends on through the values it uses.
SmallVector<Operation *> getProducersInBlock(Block &block, Operation *op);

/// Peak live memory of orders of one block, by a liveness walk: a tensor
/// (a block argument or an op result) is live from its definition (the
/// block start for arguments) to its last use; while an op runs, its
/// operands and results are live. The buffer of an async collective is
/// live from its start to the last use of its wait's result (the future
/// and the waited value are one buffer). Sizes count static dims only.
///
/// Ops are numbered in the order of the block when the model is built;
/// orders can be given as ops or as those numbers.
class MemoryModel {
public:
  explicit MemoryModel(Block &block);

  unsigned getNumOps() const { return ops.size(); }
  unsigned getId(Operation *op) const { return ids.lookup(op); }
  Operation *getOp(unsigned id) const { return ops[id]; }

  /// The peak over `order`, which lists every op of the block once. With
  /// `mergedFrom`, `order` omits that op and its values count as defined
  /// and used by `mergedInto` (a prospective coalescing of the two).
  int64_t getPeak(ArrayRef<Operation *> order, Operation *mergedFrom = nullptr,
                  Operation *mergedInto = nullptr) const;
  /// The same with the ops given by number.
  int64_t getPeakOfIds(ArrayRef<unsigned> order,
                       std::optional<unsigned> mergedFrom = std::nullopt,
                       unsigned mergedInto = 0) const;

private:
  struct Buffer {
    int64_t bytes = 0;
    /// The defining op, or none for block arguments.
    std::optional<unsigned> def;
    /// The ops of the block that use the buffer.
    SmallVector<unsigned, 2> users;
  };
  SmallVector<Operation *> ops;
  DenseMap<Operation *, unsigned> ids;
  SmallVector<Buffer> buffers;
  /// Scratch space of getPeakOfIds.
  mutable SmallVector<unsigned> position;
  mutable SmallVector<int64_t> delta;
};

/// The ops of a block in their (prospective) order, split into segments,
/// with the peak-memory limit that reorderings must respect.
class BlockSchedule {
public:
  /// A run of movable ops: indices [begin, end) of the order; `end` is the
  /// index of the barrier that closes it (the terminator for the last).
  struct Segment {
    unsigned begin = 0, end = 0;
  };

  /// The block in its current order, without a limit.
  explicit BlockSchedule(Block &block);

  void setLimit(int64_t limitBytes) { limit = limitBytes; }

  ArrayRef<Segment> getSegments() const { return segments; }
  ArrayRef<Operation *> getOrder() const { return order; }
  ArrayRef<Operation *> getOps(const Segment &segment) const {
    return ArrayRef<Operation *>(order).slice(segment.begin,
                                              segment.end - segment.begin);
  }
  /// The barrier (or terminator) that closes `segment`.
  Operation *getEnd(const Segment &segment) const { return order[segment.end]; }
  const MemoryModel &getModel() const { return model; }
  int64_t getLimit() const { return limit; }
  int64_t getPeak() const { return model.getPeakOfIds(orderIds); }

  /// Replaces the ops of `segment` by `ops`, a permutation of them, if the
  /// peak of the resulting block order stays within the limit; otherwise
  /// counts a refused move and returns false.
  bool tryReorder(const Segment &segment, ArrayRef<Operation *> ops);
  /// The same with the ops given by their number in the memory model.
  bool tryReorderIds(const Segment &segment, ArrayRef<unsigned> ids);
  /// Counts a move refused for the budget.
  void refuse() { ++refused; }
  unsigned getNumRefused() const { return refused; }

  /// Moves the ops of the block into the recorded order.
  void apply();

private:
  MemoryModel model;
  SmallVector<Operation *> order;
  /// `order` by number.
  SmallVector<unsigned> orderIds;
  SmallVector<Segment> segments;
  int64_t limit = std::numeric_limits<int64_t>::max();
  unsigned refused = 0;
};

/// Dependences among the ops of one segment, indexed by their position in
/// the segment: data dependences and the chain of communication ops.
class DependenceGraph {
public:
  DependenceGraph(Block &block, ArrayRef<Operation *> ops);

  unsigned size() const { return ops.size(); }
  Operation *getOp(unsigned node) const { return ops[node]; }
  ArrayRef<unsigned> getPredecessors(unsigned node) const {
    return preds[node];
  }
  ArrayRef<unsigned> getSuccessors(unsigned node) const { return succs[node]; }
  /// The communication ops, in order.
  ArrayRef<unsigned> getCommunication() const { return comms; }

private:
  SmallVector<Operation *> ops;
  SmallVector<SmallVector<unsigned, 4>> preds, succs;
  SmallVector<unsigned> comms;
};

/// The memory-budget bookkeeping of one scheduling pass over a module.
class MemoryBudget {
public:
  /// `fraction`: allowed growth over the baseline peak (negative: none
  /// enforced).
  explicit MemoryBudget(double fraction) : fraction(fraction) {}

  /// The limit for `func`, whose body peaks at `currentPeak` now. The
  /// baseline is `func`'s kMemoryBaselineAttrName, which is set to
  /// `currentPeak` where it is missing.
  int64_t getLimit(FunctionOpInterface func, int64_t currentPeak);

private:
  double fraction;
};

/// The single block of `func`'s body, or null for declarations and bodies
/// of several blocks (which the passes leave alone).
Block *getSchedulableBody(FunctionOpInterface func);

/// Emits the `report-memory` remark of pass `passName` on `func`.
void reportMemory(FunctionOpInterface func, StringRef passName, int64_t before,
                  int64_t after, const BlockSchedule &schedule);

/// The function loop of a scheduling pass: calls `fn` for each function of
/// `module` with a schedulable body, with the schedule of that body in its
/// current order, limited by `budget` (which records the function's
/// baseline where it has none), and the peak of that order.
void forEachSchedulableFunction(
    ModuleOp module, MemoryBudget &budget,
    function_ref<void(FunctionOpInterface func, Block &body,
                      BlockSchedule &schedule, int64_t peakBefore)>
        fn);

/// The run of a reordering pass: `scheduleSegment` on every segment of every
/// schedulable function of `module` (forEachSchedulableFunction), then the
/// order it recorded applied to the block, and with `report` the
/// `report-memory` remark of pass `passName`.
void rescheduleFunctions(
    ModuleOp module, StringRef passName, MemoryBudget &budget, bool report,
    function_ref<void(Block &body, BlockSchedule &schedule,
                      const BlockSchedule::Segment &segment)>
        scheduleSegment);


} // namespace sched
} // namespace mlir::dtensor

#endif // DTENSOR_LIB_OVERLAP_SCHEDULING_H
