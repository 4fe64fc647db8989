//===- RedistributeTest.cpp - redistribution planner and local shapes -----===//

#include "dtensor/Sharding/Redistribute.h"
#include "dtensor/Sharding/Layout.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dtensor;

namespace {

class RedistributeTest : public ::testing::Test {
protected:
  RedistributeTest() {
    context.loadDialect<DTensorDialect>();
    module = parseSourceString<ModuleOp>(R"mlir(
      dtensor.mesh @tp shape = [4]
      dtensor.mesh @pair shape = [2]
      dtensor.mesh @m22 shape = [2, 2]
      dtensor.mesh @m24 shape = [2, 4]
      dtensor.mesh @m14 shape = [1, 4]
    )mlir",
                                         &context);
  }

  MeshOp mesh(StringRef name) {
    return cast<MeshOp>(SymbolTable::lookupSymbolIn(*module, name));
  }
  PlacementAttr shard(int64_t dim) {
    return PlacementAttr::getShard(&context, dim);
  }
  PlacementAttr replicate() { return PlacementAttr::getReplicate(&context); }
  PlacementAttr partial(ReduceKind op = ReduceKind::Sum) {
    return PlacementAttr::getPartial(&context, op);
  }
  LayoutAttr layout(StringRef meshName, ArrayRef<PlacementAttr> placements) {
    return LayoutAttr::get(&context, FlatSymbolRefAttr::get(&context, meshName),
                           placements);
  }
  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, Float32Type::get(&context));
  }
  /// The plan's steps as (mesh axis, kind) pairs.
  static SmallVector<std::pair<int64_t, StepKind>>
  steps(const RedistributePlan &plan) {
    SmallVector<std::pair<int64_t, StepKind>> result;
    for (const RedistributeStep &step : plan.steps)
      result.push_back({step.meshAxis, step.kind});
    return result;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  HardwareModel hw = HardwareModel::h200();
};

using Steps = SmallVector<std::pair<int64_t, StepKind>>;

//===----------------------------------------------------------------------===//
// classifyStep
//===----------------------------------------------------------------------===//

TEST_F(RedistributeTest, ClassifyStepTable) {
  struct Row {
    PlacementAttr src, dst;
    StepKind kind;
  };
  const Row rows[] = {
      {shard(0), replicate(), StepKind::AllGather},
      {shard(1), replicate(), StepKind::AllGather},
      {shard(0), shard(1), StepKind::AllToAll},
      {shard(1), shard(0), StepKind::AllToAll},
      {partial(), replicate(), StepKind::AllReduce},
      {partial(ReduceKind::Max), replicate(), StepKind::AllReduce},
      {partial(), shard(0), StepKind::ReduceScatter},
      {partial(ReduceKind::Avg), shard(1), StepKind::ReduceScatter},
      {replicate(), shard(0), StepKind::LocalChunk},
      {replicate(), partial(), StepKind::LocalPartition},
      {replicate(), partial(ReduceKind::Avg), StepKind::LocalPartition},
      {replicate(), partial(ReduceKind::Min), StepKind::LocalPartition},
      {replicate(), partial(ReduceKind::Max), StepKind::LocalPartition},
      {replicate(), replicate(), StepKind::None},
      {shard(1), shard(1), StepKind::None},
      {partial(ReduceKind::Min), partial(ReduceKind::Min), StepKind::None},
      {partial(), partial(ReduceKind::Avg), StepKind::LocalRescale},
      {partial(ReduceKind::Avg), partial(), StepKind::LocalRescale},
  };
  for (const Row &row : rows) {
    std::string why;
    FailureOr<StepKind> kind = classifyStep(row.src, row.dst, 4, &why);
    ASSERT_TRUE(succeeded(kind)) << why;
    EXPECT_EQ(*kind, row.kind) << stringifyStepKind(*kind).str();
    EXPECT_TRUE(why.empty());
    // One process moves nothing.
    FailureOr<StepKind> single = classifyStep(row.src, row.dst, 1, nullptr);
    ASSERT_TRUE(succeeded(single));
    EXPECT_EQ(*single, StepKind::None);
  }
}

TEST_F(RedistributeTest, ClassifyStepRejectsMeaninglessTransitions) {
  struct Row {
    PlacementAttr src, dst;
    const char *why;
  };
  const Row rows[] = {
      {shard(0), partial(),
       "S(0) -> P(sum): a shard cannot become a pending reduction"},
      {shard(2), partial(ReduceKind::Max),
       "S(2) -> P(max): a shard cannot become a pending reduction"},
      {replicate(), partial(ReduceKind::Product),
       "R -> P(product): a replicated value has no exact product "
       "decomposition"},
      {partial(ReduceKind::Sum), partial(ReduceKind::Max),
       "P(sum) -> P(max): mixed Partial reductions have no meaning"},
      {partial(ReduceKind::Max), partial(ReduceKind::Min),
       "P(max) -> P(min): mixed Partial reductions have no meaning"},
  };
  for (const Row &row : rows) {
    // Invalid on any axis, one process included.
    for (int64_t size : {4, 1}) {
      std::string why;
      EXPECT_TRUE(failed(classifyStep(row.src, row.dst, size, &why)));
      EXPECT_EQ(why, row.why);
    }
    // The reason is optional.
    EXPECT_TRUE(failed(classifyStep(row.src, row.dst, 4, nullptr)));
  }
}

// P(sum) -> P(avg) multiplies by the group size, exact on any type; P(avg)
// -> P(sum) divides, which only floats do exactly.
TEST_F(RedistributeTest, ClassifyStepRescaleByElementType) {
  Builder b(&context);
  PlacementAttr sum = partial(), avg = partial(ReduceKind::Avg);
  for (Type type : SmallVector<Type>{b.getF32Type(), b.getBF16Type(),
                                     b.getI32Type()}) {
    FailureOr<StepKind> kind = classifyStep(sum, avg, 4, nullptr, type);
    ASSERT_TRUE(succeeded(kind));
    EXPECT_EQ(*kind, StepKind::LocalRescale);
  }
  EXPECT_TRUE(succeeded(classifyStep(avg, sum, 4, nullptr, b.getF32Type())));
  for (Type type : SmallVector<Type>{b.getI32Type(), b.getI64Type()}) {
    std::string why;
    EXPECT_TRUE(failed(classifyStep(avg, sum, 4, &why, type)));
    EXPECT_EQ(why, "P(avg) -> P(sum): an integer tensor would divide "
                   "inexactly");
    // Partial(sum) itself stays fine on integers.
    EXPECT_TRUE(succeeded(classifyStep(sum, sum, 4, nullptr, type)));
  }
}

TEST_F(RedistributeTest, StepKindNames) {
  EXPECT_EQ(stringifyStepKind(StepKind::None), "none");
  EXPECT_EQ(stringifyStepKind(StepKind::AllGather), "all_gather");
  EXPECT_EQ(stringifyStepKind(StepKind::AllReduce), "all_reduce");
  EXPECT_EQ(stringifyStepKind(StepKind::ReduceScatter), "reduce_scatter");
  EXPECT_EQ(stringifyStepKind(StepKind::AllToAll), "all_to_all");
  EXPECT_EQ(stringifyStepKind(StepKind::LocalChunk), "local_chunk");
  EXPECT_EQ(stringifyStepKind(StepKind::LocalPartition), "local_partition");
  EXPECT_EQ(stringifyStepKind(StepKind::LocalRescale), "local_rescale");
}

//===----------------------------------------------------------------------===//
// planRedistribution: step sequences
//===----------------------------------------------------------------------===//

TEST_F(RedistributeTest, OneAxisPlansAreOneStep) {
  struct Row {
    PlacementAttr src, dst;
    StepKind kind;
  };
  const Row rows[] = {
      {shard(0), replicate(), StepKind::AllGather},
      {partial(), replicate(), StepKind::AllReduce},
      // P -> S is one reduce_scatter, not an all_reduce and a chunk.
      {partial(), shard(1), StepKind::ReduceScatter},
      {replicate(), shard(1), StepKind::LocalChunk},
      {shard(0), shard(1), StepKind::AllToAll},
      {replicate(), partial(ReduceKind::Avg), StepKind::LocalPartition},
  };
  // Even (8x16) and uneven (6x10: 2, 2, 2, 0 rows) shapes plan alike.
  for (RankedTensorType type : {f32({8, 16}), f32({6, 10})}) {
    for (const Row &row : rows) {
      LayoutAttr from = layout("tp", {row.src}), to = layout("tp", {row.dst});
      std::string why;
      FailureOr<RedistributePlan> plan =
          planRedistribution(mesh("tp"), type, from, to, hw, &why);
      ASSERT_TRUE(succeeded(plan)) << why;
      EXPECT_EQ(steps(*plan), (Steps{{0, row.kind}}));
      EXPECT_EQ(plan->steps.front().from, from);
      EXPECT_EQ(plan->steps.front().to, to);
      EXPECT_GT(plan->costUs, 0);
      EXPECT_DOUBLE_EQ(plan->costUs, plan->steps.front().costUs);
    }
  }
}

TEST_F(RedistributeTest, IdentityIsEmpty) {
  LayoutAttr l = layout("m24", {shard(0), partial()});
  FailureOr<RedistributePlan> plan =
      planRedistribution(mesh("m24"), f32({8, 8}), l, l, hw, nullptr);
  ASSERT_TRUE(succeeded(plan));
  EXPECT_TRUE(plan->steps.empty());
  EXPECT_EQ(plan->costUs, 0);
}

TEST_F(RedistributeTest, NestedShardsLeaveInReverseAxisOrder) {
  // (S(0), S(0)) -> (R, S(0)): mesh axis 1 split last, so it gathers first;
  // then mesh axis 0; then mesh axis 1 takes its chunk of the whole.
  LayoutAttr from = layout("m22", {shard(0), shard(0)});
  LayoutAttr to = layout("m22", {replicate(), shard(0)});
  FailureOr<RedistributePlan> plan =
      planRedistribution(mesh("m22"), f32({8, 16}), from, to, hw, nullptr);
  ASSERT_TRUE(succeeded(plan));
  EXPECT_EQ(steps(*plan), (Steps{{1, StepKind::AllGather},
                                 {0, StepKind::AllGather},
                                 {1, StepKind::LocalChunk}}));
  // The steps chain from `from` to `to`, one axis at a time.
  EXPECT_EQ(plan->steps[0].from, from);
  EXPECT_EQ(plan->steps[0].to, layout("m22", {shard(0), replicate()}));
  EXPECT_EQ(plan->steps[1].from, plan->steps[0].to);
  EXPECT_EQ(plan->steps[1].to, layout("m22", {replicate(), replicate()}));
  EXPECT_EQ(plan->steps[2].from, plan->steps[1].to);
  EXPECT_EQ(plan->steps[2].to, to);
  double sum = 0;
  for (const RedistributeStep &step : plan->steps)
    sum += step.costUs;
  EXPECT_NEAR(plan->costUs, sum, 1e-9);
}

TEST_F(RedistributeTest, PartialToNestedShardScattersOuterAxisFirst) {
  FailureOr<RedistributePlan> plan = planRedistribution(
      mesh("m24"), f32({8, 16}), layout("m24", {partial(), partial()}),
      layout("m24", {shard(0), shard(0)}), hw, nullptr);
  ASSERT_TRUE(succeeded(plan));
  EXPECT_EQ(steps(*plan), (Steps{{0, StepKind::ReduceScatter},
                                 {1, StepKind::ReduceScatter}}));
}

TEST_F(RedistributeTest, ChunkBeforeAllReduce) {
  // (P, R) -> (R, S(0)): the all_reduce runs on the quarter mesh axis 1
  // keeps, not on the whole tensor.
  FailureOr<RedistributePlan> plan = planRedistribution(
      mesh("m24"), f32({1024, 1024}), layout("m24", {partial(), replicate()}),
      layout("m24", {replicate(), shard(0)}), hw, nullptr);
  ASSERT_TRUE(succeeded(plan));
  EXPECT_EQ(steps(*plan),
            (Steps{{1, StepKind::LocalChunk}, {0, StepKind::AllReduce}}));
}

TEST_F(RedistributeTest, SizeOneAxesAreDropped) {
  // Only mesh axis 0 (one process) changes: nothing to do.
  FailureOr<RedistributePlan> none = planRedistribution(
      mesh("m14"), f32({8, 16}), layout("m14", {shard(0), shard(1)}),
      layout("m14", {replicate(), shard(1)}), hw, nullptr);
  ASSERT_TRUE(succeeded(none));
  EXPECT_TRUE(none->steps.empty());
  // Both change: one all_gather on mesh axis 1, spanning the whole change.
  LayoutAttr from = layout("m14", {shard(0), shard(1)});
  LayoutAttr to = layout("m14", {replicate(), replicate()});
  FailureOr<RedistributePlan> one =
      planRedistribution(mesh("m14"), f32({8, 16}), from, to, hw, nullptr);
  ASSERT_TRUE(succeeded(one));
  EXPECT_EQ(steps(*one), (Steps{{1, StepKind::AllGather}}));
  EXPECT_EQ(one->steps.front().from, from);
  EXPECT_EQ(one->steps.front().to, to);
}

TEST_F(RedistributeTest, PlanFailures) {
  std::string why;
  EXPECT_TRUE(failed(planRedistribution(
      mesh("tp"), f32({8, 8}), layout("tp", {replicate()}),
      layout("tp", {partial(ReduceKind::Product)}), hw, &why)));
  EXPECT_EQ(why, "R -> P(product): a replicated value has no exact product "
                 "decomposition");
  EXPECT_TRUE(failed(planRedistribution(
      mesh("m24"), f32({8, 8}), layout("m24", {replicate(), shard(1)}),
      layout("m24", {shard(0), partial()}), hw, &why)));
  EXPECT_EQ(why, "S(1) -> P(sum): a shard cannot become a pending reduction")
      << "expected the failing axis, not the valid one";
  // Each axis valid on its own: R -> P partitions (on the smaller shard,
  // first), S(0) -> R gathers.
  FailureOr<RedistributePlan> valid = planRedistribution(
      mesh("m24"), f32({8, 8}), layout("m24", {shard(0), replicate()}),
      layout("m24", {replicate(), partial()}), hw, nullptr);
  ASSERT_TRUE(succeeded(valid));
  EXPECT_EQ(steps(*valid),
            (Steps{{1, StepKind::LocalPartition}, {0, StepKind::AllGather}}));
  EXPECT_TRUE(failed(planRedistribution(mesh("tp"), f32({8, 8}),
                                        layout("tp", {shard(0)}),
                                        layout("pair", {shard(0)}), hw, &why)));
  EXPECT_EQ(why, "layouts are on different meshes");
}

//===----------------------------------------------------------------------===//
// planRedistribution: costs
//===----------------------------------------------------------------------===//

TEST_F(RedistributeTest, CostsAreMonotonicInSize) {
  const std::pair<SmallVector<PlacementAttr>, SmallVector<PlacementAttr>>
      cases[] = {
          {{shard(0), shard(1)}, {replicate(), replicate()}},
          {{partial(), replicate()}, {replicate(), replicate()}},
          {{partial(), partial()}, {shard(0), shard(0)}},
          {{shard(0), replicate()}, {shard(1), replicate()}},
          {{replicate(), replicate()}, {shard(0), shard(1)}},
          {{partial(), replicate()}, {replicate(), shard(0)}},
      };
  for (const auto &[src, dst] : cases) {
    double previous = 0;
    for (int64_t rows : {8, 64, 512, 4096, 32768}) {
      FailureOr<RedistributePlan> plan =
          planRedistribution(mesh("m24"), f32({rows, 1024}), layout("m24", src),
                             layout("m24", dst), hw, nullptr);
      ASSERT_TRUE(succeeded(plan));
      EXPECT_GT(plan->costUs, 0);
      EXPECT_GE(plan->costUs, previous) << rows << " rows";
      previous = plan->costUs;
    }
  }
}

TEST_F(RedistributeTest, CollectiveCostsGrowWithBytes) {
  // Collectives move bytes: 64 times the data costs strictly more. Wider
  // elements cost more than narrower ones of the same shape.
  for (auto [src, dst] :
       {std::pair{shard(0), replicate()}, std::pair{partial(), replicate()},
        std::pair{partial(), shard(0)}, std::pair{shard(0), shard(1)}}) {
    LayoutAttr from = layout("tp", {src}), to = layout("tp", {dst});
    auto cost = [&](RankedTensorType type) {
      return planRedistribution(mesh("tp"), type, from, to, hw, nullptr)
          ->costUs;
    };
    EXPECT_LT(cost(f32({1024, 1024})), cost(f32({8192, 8192})));
    RankedTensorType f16 =
        RankedTensorType::get({4096, 4096}, Float16Type::get(&context));
    EXPECT_LT(cost(f16), cost(f32({4096, 4096})));
  }
}

TEST_F(RedistributeTest, ReduceScatterIsCheaperThanAllReduceAndChunk) {
  FailureOr<RedistributePlan> toShard = planRedistribution(
      mesh("tp"), f32({4096, 4096}), layout("tp", {partial()}),
      layout("tp", {shard(0)}), hw, nullptr);
  FailureOr<RedistributePlan> toReplicate = planRedistribution(
      mesh("tp"), f32({4096, 4096}), layout("tp", {partial()}),
      layout("tp", {replicate()}), hw, nullptr);
  ASSERT_TRUE(succeeded(toShard) && succeeded(toReplicate));
  EXPECT_LT(toShard->costUs, toReplicate->costUs);
}

//===----------------------------------------------------------------------===//
// Local shapes
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// planRedistributionLikePyTorch: PyTorch's greedy transform infos
//===----------------------------------------------------------------------===//

TEST_F(RedistributeTest, PyTorchReplicatesMisalignedNestedShardsFirst) {
  // PyTorch's own example: (S0, S0) -> (R, S0) gathers axis 1, then axis 0,
  // then chunks axis 1 again.
  FailureOr<RedistributePlan> plan = planRedistributionLikePyTorch(
      mesh("m22"), f32({8, 8}), layout("m22", {shard(0), shard(0)}),
      layout("m22", {replicate(), shard(0)}), hw, nullptr);
  ASSERT_TRUE(succeeded(plan));
  EXPECT_EQ(steps(*plan), (Steps{{1, StepKind::AllGather},
                                 {0, StepKind::AllGather},
                                 {1, StepKind::LocalChunk}}));
  EXPECT_EQ(plan->getNumCollectives(), 2u);
  EXPECT_EQ(plan->describe(),
            "all_gather(axis 1), all_gather(axis 0), local_chunk(axis 1)");
  // The planner takes the same steps (only the last axis sharding a dim
  // may give it up).
  FailureOr<RedistributePlan> ours = planRedistribution(
      mesh("m22"), f32({8, 8}), layout("m22", {shard(0), shard(0)}),
      layout("m22", {replicate(), shard(0)}), hw, nullptr);
  ASSERT_TRUE(succeeded(ours));
  EXPECT_EQ(steps(*ours), steps(*plan));
  EXPECT_EQ(ours->getSentBytes(), plan->getSentBytes());
}

TEST_F(RedistributeTest, PyTorchGoesOuterToInnerFromUnshardedSources) {
  // No shard in the source: outer axis first.
  FailureOr<RedistributePlan> plan = planRedistributionLikePyTorch(
      mesh("m22"), f32({8, 8}), layout("m22", {partial(), partial()}),
      layout("m22", {replicate(), shard(1)}), hw, nullptr);
  ASSERT_TRUE(succeeded(plan));
  EXPECT_EQ(steps(*plan), (Steps{{0, StepKind::AllReduce},
                                 {1, StepKind::ReduceScatter}}));
  // An all_reduce sends twice what a reduce_scatter of the same buffer
  // does: 2 * 256 * 1/2 and 256 * 1/2 bytes.
  EXPECT_EQ(plan->steps[0].sentBytes, 256);
  EXPECT_EQ(plan->steps[1].sentBytes, 128);
  EXPECT_EQ(plan->getSentBytes(), 384);
}

TEST_F(RedistributeTest, PyTorchPlanFailsLikeThePlanner) {
  std::string why;
  EXPECT_TRUE(failed(planRedistributionLikePyTorch(
      mesh("tp"), f32({8}), layout("tp", {shard(0)}),
      layout("tp", {partial()}), hw, &why)));
  EXPECT_NE(why.find("a shard cannot become a pending reduction"),
            std::string::npos);
}

TEST_F(RedistributeTest, LocalShapesOneAxis) {
  int64_t dyn = ShapedType::kDynamic;
  MeshOp tp = mesh("tp"), pair = mesh("pair");
  // Even: every rank holds 8/4.
  EXPECT_EQ(getLocalShape({8, 16}, layout("tp", {shard(0)}), tp),
            (SmallVector<int64_t>{2, 16}));
  EXPECT_EQ(getPaddedLocalShape({8, 16}, layout("tp", {shard(0)}), tp),
            (SmallVector<int64_t>{2, 16}));
  // 257 over 2 is 129 + 128: dynamic, padded to 129.
  EXPECT_EQ(getLocalShape({4, 257}, layout("pair", {shard(1)}), pair),
            (SmallVector<int64_t>{4, dyn}));
  EXPECT_EQ(getPaddedLocalShape({4, 257}, layout("pair", {shard(1)}), pair),
            (SmallVector<int64_t>{4, 129}));
  // 6 over 4 is 2, 2, 2, 0.
  EXPECT_EQ(getLocalShape({6, 8}, layout("tp", {shard(0)}), tp),
            (SmallVector<int64_t>{dyn, 8}));
  EXPECT_EQ(getPaddedLocalShape({6, 8}, layout("tp", {shard(0)}), tp),
            (SmallVector<int64_t>{2, 8}));
  // Replicate and Partial keep the global shape.
  for (PlacementAttr p : {replicate(), partial(), partial(ReduceKind::Max)}) {
    EXPECT_EQ(getLocalShape({6, 8}, layout("tp", {p}), tp),
              (SmallVector<int64_t>{6, 8}));
    EXPECT_EQ(getPaddedLocalShape({6, 8}, layout("tp", {p}), tp),
              (SmallVector<int64_t>{6, 8}));
  }
  // A dynamic global size stays dynamic.
  EXPECT_EQ(getLocalShape({dyn, 8}, layout("tp", {shard(0)}), tp),
            (SmallVector<int64_t>{dyn, 8}));
  EXPECT_EQ(getPaddedLocalShape({dyn, 8}, layout("tp", {shard(0)}), tp),
            (SmallVector<int64_t>{dyn, 8}));
  // The local type carries the element type.
  RankedTensorType local =
      getLocalType(f32({6, 8}), layout("tp", {shard(1)}), tp);
  EXPECT_EQ(local, f32({6, 2}));
}

TEST_F(RedistributeTest, LocalShapesNested) {
  int64_t dyn = ShapedType::kDynamic;
  MeshOp m22 = mesh("m22"), m24 = mesh("m24");
  LayoutAttr nested = layout("m22", {shard(0), shard(0)});
  // 8 over 2 x 2: 2 everywhere.
  EXPECT_EQ(getLocalShape({8, 3}, nested, m22), (SmallVector<int64_t>{2, 3}));
  // 7 over 2 x 2: 4 + 3, then 2 + 2 and 2 + 1.
  EXPECT_EQ(getLocalShape({7, 3}, nested, m22), (SmallVector<int64_t>{dyn, 3}));
  EXPECT_EQ(getPaddedLocalShape({7, 3}, nested, m22),
            (SmallVector<int64_t>{2, 3}));
  // 6 over 2 x 4: 3 + 3, then 1, 1, 1, 0; padded to 1.
  LayoutAttr nested24 = layout("m24", {shard(0), shard(0)});
  EXPECT_EQ(getLocalShape({6, 10}, nested24, m24),
            (SmallVector<int64_t>{dyn, 10}));
  EXPECT_EQ(getPaddedLocalShape({6, 10}, nested24, m24),
            (SmallVector<int64_t>{1, 10}));
  // 16 over 2 x 4: 2.
  EXPECT_EQ(getLocalShape({16, 6}, nested24, m24),
            (SmallVector<int64_t>{2, 6}));
  // Two dims, one per mesh axis; 10 columns over 4: 3, 3, 3, 1.
  LayoutAttr twoDims = layout("m24", {shard(0), shard(1)});
  EXPECT_EQ(getLocalShape({8, 10}, twoDims, m24),
            (SmallVector<int64_t>{4, dyn}));
  EXPECT_EQ(getPaddedLocalShape({8, 10}, twoDims, m24),
            (SmallVector<int64_t>{4, 3}));
  // A mesh axis of one process splits nothing.
  EXPECT_EQ(
      getLocalShape({6, 10}, layout("m14", {shard(1), shard(0)}), mesh("m14")),
      (SmallVector<int64_t>{dyn, 10}));
  EXPECT_EQ(getPaddedLocalShape({6, 10}, layout("m14", {shard(1), shard(0)}),
                                mesh("m14")),
            (SmallVector<int64_t>{2, 10}));
}

} // namespace
