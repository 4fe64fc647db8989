//===- CommAnalysisTest.cpp - the static comm report through the C++ API --===//

#include "dtensor/Analysis/CommAnalysis.h"
#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Compiler/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dtensor;

namespace {

class CommAnalysisTest : public ::testing::Test {
protected:
  CommAnalysisTest() {
    DialectRegistry registry;
    registerDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  OwningOpRef<ModuleOp> parse(StringRef source, bool verify = true) {
    ParserConfig config(&context, verify);
    return parseSourceString<ModuleOp>(source, config);
  }

  MLIRContext context;
};

constexpr StringLiteral kProgram = R"mlir(
dtensor.mesh @tp shape = [4]
dtensor.mesh @m2 shape = [2, 4]
func.func private @external(tensor<4xf32>)
func.func @f(%x: tensor<2x16xf32>, %y: tensor<16x16xf32>, %z: tensor<?x8xbf16>)
    -> (tensor<8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
        tensor<?x8xbf16>) {
  %g = dtensor.all_gather %x on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32> -> tensor<8x16xf32>
  %r = dtensor.all_reduce %y on @m2 axes = [0, 1] reduce = sum
      : tensor<16x16xf32>
  %fut = dtensor.async_start {
    %a = dtensor.all_reduce %y on @m2 axes = [1] reduce = sum
        : tensor<16x16xf32>
    dtensor.yield %a : tensor<16x16xf32>
  } : !dtensor.future<tensor<16x16xf32>>
  %w = dtensor.wait %fut : !dtensor.future<tensor<16x16xf32>>
  %p = dtensor.permute %z on @tp axes = [0] perm = [1, 2, 3, 0]
      : tensor<?x8xbf16>
  return %g, %r, %w, %p
      : tensor<8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>,
        tensor<?x8xbf16>
}
func.func @empty() {
  return
}
)mlir";

TEST_F(CommAnalysisTest, CountsBytesAndTimes) {
  OwningOpRef<ModuleOp> module = parse(kProgram);
  ASSERT_TRUE(module);
  HardwareModel hw = HardwareModel::h200();
  FailureOr<SmallVector<FunctionCommReport>> reports =
      computeCommReport(*module, hw);
  ASSERT_TRUE(succeeded(reports));
  // The declaration is skipped; functions come in program order.
  ASSERT_EQ(reports->size(), 2u);
  const FunctionCommReport &f = (*reports)[0];
  EXPECT_EQ(f.name, "f");
  EXPECT_EQ((*reports)[1].name, "empty");
  EXPECT_TRUE((*reports)[1].collectives.empty());
  EXPECT_EQ((*reports)[1].total.count, 0);

  ASSERT_EQ(f.collectives.size(), 3u);
  const CollectiveStats &gather = f.collectives.at("all_gather");
  EXPECT_EQ(gather.count, 1);
  EXPECT_EQ(gather.asyncCount, 0);
  EXPECT_EQ(gather.bytesPerRank, 2 * 16 * 4);
  EXPECT_FALSE(gather.hasDynamic);
  // Timed on the gathered 8x16xf32 buffer over 4 ranks.
  EXPECT_DOUBLE_EQ(gather.timeUs,
                   collectiveTimeUs(hw, CollectiveKind::AllGather, 512, 4));

  const CollectiveStats &reduce = f.collectives.at("all_reduce");
  EXPECT_EQ(reduce.count, 2);
  EXPECT_EQ(reduce.asyncCount, 1);
  EXPECT_EQ(reduce.bytesPerRank, 2 * 16 * 16 * 4);
  // Groups of 8 (axes [0, 1]) and 4 (axis [1]).
  EXPECT_DOUBLE_EQ(
      reduce.timeUs,
      collectiveTimeUs(hw, CollectiveKind::AllReduce, 1024, 8) +
          collectiveTimeUs(hw, CollectiveKind::AllReduce, 1024, 4));

  // Only the static dim of tensor<?x8xbf16> is counted.
  const CollectiveStats &permute = f.collectives.at("permute");
  EXPECT_EQ(permute.bytesPerRank, 8 * 2);
  EXPECT_TRUE(permute.hasDynamic);

  EXPECT_EQ(f.total.count, 4);
  EXPECT_EQ(f.total.asyncCount, 1);
  EXPECT_EQ(f.total.bytesPerRank, 128 + 2048 + 16);
  EXPECT_TRUE(f.total.hasDynamic);
  EXPECT_DOUBLE_EQ(f.total.timeUs,
                   gather.timeUs + reduce.timeUs + permute.timeUs);
}

TEST_F(CommAnalysisTest, HandComputedH200Time) {
  // A 1024x1024xf32 all_reduce over 4 ranks on h200 takes NCCL's ring with
  // LL128: 14 us base, 6 steps of 1.9 us, 2 * 3/4 * 4 MiB at 0.92 * 300 GB/s.
  EXPECT_NEAR(collectiveTimeUs(HardwareModel::h200(), CollectiveKind::AllReduce,
                               4194304, 4),
              14 + 6 * 1.9 + 6291456 / 276e3, 1e-9);
}

TEST_F(CommAnalysisTest, FusedOpsCountTheirCollectivePart) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
dtensor.mesh @tp shape = [4]
func.func @fused(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>,
                 %c: tensor<8x4xf32>, %d: tensor<4x32xf32>) {
  %ag, %mm = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  %rs = dtensor.matmul_reduce_scatter %c, %d on @tp axes = [0] scatter_dim = 0
      reduce = sum : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<2x32xf32>
  return
}
)mlir");
  ASSERT_TRUE(module);
  SymbolTableCollection symbolTable;
  SmallVector<CollectiveTraffic> traffic;
  module->walk([&](CollectiveOpInterface op) {
    FailureOr<CollectiveTraffic> t = getCollectiveTraffic(op, symbolTable);
    ASSERT_TRUE(succeeded(t));
    traffic.push_back(*t);
  });
  ASSERT_EQ(traffic.size(), 2u);
  EXPECT_EQ(traffic[0].kind, "all_gather_matmul");
  EXPECT_EQ(traffic[0].modelKind, CollectiveKind::AllGather);
  EXPECT_EQ(traffic[0].bytesPerRank, 2 * 16 * 4);
  EXPECT_EQ(traffic[0].fullBufferBytes, 8 * 16 * 4);
  EXPECT_EQ(traffic[0].groupSize, 4);
  EXPECT_EQ(traffic[1].kind, "matmul_reduce_scatter");
  EXPECT_EQ(traffic[1].modelKind, CollectiveKind::ReduceScatter);
  // The 8x32 product, not the operands.
  EXPECT_EQ(traffic[1].bytesPerRank, 8 * 32 * 4);
  EXPECT_EQ(traffic[1].fullBufferBytes, 8 * 32 * 4);
}

TEST_F(CommAnalysisTest, StaticTensorBytes) {
  Builder b(&context);
  bool hasDynamic = false;
  EXPECT_EQ(getStaticTensorBytes(RankedTensorType::get({3, 5}, b.getI1Type()),
                                 hasDynamic),
            15);
  EXPECT_EQ(getStaticTensorBytes(
                RankedTensorType::get({4}, ComplexType::get(b.getF32Type())),
                hasDynamic),
            32);
  EXPECT_FALSE(hasDynamic);
  EXPECT_EQ(
      getStaticTensorBytes(
          RankedTensorType::get({ShapedType::kDynamic, 3}, b.getIndexType()),
          hasDynamic),
      24);
  EXPECT_TRUE(hasDynamic);
  EXPECT_EQ(
      getStaticTensorBytes(UnrankedTensorType::get(b.getF32Type()), hasDynamic),
      std::nullopt);
}

TEST_F(CommAnalysisTest, MissingMeshIsADiagnostic) {
  // Unverified IR: the verifier would reject the unknown mesh (COLL1).
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = dtensor.all_reduce %x on @nowhere axes = [0] reduce = sum
      : tensor<4xf32>
  return %r : tensor<4xf32>
}
)mlir",
                                       /*verify=*/false);
  ASSERT_TRUE(module);
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  EXPECT_TRUE(failed(computeCommReport(*module, HardwareModel::h200())));
  EXPECT_NE(message.find("@nowhere does not name a dtensor.mesh"),
            std::string::npos)
      << message;
}

} // namespace
