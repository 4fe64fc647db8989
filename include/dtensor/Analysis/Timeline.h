//===- Timeline.h - the modelled schedule of a per-rank function -*- C++
//-*-===//
//
// Simulates how one rank executes a per-rank function under a CostEstimator:
// one compute lane that runs ops in program order, and communication
// streams on which collectives run. An async collective runs on its stream
// from its dtensor.async_start until it is done; its dtensor.wait blocks the
// compute lane until then. A synchronous collective also runs on its stream
// and blocks the compute lane until it is done. Collectives of one stream
// run one after another in issue order (NCCL serializes the calls of one
// communicator); different streams run concurrently and do not slow each
// other down (link contention is not modelled).
//
// The time the compute lane spends blocked on communication is the exposed
// communication time; docs/timeline.md describes the model and the pictures
// `dtensor-export-timeline` draws from it.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_ANALYSIS_TIMELINE_H
#define DTENSOR_ANALYSIS_TIMELINE_H

#include "dtensor/Analysis/CostEstimator.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace mlir::dtensor {

/// How collectives are assigned to communication streams.
enum class CommStreams {
  /// One stream per (mesh, mesh_axes) group, as one NCCL communicator (and
  /// its stream) per process group.
  PerGroup,
  /// One stream for all collectives.
  Single,
};

struct TimelineLane {
  /// "compute", or "comm @mesh [axes]" (per group) / "comm" (single).
  std::string name;
  bool isCompute = false;
};

struct TimelineEvent {
  enum class Kind {
    /// An op on the compute lane.
    Compute,
    /// A synchronous collective on its stream.
    Collective,
    /// An asynchronous collective on its stream, from start to done.
    AsyncCollective,
    /// The compute lane waiting for a collective (exposed communication).
    Stall,
  };
  Kind kind = Kind::Compute;
  /// The op name; for stalls, the name of the collective waited for.
  std::string name;
  unsigned lane = 0;
  double startUs = 0;
  double durationUs = 0;
  /// The op (the collective for communication and stalls, the wait for a
  /// stall at a wait).
  Operation *op = nullptr;

  double endUs() const { return startUs + durationUs; }
};

struct Timeline {
  std::string function;
  /// Lane 0 is the compute lane; streams follow in order of first use.
  llvm::SmallVector<TimelineLane> lanes;
  /// Events with a duration above zero, in simulation order.
  std::vector<TimelineEvent> events;
  /// When the last lane finishes.
  double totalUs = 0;
  /// Busy time of the compute lane (stalls excluded).
  double computeUs = 0;
  /// Summed durations of all collectives.
  double commUs = 0;
  /// Time the compute lane is blocked on communication.
  double exposedCommUs = 0;
};

/// Simulates `func`'s body in program order. Ops of region-branching ops
/// (scf.for, scf.if, ...) are visited once, in order, as the comm report
/// does: loops are not multiplied by their trip count. Fails (with a
/// diagnostic) on malformed async ops in unverified IR.
FailureOr<Timeline>
simulateTimeline(FunctionOpInterface func, CostEstimator &estimator,
                 CommStreams streams = CommStreams::PerGroup);

} // namespace mlir::dtensor

#endif // DTENSOR_ANALYSIS_TIMELINE_H
