//===- TimelineTest.cpp - the schedule simulation through the C++ API -----===//

#include "dtensor/Analysis/Timeline.h"
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

/// A client's own estimator: linalg ops 5 us, all_reduce 20 us, all_gather
/// 8 us (async ones priced by the collective they wrap), waits 1 us.
class FixedEstimator : public CostEstimator {
public:
  double estimateUs(Operation *op) override {
    if (auto start = dyn_cast<AsyncStartOp>(op))
      op = start.getCollective();
    if (isa<AllReduceOp>(op))
      return 20;
    if (isa<AllGatherOp>(op))
      return 8;
    if (isa<WaitOp>(op))
      return 1;
    if (op->getDialect() && op->getDialect()->getNamespace() == "linalg")
      return 5;
    return 0;
  }
};

class TimelineTest : public ::testing::Test {
protected:
  TimelineTest() {
    DialectRegistry registry;
    registerDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  Timeline simulate(StringRef source, StringRef function,
                    CommStreams streams = CommStreams::PerGroup) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    auto func = module->lookupSymbol<func::FuncOp>(function);
    EXPECT_TRUE(func);
    FixedEstimator estimator;
    FailureOr<Timeline> timeline = simulateTimeline(func, estimator, streams);
    EXPECT_TRUE(succeeded(timeline));
    return succeeded(timeline) ? *timeline : Timeline();
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

constexpr StringLiteral kProgram = R"mlir(
dtensor.mesh @m shape = [2, 4]
func.func @f(%x: tensor<8x8xf32>, %g: tensor<2x8xf32>) -> tensor<8x8xf32> {
  // compute 0-5
  %a = linalg.add ins(%x, %x : tensor<8x8xf32>, tensor<8x8xf32>)
      outs(%x : tensor<8x8xf32>) -> tensor<8x8xf32>
  // all_reduce on [1] 5-25, all_gather on [0] 5-13
  %f0 = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [1] reduce = sum : tensor<8x8xf32>
    dtensor.yield %r : tensor<8x8xf32>
  } : !dtensor.future<tensor<8x8xf32>>
  %f1 = dtensor.async_start {
    %r = dtensor.all_gather %g on @m axes = [0] gather_dim = 0
        : tensor<2x8xf32> -> tensor<4x8xf32>
    dtensor.yield %r : tensor<4x8xf32>
  } : !dtensor.future<tensor<4x8xf32>>
  // compute 5-10
  %b = linalg.add ins(%x, %x : tensor<8x8xf32>, tensor<8x8xf32>)
      outs(%x : tensor<8x8xf32>) -> tensor<8x8xf32>
  // stall 10-13, wait 13-14
  %w1 = dtensor.wait %f1 : !dtensor.future<tensor<4x8xf32>>
  // stall 14-25, wait 25-26
  %w0 = dtensor.wait %f0 : !dtensor.future<tensor<8x8xf32>>
  // sync all_reduce on [1] 26-46, stall 26-46
  %s = dtensor.all_reduce %w0 on @m axes = [1] reduce = sum : tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}
)mlir";

TEST_F(TimelineTest, PerGroupStreams) {
  Timeline t = simulate(kProgram, "f");
  EXPECT_EQ(t.function, "f");
  ASSERT_EQ(t.lanes.size(), 3u);
  EXPECT_EQ(t.lanes[0].name, "compute");
  EXPECT_TRUE(t.lanes[0].isCompute);
  EXPECT_EQ(t.lanes[1].name, "comm @m [1]");
  EXPECT_EQ(t.lanes[2].name, "comm @m [0]");
  EXPECT_FALSE(t.lanes[1].isCompute);

  using Kind = TimelineEvent::Kind;
  struct Expected {
    Kind kind;
    const char *name;
    unsigned lane;
    double start, duration;
  };
  const Expected expected[] = {
      {Kind::Compute, "linalg.add", 0, 0, 5},
      {Kind::AsyncCollective, "dtensor.all_reduce", 1, 5, 20},
      {Kind::AsyncCollective, "dtensor.all_gather", 2, 5, 8},
      {Kind::Compute, "linalg.add", 0, 5, 5},
      {Kind::Stall, "dtensor.all_gather", 0, 10, 3},
      {Kind::Compute, "dtensor.wait", 0, 13, 1},
      {Kind::Stall, "dtensor.all_reduce", 0, 14, 11},
      {Kind::Compute, "dtensor.wait", 0, 25, 1},
      {Kind::Collective, "dtensor.all_reduce", 1, 26, 20},
      {Kind::Stall, "dtensor.all_reduce", 0, 26, 20},
  };
  ASSERT_EQ(t.events.size(), std::size(expected));
  for (auto [event, want] : llvm::zip(t.events, expected)) {
    EXPECT_EQ(event.kind, want.kind) << want.name;
    EXPECT_EQ(event.name, want.name);
    EXPECT_EQ(event.lane, want.lane) << want.name;
    EXPECT_DOUBLE_EQ(event.startUs, want.start) << want.name;
    EXPECT_DOUBLE_EQ(event.durationUs, want.duration) << want.name;
    EXPECT_NE(event.op, nullptr);
  }
  EXPECT_DOUBLE_EQ(t.totalUs, 46);
  EXPECT_DOUBLE_EQ(t.computeUs, 12);
  EXPECT_DOUBLE_EQ(t.commUs, 48);
  EXPECT_DOUBLE_EQ(t.exposedCommUs, 3 + 11 + 20);
}

TEST_F(TimelineTest, SingleStreamSerializes) {
  Timeline t = simulate(kProgram, "f", CommStreams::Single);
  ASSERT_EQ(t.lanes.size(), 2u);
  EXPECT_EQ(t.lanes[1].name, "comm");
  // The all_gather queues behind the all_reduce: 25-33; the wait for it
  // stalls 10-33, the all_reduce is done by then.
  const TimelineEvent &gather = t.events[2];
  EXPECT_EQ(gather.name, "dtensor.all_gather");
  EXPECT_DOUBLE_EQ(gather.startUs, 25);
  EXPECT_DOUBLE_EQ(t.events[4].startUs, 10);
  EXPECT_DOUBLE_EQ(t.events[4].durationUs, 23);
  // wait 33-34, wait for the all_reduce (no stall) 34-35, sync 35-55.
  EXPECT_DOUBLE_EQ(t.totalUs, 55);
  EXPECT_DOUBLE_EQ(t.exposedCommUs, 23 + 20);
}

TEST_F(TimelineTest, EmptyAndExternalFunctions) {
  Timeline t = simulate(R"mlir(
func.func @empty() {
  return
}
)mlir",
                        "empty");
  EXPECT_EQ(t.lanes.size(), 1u);
  EXPECT_TRUE(t.events.empty());
  EXPECT_EQ(t.totalUs, 0);
  Timeline ext = simulate("func.func private @ext(tensor<4xf32>)", "ext");
  EXPECT_TRUE(ext.events.empty());
  EXPECT_EQ(ext.totalUs, 0);
}

} // namespace
