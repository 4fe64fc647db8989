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
  /// What one rank sends over the interconnect (ring algorithms: (n-1)/n of
  /// the gathered or scattered buffer, twice that for all_reduce); 0 for
  /// local steps.
  int64_t sentBytes = 0;
};

struct RedistributePlan {
  SmallVector<RedistributeStep> steps;
  double costUs = 0;

  /// The bytes one rank sends over all steps, and the number of collectives.
  int64_t getSentBytes() const;
  unsigned getNumCollectives() const;
  /// "all_gather(axis 1), local_chunk(axis 0)"; "nothing" when empty.
  std::string describe() const;
};

/// Plans the cheapest chain of steps from `from` to `to` (same mesh) for a
/// tensor of `globalType`. Fails with `why` set for transitions that have no
/// meaning (Shard or Replicate to Partial(product), mixed Partial ops, ...).
FailureOr<RedistributePlan> planRedistribution(MeshOp mesh,
                                               RankedTensorType globalType,
                                               LayoutAttr from, LayoutAttr to,
                                               const HardwareModel &hw,
                                               std::string *why);

/// PyTorch's default plan for the same redistribution
/// (torch.distributed.tensor's greedy transform infos, see
/// ../shared/reference/pytorch.md, item 14): one step per mesh axis whose
/// placement differs, taken from the innermost axis to the outermost where
/// the source is sharded (an axis whose target shards a tensor dim that
/// outer axes shard differently in source and target is first replicated),
/// then from the outermost axis inwards. Steps are costed by this cost
/// model and kept as PyTorch takes them (an all_to_all on an axis that is
/// not the last to shard its dims included): a yardstick for the planner's
/// choice, not a plan to lower. Fails as planRedistribution does on
/// transitions without meaning.
FailureOr<RedistributePlan>
planRedistributionLikePyTorch(MeshOp mesh, RankedTensorType globalType,
                              LayoutAttr from, LayoutAttr to,
                              const HardwareModel &hw, std::string *why);

} // namespace mlir::dtensor

#endif // DTENSOR_SHARDING_REDISTRIBUTE_H
