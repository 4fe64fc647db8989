//===- CostModel.h - the shared communication/compute cost model -*- C++
//-*-===//
//
// One cost model serves the redistribution planner, the overlap scheduler,
// the fusion gate and the timeline export. Units: time in microseconds (us),
// sizes in bytes, bandwidth in GB/s (1e9 bytes per second), compute in
// TFLOP/s (1e12 flop per second).
//
// Collectives follow NCCL's analytical tuning model (the latency and
// bandwidth tables NCCL uses to pick an algorithm and a protocol): for every
// enabled (algorithm, protocol) pair the time is a latency plus the bytes
// over an algorithm bandwidth, and the collective takes the fastest pair, as
// NCCL does. docs/cost-model.md derives the formulas and the presets.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_ANALYSIS_COSTMODEL_H
#define DTENSOR_ANALYSIS_COSTMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace llvm::json {
class Value;
} // namespace llvm::json

namespace mlir::dtensor {

/// The collective algorithms the model distinguishes. Ring serves
/// all_gather, reduce_scatter, all_reduce and broadcast; Tree (a double
/// binary tree across nodes, a chain inside one) serves all_reduce only;
/// all_to_all and permute are point-to-point sends, which NCCL's tuning
/// tables do not cover: they use the Ring rows of the latency tables.
enum class CollectiveAlgorithm { Tree = 0, Ring = 1, PointToPoint = 2 };
/// Algorithms with rows of their own in the tables (Tree and Ring).
inline constexpr int kNumCollectiveAlgorithms = 2;

/// NCCL's wire protocols: LL (8-byte stores with an inline flag, lowest
/// latency, half the bandwidth), LL128 (128-byte lines with a flag, most of
/// the bandwidth, NVLink only), Simple (bulk copies with fences, full
/// bandwidth, highest latency).
enum class CollectiveProtocol { LL = 0, LL128 = 1, Simple = 2 };
inline constexpr int kNumCollectiveProtocols = 3;

llvm::StringRef stringifyCollectiveAlgorithm(CollectiveAlgorithm algorithm);
llvm::StringRef stringifyCollectiveProtocol(CollectiveProtocol protocol);

/// The constants of NCCL's tuning model (src/graph/tuning.cc), per machine.
/// Tables indexed [algorithm][protocol] use the enum values above; tables
/// indexed by scale use NCCL's three columns: a group within one node, over
/// two nodes, over three or more nodes.
struct CollectiveTuning {
  using AlgoProtoTable = std::array<std::array<double, kNumCollectiveProtocols>,
                                    kNumCollectiveAlgorithms>;
  using ScaleTable = std::array<double, 3>;

  /// Fixed latency of one collective (launch and setup), us.
  AlgoProtoTable baseLatencyUs{};
  /// Latency of one step over an intra-node link (NVLink), us.
  AlgoProtoTable intraLatencyUs{};
  /// Latency of one step over the network between nodes, us.
  AlgoProtoTable netLatencyUs{};
  /// Proxy overhead of one step of a ring that spans nodes, us (NCCL charges
  /// three times this with the Simple protocol).
  double netOverheadUs = 0;
  /// Ceiling of the LL protocol's bus bandwidth, GB/s, by scale.
  ScaleTable llMaxBusBandwidthGBps{};
  /// Per-channel ceilings, GB/s, by scale: ring LL128, tree LL128, tree.
  ScaleTable ringLL128MaxChannelGBps{};
  ScaleTable treeLL128MaxChannelGBps{};
  ScaleTable treeMaxChannelGBps{};
  /// Channels (parallel rings/trees, one thread block each) per collective.
  int64_t channels = 1;
  /// Calibration to measured NCCL calls (docs/cost-model.md, "Calibration"):
  /// what a call with the Simple protocol (bulk copies on every channel)
  /// costs beyond NCCL's base latency as a CUDA-event timing around it sees
  /// it, us, added to the latency of every Simple pair.
  double simpleOverheadUs = 0;
  /// The fraction of the intra-node link rate that all_gather and
  /// reduce_scatter reach, for a pair of ranks ([0]) and for groups of three
  /// or more ([1]). NCCL's all_gather and reduce_scatter over an NVLink pair
  /// reach about 0.7 of the bus bandwidth its all_reduce does.
  std::array<double, 2> gatherScatterEfficiency{1.0, 1.0};
  /// Which protocols and algorithms may be picked.
  std::array<bool, kNumCollectiveProtocols> protocolEnabled{true, true, true};
  std::array<bool, kNumCollectiveAlgorithms> algorithmEnabled{true, true};

  /// The table row of an algorithm (point-to-point uses Ring's).
  static int row(CollectiveAlgorithm a) {
    return a == CollectiveAlgorithm::Tree ? 0 : 1;
  }
  double baseLatency(CollectiveAlgorithm a, CollectiveProtocol p) const {
    return baseLatencyUs[row(a)][static_cast<int>(p)];
  }
  double intraLatency(CollectiveAlgorithm a, CollectiveProtocol p) const {
    return intraLatencyUs[row(a)][static_cast<int>(p)];
  }
  double netLatency(CollectiveAlgorithm a, CollectiveProtocol p) const {
    return netLatencyUs[row(a)][static_cast<int>(p)];
  }
  bool enabled(CollectiveProtocol p) const {
    return protocolEnabled[static_cast<int>(p)];
  }
  /// Point-to-point is always available.
  bool enabled(CollectiveAlgorithm a) const {
    return a == CollectiveAlgorithm::PointToPoint || algorithmEnabled[row(a)];
  }
};

/// What a machine can do, as the cost model sees it.
struct HardwareModel {
  std::string name;
  /// Bus bandwidth per rank of a ring with the Simple protocol among ranks
  /// of one node (what nccl-tests reports as busbw for large messages).
  double intraNodeBandwidthGBps = 0;
  /// The same for a ring that crosses nodes (bounded by the network).
  double interNodeBandwidthGBps = 0;
  /// Device memory bandwidth, counting read and write (a copy of B bytes
  /// moves 2B).
  double memoryBandwidthGBps = 0;
  /// Dense matmul rate for the working element type, achievable (not the
  /// datasheet peak).
  double matmulTflops = 0;
  /// Ranks per node: rank r is on node r / ranksPerNode.
  int64_t ranksPerNode = 8;
  /// NCCL's latency tables and bandwidth ceilings.
  CollectiveTuning nccl;

  /// H100 SXM with NVLink 4 and NDR InfiniBand.
  static HardwareModel h100();
  /// H200 SXM with NVLink 4 and NDR InfiniBand (matmul, copy and NCCL rates
  /// measured on the lent H200s).
  static HardwareModel h200();
  /// CPU ranks over shared-memory MPI on one machine.
  static HardwareModel cpu();
  /// A preset by name ("h100", "h200", "cpu"), or std::nullopt.
  static std::optional<HardwareModel> byName(llvm::StringRef name);
  /// The preset names, comma-separated, for diagnostics.
  static llvm::StringRef presetNames();

  /// A hardware description: a JSON object that names a preset ("base") and
  /// overrides any of its fields (see docs/cost-model.md for the keys).
  /// Without "base" it starts from the preset `defaultBase`. Unknown keys,
  /// values of the wrong type and values out of range are errors.
  static llvm::Expected<HardwareModel>
  fromJSON(const llvm::json::Value &value,
           llvm::StringRef defaultBase = "h200");
  /// Reads and parses a hardware description file; errors name the file.
  static llvm::Expected<HardwareModel>
  fromFile(llvm::StringRef path, llvm::StringRef defaultBase = "h200");
};

/// The collective algorithms the model distinguishes.
enum class CollectiveKind {
  AllGather,
  ReduceScatter,
  AllReduce,
  AllToAll,
  Permute,
  Broadcast,
};

llvm::StringRef stringifyCollectiveKind(CollectiveKind kind);

/// The ranks of one collective and how they sit on nodes.
struct CollectiveGroup {
  int64_t ranks = 1;
  /// Nodes the group spans.
  int64_t nodes = 1;
  /// The most ranks of the group on one node.
  int64_t ranksPerNode = 1;
  /// A group of consecutive ranks: ceil(ranks / hw.ranksPerNode) nodes.
  static CollectiveGroup contiguous(const HardwareModel &hw, int64_t ranks);
};

/// The group along `axes` of a row-major mesh of `meshShape`, ranks numbered
/// row-major and placed `hw.ranksPerNode` to a node: its size and the nodes
/// spanned by the group of rank 0 (a [2, 8] mesh on nodes of 8 has groups of
/// 2 over 2 nodes along axis 0 and groups of 8 in one node along axis 1).
/// Axes out of range are ignored.
CollectiveGroup meshGroup(const HardwareModel &hw,
                          llvm::ArrayRef<int64_t> meshShape,
                          llvm::ArrayRef<int64_t> axes);

/// The model's answer for one collective: the fastest algorithm/protocol
/// pair and its parts. timeUs = latencyUs + bytes / (1e3 * algBandwidthGBps).
struct CollectiveEstimate {
  double timeUs = 0;
  double latencyUs = 0;
  /// Bytes per microsecond of the buffer size (bus bandwidth scaled by the
  /// algorithm's ratio, e.g. n / (2(n-1)) for a ring all_reduce), GB/s.
  double algBandwidthGBps = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  CollectiveProtocol protocol = CollectiveProtocol::Simple;
};

/// The fastest enabled (algorithm, protocol) pair for a collective, or
/// std::nullopt when none applies (no enabled protocol, or a group of one
/// rank, which costs nothing). `bytes` as for collectiveTimeUs.
std::optional<CollectiveEstimate> estimateCollective(const HardwareModel &hw,
                                                     CollectiveKind kind,
                                                     int64_t bytes,
                                                     CollectiveGroup group);

/// The time of one (algorithm, protocol) pair, or std::nullopt where NCCL
/// has no such pair (tree for anything but all_reduce, LL128 for
/// point-to-point) or it is disabled.
std::optional<CollectiveEstimate>
estimateCollectiveWith(const HardwareModel &hw, CollectiveKind kind,
                       int64_t bytes, CollectiveGroup group,
                       CollectiveAlgorithm algorithm,
                       CollectiveProtocol protocol);

/// Modelled time of one collective over `group`, us: the fastest pair of
/// estimateCollective; 0 for a group of one rank. `bytes` is the size of
/// the full (largest) buffer: the gathered output of an all_gather, the
/// unscattered input of a reduce_scatter, the buffer of an all_reduce, the
/// per-rank buffer of an all_to_all, permute or broadcast.
double collectiveTimeUs(const HardwareModel &hw, CollectiveKind kind,
                        int64_t bytes, CollectiveGroup group);

/// The same over `groupSize` consecutive ranks (CollectiveGroup::contiguous).
double collectiveTimeUs(const HardwareModel &hw, CollectiveKind kind,
                        int64_t bytes, int64_t groupSize);

/// Modelled time of a local pass over memory that reads and writes `bytes`
/// in total, us.
double memoryTimeUs(const HardwareModel &hw, int64_t bytes);

/// Roofline time of a computation, us: max of `flops` at the matmul rate and
/// `bytes` (read plus written) at memory bandwidth.
double computeTimeUs(const HardwareModel &hw, double flops, int64_t bytes);

/// The shapes a fused collective + matmul's estimate depends on.
struct FusedMatmulShape {
  /// M: the product's rows (all dims but the last).
  int64_t rows = 0;
  int64_t k = 0;
  /// One N per B.
  llvm::SmallVector<int64_t, 2> ns;
  int64_t elementBytes = 0;
  int64_t groupSize = 1;
};

/// The two schedules of a collective + matmul, us: unfused (the whole
/// collective, then the whole matmul) and the ring pipeline of the fused op
/// (docs/fusion.md).
struct FusedMatmulEstimate {
  double commUs = 0;
  double matmulUs = 0;
  double stepCommUs = 0;
  double stepComputeUs = 0;
  int64_t groupSize = 1;

  /// The collective, then (before) the whole matmul.
  double unfusedUs() const { return commUs + matmulUs; }
  /// n steps of chunk compute, each but the last overlapped with one ring
  /// shift: the first chunk's compute fills the pipe, the last one drains
  /// it.
  double pipelinedUs() const {
    return stepComputeUs +
           (groupSize - 1) * std::max(stepCommUs, stepComputeUs);
  }
};

/// Roofline time of one [rows, k] x [k, n] matmul, us.
double matmulTimeUs(const HardwareModel &hw, int64_t rows, int64_t k, int64_t n,
                    int64_t elementBytes);

/// all_gather of A (rows x k gathered) fused with A @ B_i; with
/// `assembleGathered`, each step also copies its chunk into the gathered A.
FusedMatmulEstimate estimateAllGatherMatmul(const HardwareModel &hw,
                                            const FusedMatmulShape &shape,
                                            bool assembleGathered);

/// A @ B (rows x k times k x n) fused with the reduce_scatter of the
/// product, scattered along its columns or its rows.
FusedMatmulEstimate estimateMatmulReduceScatter(const HardwareModel &hw,
                                                const FusedMatmulShape &shape,
                                                bool alongColumns);

} // namespace mlir::dtensor

#endif // DTENSOR_ANALYSIS_COSTMODEL_H
