//===- Redistribute.cpp - min-cost redistribution planning ----------------===//

#include "dtensor/Sharding/Redistribute.h"
#include "dtensor/Sharding/Layout.h"

#include "llvm/ADT/DenseMap.h"

#include <queue>

using namespace mlir;
using namespace mlir::dtensor;

llvm::StringRef mlir::dtensor::stringifyStepKind(StepKind kind) {
  switch (kind) {
  case StepKind::None:
    return "none";
  case StepKind::AllGather:
    return "all_gather";
  case StepKind::AllReduce:
    return "all_reduce";
  case StepKind::ReduceScatter:
    return "reduce_scatter";
  case StepKind::AllToAll:
    return "all_to_all";
  case StepKind::LocalChunk:
    return "local_chunk";
  case StepKind::LocalPartition:
    return "local_partition";
  case StepKind::LocalRescale:
    return "local_rescale";
  }
  return "unknown";
}

static std::string placementString(PlacementAttr p) {
  switch (p.getKind()) {
  case PlacementKind::Shard:
    return "S(" + std::to_string(p.getDim()) + ")";
  case PlacementKind::Replicate:
    return "R";
  case PlacementKind::Partial:
    return ("P(" + stringifyReduceKind(p.getReduce()) + ")").str();
  }
  return "?";
}

FailureOr<StepKind> mlir::dtensor::classifyStep(PlacementAttr src,
                                                PlacementAttr dst,
                                                int64_t axisSize,
                                                std::string *why,
                                                Type elementType) {
  auto fail = [&](const Twine &message) -> FailureOr<StepKind> {
    if (why)
      *why = (placementString(src) + " -> " + placementString(dst) + ": " +
              message)
                 .str();
    return failure();
  };
  if (dst.isPartial() && src.isShard())
    return fail("a shard cannot become a pending reduction");
  // P(sum) and P(avg) differ by the group size: a local rescale.
  bool rescale = src.isPartial() && dst.isPartial() &&
                 llvm::is_contained({ReduceKind::Sum, ReduceKind::Avg},
                                    src.getReduce()) &&
                 llvm::is_contained({ReduceKind::Sum, ReduceKind::Avg},
                                    dst.getReduce());
  if (dst.isPartial() && src.isPartial() &&
      src.getReduce() != dst.getReduce() && !rescale)
    return fail("mixed Partial reductions have no meaning");
  if (rescale && src.getReduce() == ReduceKind::Avg &&
      dst.getReduce() == ReduceKind::Sum && elementType &&
      !isa<FloatType>(elementType))
    return fail("an integer tensor would divide inexactly");
  if (dst.isPartial() && src.isReplicate() &&
      dst.getReduce() == ReduceKind::Product)
    return fail("a replicated value has no exact product decomposition");
  // Complex values are moved by collectives only: no local step computes
  // on them (a partition divides or selects, a rescale multiplies).
  if (elementType && isa<ComplexType>(elementType) && dst.isPartial() &&
      src != dst && !src.isShard())
    return fail("a complex value has no local partition or rescale");
  if (src == dst || axisSize == 1)
    return StepKind::None;
  if (src.isShard())
    return dst.isReplicate() ? StepKind::AllGather : StepKind::AllToAll;
  if (src.isPartial() && dst.isPartial())
    return StepKind::LocalRescale;
  if (src.isPartial())
    return dst.isReplicate() ? StepKind::AllReduce : StepKind::ReduceScatter;
  return dst.isShard() ? StepKind::LocalChunk : StepKind::LocalPartition;
}

namespace {
/// A search state: the layout reached and how.
struct Node {
  double cost;
  unsigned index;
  bool operator>(const Node &other) const { return cost > other.cost; }
};
} // namespace

/// True if mesh axis `axis` may give up or take a shard of tensor dim `dim`
/// in `layout`: no larger axis shards `dim` (shards stay in axis order).
static bool isLastShardAxis(LayoutAttr layout, int64_t axis, int64_t dim) {
  ArrayRef<PlacementAttr> placements = layout.getPlacements();
  for (int64_t other = axis + 1, e = placements.size(); other < e; ++other)
    if (placements[other].isShard() && placements[other].getDim() == dim)
      return false;
  return true;
}

static int64_t localBytes(MeshOp mesh, RankedTensorType type,
                          LayoutAttr layout) {
  int64_t bytes = getElementBytes(type.getElementType());
  for (int64_t size : getPaddedLocalShape(type.getShape(), layout, mesh))
    bytes *= ShapedType::isDynamic(size) ? 1 : size;
  return bytes;
}

static bool isCollective(StepKind kind) {
  return llvm::is_contained({StepKind::AllGather, StepKind::AllReduce,
                             StepKind::ReduceScatter, StepKind::AllToAll},
                            kind);
}

/// The step from `before` to `after` on `axis`, costed: its time by the
/// cost model and what one rank sends.
static RedistributeStep makeStep(MeshOp mesh, RankedTensorType type,
                                 int64_t axis, StepKind kind,
                                 LayoutAttr before, LayoutAttr after,
                                 const HardwareModel &hw) {
  // A small per-step charge prefers shorter chains among equal costs.
  constexpr double kStepUs = 1e-3;
  int64_t axisSize = mesh.getShape()[axis];
  int64_t in = localBytes(mesh, type, before);
  int64_t out = localBytes(mesh, type, after);
  RedistributeStep step{axis, kind, before, after, kStepUs};
  // Ring algorithms: each rank sends (n-1)/n of the full buffer.
  auto ring = [&](int64_t bytes) { return bytes / axisSize * (axisSize - 1); };
  switch (kind) {
  case StepKind::None:
    break;
  case StepKind::AllGather:
    step.costUs += collectiveTimeUs(hw, CollectiveKind::AllGather, out,
                                    axisSize);
    step.sentBytes = ring(out);
    break;
  case StepKind::ReduceScatter:
    step.costUs += collectiveTimeUs(hw, CollectiveKind::ReduceScatter, in,
                                    axisSize);
    step.sentBytes = ring(in);
    break;
  case StepKind::AllReduce:
    step.costUs += collectiveTimeUs(hw, CollectiveKind::AllReduce, in,
                                    axisSize);
    step.sentBytes = 2 * ring(in);
    break;
  case StepKind::AllToAll:
    step.costUs += collectiveTimeUs(hw, CollectiveKind::AllToAll, in,
                                    axisSize);
    step.sentBytes = ring(in);
    break;
  case StepKind::LocalChunk:
    step.costUs += memoryTimeUs(hw, out);
    break;
  case StepKind::LocalPartition:
  case StepKind::LocalRescale:
    step.costUs += memoryTimeUs(hw, in);
    break;
  }
  return step;
}

int64_t RedistributePlan::getSentBytes() const {
  int64_t bytes = 0;
  for (const RedistributeStep &step : steps)
    bytes += step.sentBytes;
  return bytes;
}

unsigned RedistributePlan::getNumCollectives() const {
  return llvm::count_if(steps, [](const RedistributeStep &step) {
    return isCollective(step.kind);
  });
}

std::string RedistributePlan::describe() const {
  if (steps.empty())
    return "nothing";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(steps, os, [&](const RedistributeStep &step) {
    os << stringifyStepKind(step.kind) << "(axis " << step.meshAxis << ")";
  });
  return text;
}

/// Fails with `why` set where some axis's transition has no meaning.
static LogicalResult checkTransitions(MeshOp mesh, RankedTensorType type,
                                      LayoutAttr from, LayoutAttr to,
                                      std::string *why) {
  if (from.getMesh() != to.getMesh()) {
    if (why)
      *why = "layouts are on different meshes";
    return failure();
  }
  for (auto [axis, pair] :
       llvm::enumerate(llvm::zip(from.getPlacements(), to.getPlacements()))) {
    auto [src, dst] = pair;
    if (failed(classifyStep(src, dst, mesh.getShape()[axis], why,
                            type.getElementType())))
      return failure();
  }
  return success();
}

/// Drops the steps that move nothing (one-process axes) and re-chains the
/// layouts across them.
static void dropEmptySteps(RedistributePlan &plan, LayoutAttr from,
                           LayoutAttr to) {
  llvm::erase_if(plan.steps, [](const RedistributeStep &step) {
    return step.kind == StepKind::None;
  });
  for (size_t i = 1; i < plan.steps.size(); ++i)
    plan.steps[i].from = plan.steps[i - 1].to;
  if (!plan.steps.empty()) {
    plan.steps.front().from = from;
    plan.steps.back().to = to;
  }
}

FailureOr<RedistributePlan> mlir::dtensor::planRedistributionLikePyTorch(
    MeshOp mesh, RankedTensorType globalType, LayoutAttr from, LayoutAttr to,
    const HardwareModel &hw, std::string *why) {
  if (failed(checkTransitions(mesh, globalType, from, to, why)))
    return failure();
  MLIRContext *ctx = mesh.getContext();
  ArrayRef<PlacementAttr> target = to.getPlacements();
  int64_t numAxes = target.size();
  RedistributePlan plan;
  LayoutAttr current = from;
  auto step = [&](int64_t axis, PlacementAttr dst) -> LogicalResult {
    PlacementAttr src = current.getPlacements()[axis];
    if (src == dst)
      return success();
    FailureOr<StepKind> kind = classifyStep(src, dst, mesh.getShape()[axis],
                                            why, globalType.getElementType());
    if (failed(kind))
      return failure();
    LayoutAttr next = withPlacement(current, axis, dst);
    plan.steps.push_back(makeStep(mesh, globalType, axis, *kind, current,
                                  next, hw));
    plan.costUs += plan.steps.back().costUs;
    current = next;
    return success();
  };
  bool sharded = llvm::any_of(from.getPlacements(), [&](PlacementAttr p) {
    return p.isShard();
  });
  if (sharded) {
    for (int64_t axis = numAxes - 1; axis >= 0; --axis) {
      PlacementAttr dst = target[axis];
      if (dst.isShard()) {
        // The outer axes sharding this tensor dim, now and in the target.
        auto outerShards = [&](ArrayRef<PlacementAttr> placements) {
          SmallVector<int64_t> axes;
          for (int64_t outer = 0; outer < axis; ++outer)
            if (placements[outer].isShard() &&
                placements[outer].getDim() == dst.getDim())
              axes.push_back(outer);
          return axes;
        };
        if (outerShards(current.getPlacements()) != outerShards(target))
          dst = PlacementAttr::getReplicate(ctx);
      }
      if (failed(step(axis, dst)))
        return failure();
    }
  }
  for (int64_t axis = 0; axis < numAxes; ++axis)
    if (failed(step(axis, target[axis])))
      return failure();
  dropEmptySteps(plan, from, to);
  return plan;
}

FailureOr<RedistributePlan>
mlir::dtensor::planRedistribution(MeshOp mesh, RankedTensorType globalType,
                                  LayoutAttr from, LayoutAttr to,
                                  const HardwareModel &hw, std::string *why) {
  MLIRContext *ctx = mesh.getContext();
  int64_t rank = globalType.getRank();
  // Reject meaningless transitions up front with a precise reason.
  if (failed(checkTransitions(mesh, globalType, from, to, why)))
    return failure();
  std::optional<ReduceKind> partialKind = to.getPartialKind();
  if (!partialKind)
    partialKind = from.getPartialKind();

  // Candidate placements for every axis.
  SmallVector<PlacementAttr> choices;
  choices.push_back(PlacementAttr::getReplicate(ctx));
  for (int64_t dim = 0; dim < rank; ++dim)
    choices.push_back(PlacementAttr::getShard(ctx, dim));
  if (partialKind)
    choices.push_back(PlacementAttr::getPartial(ctx, *partialKind));

  SmallVector<LayoutAttr> states;
  DenseMap<LayoutAttr, unsigned> indexOf;
  auto stateIndex = [&](LayoutAttr layout) {
    auto [it, inserted] = indexOf.try_emplace(layout, states.size());
    if (inserted)
      states.push_back(layout);
    return it->second;
  };
  SmallVector<double> dist;
  SmallVector<std::optional<RedistributeStep>> via;
  std::priority_queue<Node, std::vector<Node>, std::greater<Node>> queue;

  unsigned start = stateIndex(from);
  dist.assign(1, 0.0);
  via.assign(1, std::nullopt);
  queue.push({0.0, start});
  while (!queue.empty()) {
    Node node = queue.top();
    queue.pop();
    if (node.cost > dist[node.index])
      continue;
    LayoutAttr layout = states[node.index];
    if (layout == to)
      break;
    for (auto [axis, src] : llvm::enumerate(layout.getPlacements())) {
      int64_t axisSize = mesh.getShape()[axis];
      for (PlacementAttr dst : choices) {
        if (dst == src)
          continue;
        // Only move placements towards states that can still reach `to`:
        // Partial may appear only where the target has it.
        if (dst.isPartial() && !to.getPlacements()[axis].isPartial())
          continue;
        if (failed(classifyStep(src, dst, axisSize, nullptr,
                                globalType.getElementType())))
          continue;
        if (src.isShard() && !isLastShardAxis(layout, axis, src.getDim()))
          continue;
        if (dst.isShard() && !isLastShardAxis(layout, axis, dst.getDim()))
          continue;
        StepKind kind = *classifyStep(src, dst, axisSize, nullptr);
        LayoutAttr next = withPlacement(layout, axis, dst);
        // A layout holds one Partial reduction (LAYOUT4): on the way from
        // P(sum) to P(avg) no state mixes them.
        if (mixesPartialReductions(next.getPlacements()))
          continue;
        RedistributeStep step = makeStep(mesh, globalType, axis, kind,
                                         layout, next, hw);
        double cost = node.cost + step.costUs;
        unsigned index = stateIndex(next);
        if (index >= dist.size()) {
          dist.resize(index + 1, std::numeric_limits<double>::infinity());
          via.resize(index + 1);
        }
        if (cost < dist[index]) {
          dist[index] = cost;
          via[index] = step;
          queue.push({cost, index});
        }
      }
    }
  }

  auto goal = indexOf.find(to);
  if (goal == indexOf.end() || goal->second >= dist.size() ||
      std::isinf(dist[goal->second])) {
    if (why)
      *why = "no sequence of collectives reaches the target layout";
    return failure();
  }
  RedistributePlan plan;
  plan.costUs = dist[goal->second];
  for (unsigned index = goal->second; via[index];
       index = indexOf.lookup(via[index]->from))
    plan.steps.push_back(*via[index]);
  std::reverse(plan.steps.begin(), plan.steps.end());
  // Steps on one-process axes move nothing; keep them out of the plan.
  dropEmptySteps(plan, from, to);
  return plan;
}
