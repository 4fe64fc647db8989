//===- CostCalibrationTest.cpp - the presets against measured times -------===//
//
// The h200 and h100 presets against what the lent machines measured, as
// recorded in ../shared/bench/ANCHOR_RESULTS.md:
//   - "2×H200 (NV18), TP=2" and "4×H200 (NV18 all-to-all), TP=4" (2026-11-21,
//     anchor_async_tp.py, PyTorch 2.11, NCCL 2.28.3, bf16): the "matmul" and
//     "comm" columns, the matmul and the collective each timed alone;
//   - "Per-rank compute on one H100 80GB HBM3" (2026-11-23): the "torch NN"
//     column.
// Every modelled time must be within 25% of the measured one, and the model
// must not lean one way: the geometric mean of model / measured within 5%
// of 1 for each family (collectives, H200 matmuls, H100 matmuls).
// docs/cost-model.md, "Calibration", has the same rows with the model's
// figures.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Analysis/CostModel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace mlir::dtensor;

namespace {

constexpr int64_t kBf16Bytes = 2;
constexpr double kRowTolerance = 0.25;
constexpr double kBiasTolerance = 0.05;

/// One collective timed alone: the all_gather to (or reduce_scatter from) a
/// tokens x hidden bf16 activation over `ranks` GPUs of one node.
struct CollectiveRow {
  int64_t ranks;
  CollectiveKind kind;
  int64_t tokens, hidden;
  double measuredMs;
};

/// One bf16 matmul [m, k] x [k, n] timed alone.
struct MatmulRow {
  int64_t m, k, n;
  double measuredMs;
};

// ANCHOR_RESULTS.md, the "comm" column: all_gather rows are "AG+MM", the
// reduce_scatter rows "MM+RS"; the buffer is tokens x hidden.
const CollectiveRow kH200Collectives[] = {
    {2, CollectiveKind::AllGather, 8192, 4096, 0.173},
    {2, CollectiveKind::ReduceScatter, 8192, 4096, 0.190},
    {2, CollectiveKind::AllGather, 4096, 4096, 0.107},
    {2, CollectiveKind::ReduceScatter, 4096, 4096, 0.112},
    {2, CollectiveKind::AllGather, 16384, 8192, 0.630},
    {2, CollectiveKind::ReduceScatter, 16384, 8192, 0.641},
    {4, CollectiveKind::AllGather, 8192, 4096, 0.223},
    {4, CollectiveKind::ReduceScatter, 8192, 4096, 0.208},
    {4, CollectiveKind::AllGather, 4096, 4096, 0.127},
    {4, CollectiveKind::ReduceScatter, 4096, 4096, 0.120},
    {4, CollectiveKind::AllGather, 16384, 8192, 0.717},
    {4, CollectiveKind::ReduceScatter, 16384, 8192, 0.707},
};

// ANCHOR_RESULTS.md, the "matmul" column: AG+MM multiplies the gathered
// [tokens, hidden] by [hidden, ffn/TP]; MM+RS multiplies [tokens, ffn/TP] by
// [ffn/TP, hidden].
const MatmulRow kH200Matmuls[] = {
    {8192, 4096, 7168, 0.647},   {8192, 7168, 4096, 0.638},
    {4096, 4096, 7168, 0.334},   {4096, 7168, 4096, 0.329},
    {16384, 8192, 14336, 5.705}, {16384, 14336, 8192, 5.709},
    {8192, 4096, 3584, 0.356},   {8192, 3584, 4096, 0.321},
    {4096, 4096, 3584, 0.185},   {4096, 3584, 4096, 0.176},
    {16384, 8192, 7168, 2.716},  {16384, 7168, 8192, 2.698},
};

// ANCHOR_RESULTS.md, "Per-rank compute on one H100", "torch NN": M = 8192
// tokens, N x K as listed (up, down, gate+up at TP=2 and TP=4).
const MatmulRow kH100Matmuls[] = {
    {8192, 4096, 7168, 0.668},  {8192, 7168, 4096, 0.644},
    {8192, 4096, 14336, 1.369}, {8192, 4096, 3584, 0.405},
    {8192, 3584, 4096, 0.392},  {8192, 4096, 7168, 0.726},
};

double matmulUs(const HardwareModel &hw, const MatmulRow &row) {
  double flops = 2.0 * row.m * row.k * row.n;
  int64_t bytes = (row.m * row.k + row.k * row.n + row.m * row.n) * kBf16Bytes;
  return computeTimeUs(hw, flops, bytes);
}

/// Checks every ratio and their geometric mean; `what` names the rows.
void expectCalibrated(const std::vector<double> &ratios,
                      const std::vector<std::string> &names,
                      const std::string &what) {
  ASSERT_FALSE(ratios.empty());
  double logSum = 0;
  for (size_t i = 0; i < ratios.size(); ++i) {
    EXPECT_LE(std::fabs(ratios[i] - 1), kRowTolerance)
        << what << ": " << names[i] << " model/measured = " << ratios[i];
    logSum += std::log(ratios[i]);
  }
  double bias = std::exp(logSum / ratios.size());
  EXPECT_LE(std::fabs(bias - 1), kBiasTolerance)
      << what << ": geometric mean of model/measured = " << bias;
}

TEST(CostCalibrationTest, H200Collectives) {
  HardwareModel hw = HardwareModel::h200();
  std::vector<double> ratios;
  std::vector<std::string> names;
  for (const CollectiveRow &row : kH200Collectives) {
    int64_t bytes = row.tokens * row.hidden * kBf16Bytes;
    double model = collectiveTimeUs(hw, row.kind, bytes, row.ranks);
    ratios.push_back(model / (row.measuredMs * 1e3));
    names.push_back(stringifyCollectiveKind(row.kind).str() + " " +
                    std::to_string(row.tokens) + "x" +
                    std::to_string(row.hidden) + " over " +
                    std::to_string(row.ranks));
  }
  expectCalibrated(ratios, names, "h200 collectives");
}

TEST(CostCalibrationTest, H100SharesTheH200Collectives) {
  // Same NVLink 4 and NCCL: the H100 prices collectives as the H200 does.
  for (const CollectiveRow &row : kH200Collectives) {
    int64_t bytes = row.tokens * row.hidden * kBf16Bytes;
    EXPECT_EQ(
        collectiveTimeUs(HardwareModel::h100(), row.kind, bytes, row.ranks),
        collectiveTimeUs(HardwareModel::h200(), row.kind, bytes, row.ranks));
  }
}

void checkMatmuls(const HardwareModel &hw, llvm::ArrayRef<MatmulRow> rows,
                  const std::string &what) {
  std::vector<double> ratios;
  std::vector<std::string> names;
  for (const MatmulRow &row : rows) {
    ratios.push_back(matmulUs(hw, row) / (row.measuredMs * 1e3));
    names.push_back(std::to_string(row.m) + "x" + std::to_string(row.k) + "x" +
                    std::to_string(row.n));
  }
  expectCalibrated(ratios, names, what);
}

TEST(CostCalibrationTest, H200Matmuls) {
  checkMatmuls(HardwareModel::h200(), kH200Matmuls, "h200 matmuls");
}

TEST(CostCalibrationTest, H100Matmuls) {
  checkMatmuls(HardwareModel::h100(), kH100Matmuls, "h100 matmuls");
}

} // namespace
