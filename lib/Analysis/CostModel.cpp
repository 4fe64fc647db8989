//===- CostModel.cpp - the shared communication/compute cost model --------===//
//
// Collectives follow NCCL's analytical tuning model: for each algorithm
// (ring, tree; point-to-point for all_to_all and permute) and protocol (LL,
// LL128, Simple) the time of a collective of B bytes is
//
//   time [us] = latency [us] + B [bytes] / (1e3 * algBw [GB/s])
//
// where the latency is a base latency plus per-step link latencies and the
// algorithm bandwidth is a bus bandwidth (the link rate a protocol reaches)
// times the ratio of the algorithm (how many times each byte of the buffer
// crosses a rank's link). The model takes the fastest enabled pair, as NCCL
// does when it picks an algorithm and protocol for a call. The constants of
// the tables are NCCL's own (src/graph/tuning.cc, Hopper rows); the link
// rates and node sizes come from the HardwareModel. docs/cost-model.md has
// the derivation and what is left out.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/CostModel.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>

using namespace mlir::dtensor;

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

/// NCCL's Hopper tuning constants. Latencies in us: rows Tree, Ring; columns
/// LL, LL128, Simple. Ceilings in GB/s by scale (one node, two, more).
static CollectiveTuning hopperNcclTuning() {
  CollectiveTuning t;
  t.baseLatencyUs = {{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}}};
  t.intraLatencyUs = {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}}};
  t.netLatencyUs = {{{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}}};
  t.netOverheadUs = 1.0;
  t.llMaxBusBandwidthGBps = {141.0, 45.0, 35.0};
  t.ringLL128MaxChannelGBps = {36.7, 36.7, 36.7};
  t.treeLL128MaxChannelGBps = {36.7, 36.7, 29.0};
  t.treeMaxChannelGBps = {38.7, 41.4, 36.0};
  // NVLink 4 rings on an 8-GPU NVSwitch node run on 16 channels.
  t.channels = 16;
  // Calibrated to the NCCL calls of shared/bench/ANCHOR_RESULTS.md
  // (all_gather and reduce_scatter of 32 to 256 MiB over 2 and 4 H200s,
  // CUDA events around each call): the values minimise the largest relative
  // error (within 8% on all twelve rows; docs/cost-model.md), with a 3-rank
  // group no faster than a pair.
  t.simpleOverheadUs = 11.0;
  t.gatherScatterEfficiency = {0.69, 0.92};
  return t;
}

HardwareModel HardwareModel::h100() {
  // Same GH100 die, clocks and NVLink 4 as the H200, with 3.35 TB/s HBM3
  // instead of 4.8 TB/s HBM3e. Measured on the lent H100 80GB HBM3
  // (ANCHOR_RESULTS.md, "Per-rank compute"; bench/gpu_rank): PyTorch bf16
  // matmuls of the TP MLP's shapes at 593 to 747 TFLOP/s, geometric mean
  // 670; a device copy at 3.0 TB/s counting read and write. NVLink 4 and
  // NCCL as on the H200 (bus bandwidth 300 GB/s of 450 GB/s per direction).
  // Across nodes: one 400 Gb/s NDR port per GPU (50 GB/s), of which NCCL
  // reaches about 45 GB/s.
  HardwareModel hw;
  hw.name = "h100";
  hw.intraNodeBandwidthGBps = 300;
  hw.interNodeBandwidthGBps = 45;
  hw.memoryBandwidthGBps = 3000;
  hw.matmulTflops = 670;
  hw.ranksPerNode = 8;
  hw.nccl = hopperNcclTuning();
  return hw;
}

HardwareModel HardwareModel::h200() {
  // Measured on the lent H200s (ANCHOR_RESULTS.md): the twelve PyTorch bf16
  // matmuls of the TP=2 and TP=4 rows at 650 to 754 TFLOP/s, geometric mean
  // 705; device copy ~4.3 TB/s counting read and write; NCCL all_reduce of
  // 256 MB over an NVLink pair 300 GB/s bus bandwidth.
  HardwareModel hw = h100();
  hw.name = "h200";
  hw.memoryBandwidthGBps = 4300;
  hw.matmulTflops = 705;
  return hw;
}

HardwareModel HardwareModel::cpu() {
  // MPI over shared memory: one protocol and the ring only, 5 us per call,
  // 1 us per step, 5 GB/s.
  HardwareModel hw;
  hw.name = "cpu";
  hw.intraNodeBandwidthGBps = 5;
  hw.interNodeBandwidthGBps = 1;
  hw.memoryBandwidthGBps = 10;
  hw.matmulTflops = 0.05;
  hw.ranksPerNode = 1024;
  CollectiveTuning &t = hw.nccl;
  for (auto &row : t.baseLatencyUs)
    row.fill(5.0);
  for (auto &row : t.intraLatencyUs)
    row.fill(1.0);
  for (auto &row : t.netLatencyUs)
    row.fill(10.0);
  t.netOverheadUs = 0;
  t.llMaxBusBandwidthGBps.fill(5.0);
  t.ringLL128MaxChannelGBps.fill(5.0);
  t.treeLL128MaxChannelGBps.fill(5.0);
  t.treeMaxChannelGBps.fill(5.0);
  t.channels = 1;
  t.protocolEnabled = {false, false, true};
  t.algorithmEnabled = {false, true};
  return hw;
}

std::optional<HardwareModel> HardwareModel::byName(llvm::StringRef name) {
  if (name == "h100")
    return h100();
  if (name == "h200")
    return h200();
  if (name == "cpu")
    return cpu();
  return std::nullopt;
}

llvm::StringRef HardwareModel::presetNames() { return "h100, h200, cpu"; }

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

llvm::StringRef mlir::dtensor::stringifyCollectiveKind(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Permute:
    return "permute";
  case CollectiveKind::Broadcast:
    return "broadcast";
  }
  return "unknown";
}

llvm::StringRef
mlir::dtensor::stringifyCollectiveAlgorithm(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case CollectiveAlgorithm::Tree:
    return "tree";
  case CollectiveAlgorithm::Ring:
    return "ring";
  case CollectiveAlgorithm::PointToPoint:
    return "p2p";
  }
  return "unknown";
}

llvm::StringRef
mlir::dtensor::stringifyCollectiveProtocol(CollectiveProtocol protocol) {
  switch (protocol) {
  case CollectiveProtocol::LL:
    return "ll";
  case CollectiveProtocol::LL128:
    return "ll128";
  case CollectiveProtocol::Simple:
    return "simple";
  }
  return "unknown";
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

CollectiveGroup CollectiveGroup::contiguous(const HardwareModel &hw,
                                            int64_t ranks) {
  CollectiveGroup group;
  group.ranks = std::max<int64_t>(ranks, 1);
  int64_t perNode = std::max<int64_t>(hw.ranksPerNode, 1);
  group.nodes = llvm::divideCeil(group.ranks, perNode);
  group.ranksPerNode = std::min(group.ranks, perNode);
  return group;
}

CollectiveGroup mlir::dtensor::meshGroup(const HardwareModel &hw,
                                         llvm::ArrayRef<int64_t> meshShape,
                                         llvm::ArrayRef<int64_t> axes) {
  // Row-major strides of the mesh; the group of rank 0 is every combination
  // of coordinates along `axes` with the other coordinates 0.
  int64_t rank = meshShape.size();
  llvm::SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * std::max<int64_t>(meshShape[d + 1], 1);
  llvm::SmallVector<int64_t> members = {0};
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank)
      continue;
    llvm::SmallVector<int64_t> next;
    for (int64_t base : members)
      for (int64_t i = 0; i < meshShape[axis]; ++i)
        next.push_back(base + i * strides[axis]);
    members = std::move(next);
  }
  int64_t perNode = std::max<int64_t>(hw.ranksPerNode, 1);
  llvm::DenseMap<int64_t, int64_t> perNodeCount;
  for (int64_t member : members)
    ++perNodeCount[member / perNode];
  CollectiveGroup group;
  group.ranks = members.size();
  group.nodes = perNodeCount.size();
  group.ranksPerNode = 1;
  for (const auto &entry : perNodeCount)
    group.ranksPerNode = std::max(group.ranksPerNode, entry.second);
  return group;
}

//===----------------------------------------------------------------------===//
// The NCCL model
//===----------------------------------------------------------------------===//

// Protocol efficiencies of NCCL's tuning model (dimensionless): LL carries
// 8 bytes of data per 16-byte line (0.5); LL128 120 of 128 bytes, rounded by
// NCCL to 0.92; a tree reaches 0.92 of the link; tree LL 1/3.8; tree LL128
// 7/9 inside a node and 120/128 across nodes.
static constexpr double kRingLLEfficiency = 0.5;
static constexpr double kLL128Efficiency = 0.92;
static constexpr double kTreeEfficiency = 0.92;
static constexpr double kTreeLLEfficiency = 1.0 / 3.8;
static constexpr double kTreeLL128IntraEfficiency = 7.0 / 9.0;
static constexpr double kTreeLL128InterEfficiency = 120.0 / 128.0;
/// A tree moves every byte up and down: algorithm bandwidth is half the bus
/// bandwidth.
static constexpr double kTreeRatio = 0.5;
/// NCCL's measured correction of tree bandwidth by message size, indexed by
/// floor(log2(bytes / 64)); rows LL, LL128, Simple.
static constexpr double kTreeCorrection[kNumCollectiveProtocols][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

static double treeCorrection(CollectiveProtocol protocol, int64_t bytes) {
  int64_t units = bytes >> 6;
  if (units <= 0)
    return 1.0;
  unsigned logSize = llvm::Log2_64(units);
  if (logSize >= 24)
    return 1.0;
  return kTreeCorrection[static_cast<int>(protocol)][logSize];
}

namespace {
/// What every (algorithm, protocol) formula needs about the group.
struct GroupShape {
  double n;
  int64_t ranks, nodes, ranksPerNode;
  /// Index of NCCL's scale columns: one node, two, more.
  int scale;
  bool multiNode;
};
} // namespace

/// The bus bandwidth a ring reaches with `protocol` over links of
/// `linkGBps`, GB/s.
static double ringBusBandwidth(const CollectiveTuning &t, const GroupShape &g,
                               double linkGBps, CollectiveProtocol protocol) {
  switch (protocol) {
  case CollectiveProtocol::LL:
    return std::min(t.llMaxBusBandwidthGBps[g.scale],
                    linkGBps * kRingLLEfficiency);
  case CollectiveProtocol::LL128:
    return std::min(linkGBps * kLL128Efficiency,
                    t.channels * t.ringLL128MaxChannelGBps[g.scale]);
  case CollectiveProtocol::Simple:
    return linkGBps;
  }
  return linkGBps;
}

/// Latency of one intra-node step of a ring or point-to-point transfer, us.
/// Inter-node rings pay the network proxy overhead on every step (three
/// times with Simple).
static double intraStepLatency(const CollectiveTuning &t, const GroupShape &g,
                               CollectiveProtocol protocol) {
  double latency = t.intraLatency(CollectiveAlgorithm::Ring, protocol);
  if (!g.multiNode)
    return latency;
  double overhead = t.netOverheadUs;
  if (protocol == CollectiveProtocol::Simple)
    overhead *= 3;
  return std::max(latency, overhead);
}

/// Latency of one inter-node step of a ring, us. With one rank per node the
/// latencies are fully exposed and NCCL uses the tree's network latency.
static double interStepLatency(const CollectiveTuning &t, const GroupShape &g,
                               CollectiveProtocol protocol) {
  return g.ranksPerNode == 1
             ? t.netLatency(CollectiveAlgorithm::Tree, protocol)
             : t.netLatency(CollectiveAlgorithm::Ring, protocol);
}

static std::optional<CollectiveEstimate>
estimateRing(const HardwareModel &hw, CollectiveKind kind, const GroupShape &g,
             CollectiveProtocol protocol) {
  const CollectiveTuning &t = hw.nccl;
  double link =
      g.multiNode ? hw.interNodeBandwidthGBps : hw.intraNodeBandwidthGBps;
  // all_gather and reduce_scatter inside a node reach a measured fraction of
  // the link rate that depends on the group size (calibration).
  if (!g.multiNode && (kind == CollectiveKind::AllGather ||
                       kind == CollectiveKind::ReduceScatter))
    link *= t.gatherScatterEfficiency[g.ranks == 2 ? 0 : 1];
  double busBw = ringBusBandwidth(t, g, link, protocol);
  // Steps of the ring (each a chunk of B/n over one link) and how many of
  // them cross a node boundary. all_gather and reduce_scatter: n-1 steps,
  // all_reduce: 2(n-1) (a reduce_scatter then an all_gather); broadcast is a
  // pipelined chain of n-1 hops along which every byte travels once.
  double steps = 0, interSteps = 0, ratio = 1;
  switch (kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
    steps = g.n - 1;
    interSteps = g.multiNode ? g.nodes - 1 : 0;
    ratio = g.n / steps;
    break;
  case CollectiveKind::AllReduce:
    steps = 2 * (g.n - 1);
    interSteps = g.multiNode ? 2 * (g.nodes - 1) : 0;
    ratio = g.n / steps;
    break;
  case CollectiveKind::Broadcast:
    steps = g.n - 1;
    interSteps = g.multiNode ? g.nodes - 1 : 0;
    ratio = 1;
    break;
  case CollectiveKind::AllToAll:
  case CollectiveKind::Permute:
    return std::nullopt;
  }
  CollectiveEstimate estimate;
  estimate.algorithm = CollectiveAlgorithm::Ring;
  estimate.protocol = protocol;
  estimate.algBandwidthGBps = busBw * ratio;
  estimate.latencyUs = t.baseLatency(CollectiveAlgorithm::Ring, protocol) +
                       (steps - interSteps) * intraStepLatency(t, g, protocol) +
                       interSteps * interStepLatency(t, g, protocol);
  return estimate;
}

static std::optional<CollectiveEstimate>
estimateTree(const HardwareModel &hw, CollectiveKind kind, int64_t bytes,
             const GroupShape &g, CollectiveProtocol protocol) {
  if (kind != CollectiveKind::AllReduce)
    return std::nullopt;
  const CollectiveTuning &t = hw.nccl;
  double link =
      g.multiNode ? hw.interNodeBandwidthGBps : hw.intraNodeBandwidthGBps;
  double busBw = std::min(link * kTreeEfficiency,
                          t.channels * t.treeMaxChannelGBps[g.scale]);
  if (protocol == CollectiveProtocol::LL)
    busBw =
        std::min(busBw * kTreeLLEfficiency, t.llMaxBusBandwidthGBps[g.scale]);
  if (protocol == CollectiveProtocol::LL128)
    busBw = std::min(busBw * (g.multiNode ? kTreeLL128InterEfficiency
                                          : kTreeLL128IntraEfficiency),
                     t.channels * t.treeLL128MaxChannelGBps[g.scale]);
  CollectiveEstimate estimate;
  estimate.algorithm = CollectiveAlgorithm::Tree;
  estimate.protocol = protocol;
  estimate.algBandwidthGBps =
      busBw * kTreeRatio * treeCorrection(protocol, bytes);
  // Up and down the tree: a chain through the node's ranks and a binary
  // tree of depth log2(nodes) across nodes.
  double intraHops = static_cast<double>(g.ranksPerNode - 1);
  double interHops = g.nodes > 1 ? llvm::Log2_64(g.nodes) : 0;
  estimate.latencyUs =
      t.baseLatency(CollectiveAlgorithm::Tree, protocol) +
      2 * (intraHops * t.intraLatency(CollectiveAlgorithm::Tree, protocol) +
           interHops * t.netLatency(CollectiveAlgorithm::Tree, protocol));
  return estimate;
}

/// all_to_all and permute as point-to-point sends (NCCL runs them as grouped
/// send/recv with the LL or Simple protocol). A permute sends the buffer to
/// one peer, over the network when the group spans nodes. An all_to_all
/// sends B/n to each of n-1 peers, the ones on the node over NVLink and the
/// others over the network at the same time; each peer costs a step latency.
static std::optional<CollectiveEstimate>
estimatePointToPoint(const HardwareModel &hw, CollectiveKind kind,
                     int64_t bytes, const GroupShape &g,
                     CollectiveProtocol protocol) {
  if (protocol == CollectiveProtocol::LL128)
    return std::nullopt;
  const CollectiveTuning &t = hw.nccl;
  double intraBw = ringBusBandwidth(t, g, hw.intraNodeBandwidthGBps, protocol);
  double interBw = ringBusBandwidth(t, g, hw.interNodeBandwidthGBps, protocol);
  double intraHop = intraStepLatency(t, g, protocol);
  double interHop = t.netLatency(CollectiveAlgorithm::Ring, protocol);
  double base = t.baseLatency(CollectiveAlgorithm::PointToPoint, protocol);
  double b = static_cast<double>(bytes);
  double transferUs = 0;
  CollectiveEstimate estimate;
  estimate.algorithm = CollectiveAlgorithm::PointToPoint;
  estimate.protocol = protocol;
  switch (kind) {
  case CollectiveKind::Permute: {
    double bw = g.multiNode ? interBw : intraBw;
    estimate.latencyUs = base + (g.multiNode ? interHop : intraHop);
    transferUs = b / (1e3 * bw);
    break;
  }
  case CollectiveKind::AllToAll: {
    double intraPeers = static_cast<double>(g.ranksPerNode - 1);
    double interPeers = g.n - g.ranksPerNode;
    double chunk = b / g.n;
    estimate.latencyUs = base + intraPeers * intraHop + interPeers * interHop;
    transferUs = std::max(intraPeers * chunk / (1e3 * intraBw),
                          interPeers * chunk / (1e3 * interBw));
    break;
  }
  default:
    return std::nullopt;
  }
  // Express the transfer as a bandwidth over the buffer size.
  estimate.algBandwidthGBps = transferUs > 0 ? b / (1e3 * transferUs) : 0;
  estimate.timeUs = estimate.latencyUs + transferUs;
  return estimate;
}

std::optional<CollectiveEstimate> mlir::dtensor::estimateCollectiveWith(
    const HardwareModel &hw, CollectiveKind kind, int64_t bytes,
    CollectiveGroup group, CollectiveAlgorithm algorithm,
    CollectiveProtocol protocol) {
  if (group.ranks <= 1)
    return std::nullopt;
  if (!hw.nccl.enabled(protocol) || !hw.nccl.enabled(algorithm))
    return std::nullopt;
  bytes = std::max<int64_t>(bytes, 0);
  GroupShape g;
  g.ranks = group.ranks;
  g.n = static_cast<double>(group.ranks);
  g.nodes = std::clamp<int64_t>(group.nodes, 1, group.ranks);
  g.ranksPerNode = std::clamp<int64_t>(
      group.ranksPerNode, llvm::divideCeil(group.ranks, g.nodes), group.ranks);
  g.multiNode = g.nodes > 1;
  g.scale = g.nodes == 1 ? 0 : g.nodes == 2 ? 1 : 2;

  bool pointToPoint =
      kind == CollectiveKind::AllToAll || kind == CollectiveKind::Permute;
  if (pointToPoint != (algorithm == CollectiveAlgorithm::PointToPoint))
    return std::nullopt;
  std::optional<CollectiveEstimate> estimate;
  switch (algorithm) {
  case CollectiveAlgorithm::PointToPoint:
    estimate = estimatePointToPoint(hw, kind, bytes, g, protocol);
    if (estimate && protocol == CollectiveProtocol::Simple) {
      estimate->latencyUs += hw.nccl.simpleOverheadUs;
      estimate->timeUs += hw.nccl.simpleOverheadUs;
    }
    return estimate;
  case CollectiveAlgorithm::Ring:
    estimate = estimateRing(hw, kind, g, protocol);
    break;
  case CollectiveAlgorithm::Tree:
    estimate = estimateTree(hw, kind, bytes, g, protocol);
    break;
  }
  if (!estimate || estimate->algBandwidthGBps <= 0)
    return std::nullopt;
  if (protocol == CollectiveProtocol::Simple)
    estimate->latencyUs += hw.nccl.simpleOverheadUs;
  estimate->timeUs =
      estimate->latencyUs +
      static_cast<double>(bytes) / (1e3 * estimate->algBandwidthGBps);
  return estimate;
}

std::optional<CollectiveEstimate>
mlir::dtensor::estimateCollective(const HardwareModel &hw, CollectiveKind kind,
                                  int64_t bytes, CollectiveGroup group) {
  std::optional<CollectiveEstimate> best;
  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree,
        CollectiveAlgorithm::PointToPoint}) {
    for (CollectiveProtocol protocol :
         {CollectiveProtocol::LL, CollectiveProtocol::LL128,
          CollectiveProtocol::Simple}) {
      std::optional<CollectiveEstimate> estimate =
          estimateCollectiveWith(hw, kind, bytes, group, algorithm, protocol);
      if (estimate && (!best || estimate->timeUs < best->timeUs))
        best = estimate;
    }
  }
  return best;
}

double mlir::dtensor::collectiveTimeUs(const HardwareModel &hw,
                                       CollectiveKind kind, int64_t bytes,
                                       CollectiveGroup group) {
  std::optional<CollectiveEstimate> estimate =
      estimateCollective(hw, kind, bytes, group);
  return estimate ? estimate->timeUs : 0;
}

double mlir::dtensor::collectiveTimeUs(const HardwareModel &hw,
                                       CollectiveKind kind, int64_t bytes,
                                       int64_t groupSize) {
  if (groupSize <= 1)
    return 0;
  return collectiveTimeUs(hw, kind, bytes,
                          CollectiveGroup::contiguous(hw, groupSize));
}

double mlir::dtensor::memoryTimeUs(const HardwareModel &hw, int64_t bytes) {
  // bytes / (GB/s) = bytes / (1e3 bytes per us).
  return bytes / (hw.memoryBandwidthGBps * 1e3);
}

double mlir::dtensor::computeTimeUs(const HardwareModel &hw, double flops,
                                    int64_t bytes) {
  // flops / (TFLOP/s) = flops / (1e6 flop per us).
  return std::max(flops / (hw.matmulTflops * 1e6), memoryTimeUs(hw, bytes));
}

//===----------------------------------------------------------------------===//
// Fused collective + matmul
//===----------------------------------------------------------------------===//

double mlir::dtensor::matmulTimeUs(const HardwareModel &hw, int64_t rows,
                                   int64_t k, int64_t n, int64_t elementBytes) {
  double flops = 2.0 * double(rows) * double(k) * double(n);
  return computeTimeUs(hw, flops, (rows * k + k * n + rows * n) * elementBytes);
}

FusedMatmulEstimate mlir::dtensor::estimateAllGatherMatmul(
    const HardwareModel &hw, const FusedMatmulShape &s, bool assembleGathered) {
  FusedMatmulEstimate e;
  e.groupSize = s.groupSize;
  if (s.groupSize < 1)
    return e;
  int64_t chunkRows = llvm::divideCeil(s.rows, s.groupSize);
  e.commUs = collectiveTimeUs(hw, CollectiveKind::AllGather,
                              s.rows * s.k * s.elementBytes, s.groupSize);
  e.stepCommUs =
      collectiveTimeUs(hw, CollectiveKind::Permute,
                       chunkRows * s.k * s.elementBytes, s.groupSize);
  for (int64_t n : s.ns) {
    e.matmulUs += matmulTimeUs(hw, s.rows, s.k, n, s.elementBytes);
    e.stepComputeUs += matmulTimeUs(hw, chunkRows, s.k, n, s.elementBytes);
  }
  if (assembleGathered)
    e.stepComputeUs += memoryTimeUs(hw, 2 * chunkRows * s.k * s.elementBytes);
  return e;
}

FusedMatmulEstimate mlir::dtensor::estimateMatmulReduceScatter(
    const HardwareModel &hw, const FusedMatmulShape &s, bool alongColumns) {
  FusedMatmulEstimate e;
  e.groupSize = s.groupSize;
  if (s.groupSize < 1 || s.ns.empty())
    return e;
  int64_t n = s.ns.front();
  int64_t productBytes = s.rows * n * s.elementBytes;
  int64_t chunkBytes = llvm::divideCeil(productBytes, s.groupSize);
  e.commUs = collectiveTimeUs(hw, CollectiveKind::ReduceScatter, productBytes,
                              s.groupSize);
  e.matmulUs = matmulTimeUs(hw, s.rows, s.k, n, s.elementBytes);
  e.stepCommUs =
      collectiveTimeUs(hw, CollectiveKind::Permute, chunkBytes, s.groupSize);
  // The chunk's partial product, then adding the received accumulator.
  e.stepComputeUs =
      (alongColumns
           ? matmulTimeUs(hw, s.rows, s.k, llvm::divideCeil(n, s.groupSize),
                          s.elementBytes)
           : matmulTimeUs(hw, llvm::divideCeil(s.rows, s.groupSize), s.k, n,
                          s.elementBytes)) +
      memoryTimeUs(hw, 3 * chunkBytes);
  return e;
}
