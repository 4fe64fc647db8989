//===- CostModel.cpp - the shared communication/compute cost model --------===//
//
// Collectives follow the ring algorithms NCCL uses for large messages: an
// all_gather or reduce_scatter moves (n-1)/n of the full buffer through each
// rank's link in n-1 steps, an all_reduce twice that. Latency terms make
// small messages cost their step count.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/CostModel.h"

#include <algorithm>

using namespace mlir::dtensor;

HardwareModel HardwareModel::h100() {
  HardwareModel hw;
  hw.name = "h100";
  hw.intraNodeBandwidthGBps = 300;
  hw.interNodeBandwidthGBps = 45;
  hw.collectiveBaseLatencyUs = 8;
  hw.stepLatencyUs = 0.6;
  hw.memoryBandwidthGBps = 3000;
  hw.matmulTflops = 700;
  hw.ranksPerNode = 8;
  return hw;
}

HardwareModel HardwareModel::h200() {
  HardwareModel hw = h100();
  hw.name = "h200";
  hw.memoryBandwidthGBps = 4300;
  hw.matmulTflops = 790;
  return hw;
}

HardwareModel HardwareModel::cpu() {
  HardwareModel hw;
  hw.name = "cpu";
  hw.intraNodeBandwidthGBps = 5;
  hw.interNodeBandwidthGBps = 1;
  hw.collectiveBaseLatencyUs = 5;
  hw.stepLatencyUs = 1;
  hw.memoryBandwidthGBps = 10;
  hw.matmulTflops = 0.05;
  hw.ranksPerNode = 1024;
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

double mlir::dtensor::collectiveTimeUs(const HardwareModel &hw,
                                       CollectiveKind kind, int64_t bytes,
                                       int64_t groupSize) {
  if (groupSize <= 1)
    return 0;
  double n = static_cast<double>(groupSize);
  double bandwidth = groupSize > hw.ranksPerNode ? hw.interNodeBandwidthGBps
                                                 : hw.intraNodeBandwidthGBps;
  // bytes / (GB/s) in microseconds.
  auto transfer = [&](double b) { return b / (bandwidth * 1e3); };
  double steps = 0, moved = 0;
  switch (kind) {
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    steps = n - 1;
    moved = (n - 1) / n * bytes;
    break;
  case CollectiveKind::AllReduce:
    steps = 2 * (n - 1);
    moved = 2 * (n - 1) / n * bytes;
    break;
  case CollectiveKind::Permute:
    steps = 1;
    moved = bytes;
    break;
  case CollectiveKind::Broadcast:
    steps = n - 1;
    moved = bytes;
    break;
  }
  return hw.collectiveBaseLatencyUs + steps * hw.stepLatencyUs +
         transfer(moved);
}

double mlir::dtensor::memoryTimeUs(const HardwareModel &hw, int64_t bytes) {
  return bytes / (hw.memoryBandwidthGBps * 1e3);
}

double mlir::dtensor::computeTimeUs(const HardwareModel &hw, double flops,
                                    int64_t bytes) {
  return std::max(flops / (hw.matmulTflops * 1e6), memoryTimeUs(hw, bytes));
}
