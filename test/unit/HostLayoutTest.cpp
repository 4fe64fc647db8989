//===- HostLayoutTest.cpp - layouts, blocks, distribute and reassemble ----===//

#include "dtensor/Support/HostLayout.h"
#include "dtensor/Support/EntryLayouts.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace mlir::dtensor;
using Reduce = HostPlacement::Reduce;

namespace {

HostPlacement S(int64_t dim) { return HostPlacement::shard(dim); }
const HostPlacement R = HostPlacement::replicate();
HostPlacement P(Reduce reduce) { return HostPlacement::partial(reduce); }

HostMesh mesh(std::vector<int64_t> shape, std::vector<int64_t> devices = {}) {
  return {"m", std::move(shape), std::move(devices)};
}

/// A tensor holding 1, 2, 3, ... (or its element type's conversion).
HostTensor iota(ElementType type, std::vector<int64_t> shape) {
  HostTensor t(type, shape);
  for (int64_t i = 0, n = t.getNumElements(); i < n; ++i)
    t.set(i, static_cast<double>(i + 1));
  return t;
}

/// Every position's local tensor of `global`.
std::vector<HostTensor> distributeAll(const HostTensor &global,
                                      const HostLayout &layout,
                                      const HostMesh &m) {
  std::vector<HostTensor> locals;
  for (int64_t p = 0; p < m.size(); ++p)
    locals.push_back(distribute(global, layout, m, m.coordsAt(p)));
  return locals;
}

void expectSame(const HostTensor &a, const HostTensor &b) {
  ASSERT_EQ(a.type, b.type);
  ASSERT_EQ(std::vector<int64_t>(a.shape.begin(), a.shape.end()),
            std::vector<int64_t>(b.shape.begin(), b.shape.end()));
  for (int64_t i = 0, n = a.getNumElements(); i < n; ++i)
    ASSERT_EQ(a.get(i), b.get(i)) << "element " << i;
}

/// distribute -> reassemble gives `global` back in every replica.
void expectRoundTrip(const HostTensor &global, const HostLayout &layout,
                     const HostMesh &m) {
  std::vector<int64_t> shape(global.shape.begin(), global.shape.end());
  HostReassembly back = reassemble(distributeAll(global, layout, m),
                                   global.type, shape, layout, m);
  ASSERT_EQ(back.error, "") << layout.str();
  ASSERT_FALSE(back.replicas.empty());
  for (const HostReplica &replica : back.replicas)
    expectSame(replica.value, global);
}

TEST(HostLayout, PlacementText) {
  for (HostPlacement p : {S(0), S(12), R, P(Reduce::Sum), P(Reduce::Avg),
                          P(Reduce::Product), P(Reduce::Min), P(Reduce::Max)})
    EXPECT_EQ(HostPlacement::parse(p.str()), p) << p.str();
  EXPECT_EQ(S(3).str(), "S(3)");
  EXPECT_EQ(P(Reduce::Product).str(), "P(product)");
  for (const char *bad :
       {"", "S()", "S(-1)", "S(x)", "P(mean)", "Q(0)", "r", "S(0"})
    EXPECT_FALSE(HostPlacement::parse(bad).has_value()) << bad;
  EXPECT_EQ((HostLayout{{S(0), R}}).str(), "[S(0), R]");
}

TEST(HostLayout, Verify) {
  EXPECT_EQ((HostLayout{{S(1), R}}).verify(mesh({2, 2}), 2), "");
  EXPECT_NE((HostLayout{{S(0)}}).verify(mesh({2, 2}), 2), "");
  EXPECT_NE((HostLayout{{S(2), R}}).verify(mesh({2, 2}), 2), "");
  EXPECT_NE(
      (HostLayout{{P(Reduce::Sum), P(Reduce::Max)}}).verify(mesh({2, 2}), 1),
      "");
}

TEST(HostLayout, MeshCoordinatesAndDevices) {
  HostMesh m = mesh({2, 3});
  EXPECT_EQ(m.size(), 6);
  EXPECT_EQ(m.coordsAt(4), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(m.positionAt({1, 2}), 5);
  HostMesh d = mesh({2}, {5, 3});
  EXPECT_EQ(d.coordsOf(3), (std::vector<int64_t>{1}));
  EXPECT_FALSE(d.coordsOf(0).has_value());
  EXPECT_EQ(d.rankAt(0), 5);
  EXPECT_FALSE(mesh({4}).coordsOf(4).has_value());
}

TEST(HostLayout, EvenShardBlocks) {
  HostLayout layout{{S(0)}};
  for (int64_t r = 0; r < 4; ++r)
    EXPECT_EQ(getLocalBlock({8, 3}, layout, {4}, {r}),
              (HostBlock{{2 * r, 0}, {2, 3}}));
  EXPECT_EQ(getUniformLocalShape({8, 3}, layout, {4}),
            (std::vector<int64_t>{2, 3}));
}

TEST(HostLayout, UnevenShardBlocks) {
  // torch.chunk: 6 rows over 4 ranks is 2, 2, 2, 0.
  HostLayout layout{{S(0)}};
  EXPECT_EQ(getLocalBlock({6}, layout, {4}, {2}), (HostBlock{{4}, {2}}));
  EXPECT_EQ(getLocalBlock({6}, layout, {4}, {3}), (HostBlock{{6}, {0}}));
  EXPECT_EQ(getUniformLocalShape({6}, layout, {4}),
            (std::vector<int64_t>{kUnknownSize}));
  EXPECT_EQ(getPaddedLocalShape({6}, layout, {4}), (std::vector<int64_t>{2}));
  // Unknown global sizes stay unknown.
  EXPECT_EQ(getUniformLocalShape({kUnknownSize, 8}, HostLayout{{S(1)}}, {4}),
            (std::vector<int64_t>{kUnknownSize, 2}));
  EXPECT_EQ(getPaddedLocalShape({kUnknownSize}, layout, {4}),
            (std::vector<int64_t>{kUnknownSize}));
}

TEST(HostLayout, TwoDimensionalMesh) {
  HostLayout layout{{S(1), S(0)}};
  // Position (1, 2) of a 2x3 mesh: columns by mesh dim 0, rows by dim 1.
  EXPECT_EQ(getLocalBlock({9, 4}, layout, {2, 3}, {1, 2}),
            (HostBlock{{6, 2}, {3, 2}}));
  expectRoundTrip(iota(ElementType::F32, {9, 4}), layout, mesh({2, 3}));
  expectRoundTrip(iota(ElementType::I64, {5, 7}), layout, mesh({2, 3}));
}

TEST(HostLayout, NestedSplitsOfOneDimension) {
  // 7 rows split by mesh dim 0 (2) then dim 1 (3): [0,4) -> 2,2,0 and
  // [4,7) -> 1,1,1.
  HostLayout layout{{S(0), S(0)}};
  std::vector<int64_t> meshShape = {2, 3};
  EXPECT_EQ(getLocalBlock({7}, layout, meshShape, {0, 1}),
            (HostBlock{{2}, {2}}));
  EXPECT_EQ(getLocalBlock({7}, layout, meshShape, {0, 2}),
            (HostBlock{{4}, {0}}));
  EXPECT_EQ(getLocalBlock({7}, layout, meshShape, {1, 2}),
            (HostBlock{{6}, {1}}));
  EXPECT_EQ(getPaddedLocalShape({7}, layout, meshShape),
            (std::vector<int64_t>{2}));
  EXPECT_EQ(layout.splitsPerDim(meshShape, 1),
            (std::vector<std::vector<int64_t>>{{2, 3}}));
  expectRoundTrip(iota(ElementType::F64, {7, 2}), layout, mesh({2, 3}));
}

TEST(HostLayout, ZeroSizeShards) {
  // 2 rows on 4 ranks: ranks 2 and 3 hold 0x3 blocks.
  HostLayout layout{{S(0)}};
  HostTensor global = iota(ElementType::F32, {2, 3});
  std::vector<HostTensor> locals = distributeAll(global, layout, mesh({4}));
  EXPECT_EQ(locals[3].getNumElements(), 0);
  EXPECT_EQ(locals[3].shape[0], 0);
  expectRoundTrip(global, layout, mesh({4}));
  // And an empty global tensor.
  expectRoundTrip(HostTensor(ElementType::F32, {0, 3}), layout, mesh({4}));
}

TEST(HostLayout, PartialDistributeGivesValueBack) {
  HostMesh m = mesh({2, 2});
  HostTensor global = iota(ElementType::F32, {4});
  for (Reduce reduce :
       {Reduce::Sum, Reduce::Avg, Reduce::Product, Reduce::Min, Reduce::Max}) {
    HostLayout layout{{P(reduce), S(0)}};
    std::vector<HostTensor> locals = distributeAll(global, layout, m);
    // Sum and product: the value at coordinate 0 of the Partial dimension,
    // the identity elsewhere; the others hold the value everywhere.
    double other = locals[2].get(0);
    if (reduce == Reduce::Sum)
      EXPECT_EQ(other, 0);
    else if (reduce == Reduce::Product)
      EXPECT_EQ(other, 1);
    else
      EXPECT_EQ(other, 1.0);
    expectRoundTrip(global, layout, m);
  }
}

TEST(HostLayout, PartialReductions) {
  // Locals chosen by hand: position p holds p + 1 (i32) at every element.
  HostMesh m = mesh({4});
  auto locals = [&](ElementType type) {
    std::vector<HostTensor> out;
    for (int64_t p = 0; p < 4; ++p) {
      HostTensor t(type, {3});
      for (int64_t i = 0; i < 3; ++i)
        t.set(i, p + 1 - (type == ElementType::I32 ? 3 : 0));
      out.push_back(t);
    }
    return out;
  };
  struct Case {
    Reduce reduce;
    double f32, i32;
  } cases[] = {{Reduce::Sum, 10, -2},
               {Reduce::Avg, 2.5, -0.5},
               {Reduce::Product, 24, 0},
               {Reduce::Min, 1, -2},
               {Reduce::Max, 4, 1}};
  for (const Case &c : cases)
    for (ElementType type : {ElementType::F32, ElementType::I32}) {
      HostReassembly r =
          reassemble(locals(type), type, {3}, HostLayout{{P(c.reduce)}}, m);
      ASSERT_EQ(r.error, "");
      ASSERT_EQ(r.replicas.size(), 1u);
      double want = type == ElementType::F32 ? c.f32 : c.i32;
      // i32 avg truncates like the integer division the program does.
      if (type == ElementType::I32 && c.reduce == Reduce::Avg)
        want = 0;
      EXPECT_EQ(r.replicas[0].value.get(1), want)
          << getReduceName(c.reduce) << " " << getElementTypeName(type).str();
      EXPECT_EQ(r.replicas[0].ranks, (std::vector<int64_t>{0, 1, 2, 3}));
    }
}

TEST(HostLayout, PartialMinOfIntegersIsNotStartedFromInfinity) {
  // Regression: reassembly started P(min) from (int)+inf, i.e. INT_MIN,
  // so every i32 min was INT_MIN and correct ranks were a MISMATCH.
  HostMesh m = mesh({2});
  HostLayout layout{{P(Reduce::Min)}};
  HostTensor global = iota(ElementType::I32, {5});
  expectRoundTrip(global, layout, m);
  HostLayout maxLayout{{P(Reduce::Max)}};
  HostTensor negative(ElementType::I64, {2});
  negative.set(0, -7);
  negative.set(1, -9);
  expectRoundTrip(negative, maxLayout, m);
}

TEST(HostLayout, ReduceIdentitiesPerElementType) {
  EXPECT_EQ(getReduceIdentity(Reduce::Min, ElementType::F32),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(getReduceIdentity(Reduce::Max, ElementType::F64),
            -std::numeric_limits<double>::infinity());
  EXPECT_EQ(getReduceIdentity(Reduce::Min, ElementType::I32), 2147483647.0);
  EXPECT_EQ(getReduceIdentity(Reduce::Max, ElementType::I32), -2147483648.0);
  // Stored and read back unchanged (no undefined conversion).
  for (ElementType type : {ElementType::I32, ElementType::I64})
    for (Reduce reduce : {Reduce::Min, Reduce::Max}) {
      HostTensor t(type, {1});
      double identity = getReduceIdentity(reduce, type);
      t.set(0, identity);
      EXPECT_EQ(t.get(0), identity);
    }
  EXPECT_EQ(getReduceIdentity(Reduce::Product, ElementType::I64), 1);
  EXPECT_EQ(getReduceIdentity(Reduce::Avg, ElementType::F32), 0);
}

TEST(HostLayout, ReplicasAreReassembledEach) {
  // [R, S(0)] on 2x2: positions (0, *) and (1, *) are two replicas.
  HostMesh m = mesh({2, 2}, {3, 2, 1, 0});
  HostLayout layout{{R, S(0)}};
  HostTensor global = iota(ElementType::F32, {4});
  std::vector<HostTensor> locals = distributeAll(global, layout, m);
  locals[3].set(1, 100); // position 3 (world rank 0) is wrong
  HostReassembly r = reassemble(locals, ElementType::F32, {4}, layout, m);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.replicas.size(), 2u);
  EXPECT_EQ(r.replicas[0].ranks, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(r.replicas[1].ranks, (std::vector<int64_t>{1, 0}));
  expectSame(r.replicas[0].value, global);
  EXPECT_EQ(r.replicas[1].value.get(3), 100);
}

TEST(HostLayout, PartialReplicasAreReducedEach) {
  // [P(sum), R] on 2x3: three replicas, each the sum over mesh dim 0.
  HostMesh m = mesh({2, 3});
  HostLayout layout{{P(Reduce::Sum), R}};
  HostTensor global = iota(ElementType::F64, {2, 2});
  std::vector<HostTensor> locals = distributeAll(global, layout, m);
  HostReassembly r = reassemble(locals, ElementType::F64, {2, 2}, layout, m);
  ASSERT_EQ(r.replicas.size(), 3u);
  EXPECT_EQ(r.replicas[2].ranks, (std::vector<int64_t>{2, 5}));
  for (const HostReplica &replica : r.replicas)
    expectSame(replica.value, global);
}

TEST(HostLayout, ReassembleRejectsWrongLocals) {
  HostMesh m = mesh({2});
  HostLayout layout{{S(0)}};
  std::vector<HostTensor> locals =
      distributeAll(iota(ElementType::F32, {4}), layout, m);
  locals[1] = HostTensor(ElementType::F32, {3});
  EXPECT_NE(reassemble(locals, ElementType::F32, {4}, layout, m).error, "");
  locals.pop_back();
  EXPECT_NE(reassemble(locals, ElementType::F32, {4}, layout, m).error, "");
}

TEST(HostLayout, RandomRoundTrips) {
  std::mt19937 rng(7);
  std::vector<std::vector<int64_t>> meshes = {{4}, {2, 2}, {2, 3}, {3, 1, 2}};
  for (int iteration = 0; iteration < 200; ++iteration) {
    const std::vector<int64_t> &meshShape = meshes[rng() % meshes.size()];
    int64_t rank = 1 + rng() % 3;
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d)
      shape.push_back(rng() % 8);
    HostLayout layout;
    std::optional<Reduce> partial;
    for (size_t axis = 0; axis < meshShape.size(); ++axis) {
      switch (rng() % 3) {
      case 0:
        layout.placements.push_back(S(rng() % rank));
        break;
      case 1:
        layout.placements.push_back(R);
        break;
      default:
        if (!partial)
          partial = static_cast<Reduce>(rng() % 5);
        layout.placements.push_back(P(*partial));
      }
    }
    ElementType type = rng() % 2 ? ElementType::F64 : ElementType::I64;
    expectRoundTrip(iota(type, shape), layout, mesh(meshShape));
  }
}

TEST(EntryLayouts, JSONRoundTrip) {
  EntryLayouts layouts;
  layouts.entry = "mlp";
  layouts.meshes = {mesh({2, 2}), HostMesh{"pair", {2}, {3, 1}}};
  layouts.args.push_back({ElementType::F32, {8, 16}, 0, HostLayout{{S(0), R}}});
  layouts.results.push_back(
      {ElementType::I64, {3}, 1, HostLayout{{P(Reduce::Max)}}});
  llvm::Expected<EntryLayouts> back = EntryLayouts::fromJSON(layouts.toJSON());
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->entry, "mlp");
  ASSERT_EQ(back->meshes.size(), 2u);
  EXPECT_EQ(back->meshes[1].devices, (std::vector<int64_t>{3, 1}));
  ASSERT_EQ(back->args.size(), 1u);
  EXPECT_EQ(back->args[0].layout, layouts.args[0].layout);
  EXPECT_EQ(back->args[0].shape, layouts.args[0].shape);
  ASSERT_EQ(back->results.size(), 1u);
  EXPECT_EQ(back->results[0].type, ElementType::I64);
  EXPECT_EQ(back->results[0].mesh, 1);
  EXPECT_EQ(back->describe(back->results[0]),
            "tensor<3xi64> on @pair [P(max)]");
  EXPECT_EQ(back->getEntryMesh(), 0);
}

TEST(EntryLayouts, EntryMeshFromResults) {
  // Regression: an entry without arguments ran with the first mesh's
  // rank count although its result lives on another mesh.
  EntryLayouts layouts;
  layouts.meshes = {mesh({4}), HostMesh{"two", {2}, {}}};
  layouts.results.push_back({ElementType::F32, {4}, 1, HostLayout{{S(0)}}});
  EXPECT_EQ(layouts.getEntryMesh(), 1);
  EXPECT_FALSE(EntryLayouts().getEntryMesh().has_value());
}

TEST(EntryLayouts, MalformedJSONIsAnError) {
  const char *bad[] = {
      "[]",
      R"J({"entry": "f", "meshes": [], "args": [], "results": []} x)J",
      R"J({"entry": "f", "meshes": [{"name": "m", "shape": [0], "devices": []}],
          "args": [], "results": []})J",
      R"J({"entry": "f", "meshes": [{"name": "m", "shape": [2], "devices": []}],
          "args": [{"type": "f32", "shape": [4], "mesh": 1,
                    "placements": ["R"]}], "results": []})J",
      R"J({"entry": "f", "meshes": [{"name": "m", "shape": [2], "devices": []}],
          "args": [{"type": "f32", "shape": [4], "mesh": 0,
                    "placements": ["S(1)"]}], "results": []})J",
      R"J({"entry": "f", "meshes": [{"name": "m", "shape": [2], "devices": []}],
          "args": [{"type": "c64", "shape": [4], "mesh": 0,
                    "placements": ["R"]}], "results": []})J",
      R"J({"entry": "f", "meshes": [{"name": "m", "shape": [2], "devices": []}],
          "args": [{"type": "f32", "shape": [4], "mesh": 0,
                    "placements": ["R", "R"]}], "results": []})J",
  };
  for (const char *text : bad) {
    llvm::Expected<EntryLayouts> parsed = EntryLayouts::fromJSON(text);
    EXPECT_FALSE(static_cast<bool>(parsed)) << text;
    if (!parsed)
      llvm::consumeError(parsed.takeError());
  }
  EXPECT_EQ(parseElementTypeName("f64"), ElementType::F64);
  EXPECT_FALSE(parseElementTypeName("f8").has_value());
}

} // namespace
