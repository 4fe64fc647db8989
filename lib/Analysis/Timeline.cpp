//===- Timeline.cpp - the modelled schedule of a per-rank function --------===//
//
// A discrete-event walk over one function: a clock for the compute lane, a
// "free at" time per communication stream and the done time of every
// in-flight async collective.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/Timeline.h"

#include "dtensor/Dialect/DTensor/DTensor.h"

#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::dtensor;

namespace {
class Simulator {
public:
  Simulator(CostEstimator &estimator, CommStreams streams, Timeline &timeline)
      : estimator(estimator), streams(streams), timeline(timeline) {
    timeline.lanes.push_back({"compute", /*isCompute=*/true});
  }

  LogicalResult visitRegion(Region &region);
  void finish();

private:
  LogicalResult visit(Operation *op);
  unsigned streamFor(Operation *collective);
  /// Runs `collective` (of `duration` us) on its stream, issued now;
  /// returns its done time.
  double runCollective(Operation *collective, double duration, bool async);
  /// Blocks the compute lane until `until`, charging the wait to
  /// `collective`.
  void stallUntil(double until, Operation *collective, Operation *at);
  void addEvent(TimelineEvent::Kind kind, StringRef name, unsigned lane,
                double start, double duration, Operation *op);

  CostEstimator &estimator;
  CommStreams streams;
  Timeline &timeline;
  /// The compute lane's clock.
  double now = 0;
  /// Stream lane index by key, and when each lane is free.
  llvm::StringMap<unsigned> streamLanes;
  llvm::DenseMap<unsigned, double> laneFree;
  /// Done time and collective of each async_start.
  llvm::DenseMap<Operation *, std::pair<double, Operation *>> inFlight;
};
} // namespace

void Simulator::addEvent(TimelineEvent::Kind kind, StringRef name,
                         unsigned lane, double start, double duration,
                         Operation *op) {
  if (!(duration > 0))
    return;
  TimelineEvent event;
  event.kind = kind;
  event.name = name.str();
  event.lane = lane;
  event.startUs = start;
  event.durationUs = duration;
  event.op = op;
  timeline.events.push_back(std::move(event));
}

unsigned Simulator::streamFor(Operation *collective) {
  std::string key = "comm";
  if (streams == CommStreams::PerGroup) {
    auto iface = cast<CollectiveOpInterface>(collective);
    llvm::raw_string_ostream os(key);
    os << " @" << iface.getMeshAttr().getValue() << " [";
    llvm::interleaveComma(iface.getMeshAxes(), os);
    os << "]";
  }
  auto [it, inserted] = streamLanes.try_emplace(
      key, static_cast<unsigned>(timeline.lanes.size()));
  if (inserted)
    timeline.lanes.push_back({key, /*isCompute=*/false});
  return it->second;
}

double Simulator::runCollective(Operation *collective, double duration,
                                bool async) {
  duration = std::max(duration, 0.0);
  unsigned lane = streamFor(collective);
  double start = std::max(now, laneFree.lookup(lane));
  double end = start + duration;
  laneFree[lane] = end;
  timeline.commUs += duration;
  addEvent(async ? TimelineEvent::Kind::AsyncCollective
                 : TimelineEvent::Kind::Collective,
           collective->getName().getStringRef(), lane, start, duration,
           collective);
  return end;
}

void Simulator::stallUntil(double until, Operation *collective, Operation *at) {
  if (until <= now)
    return;
  timeline.exposedCommUs += until - now;
  addEvent(TimelineEvent::Kind::Stall, collective->getName().getStringRef(),
           /*lane=*/0, now, until - now, at);
  now = until;
}

LogicalResult Simulator::visitRegion(Region &region) {
  for (Block &block : region)
    for (Operation &op : block)
      if (failed(visit(&op)))
        return failure();
  return success();
}

LogicalResult Simulator::visit(Operation *op) {
  if (op->hasTrait<OpTrait::IsTerminator>())
    return success();

  if (auto start = dyn_cast<AsyncStartOp>(op)) {
    Operation *collective = start.getCollective();
    if (!collective)
      return start.emitError("timeline: malformed dtensor.async_start (its "
                             "body must hold one collective)");
    double end = runCollective(collective, estimator.estimateUs(op),
                               /*async=*/true);
    inFlight[op] = {end, collective};
    return success();
  }

  if (auto wait = dyn_cast<WaitOp>(op)) {
    Operation *start = wait.getFuture().getDefiningOp();
    auto it = start ? inFlight.find(start) : inFlight.end();
    if (it == inFlight.end())
      return wait.emitError("timeline: the future of dtensor.wait does not "
                            "come from a dtensor.async_start before it");
    stallUntil(it->second.first, it->second.second, op);
    // A wait costs nothing unless the estimator says otherwise (a table
    // entry for dtensor.wait).
    double own = estimator.estimateUs(op);
    addEvent(TimelineEvent::Kind::Compute, op->getName().getStringRef(), 0, now,
             own, op);
    timeline.computeUs += std::max(own, 0.0);
    now += std::max(own, 0.0);
    return success();
  }

  if (isa<CollectiveOpInterface>(op)) {
    double end = runCollective(op, estimator.estimateUs(op), /*async=*/false);
    stallUntil(end, op, op);
    return success();
  }

  // Control flow: the ops of every region, once, in order.
  if (isa<RegionBranchOpInterface>(op)) {
    for (Region &region : op->getRegions())
      if (failed(visitRegion(region)))
        return failure();
    return success();
  }

  switch (estimator.classify(op)) {
  case OpResource::Free:
  case OpResource::Wait:
    return success();
  case OpResource::Communication: {
    // Communication the estimator knows of that is not a collective op:
    // blocking, on the single stream named after it.
    unsigned lane;
    auto [it, inserted] = streamLanes.try_emplace(
        "comm", static_cast<unsigned>(timeline.lanes.size()));
    if (inserted)
      timeline.lanes.push_back({"comm", /*isCompute=*/false});
    lane = it->second;
    double duration = std::max(estimator.estimateUs(op), 0.0);
    double start = std::max(now, laneFree.lookup(lane));
    laneFree[lane] = start + duration;
    timeline.commUs += duration;
    addEvent(TimelineEvent::Kind::Collective, op->getName().getStringRef(),
             lane, start, duration, op);
    stallUntil(start + duration, op, op);
    return success();
  }
  case OpResource::Compute: {
    double duration = std::max(estimator.estimateUs(op), 0.0);
    addEvent(TimelineEvent::Kind::Compute, op->getName().getStringRef(), 0, now,
             duration, op);
    timeline.computeUs += duration;
    now += duration;
    return success();
  }
  }
  return success();
}

void Simulator::finish() {
  timeline.totalUs = now;
  for (const auto &entry : laneFree)
    timeline.totalUs = std::max(timeline.totalUs, entry.second);
}

FailureOr<Timeline> mlir::dtensor::simulateTimeline(FunctionOpInterface func,
                                                    CostEstimator &estimator,
                                                    CommStreams streams) {
  Timeline timeline;
  timeline.function = func.getName().str();
  Simulator simulator(estimator, streams, timeline);
  if (!func.isExternal() &&
      failed(simulator.visitRegion(func.getFunctionBody())))
    return failure();
  simulator.finish();
  return timeline;
}
