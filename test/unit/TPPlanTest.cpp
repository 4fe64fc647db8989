//===- TPPlanTest.cpp - parsing tensor-parallel plans without a program ---===//

#include "dtensor/Frontend/TPPlan.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dtensor;

namespace {

/// The entries of `text`'s plan on a mesh of rank `meshRank`, or the error.
llvm::Expected<std::vector<PlanEntry>> entriesOf(StringRef text,
                                                 int64_t meshRank) {
  llvm::Expected<PlanDocument> document = parsePlanDocument(text);
  if (!document)
    return document.takeError();
  return parsePlanEntries(document->plan, meshRank);
}

std::string errorOf(StringRef text, int64_t meshRank) {
  llvm::Expected<std::vector<PlanEntry>> entries = entriesOf(text, meshRank);
  if (entries)
    return "";
  return llvm::toString(entries.takeError());
}

} // namespace

TEST(TPPlanTest, Placements) {
  FailureOr<PlanPlacement> shard = parsePlanPlacement("Shard(-1)");
  ASSERT_TRUE(succeeded(shard));
  EXPECT_EQ(shard->kind, PlacementKind::Shard);
  EXPECT_EQ(shard->dim, -1);
  FailureOr<PlanPlacement> partial = parsePlanPlacement(" Partial(\"max\") ");
  ASSERT_TRUE(succeeded(partial));
  EXPECT_EQ(partial->kind, PlacementKind::Partial);
  EXPECT_EQ(partial->reduce, ReduceKind::Max);
  EXPECT_EQ(parsePlanPlacement("P")->reduce, ReduceKind::Sum);
  EXPECT_EQ(parsePlanPlacement("Replicate()")->kind, PlacementKind::Replicate);
  EXPECT_EQ(parsePlanPlacement("R")->kind, PlacementKind::Replicate);
  for (StringRef bad :
       {"Replicate", "S()", "S(x)", "P(mean)", "R(0)", "Shard(1", "Q", ""})
    EXPECT_TRUE(failed(parsePlanPlacement(bad))) << bad.str();
}

TEST(TPPlanTest, EntriesSortedWithDefaults) {
  llvm::Expected<std::vector<PlanEntry>> entries = entriesOf(
      R"json({"plan": {"w2": {"style": "RowwiseParallel"},
                   "w1": {"style": "ColwiseParallel",
                          "input_layouts": "S(0)"},
                   "norm": [{"style": "SequenceParallel",
                             "sequence_dim": 0},
                            {"style": "PrepareModuleOutput",
                             "output_layouts": ["S(0)"],
                             "desired_output_layouts": [null]}]}})json",
      1);
  ASSERT_TRUE(bool(entries)) << llvm::toString(entries.takeError());
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].key, "norm");
  EXPECT_EQ((*entries)[0].style, PlanStyle::Sequence);
  EXPECT_EQ((*entries)[0].sequenceDim, 0);
  EXPECT_EQ((*entries)[1].index, 1u);
  EXPECT_FALSE((*entries)[1].desiredOutputLayouts->front().has_value());
  EXPECT_EQ((*entries)[2].key, "w1");
  ASSERT_TRUE((*entries)[2].inputLayouts.has_value());
  EXPECT_EQ((*(*entries)[2].inputLayouts)[0]->front().kind,
            PlacementKind::Shard);
  EXPECT_FALSE((*entries)[3].inputLayouts.has_value());
  EXPECT_EQ(getPlanStyleName((*entries)[3].style), "RowwiseParallel");
}

TEST(TPPlanTest, LayoutsOnATwoDimensionalMesh) {
  // A list of strings is one layout on an n-D mesh.
  llvm::Expected<std::vector<PlanEntry>> entries = entriesOf(
      R"json({"mesh_dim": 1, "plan": {"w": {"style": "ColwiseParallel",
          "input_layouts": ["R", "S(0)"], "mesh_dim": 1}}})json",
      2);
  ASSERT_TRUE(bool(entries)) << llvm::toString(entries.takeError());
  EXPECT_EQ((*(*entries)[0].inputLayouts)[0]->size(), 2u);
  EXPECT_EQ((*entries)[0].meshDim, 1);
  EXPECT_NE(errorOf(R"json({"plan": {"w": {"style": "ColwiseParallel",
                        "input_layouts": "S(0)"}}})json",
                    2)
                .find("a layout on a mesh of rank 2 has 2 placement(s), got 1"),
            std::string::npos);
}

TEST(TPPlanTest, Errors) {
  struct Case {
    const char *text;
    const char *error;
  } cases[] = {
      {"{", "malformed JSON"},
      {"[]", "the plan must be a JSON object"},
      {R"json({"plans": {}})json", "unknown top-level field 'plans'"},
      {R"json({"mesh": "tp"})json", "missing \"plan\" object"},
      {R"json({"mesh": 1, "plan": {}})json", "\"mesh\" must be a string"},
      {R"json({"plan": {"a..b": {"style": "ColwiseParallel"}}})json",
       "module path 'a..b' has an empty segment"},
      {R"json({"plan": {"w": {"style": "Colwise"}}})json",
       "unknown style 'Colwise'"},
      {R"json({"plan": {"w": {"style": "ColwiseParallel", "sequence_dim": 1}}})json",
       "unknown field 'sequence_dim'"},
      {R"json({"plan": {"w": {"style": "ColwiseParallel",
           "input_layouts": ["R", "R"]}}})json",
       "input_layouts takes one layout, got 2"},
      {R"json({"plan": {"w": {"style": "PrepareModuleInput",
           "input_layouts": ["R"]}}})json",
       "needs both input_layouts and desired_input_layouts"},
      {R"json({"plan": {"w": {"style": "PrepareModuleInput",
           "input_layouts": ["R"], "desired_input_layouts": ["R", "R"]}}})json",
       "have different lengths (1 and 2)"},
      {R"json({"plan": {"w": {"style": "ColwiseParallel",
           "output_layouts": "X(1)"}}})json",
       "bad placement 'X(1)'"},
  };
  for (const Case &c : cases)
    EXPECT_NE(errorOf(c.text, 1).find(c.error), std::string::npos)
        << c.text << " gave: " << errorOf(c.text, 1);
}
