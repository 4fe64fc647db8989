//===- ArtifactManifestTest.cpp - the manifest's writer and reader agree --===//

#include "dtensor/Support/ArtifactManifest.h"

#include <gtest/gtest.h>

using namespace mlir::dtensor;

TEST(ArtifactManifestTest, UnshardedRoundTrip) {
  ArtifactManifest manifest;
  manifest.target = "cpu:h200";
  manifest.entry = "mlp";
  manifest.unsharded = true;
  manifest.args = {{ElementType::F32, {8, 16}}, {ElementType::BF16, {16}}};
  manifest.results = {{ElementType::I64, {}}};
  manifest.integerBounds = {16, 3};
  manifest.undefinedResults = {true};
  std::string text = manifest.toJSON();
  // The format launchers and test/Tools/dtensor-compile read.
  EXPECT_EQ(text,
            R"json({"entry":"mlp","integer_bounds":[16,3],)json"
            R"json("signature":{"args":[{"shape":[8,16],"type":"f32"},)json"
            R"json({"shape":[16],"type":"bf16"}],"results":)json"
            R"json([{"shape":[],"type":"i64"}]},"target":"cpu:h200",)json"
            R"json("undefined_results":[true],"unsharded":true})json");
  llvm::Expected<ArtifactManifest> read = ArtifactManifest::fromJSON(text);
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(read->getBackend(), "cpu");
  EXPECT_EQ(read->entry, "mlp");
  ASSERT_EQ(read->args.size(), 2u);
  EXPECT_EQ(read->args[1].type, ElementType::BF16);
  EXPECT_EQ(read->args[0].shape, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(read->results[0].shape.size(), 0u);
  EXPECT_EQ(read->integerBounds, (std::vector<int64_t>{16, 3}));
  EXPECT_EQ(read->undefinedResults, std::vector<bool>{true});
}

TEST(ArtifactManifestTest, ShardedTensorsComeFromTheLayouts) {
  ArtifactManifest manifest;
  manifest.target = "cuda:h200";
  manifest.entry = "f";
  manifest.layouts.entry = "f";
  manifest.layouts.meshes.push_back({"tp", {4}, {}});
  HostTensorSpec spec;
  spec.type = ElementType::F16;
  spec.shape = {7, 5};
  spec.layout.placements = {HostPlacement::shard(0)};
  manifest.layouts.args.push_back(spec);
  manifest.layouts.results.push_back(spec);
  llvm::Expected<ArtifactManifest> read =
      ArtifactManifest::fromJSON(manifest.toJSON());
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_FALSE(read->unsharded);
  EXPECT_EQ(read->getBackend(), "cuda");
  ASSERT_EQ(read->args.size(), 1u);
  EXPECT_EQ(read->args[0].type, ElementType::F16);
  EXPECT_EQ(read->args[0].shape, (std::vector<int64_t>{7, 5}));
  EXPECT_EQ(read->layouts.meshes[0].name, "tp");
  EXPECT_EQ(read->layouts.args[0].layout.placements[0].str(), "S(0)");
}

TEST(ArtifactManifestTest, Errors) {
  struct Case {
    const char *text;
    const char *error;
  } cases[] = {
      {"{", "malformed manifest"},
      {"[1]", "not a JSON object"},
      {R"json({"target": "cpu:h200", "entry": "f"})json",
       "lacks 'target', 'entry' or 'unsharded'"},
      {R"json({"target": "cpu", "entry": "f", "unsharded": true})json",
       "has no 'signature'"},
      {R"json({"target": "cpu", "entry": "f", "unsharded": true,
           "signature": {"args": [{"type": "q8", "shape": []}],
                         "results": []}})json",
       "malformed args"},
      {R"json({"target": "cpu", "entry": "f", "unsharded": false})json",
       "has no 'layouts'"},
      {R"json({"target": "cpu", "entry": "f", "unsharded": false,
           "layouts": {"entry": "f"}})json",
       "malformed entry layouts"},
  };
  for (const Case &c : cases) {
    llvm::Expected<ArtifactManifest> read = ArtifactManifest::fromJSON(c.text);
    ASSERT_FALSE(bool(read)) << c.text;
    std::string message = llvm::toString(read.takeError());
    EXPECT_NE(message.find(c.error), std::string::npos)
        << c.text << " gave: " << message;
  }
}
