//===- Redistribute.h - min-cost redistribution planning --------*- C++ -*-===//
//
// A redistribution from one layout to another is planned as a shortest path
// over placement states. Each edge changes the placement of one mesh axis
// and is one collective or one local step:
//
//   S(d) -> R      all_gather        P -> R     all_reduce
//   S(a) -> S(b)   all_to_all        P -> S(d)  reduce_scatter
//   R -> S(d)      local chunk       R -> P     local partition
//   P(sum) <-> P(avg)                 local rescale by the group size
//
// Where one tensor dim is sharded by several mesh axes, the axes split it in
// increasing order; only the last (largest) of them may give the dim up,
// and a new shard may only be appended after the existing ones.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SHARDING_REDISTRIBUTE_H
#define DTENSOR_SHARDING_REDISTRIBUTE_H

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Analysis/CostModel.h"

#include <string>

namespace mlir::dtensor {

/// What one redistribution step does on its mesh axis.
enum class StepKind {
  /// Nothing moves: the axis has one process.
  None,
  AllGather,
  AllReduce,
  ReduceScatter,
  AllToAll,
  /// Replicate -> Shard: take this process's chunk.
  LocalChunk,
  /// Replicate -> Partial: sum divides a float by the group size (an
  /// integer stays on coordinate 0, zero elsewhere), avg/min/max keep.
  LocalPartition,
  /// P(sum) <-> P(avg): each process multiplies its part by the group size
  /// (sum to avg) or divides it (avg to sum, floats only).
  LocalRescale,
};

llvm::StringRef stringifyStepKind(StepKind kind);

/// The step kind that turns `src` into `dst` on one axis of `axisSize`
/// processes, or failure with `why` set if no single step can. With an
/// `elementType`, steps that would be inexact on it fail too (P(avg) ->
/// P(sum) of an integer tensor).
FailureOr<StepKind> classifyStep(PlacementAttr src, PlacementAttr dst,
                                 int64_t axisSize, std::string *why,
                                 Type elementType = {});

struct RedistributeStep {
  int64_t meshAxis;
  StepKind kind;
  LayoutAttr from;
  LayoutAttr to;
  double costUs;
};

struct RedistributePlan {
  SmallVector<RedistributeStep> steps;
  double costUs = 0;
};

/// Plans the cheapest chain of steps from `from` to `to` (same mesh) for a
/// tensor of `globalType`. Fails with `why` set for transitions that have no
/// meaning (Shard or Replicate to Partial(product), mixed Partial ops, ...).
FailureOr<RedistributePlan> planRedistribution(MeshOp mesh,
                                               RankedTensorType globalType,
                                               LayoutAttr from, LayoutAttr to,
                                               const HardwareModel &hw,
                                               std::string *why);

} // namespace mlir::dtensor

#endif // DTENSOR_SHARDING_REDISTRIBUTE_H
