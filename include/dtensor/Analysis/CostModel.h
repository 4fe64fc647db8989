//===- CostModel.h - the shared communication/compute cost model -*- C++ -*-===//
//
// One cost model serves the redistribution planner, the overlap scheduler
// and the fusion gate. Units: time in microseconds, sizes in bytes,
// bandwidth in GB/s (1e9 bytes per second), compute in TFLOP/s.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_ANALYSIS_COSTMODEL_H
#define DTENSOR_ANALYSIS_COSTMODEL_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::dtensor {

/// What a machine can do, as the cost model sees it.
struct HardwareModel {
  std::string name;
  /// Collective bus bandwidth per rank among ranks of one node.
  double intraNodeBandwidthGBps = 0;
  /// Collective bus bandwidth per rank across nodes.
  double interNodeBandwidthGBps = 0;
  /// Fixed cost of launching one collective.
  double collectiveBaseLatencyUs = 0;
  /// Latency of one step (hop) of a ring algorithm.
  double stepLatencyUs = 0;
  /// Device memory bandwidth, counting read and write.
  double memoryBandwidthGBps = 0;
  /// Dense matmul peak for the working element type.
  double matmulTflops = 0;
  /// Ranks per node: groups larger than this use the inter-node bandwidth.
  int64_t ranksPerNode = 8;

  /// H100 SXM with NVLink.
  static HardwareModel h100();
  /// H200 SXM with NVLink (matmul and copy rates measured on the lent H200).
  static HardwareModel h200();
  /// CPU ranks over shared-memory MPI on one machine.
  static HardwareModel cpu();
  /// A preset by name ("h100", "h200", "cpu"), or std::nullopt.
  static std::optional<HardwareModel> byName(llvm::StringRef name);
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

/// Modelled time of one collective over `groupSize` ranks. `bytes` is the
/// size of the full (largest) buffer: the gathered output of an all_gather,
/// the unscattered input of a reduce_scatter, the buffer of an all_reduce,
/// the per-rank buffer of an all_to_all, permute or broadcast. A group of
/// one rank costs nothing.
double collectiveTimeUs(const HardwareModel &hw, CollectiveKind kind,
                        int64_t bytes, int64_t groupSize);

/// Modelled time of a local pass over memory that reads and writes `bytes`.
double memoryTimeUs(const HardwareModel &hw, int64_t bytes);

/// Roofline time of a computation: max of flops at peak and bytes at memory
/// bandwidth.
double computeTimeUs(const HardwareModel &hw, double flops, int64_t bytes);

} // namespace mlir::dtensor

#endif // DTENSOR_ANALYSIS_COSTMODEL_H
