//===- SessionTest.cpp - the embedded C++ API -----------------------------===//

#include "dtensor/Compiler/Registration.h"
#include "dtensor/Compiler/Session.h"
#include "dtensor/Target/Target.h"

#include "TestTargets.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dtensor;

namespace {

constexpr const char *kProgram = R"mlir(
dtensor.mesh @tp shape = [4]
func.func @scale(%x: tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
    -> (tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>}) {
  %y = arith.addf %x, %x : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
)mlir";

TEST(Session, DiagnosticsReachTheCallback) {
  Session session;
  std::vector<dtensor::Diagnostic> seen;
  session.setDiagnosticCallback(
      [&](const dtensor::Diagnostic &d) { seen.push_back(d); });
  auto module = session.parse("func.func @f(", "bad.mlir");
  EXPECT_TRUE(failed(module));
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen[0].severity, dtensor::Diagnostic::Severity::Error);
  EXPECT_EQ(seen[0].location.rfind("bad.mlir:1:", 0), 0u) << seen[0].location;
}

TEST(Session, VerifierErrorsCarryTheConstraintId) {
  Session session;
  std::string message;
  session.setDiagnosticCallback([&](const dtensor::Diagnostic &d) {
    if (d.severity == dtensor::Diagnostic::Severity::Error)
      message = d.message;
  });
  auto module = session.parse("dtensor.mesh @m shape = [0]");
  EXPECT_TRUE(failed(module));
  EXPECT_NE(message.find("[MESH1]"), std::string::npos) << message;
}

TEST(Session, LowersToEachStage) {
  Session session;
  auto module = session.parse(kProgram);
  ASSERT_TRUE(succeeded(module));
  PipelineOptions options;
  ASSERT_TRUE(succeeded(session.lower(**module, Stage::Planned, options)));
  std::string planned = Session::print(**module);
  EXPECT_NE(planned.find("dtensor.redistribute"), std::string::npos);
  ASSERT_TRUE(succeeded(
      session.lower(**module, Stage::PerRank, options, Stage::Planned)));
  std::string perRank = Session::print(**module);
  EXPECT_NE(perRank.find("dtensor.all_gather"), std::string::npos) << perRank;
  EXPECT_NE(perRank.find("tensor<2x4xf32>"), std::string::npos) << perRank;
}

TEST(Session, StageNames) {
  EXPECT_EQ(parseStage("per-rank"), Stage::PerRank);
  EXPECT_EQ(parseStage("llvm"), Stage::LLVM);
  EXPECT_EQ(parseStage("bogus"), std::nullopt);
}

TEST(Session, CompilesAndRunsTheUnshardedProgram) {
  DTENSOR_REQUIRE_CPU_TARGET();
  Session session;
  auto module = session.parse(kProgram);
  ASSERT_TRUE(succeeded(module));
  Session::stripPlacements(**module);
  ASSERT_TRUE(succeeded(session.lower(**module, Stage::LLVM, {})));
  auto exe = session.compile(**module);
  ASSERT_TRUE(succeeded(exe));
  HostTensor x(ElementType::F32, {8, 4});
  for (int64_t i = 0; i < 32; ++i)
    x.set(i, i * 0.5);
  auto results = (*exe)->invoke("scale", {&x});
  ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());
  ASSERT_EQ(results->size(), 1u);
  EXPECT_EQ((*results)[0].shape, (llvm::SmallVector<int64_t>{8, 4}));
  for (int64_t i = 0; i < 32; ++i)
    EXPECT_EQ((*results)[0].get(i), i * 1.0);
}

TEST(Session, InvokeChecksArguments) {
  DTENSOR_REQUIRE_CPU_TARGET();
  Session session;
  auto module = session.parse(kProgram);
  ASSERT_TRUE(succeeded(module));
  Session::stripPlacements(**module);
  ASSERT_TRUE(succeeded(session.lower(**module, Stage::LLVM, {})));
  auto exe = session.compile(**module);
  ASSERT_TRUE(succeeded(exe));
  HostTensor wrong(ElementType::F64, {8, 4});
  auto results = (*exe)->invoke("scale", {&wrong});
  ASSERT_FALSE(bool(results));
  std::string message = llvm::toString(results.takeError());
  EXPECT_NE(message.find("must be a rank-2 f32 tensor"), std::string::npos)
      << message;
  auto missing = (*exe)->invoke("nope", {});
  ASSERT_FALSE(bool(missing));
  llvm::consumeError(missing.takeError());
}

TEST(HostTensor, NpyRoundTrip) {
  HostTensor t(ElementType::I64, {3, 1, 2});
  for (int64_t i = 0; i < 6; ++i)
    t.set(i, i - 2);
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("t", "npy", path));
  ASSERT_FALSE(bool(writeNpy(path, t)));
  auto back = readNpy(path);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->type, ElementType::I64);
  EXPECT_EQ(back->shape, t.shape);
  EXPECT_EQ(back->data, t.data);
  llvm::sys::fs::remove(path);
}

} // namespace

namespace {

TEST(Session, InvokeLeavesArgumentsUnchanged) {
  DTENSOR_REQUIRE_CPU_TARGET();
  // x + x bufferizes in place into the argument: the caller's tensor must
  // not see it, and a second call must compute the same result.
  Session session;
  auto module = session.parse(kProgram);
  ASSERT_TRUE(succeeded(module));
  Session::stripPlacements(**module);
  ASSERT_TRUE(succeeded(session.lower(**module, Stage::LLVM, {})));
  auto exe = session.compile(**module);
  ASSERT_TRUE(succeeded(exe));
  HostTensor x(ElementType::F32, {8, 4});
  for (int64_t i = 0; i < 32; ++i)
    x.set(i, i);
  for (int call = 0; call < 2; ++call) {
    auto results = (*exe)->invoke("scale", {&x});
    ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());
    for (int64_t i = 0; i < 32; ++i) {
      EXPECT_EQ(x.get(i), i);
      EXPECT_EQ((*results)[0].get(i), 2.0 * i);
    }
  }
}

} // namespace

/// Counts the ops named `name` in `module`.
static int countOps(ModuleOp module, llvm::StringRef name) {
  int count = 0;
  module.walk(
      [&](Operation *op) { count += op->getName().getStringRef() == name; });
  return count;
}

TEST(Session, RunPipelineAcceptsAnchoredAndUnanchoredText) {
  // A pipeline anchored on the module (the form mlir-opt's --pass-pipeline
  // takes), the same without the anchor, a registered pipeline in both
  // forms, and a pipeline nested on functions all run.
  for (const char *pipeline :
       {"builtin.module(dtensor-async-collectives)",
        "dtensor-async-collectives",
        "builtin.module(dtensor-overlap{passes=async-collectives})",
        " builtin.module( dtensor-overlap{passes=async-collectives} ) ",
        "dtensor-overlap{passes=async-collectives}"}) {
    Session session;
    auto module = session.parse(kProgram);
    ASSERT_TRUE(succeeded(module));
    ASSERT_TRUE(succeeded(session.lower(**module, Stage::PerRank, {})));
    ASSERT_EQ(countOps(**module, "dtensor.async_start"), 0);
    ASSERT_TRUE(succeeded(session.runPipeline(**module, pipeline))) << pipeline;
    EXPECT_EQ(countOps(**module, "dtensor.async_start"), 1) << pipeline;
  }
  // Nested pipelines still reach the functions.
  Session session;
  auto module = session.parse(R"mlir(
func.func @twice(%x: f32) -> (f32, f32) {
  %a = arith.addf %x, %x : f32
  %b = arith.addf %x, %x : f32
  return %a, %b : f32, f32
}
)mlir");
  ASSERT_TRUE(succeeded(module));
  ASSERT_TRUE(succeeded(
      session.runPipeline(**module, "builtin.module(func.func(cse))")));
  EXPECT_EQ(countOps(**module, "arith.addf"), 1);
}

TEST(Session, RunPipelineRejectsBadText) {
  Session session;
  std::string message;
  session.setDiagnosticCallback([&](const dtensor::Diagnostic &d) {
    if (d.severity == dtensor::Diagnostic::Severity::Error)
      message = d.message;
  });
  auto module = session.parse(kProgram);
  ASSERT_TRUE(succeeded(module));
  EXPECT_TRUE(failed(session.runPipeline(**module, "no-such-pass")));
  EXPECT_NE(message.find("invalid pipeline"), std::string::npos) << message;
  message.clear();
  EXPECT_TRUE(failed(session.runPipeline(**module, "builtin.module(cse")));
  EXPECT_NE(message.find("invalid pipeline"), std::string::npos) << message;
  message.clear();
  EXPECT_TRUE(failed(session.runPipeline(**module, "builtin.modulex(cse)")));
  EXPECT_NE(message.find("anchored on 'builtin.modulex'"), std::string::npos)
      << message;
}

namespace {

/// Lowers the unsharded form of `source` and JIT-compiles it.
std::unique_ptr<Executable> compileUnsharded(Session &session,
                                             const char *source,
                                             std::string *llvmText = nullptr) {
  auto module = session.parse(source);
  if (failed(module))
    return nullptr;
  Session::stripPlacements(**module);
  if (failed(session.lower(**module, Stage::LLVM, {})))
    return nullptr;
  if (llvmText)
    *llvmText = Session::print(**module);
  auto exe = session.compile(**module);
  return succeeded(exe) ? std::move(*exe) : nullptr;
}

TEST(Session, InvokeFreesAResultReturnedTwiceOnce) {
  DTENSOR_REQUIRE_CPU_TARGET();
  // Regression: each result's buffer was freed, so a tensor returned twice
  // was freed twice (and the second copy read freed memory).
  Session session;
  auto exe = compileUnsharded(session, R"mlir(
func.func @twice() -> (tensor<64xf32>, tensor<64xf32>) {
  %c = arith.constant 2.5 : f32
  %e = tensor.empty() : tensor<64xf32>
  %y = linalg.fill ins(%c : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  return %y, %y : tensor<64xf32>, tensor<64xf32>
}
)mlir");
  ASSERT_TRUE(exe);
  for (int call = 0; call < 3; ++call) {
    auto results = exe->invoke("twice", {});
    ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());
    ASSERT_EQ(results->size(), 2u);
    for (const HostTensor &result : *results)
      for (int64_t i = 0; i < 64; ++i)
        ASSERT_EQ(result.get(i), 2.5);
  }
}

TEST(Session, InvokeDoesNotFreeAConstant) {
  DTENSOR_REQUIRE_CPU_TARGET();
  // Regression: a returned constant's buffer (a memref.global, not an
  // allocation) was passed to free().
  Session session;
  auto exe = compileUnsharded(session, R"mlir(
func.func @constant() -> tensor<4xi32> {
  %c = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  return %c : tensor<4xi32>
}
)mlir");
  ASSERT_TRUE(exe);
  for (int call = 0; call < 2; ++call) {
    auto results = exe->invoke("constant", {});
    ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());
    for (int64_t i = 0; i < 4; ++i)
      EXPECT_EQ((*results)[0].get(i), i + 1);
  }
}

TEST(Session, StripPlacementsDropsPerOpLayouts) {
  DTENSOR_REQUIRE_CPU_TARGET();
  // Regression: per-op dtensor.layouts (as partition tests write them)
  // survived, so the "unsharded" reference was partitioned and called the
  // runtime.
  Session session;
  std::string text;
  auto exe = compileUnsharded(session, R"mlir(
dtensor.mesh @tp shape = [4]
func.func @matmul_k(%a: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}, %b: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> (tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}) {
  %e = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} : tensor<8x32xf32>
  %c0 = arith.constant 0.0 : f32
  %f = linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%c0 : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = dtensor.redistribute %m to <@tp, [R]> : tensor<8x32xf32>
  %s = dtensor.annotate %r layout <@tp, [S(0)]> : tensor<8x32xf32>
  return %s : tensor<8x32xf32>
}
)mlir",
                              &text);
  ASSERT_TRUE(exe);
  EXPECT_EQ(text.find("dtensor_rt"), std::string::npos) << text;
  HostTensor a(ElementType::F32, {8, 16}), b(ElementType::F32, {16, 32});
  for (int64_t i = 0; i < 8 * 16; ++i)
    a.set(i, i % 7);
  for (int64_t i = 0; i < 16 * 32; ++i)
    b.set(i, i % 5);
  auto results = exe->invoke("matmul_k", {&a, &b});
  ASSERT_TRUE(bool(results)) << llvm::toString(results.takeError());
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 32; ++j) {
      double want = 0;
      for (int64_t k = 0; k < 16; ++k)
        want += a.get(i * 16 + k) * b.get(k * 32 + j);
      ASSERT_EQ((*results)[0].get(i * 32 + j), want) << i << ", " << j;
    }
}

} // namespace
