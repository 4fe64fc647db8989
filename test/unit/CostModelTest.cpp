//===- CostModelTest.cpp - the NCCL model, hardware files, cost tables ----===//

#include "dtensor/Analysis/CostModel.h"
#include "dtensor/Analysis/CostFiles.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace mlir::dtensor;

namespace {

constexpr CollectiveKind kAllKinds[] = {
    CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
    CollectiveKind::AllReduce, CollectiveKind::AllToAll,
    CollectiveKind::Permute,   CollectiveKind::Broadcast};

constexpr CollectiveAlgorithm kAllAlgorithms[] = {
    CollectiveAlgorithm::Tree, CollectiveAlgorithm::Ring,
    CollectiveAlgorithm::PointToPoint};
constexpr CollectiveProtocol kAllProtocols[] = {CollectiveProtocol::LL,
                                                CollectiveProtocol::LL128,
                                                CollectiveProtocol::Simple};

CollectiveEstimate best(const HardwareModel &hw, CollectiveKind kind,
                        int64_t bytes, CollectiveGroup group) {
  std::optional<CollectiveEstimate> estimate =
      estimateCollective(hw, kind, bytes, group);
  EXPECT_TRUE(estimate.has_value());
  return estimate.value_or(CollectiveEstimate());
}

/// Writes `text` to a fresh temporary file and returns its path.
std::string writeTemp(llvm::StringRef text, llvm::StringRef stem = "hw") {
  llvm::SmallString<128> path;
  int fd;
  std::error_code ec =
      llvm::sys::fs::createTemporaryFile(stem, "json", fd, path);
  EXPECT_FALSE(ec);
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << text;
  return path.str().str();
}

std::string errorOf(llvm::Error err) {
  EXPECT_TRUE(static_cast<bool>(err));
  return llvm::toString(std::move(err));
}

llvm::Expected<HardwareModel> hardwareFromText(llvm::StringRef text) {
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return value.takeError();
  return HardwareModel::fromJSON(*value);
}

//===----------------------------------------------------------------------===//
// Presets and the model
//===----------------------------------------------------------------------===//

TEST(CostModelTest, Presets) {
  for (llvm::StringRef name : {"h100", "h200", "cpu"}) {
    std::optional<HardwareModel> hw = HardwareModel::byName(name);
    ASSERT_TRUE(hw) << name.str();
    EXPECT_EQ(hw->name, name.str());
    EXPECT_GT(hw->intraNodeBandwidthGBps, hw->interNodeBandwidthGBps);
    EXPECT_GT(hw->memoryBandwidthGBps, 0);
    EXPECT_GT(hw->matmulTflops, 0);
  }
  EXPECT_FALSE(HardwareModel::byName("tpu"));
  // The figures measured on the lent machines (CalibrationAgainstAnchors
  // checks them against the measurements); the H100 has the H200's NVLink
  // and NCCL, less memory bandwidth and a slower measured matmul.
  HardwareModel h200 = HardwareModel::h200(), h100 = HardwareModel::h100();
  EXPECT_EQ(h200.matmulTflops, 705);
  EXPECT_EQ(h200.memoryBandwidthGBps, 4300);
  EXPECT_EQ(h200.intraNodeBandwidthGBps, 300);
  EXPECT_LT(h100.memoryBandwidthGBps, h200.memoryBandwidthGBps);
  EXPECT_EQ(h100.matmulTflops, 670);
  EXPECT_EQ(h100.nccl.simpleOverheadUs, h200.nccl.simpleOverheadUs);
  EXPECT_EQ(h100.nccl.gatherScatterEfficiency,
            h200.nccl.gatherScatterEfficiency);
  // The CPU preset is not calibrated to NCCL.
  EXPECT_EQ(HardwareModel::cpu().nccl.simpleOverheadUs, 0);
}

TEST(CostModelTest, HandComputedH200AllReduce) {
  // 4 MiB over 4 ranks of one node. Ring LL128: 14 us base + 6 steps of
  // 1.9 us; bus bandwidth 0.92 * 300 GB/s = 276, times n / (2(n-1)) = 4/6.
  // It beats ring Simple (11 + 8.4 + 6 * 3.4 + 4 MiB / 200 GB/s = 60.77 us) and
  // ring LL (10.2 us + 4 MiB / 94 GB/s = 54.82 us). (all_reduce is not
  // scaled by the gather/scatter efficiency; Simple pays the calibrated
  // 11 us on top of NCCL's 8.4 us base.)
  HardwareModel hw = HardwareModel::h200();
  CollectiveEstimate e = best(hw, CollectiveKind::AllReduce, 4194304,
                              CollectiveGroup::contiguous(hw, 4));
  EXPECT_EQ(e.algorithm, CollectiveAlgorithm::Ring);
  EXPECT_EQ(e.protocol, CollectiveProtocol::LL128);
  EXPECT_NEAR(e.latencyUs, 14 + 6 * 1.9, 1e-9);
  EXPECT_NEAR(e.algBandwidthGBps, 276.0 * 4 / 6, 1e-9);
  EXPECT_NEAR(e.timeUs, 25.4 + 4194304 / (184.0 * 1e3), 1e-9);
  EXPECT_DOUBLE_EQ(collectiveTimeUs(hw, CollectiveKind::AllReduce, 4194304, 4),
                   e.timeUs);
  // Ring Simple, asked for explicitly.
  std::optional<CollectiveEstimate> simple = estimateCollectiveWith(
      hw, CollectiveKind::AllReduce, 4194304,
      CollectiveGroup::contiguous(hw, 4), CollectiveAlgorithm::Ring,
      CollectiveProtocol::Simple);
  ASSERT_TRUE(simple);
  EXPECT_NEAR(simple->timeUs, 11 + 8.4 + 6 * 3.4 + 4194304 / 200e3, 1e-9);
}

TEST(CostModelTest, HandComputedH200GatherScatter) {
  // 64 MiB all_gather (the gathered size) over a pair: ring Simple, 11 us
  // calibrated overhead + 8.4 us base + 1 step of 3.4 us; the link reaches
  // 0.69 of 300 GB/s, times n / (n-1) = 2.
  HardwareModel hw = HardwareModel::h200();
  int64_t bytes = int64_t(64) << 20;
  CollectiveEstimate pair = best(hw, CollectiveKind::AllGather, bytes,
                                 CollectiveGroup::contiguous(hw, 2));
  EXPECT_EQ(pair.protocol, CollectiveProtocol::Simple);
  EXPECT_NEAR(pair.latencyUs, 11 + 8.4 + 3.4, 1e-9);
  EXPECT_NEAR(pair.algBandwidthGBps, 0.69 * 300 * 2, 1e-9);
  // reduce_scatter is priced as all_gather; over 4 ranks the link reaches
  // 0.92 of its rate, times 4/3.
  CollectiveEstimate four = best(hw, CollectiveKind::ReduceScatter, bytes,
                                 CollectiveGroup::contiguous(hw, 4));
  EXPECT_EQ(four.protocol, CollectiveProtocol::Simple);
  EXPECT_NEAR(four.latencyUs, 11 + 8.4 + 3 * 3.4, 1e-9);
  EXPECT_NEAR(four.algBandwidthGBps, 0.92 * 300 * 4 / 3, 1e-9);
  // The efficiency is the link's: LL128 is bounded by 0.92 of it.
  std::optional<CollectiveEstimate> ll128 = estimateCollectiveWith(
      hw, CollectiveKind::AllGather, bytes, CollectiveGroup::contiguous(hw, 2),
      CollectiveAlgorithm::Ring, CollectiveProtocol::LL128);
  ASSERT_TRUE(ll128);
  EXPECT_NEAR(ll128->algBandwidthGBps, 0.92 * 0.69 * 300 * 2, 1e-9);
  // Across nodes the network bounds the ring and no efficiency applies.
  CollectiveEstimate nodes =
      best(hw, CollectiveKind::AllGather, bytes, CollectiveGroup{2, 2, 1});
  EXPECT_NEAR(nodes.algBandwidthGBps, 45.0 * 2, 1e-9);
}

TEST(CostModelTest, BestIsTheMinimumOverPairs) {
  HardwareModel hw = HardwareModel::h200();
  for (CollectiveKind kind : kAllKinds)
    for (int64_t ranks : {2, 8, 16, 64})
      for (int64_t bytes : {int64_t(64), int64_t(1) << 20, int64_t(1) << 30}) {
        CollectiveGroup group = CollectiveGroup::contiguous(hw, ranks);
        double minimum = 1e300;
        int pairs = 0;
        for (CollectiveAlgorithm a : kAllAlgorithms)
          for (CollectiveProtocol p : kAllProtocols)
            if (auto e = estimateCollectiveWith(hw, kind, bytes, group, a, p)) {
              ++pairs;
              EXPECT_NEAR(e->timeUs,
                          e->latencyUs + bytes / (1e3 * e->algBandwidthGBps),
                          1e-6 * e->timeUs);
              minimum = std::min(minimum, e->timeUs);
            }
        // Ring 3 protocols (+ tree 3 for all_reduce); point-to-point 2.
        int expected = kind == CollectiveKind::AllReduce ? 6
                       : kind == CollectiveKind::AllToAll ||
                               kind == CollectiveKind::Permute
                           ? 2
                           : 3;
        EXPECT_EQ(pairs, expected) << stringifyCollectiveKind(kind).str();
        EXPECT_DOUBLE_EQ(best(hw, kind, bytes, group).timeUs, minimum);
      }
}

TEST(CostModelTest, OneRankCostsNothing) {
  HardwareModel hw = HardwareModel::h200();
  for (CollectiveKind kind : kAllKinds) {
    EXPECT_EQ(collectiveTimeUs(hw, kind, 1 << 20, 1), 0);
    EXPECT_FALSE(estimateCollective(hw, kind, 1 << 20,
                                    CollectiveGroup::contiguous(hw, 1)));
  }
}

TEST(CostModelTest, MonotoneInBytes) {
  for (const HardwareModel &hw :
       {HardwareModel::h100(), HardwareModel::h200(), HardwareModel::cpu()})
    for (CollectiveKind kind : kAllKinds)
      for (int64_t ranks : {2, 4, 8, 16, 128}) {
        double previous = 0;
        for (int64_t bytes = 1; bytes <= (int64_t(1) << 34); bytes *= 4) {
          double t = collectiveTimeUs(hw, kind, bytes, ranks);
          EXPECT_GE(t, previous)
              << hw.name << " " << stringifyCollectiveKind(kind).str()
              << " n=" << ranks << " bytes=" << bytes;
          previous = t;
        }
        // Large messages are bandwidth-bound: 4x the bytes, > 3x the time.
        EXPECT_GT(collectiveTimeUs(hw, kind, int64_t(1) << 36, ranks),
                  3 * collectiveTimeUs(hw, kind, int64_t(1) << 34, ranks));
      }
}

TEST(CostModelTest, MonotoneInGroupSize) {
  for (const HardwareModel &hw :
       {HardwareModel::h100(), HardwareModel::h200(), HardwareModel::cpu()})
    for (CollectiveKind kind : kAllKinds)
      for (int64_t bytes : {int64_t(256), int64_t(1) << 20, int64_t(1) << 28}) {
        // Every size within a node, then whole nodes.
        double previous = 0;
        for (int64_t ranks : {2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 128, 256}) {
          double t = collectiveTimeUs(hw, kind, bytes, ranks);
          EXPECT_GE(t, previous)
              << hw.name << " " << stringifyCollectiveKind(kind).str()
              << " n=" << ranks << " bytes=" << bytes;
          previous = t;
        }
      }
}

TEST(CostModelTest, InterNodeIsSlower) {
  HardwareModel hw = HardwareModel::h200();
  // 8 ranks: one node, two nodes of 4, eight nodes of 1.
  CollectiveGroup oneNode{8, 1, 8}, twoNodes{8, 2, 4}, eightNodes{8, 8, 1};
  for (CollectiveKind kind : kAllKinds)
    for (int64_t bytes : {int64_t(1024), int64_t(1) << 26}) {
      double intra = collectiveTimeUs(hw, kind, bytes, oneNode);
      double two = collectiveTimeUs(hw, kind, bytes, twoNodes);
      double eight = collectiveTimeUs(hw, kind, bytes, eightNodes);
      EXPECT_LT(intra, two)
          << stringifyCollectiveKind(kind).str() << " " << bytes;
      EXPECT_LE(two, eight)
          << stringifyCollectiveKind(kind).str() << " " << bytes;
    }
  // Large transfers run at the network rate: 64 MiB gathered over 8 ranks
  // on 2 nodes moves 7/8 of it at 45 GB/s.
  CollectiveEstimate e = best(hw, CollectiveKind::AllGather, 1 << 26, twoNodes);
  EXPECT_EQ(e.protocol, CollectiveProtocol::Simple);
  EXPECT_NEAR(e.algBandwidthGBps, 45.0 * 8 / 7, 1e-9);
  // Contiguous groups cross nodes past ranksPerNode.
  EXPECT_GT(collectiveTimeUs(hw, CollectiveKind::AllReduce, 1 << 26, 16),
            2 * collectiveTimeUs(hw, CollectiveKind::AllReduce, 1 << 26, 8));
}

TEST(CostModelTest, MeshGroups) {
  HardwareModel hw = HardwareModel::h200();
  // [2, 8] on nodes of 8: axis 0 pairs ranks r and r + 8 on two nodes.
  CollectiveGroup dp = meshGroup(hw, {2, 8}, {0});
  EXPECT_EQ(dp.ranks, 2);
  EXPECT_EQ(dp.nodes, 2);
  EXPECT_EQ(dp.ranksPerNode, 1);
  CollectiveGroup tp = meshGroup(hw, {2, 8}, {1});
  EXPECT_EQ(tp.ranks, 8);
  EXPECT_EQ(tp.nodes, 1);
  EXPECT_EQ(tp.ranksPerNode, 8);
  CollectiveGroup all = meshGroup(hw, {2, 8}, {0, 1});
  EXPECT_EQ(all.ranks, 16);
  EXPECT_EQ(all.nodes, 2);
  EXPECT_EQ(all.ranksPerNode, 8);
  // [4, 4]: axis 0 is ranks 0, 4, 8, 12 on nodes 0, 0, 1, 1.
  CollectiveGroup column = meshGroup(hw, {4, 4}, {0});
  EXPECT_EQ(column.ranks, 4);
  EXPECT_EQ(column.nodes, 2);
  EXPECT_EQ(column.ranksPerNode, 2);
  // The dp all_reduce of a [2, 8] mesh crosses the network although the
  // group has only 2 ranks.
  EXPECT_GT(collectiveTimeUs(hw, CollectiveKind::AllReduce, 1 << 26, dp),
            collectiveTimeUs(hw, CollectiveKind::AllReduce, 1 << 26, 2));
}

TEST(CostModelTest, ProtocolChoiceBySize) {
  HardwareModel hw = HardwareModel::h200();
  CollectiveGroup node = CollectiveGroup::contiguous(hw, 8);
  // Latency-bound: LL (6.6 us + 7 * 0.6 us); mid-size: LL128; bulk:
  // Simple.
  CollectiveEstimate small = best(hw, CollectiveKind::AllGather, 1024, node);
  EXPECT_EQ(small.algorithm, CollectiveAlgorithm::Ring);
  EXPECT_EQ(small.protocol, CollectiveProtocol::LL);
  EXPECT_NEAR(small.latencyUs, 6.6 + 7 * 0.6, 1e-9);
  EXPECT_EQ(best(hw, CollectiveKind::AllGather, 8 << 20, node).protocol,
            CollectiveProtocol::LL128);
  EXPECT_EQ(
      best(hw, CollectiveKind::AllGather, int64_t(1) << 30, node).protocol,
      CollectiveProtocol::Simple);
  // Point-to-point: LL for small, Simple for large.
  EXPECT_EQ(best(hw, CollectiveKind::AllToAll, 1024, node).protocol,
            CollectiveProtocol::LL);
  EXPECT_EQ(best(hw, CollectiveKind::AllToAll, int64_t(1) << 30, node).protocol,
            CollectiveProtocol::Simple);
  // Across 16 nodes the tree's log-depth latency wins for small
  // all_reduces; the ring's bandwidth for large ones.
  CollectiveGroup cluster = CollectiveGroup::contiguous(hw, 128);
  CollectiveEstimate smallAR =
      best(hw, CollectiveKind::AllReduce, 4096, cluster);
  EXPECT_EQ(smallAR.algorithm, CollectiveAlgorithm::Tree);
  EXPECT_EQ(smallAR.protocol, CollectiveProtocol::LL);
  EXPECT_EQ(
      best(hw, CollectiveKind::AllReduce, int64_t(1) << 32, cluster).algorithm,
      CollectiveAlgorithm::Ring);
  // The cpu preset has the ring and Simple only.
  HardwareModel cpu = HardwareModel::cpu();
  CollectiveEstimate onCpu = best(cpu, CollectiveKind::AllReduce, 64,
                                  CollectiveGroup::contiguous(cpu, 4));
  EXPECT_EQ(onCpu.algorithm, CollectiveAlgorithm::Ring);
  EXPECT_EQ(onCpu.protocol, CollectiveProtocol::Simple);
  EXPECT_NEAR(onCpu.timeUs, 5 + 6 * 1 + 64 * 6.0 / 4 / 5e3, 1e-9);
}

TEST(CostModelTest, ComputeAndMemory) {
  HardwareModel hw = HardwareModel::h200();
  // 2 * 8192 * 4096 * 7168 flop at 705 TFLOP/s.
  double flops = 2.0 * 8192 * 4096 * 7168;
  EXPECT_NEAR(computeTimeUs(hw, flops, 0), flops / 705e6, 1e-9);
  // A copy of 1 GB reads and writes 2 GB at 4.3 TB/s.
  EXPECT_NEAR(memoryTimeUs(hw, 2000000000), 2e9 / 4.3e6, 1e-9);
  EXPECT_NEAR(computeTimeUs(hw, 1, 2000000000), 2e9 / 4.3e6, 1e-9);
}

//===----------------------------------------------------------------------===//
// Hardware descriptions
//===----------------------------------------------------------------------===//

TEST(CostModelTest, DescriptionOverridesFields) {
  llvm::Expected<HardwareModel> hw = hardwareFromText(R"json({
    "base": "h200", "matmul_tflops": 700, "ranks_per_node": 4,
    "nccl": {"base_latency_us": {"ring": {"ll": 10}},
             "ll_max_bus_bandwidth_gbps": [100, 40, 30],
             "channels": 8, "protocols": ["ll", "simple"]}})json");
  ASSERT_TRUE(static_cast<bool>(hw)) << llvm::toString(hw.takeError());
  HardwareModel h200 = HardwareModel::h200();
  EXPECT_EQ(hw->name, "h200");
  EXPECT_EQ(hw->matmulTflops, 700);
  EXPECT_EQ(hw->ranksPerNode, 4);
  EXPECT_EQ(hw->memoryBandwidthGBps, h200.memoryBandwidthGBps);
  EXPECT_EQ(
      hw->nccl.baseLatency(CollectiveAlgorithm::Ring, CollectiveProtocol::LL),
      10);
  // Cells not named keep the preset's values.
  EXPECT_EQ(hw->nccl.baseLatency(CollectiveAlgorithm::Ring,
                                 CollectiveProtocol::Simple),
            h200.nccl.baseLatency(CollectiveAlgorithm::Ring,
                                  CollectiveProtocol::Simple));
  EXPECT_EQ(hw->nccl.llMaxBusBandwidthGBps[0], 100);
  EXPECT_EQ(hw->nccl.channels, 8);
  EXPECT_FALSE(hw->nccl.enabled(CollectiveProtocol::LL128));
  // The overrides reach the model: LL starts at 10 us, and the mid-size
  // all_gather that took LL128 on the preset now takes another protocol.
  CollectiveGroup node{4, 1, 4};
  EXPECT_NEAR(best(*hw, CollectiveKind::AllGather, 8, node).latencyUs,
              10 + 3 * 0.6, 1e-9);
  EXPECT_NE(best(*hw, CollectiveKind::AllGather, 8 << 20, node).protocol,
            CollectiveProtocol::LL128);
  // 700 TFLOP/s.
  EXPECT_NEAR(computeTimeUs(*hw, 7e8, 0), 1.0, 1e-12);

  // The calibration fields: no overhead and the full link over a pair.
  llvm::Expected<HardwareModel> raw = hardwareFromText(R"json({
    "nccl": {"simple_overhead_us": 0,
             "gather_scatter_efficiency": [1, 0.5]}})json");
  ASSERT_TRUE(static_cast<bool>(raw)) << llvm::toString(raw.takeError());
  CollectiveEstimate pair = best(*raw, CollectiveKind::AllGather, 1 << 30,
                                 CollectiveGroup::contiguous(*raw, 2));
  EXPECT_NEAR(pair.latencyUs, 8.4 + 3.4, 1e-9);
  EXPECT_NEAR(pair.algBandwidthGBps, 300 * 2, 1e-9);
  EXPECT_EQ(raw->nccl.gatherScatterEfficiency[1], 0.5);
}

TEST(CostModelTest, DescriptionBaseAndName) {
  // Without "base", the caller's default preset.
  llvm::Expected<llvm::json::Value> value =
      llvm::json::parse(R"({"memory_bandwidth_gbps": 20})");
  ASSERT_TRUE(static_cast<bool>(value));
  llvm::Expected<HardwareModel> cpu = HardwareModel::fromJSON(*value, "cpu");
  ASSERT_TRUE(static_cast<bool>(cpu));
  EXPECT_EQ(cpu->name, "cpu");
  EXPECT_EQ(cpu->memoryBandwidthGBps, 20);
  EXPECT_EQ(cpu->matmulTflops, HardwareModel::cpu().matmulTflops);

  // A file is named after itself unless it says otherwise.
  std::string path = writeTemp(R"({"base": "h100"})", "my-cluster");
  llvm::Expected<HardwareModel> fromFile = HardwareModel::fromFile(path);
  ASSERT_TRUE(static_cast<bool>(fromFile))
      << llvm::toString(fromFile.takeError());
  EXPECT_EQ(fromFile->name, llvm::sys::path::stem(path).str());
  EXPECT_EQ(fromFile->memoryBandwidthGBps,
            HardwareModel::h100().memoryBandwidthGBps);
  llvm::sys::fs::remove(path);

  std::string named = writeTemp(R"({"base": "h100", "name": "lab"})");
  llvm::Expected<HardwareModel> lab = HardwareModel::fromFile(named);
  ASSERT_TRUE(static_cast<bool>(lab));
  EXPECT_EQ(lab->name, "lab");
  llvm::sys::fs::remove(named);

  // resolveHardware: the preset alone, or the file with the preset as base.
  llvm::Expected<HardwareModel> preset = resolveHardware("h100", "");
  ASSERT_TRUE(static_cast<bool>(preset));
  EXPECT_EQ(preset->name, "h100");
  EXPECT_EQ(errorOf(resolveHardware("tpu", "").takeError()),
            "unknown hardware preset 'tpu' (expected h100, h200, cpu)");
}

TEST(CostModelTest, MalformedDescriptions) {
  struct Case {
    const char *text;
    const char *message;
  };
  const Case cases[] = {
      {R"([1, 2])", "hardware description: expected a JSON object, got "
                    "[1,2]"},
      {R"({"base": "tpu"})", "hardware description: unknown base preset "
                             "'tpu' (expected h100, h200, cpu)"},
      {R"({"base": 3})", "hardware description: base: expected a preset "
                         "name (h100, h200, cpu), got 3"},
      {R"({"matmul_tflop": 700})",
       "hardware description: unknown key 'matmul_tflop' (expected one of: "
       "base, name, intra_node_bandwidth_gbps, inter_node_bandwidth_gbps, "
       "memory_bandwidth_gbps, matmul_tflops, ranks_per_node, nccl)"},
      {R"({"matmul_tflops": "fast"})",
       "hardware description: matmul_tflops: expected a number > 0, got "
       "\"fast\""},
      {R"({"intra_node_bandwidth_gbps": -1})",
       "hardware description: intra_node_bandwidth_gbps: expected a number "
       "> 0, got -1"},
      {R"({"ranks_per_node": 0})", "hardware description: ranks_per_node: "
                                   "expected an integer >= 1, got 0"},
      {R"({"ranks_per_node": 2.5})", "hardware description: ranks_per_node: "
                                     "expected an integer >= 1, got 2.5"},
      {R"({"name": ""})", "hardware description: name: expected a non-empty "
                          "string, got \"\""},
      {R"({"nccl": 1})", "hardware description: nccl: expected an object, "
                         "got 1"},
      {R"({"nccl": {"latency": 1}})",
       "hardware description: unknown key 'latency' in nccl (expected one "
       "of: base_latency_us, intra_latency_us, net_latency_us, "
       "net_overhead_us, simple_overhead_us, ll_max_bus_bandwidth_gbps, "
       "ring_ll128_max_channel_gbps, tree_ll128_max_channel_gbps, "
       "tree_max_channel_gbps, gather_scatter_efficiency, channels, "
       "protocols, algorithms)"},
      {R"({"nccl": {"simple_overhead_us": -1}})",
       "hardware description: nccl.simple_overhead_us: expected a number "
       ">= 0, got -1"},
      {R"({"nccl": {"gather_scatter_efficiency": 2}})",
       "hardware description: nccl.gather_scatter_efficiency: expected an "
       "array of 2 fractions (a pair of ranks, three or more), got 2"},
      {R"({"nccl": {"gather_scatter_efficiency": [0.7, 1.5]}})",
       "hardware description: nccl.gather_scatter_efficiency[1]: expected a "
       "number in (0, 1], got 1.5"},
      {R"({"nccl": {"gather_scatter_efficiency": [0, 1]}})",
       "hardware description: nccl.gather_scatter_efficiency[0]: expected a "
       "number in (0, 1], got 0"},
      {R"({"nccl": {"base_latency_us": {"ring": {"ll256": 1}}}})",
       "hardware description: unknown key 'll256' in "
       "nccl.base_latency_us.ring (expected one of: ll, ll128, simple)"},
      {R"({"nccl": {"base_latency_us": {"mesh": {}}}})",
       "hardware description: unknown key 'mesh' in nccl.base_latency_us "
       "(expected one of: tree, ring)"},
      {R"({"nccl": {"net_latency_us": {"tree": {"simple": -2}}}})",
       "hardware description: nccl.net_latency_us.tree.simple: expected a "
       "number >= 0, got -2"},
      {R"({"nccl": {"intra_latency_us": {"ring": [1, 2, 3]}}})",
       "hardware description: nccl.intra_latency_us.ring: expected an object "
       "with keys ll, ll128, simple, got [1,2,3]"},
      {R"({"nccl": {"tree_max_channel_gbps": [1, 2]}})",
       "hardware description: nccl.tree_max_channel_gbps: expected an array "
       "of 3 numbers (one node, two nodes, more nodes), got [1,2]"},
      {R"({"nccl": {"ll_max_bus_bandwidth_gbps": [1, 0, 3]}})",
       "hardware description: nccl.ll_max_bus_bandwidth_gbps[1]: expected a "
       "number > 0, got 0"},
      {R"({"nccl": {"protocols": ["ll", "fast"]}})",
       "hardware description: nccl.protocols: unknown name \"fast\" "
       "(expected ll, ll128, simple)"},
      {R"({"nccl": {"algorithms": ["tree"]}})",
       "hardware description: nccl.algorithms: must include \"ring\" (the "
       "only algorithm of all_gather, reduce_scatter and broadcast)"},
      {R"({"nccl": {"protocols": ["ll128"]}})",
       "hardware description: nccl.protocols: must include \"ll\" or "
       "\"simple\" (point-to-point collectives use no other)"},
      {R"({"nccl": {"channels": -4}})", "hardware description: "
                                        "nccl.channels: expected an integer "
                                        ">= 1, got -4"},
  };
  for (const Case &c : cases) {
    llvm::Expected<HardwareModel> hw = hardwareFromText(c.text);
    ASSERT_FALSE(static_cast<bool>(hw)) << c.text;
    EXPECT_EQ(errorOf(hw.takeError()), c.message) << c.text;
  }
}

TEST(CostModelTest, MalformedDescriptionFiles) {
  std::string path = writeTemp("{\"base\": \"h200\",\n \"matmul_tflops\": }");
  llvm::Expected<HardwareModel> hw = HardwareModel::fromFile(path);
  ASSERT_FALSE(static_cast<bool>(hw));
  std::string message = errorOf(hw.takeError());
  // The file, then the parser's position.
  EXPECT_EQ(message.rfind(path + ": invalid JSON: [2:", 0), 0u) << message;
  llvm::sys::fs::remove(path);

  std::string bad = writeTemp(R"({"matmul_tflops": 0})");
  hw = HardwareModel::fromFile(bad);
  ASSERT_FALSE(static_cast<bool>(hw));
  EXPECT_EQ(errorOf(hw.takeError()),
            bad + ": matmul_tflops: expected a number > 0, got 0");
  llvm::sys::fs::remove(bad);

  hw = HardwareModel::fromFile("/nonexistent/dir/hw.json");
  ASSERT_FALSE(static_cast<bool>(hw));
  EXPECT_EQ(
      errorOf(hw.takeError())
          .rfind("/nonexistent/dir/hw.json: cannot read hardware description: ",
                 0),
      0u);
}

//===----------------------------------------------------------------------===//
// Cost tables
//===----------------------------------------------------------------------===//

TEST(CostModelTest, CostTables) {
  llvm::Expected<llvm::StringMap<double>> table = parseCostTable(
      R"({"linalg.matmul": 120.5, "dtensor.all_reduce": 35, "default": 0})");
  ASSERT_TRUE(static_cast<bool>(table)) << llvm::toString(table.takeError());
  EXPECT_EQ(table->size(), 3u);
  EXPECT_EQ(table->lookup("linalg.matmul"), 120.5);
  EXPECT_EQ(table->lookup("dtensor.all_reduce"), 35);
  EXPECT_TRUE(table->contains("default"));

  std::string path = writeTemp(R"({"linalg.fill": 1.25})", "table");
  llvm::Expected<llvm::StringMap<double>> fromFile = loadCostTable(path);
  ASSERT_TRUE(static_cast<bool>(fromFile));
  EXPECT_EQ(fromFile->lookup("linalg.fill"), 1.25);
  llvm::sys::fs::remove(path);

  EXPECT_TRUE(static_cast<bool>(parseCostTable("{}")));
}

TEST(CostModelTest, MalformedCostTables) {
  struct Case {
    const char *text;
    const char *message;
  };
  const Case cases[] = {
      {R"([])", "cost table: expected a JSON object from op names to "
                "microseconds, got []"},
      {R"({"linalg.matmul": "slow"})",
       "cost table: 'linalg.matmul': expected microseconds (a number >= 0), "
       "got \"slow\""},
      {R"({"linalg.matmul": -1})", "cost table: 'linalg.matmul': expected "
                                   "microseconds (a number >= 0), got -1"},
      {R"({"": 1})", "cost table: empty op name"},
  };
  for (const Case &c : cases) {
    llvm::Expected<llvm::StringMap<double>> table = parseCostTable(c.text);
    ASSERT_FALSE(static_cast<bool>(table)) << c.text;
    EXPECT_EQ(errorOf(table.takeError()), c.message) << c.text;
  }
  llvm::Expected<llvm::StringMap<double>> broken =
      parseCostTable("{\"a\": 1,}");
  ASSERT_FALSE(static_cast<bool>(broken));
  EXPECT_EQ(errorOf(broken.takeError()).rfind("cost table: invalid JSON: ", 0),
            0u);
  llvm::Expected<llvm::StringMap<double>> missing =
      loadCostTable("/nonexistent/table.json");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_EQ(errorOf(missing.takeError())
                .rfind("/nonexistent/table.json: cannot read cost table: ", 0),
            0u);
}

} // namespace
