//===- CostEstimatorTest.cpp - modelled op times through the C++ API ------===//

#include "dtensor/Analysis/CostEstimator.h"
#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Compiler/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dtensor;

namespace {

class CostEstimatorTest : public ::testing::Test {
protected:
  CostEstimatorTest() {
    DialectRegistry registry;
    registerDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kProgram, &context);
    if (!module)
      return;
    // Ops by their `name` attribute.
    module->walk([&](Operation *op) {
      if (auto name = op->getAttrOfType<StringAttr>("name"))
        ops[name.getValue()] = op;
    });
  }

  Operation *op(StringRef name) { return ops.lookup(name); }

  static constexpr StringLiteral kProgram = R"mlir(
dtensor.mesh @tp shape = [4]
dtensor.mesh @m2 shape = [2, 8]
#id = affine_map<(i, j) -> (i, j)>
#mm_a = affine_map<(i, j, k) -> (i, k)>
#mm_b = affine_map<(i, j, k) -> (k, j)>
#mm_c = affine_map<(i, j, k) -> (i, j)>
func.func @f(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %d: tensor<?x32xf32>)
    -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<32x32xf32>,
        tensor<?x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>,
        tensor<16x32xf32>, index) {
  %zero = arith.constant {name = "constant"} 0.0 : f32
  %e = tensor.empty() {name = "empty"} : tensor<8x32xf32>
  %fill = linalg.fill {name = "fill"} ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %mm = linalg.matmul {name = "matmul"} ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>)
      outs(%fill : tensor<8x32xf32>) -> tensor<8x32xf32>
  %gmm = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%fill : tensor<8x32xf32>)
      attrs = {name = "generic_mm"} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x32xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) attrs = {name = "relu"} {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %ar = dtensor.all_reduce %b on @tp axes = [0] reduce = sum {name = "all_reduce"} : tensor<16x32xf32>
  %ag = dtensor.all_gather %mm on @tp axes = [0] gather_dim = 0 {name = "all_gather"}
      : tensor<8x32xf32> -> tensor<32x32xf32>
  %ar2 = dtensor.all_reduce %mm on @m2 axes = [1] reduce = sum {name = "all_reduce_m2"} : tensor<8x32xf32>
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %d on @tp axes = [0] reduce = sum {name = "inner"} : tensor<?x32xf32>
    dtensor.yield %r : tensor<?x32xf32>
  } {name = "start"} : !dtensor.future<tensor<?x32xf32>>
  %w = dtensor.wait %f {name = "wait"} : !dtensor.future<tensor<?x32xf32>>
  %c = dtensor.coord @tp axes = [0] {name = "coord"} : index
  %add = arith.addf %mm, %relu {name = "addf"} : tensor<8x32xf32>
  return %mm, %gmm, %relu, %ag, %w, %ar2, %fill, %add, %ar, %c
      : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<32x32xf32>,
        tensor<?x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>,
        tensor<16x32xf32>, index
}
)mlir";

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  llvm::StringMap<Operation *> ops;
};

TEST_F(CostEstimatorTest, ClassifiesOps) {
  ASSERT_TRUE(module);
  std::unique_ptr<CostEstimator> estimator =
      createDefaultCostEstimator(HardwareModel::h200());
  EXPECT_EQ(estimator->classify(op("matmul")), OpResource::Compute);
  EXPECT_EQ(estimator->classify(op("relu")), OpResource::Compute);
  EXPECT_EQ(estimator->classify(op("fill")), OpResource::Compute);
  EXPECT_EQ(estimator->classify(op("addf")), OpResource::Compute);
  EXPECT_EQ(estimator->classify(op("all_reduce")), OpResource::Communication);
  EXPECT_EQ(estimator->classify(op("start")), OpResource::Communication);
  EXPECT_EQ(estimator->classify(op("wait")), OpResource::Wait);
  EXPECT_EQ(estimator->classify(op("constant")), OpResource::Free);
  EXPECT_EQ(estimator->classify(op("empty")), OpResource::Free);
  EXPECT_EQ(estimator->classify(op("coord")), OpResource::Free);
}

TEST_F(CostEstimatorTest, DefaultEstimatorIsRooflineAndCollectiveModel) {
  ASSERT_TRUE(module);
  // Two machines that make one side of the roofline vanish, to see the
  // flops and the bytes of each op.
  HardwareModel flopBound = HardwareModel::cpu();
  flopBound.memoryBandwidthGBps = 1e12;
  HardwareModel byteBound = HardwareModel::cpu();
  byteBound.matmulTflops = 1e12;
  std::unique_ptr<CostEstimator> flops = createDefaultCostEstimator(flopBound);
  std::unique_ptr<CostEstimator> bytes = createDefaultCostEstimator(byteBound);
  auto flopTime = [&](double n) { return computeTimeUs(flopBound, n, 0); };
  auto byteTime = [&](int64_t n) { return computeTimeUs(byteBound, 0, n); };
  int64_t f32 = 4;
  // Matmul 8x32x16: 2 * 4096 flops; A, B, the init and the result.
  EXPECT_DOUBLE_EQ(flops->estimateUs(op("matmul")),
                   flopTime(2.0 * 8 * 32 * 16));
  int64_t mmBytes = (8 * 16 + 16 * 32 + 8 * 32 + 8 * 32) * f32;
  EXPECT_DOUBLE_EQ(bytes->estimateUs(op("matmul")), byteTime(mmBytes));
  // A generic that multiplies and accumulates counts two flops too.
  EXPECT_DOUBLE_EQ(flops->estimateUs(op("generic_mm")),
                   flopTime(2.0 * 8 * 32 * 16));
  EXPECT_DOUBLE_EQ(bytes->estimateUs(op("generic_mm")), byteTime(mmBytes));
  // Elementwise: one flop per iteration.
  EXPECT_DOUBLE_EQ(flops->estimateUs(op("relu")), flopTime(8 * 32));
  EXPECT_DOUBLE_EQ(bytes->estimateUs(op("relu")), byteTime(3 * 8 * 32 * f32));
  // The fill reads a scalar (no tensor bytes) and writes the init.
  EXPECT_DOUBLE_EQ(flops->estimateUs(op("fill")), flopTime(8 * 32));
  EXPECT_DOUBLE_EQ(bytes->estimateUs(op("fill")), byteTime(2 * 8 * 32 * f32));
  // Other tensor ops: one flop per result element.
  EXPECT_DOUBLE_EQ(flops->estimateUs(op("addf")), flopTime(8 * 32));
  EXPECT_DOUBLE_EQ(bytes->estimateUs(op("addf")), byteTime(3 * 8 * 32 * f32));
  // On a real machine it is the larger of the two.
  HardwareModel hw = HardwareModel::cpu();
  std::unique_ptr<CostEstimator> estimator = createDefaultCostEstimator(hw);
  EXPECT_DOUBLE_EQ(estimator->estimateUs(op("matmul")),
                   computeTimeUs(hw, 2.0 * 8 * 32 * 16, mmBytes));

  // Collectives: the full buffer over the group from the mesh.
  EXPECT_DOUBLE_EQ(estimator->estimateUs(op("all_reduce")),
                   collectiveTimeUs(hw, CollectiveKind::AllReduce,
                                    16 * 32 * f32, meshGroup(hw, {4}, {0})));
  EXPECT_DOUBLE_EQ(estimator->estimateUs(op("all_gather")),
                   collectiveTimeUs(hw, CollectiveKind::AllGather,
                                    32 * 32 * f32, meshGroup(hw, {4}, {0})));
  EXPECT_DOUBLE_EQ(estimator->estimateUs(op("all_reduce_m2")),
                   collectiveTimeUs(hw, CollectiveKind::AllReduce, 8 * 32 * f32,
                                    meshGroup(hw, {2, 8}, {1})));
  EXPECT_GT(estimator->estimateUs(op("all_reduce")), 0);

  // An async start costs its collective (static dims only); a wait and
  // free ops nothing.
  EXPECT_DOUBLE_EQ(estimator->estimateUs(op("start")),
                   estimator->estimateUs(op("inner")));
  EXPECT_DOUBLE_EQ(estimator->estimateUs(op("start")),
                   collectiveTimeUs(hw, CollectiveKind::AllReduce, 32 * f32,
                                    meshGroup(hw, {4}, {0})));
  EXPECT_EQ(estimator->estimateUs(op("wait")), 0);
  EXPECT_EQ(estimator->estimateUs(op("constant")), 0);
  EXPECT_EQ(estimator->estimateUs(op("empty")), 0);
  EXPECT_EQ(estimator->estimateUs(op("coord")), 0);
}

TEST_F(CostEstimatorTest, TableEstimatorLooksUpNames) {
  ASSERT_TRUE(module);
  llvm::StringMap<double> table;
  table["dtensor.all_reduce"] = 100;
  table["linalg.matmul"] = 5;
  table["default"] = 1;
  std::unique_ptr<CostEstimator> estimator = createTableCostEstimator(table);
  EXPECT_EQ(estimator->estimateUs(op("all_reduce")), 100);
  // The start of an async all_reduce is looked up as the all_reduce.
  EXPECT_EQ(estimator->estimateUs(op("start")), 100);
  EXPECT_EQ(estimator->estimateUs(op("matmul")), 5);
  EXPECT_EQ(estimator->estimateUs(op("relu")), 1);
  EXPECT_EQ(estimator->estimateUs(op("all_gather")), 1);
  // Waits and free ops cost nothing unless listed.
  EXPECT_EQ(estimator->estimateUs(op("wait")), 0);
  EXPECT_EQ(estimator->estimateUs(op("constant")), 0);
  EXPECT_EQ(estimator->estimateUs(op("empty")), 0);
  table["dtensor.wait"] = 3;
  table["tensor.empty"] = 2;
  estimator = createTableCostEstimator(table);
  EXPECT_EQ(estimator->estimateUs(op("wait")), 3);
  EXPECT_EQ(estimator->estimateUs(op("empty")), 2);
  EXPECT_EQ(estimator->classify(op("wait")), OpResource::Wait);
}

TEST_F(CostEstimatorTest, TableEstimatorFallsBack) {
  ASSERT_TRUE(module);
  HardwareModel hw = HardwareModel::h200();
  std::unique_ptr<CostEstimator> model = createDefaultCostEstimator(hw);
  llvm::StringMap<double> table;
  table["linalg.matmul"] = 7;
  std::unique_ptr<CostEstimator> estimator =
      createTableCostEstimator(table, createDefaultCostEstimator(hw));
  EXPECT_EQ(estimator->estimateUs(op("matmul")), 7);
  EXPECT_DOUBLE_EQ(estimator->estimateUs(op("relu")),
                   model->estimateUs(op("relu")));
  EXPECT_DOUBLE_EQ(estimator->estimateUs(op("all_gather")),
                   model->estimateUs(op("all_gather")));
  // Without a fallback or "default", an unlisted op costs nothing.
  EXPECT_EQ(createTableCostEstimator(table)->estimateUs(op("relu")), 0);
}

} // namespace

namespace {

TEST(CostEstimatorFusedTest, FusedOpsTakeTheirPipeline) {
  // A fused collective + matmul costs its ring pipeline (the fusion gate's
  // model), not its collective alone: on 4 H200s, bf16.
  DialectRegistry registry;
  registerDialects(registry);
  MLIRContext context;
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
dtensor.mesh @tp shape = [4]
func.func @f(%a: tensor<2048x4096xbf16>, %b: tensor<4096x3584xbf16>,
             %h: tensor<8192x1792xbf16>, %w: tensor<1792x4096xbf16>)
    -> (tensor<8192x3584xbf16>, tensor<2048x4096xbf16>) {
  %ag, %c = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
      : tensor<2048x4096xbf16>, tensor<4096x3584xbf16>
      -> tensor<8192x4096xbf16>, tensor<8192x3584xbf16>
  %rs = dtensor.matmul_reduce_scatter %h, %w on @tp axes = [0] scatter_dim = 0
      reduce = sum : tensor<8192x1792xbf16>, tensor<1792x4096xbf16>
      -> tensor<2048x4096xbf16>
  return %c, %rs : tensor<8192x3584xbf16>, tensor<2048x4096xbf16>
}
)mlir",
                                                             &context);
  ASSERT_TRUE(module);
  Operation *agmm = nullptr, *mmrs = nullptr;
  module->walk([&](Operation *op) {
    if (isa<AllGatherMatmulOp>(op))
      agmm = op;
    if (isa<MatmulReduceScatterOp>(op))
      mmrs = op;
  });
  ASSERT_TRUE(agmm && mmrs);
  HardwareModel hw = HardwareModel::h200();
  std::unique_ptr<CostEstimator> estimator = createDefaultCostEstimator(hw);

  // all_gather_matmul: 4 steps of a 2048x4096x3584 chunk matmul (85.29 us
  // at 705 TFLOP/s), each longer than the ring shift of a 16 MiB chunk
  // (Simple: 11 + 8.4 + 3.4 + 16777216 / 300e3 = 78.72 us): the whole
  // matmul's time. The gathered A is unused: no copy into it.
  FusedMatmulShape gather{8192, 4096, {3584}, 2, 4};
  EXPECT_DOUBLE_EQ(estimator->estimateUs(agmm),
                   estimateAllGatherMatmul(hw, gather, false).pipelinedUs());
  EXPECT_NEAR(estimator->estimateUs(agmm), 4 * 2.0 * 2048 * 4096 * 3584 / 705e6,
              1e-6);
  EXPECT_GT(
      estimator->estimateUs(agmm),
      collectiveTimeUs(hw, CollectiveKind::AllGather, 8192 * 4096 * 2, 4));

  // matmul_reduce_scatter by rows: the first chunk's product and
  // accumulation (2048x1792x4096 at 705 TFLOP/s + 3 x 16 MiB at 4.3 TB/s =
  // 42.64 + 11.70 us), then 3 ring shifts of 78.72 us.
  FusedMatmulShape scatter{8192, 1792, {4096}, 2, 4};
  EXPECT_DOUBLE_EQ(
      estimator->estimateUs(mmrs),
      estimateMatmulReduceScatter(hw, scatter, false).pipelinedUs());
  double chunk = 2048.0 * 4096 * 2;
  EXPECT_NEAR(estimator->estimateUs(mmrs),
              2.0 * 2048 * 1792 * 4096 / 705e6 + 3 * chunk / 4.3e6 +
                  3 * (11 + 8.4 + 3.4 + chunk / 300e3),
              1e-6);
}

} // namespace
