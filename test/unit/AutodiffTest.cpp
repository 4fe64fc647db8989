//===- AutodiffTest.cpp - gradients of dtensor-autodiff vs finite differences //
//
// The sharded-vs-unsharded checks of dtensor-run compare two compilations of
// the same joint function, so they cannot see a wrong derivative rule. These
// tests check the rules themselves: each program (in f64) is differentiated,
// compiled unsharded, and the vector-Jacobian product it returns is compared
// with central finite differences of the forward function along random
// directions: <v, (f(x + eps u) - f(x - eps u)) / 2 eps> = sum_i <g_i, u_i>.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Compiler/Registration.h"
#include "dtensor/Compiler/Session.h"
#include "dtensor/Target/Target.h"

#include "TestTargets.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace mlir;
using namespace mlir::dtensor;

namespace {

HostTensor randomTensor(llvm::ArrayRef<int64_t> shape, std::mt19937 &rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  HostTensor t(ElementType::F64, shape);
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    t.set(i, dist(rng));
  return t;
}

double dot(const HostTensor &a, const HostTensor &b) {
  double sum = 0;
  for (int64_t i = 0; i < a.getNumElements(); ++i)
    sum += a.get(i) * b.get(i);
  return sum;
}

/// Differentiates `@name` in `source` with `wrtOption` (a dtensor-autodiff
/// option string, possibly empty), then checks the returned gradients of
/// arguments `wrt` against finite differences along `trials` random
/// directions.
/// The finite-difference step and the tolerance of the check: f64 programs
/// by default; programs storing f32 (mixed precision) need a larger step and
/// a looser match (f32 rounding of f(x +- eps u)).
struct Precision {
  double eps = 1e-6;
  double tolerance = 1e-6;
};

void checkGradients(
    llvm::StringRef source, llvm::StringRef name, llvm::ArrayRef<unsigned> wrt,
    llvm::StringRef options = "", int trials = 3,
    const std::function<void(std::vector<HostTensor> &)> &adjust = {},
    Precision precision = {}) {
  Session session;
  std::string diagnostics;
  session.setDiagnosticCallback([&](const dtensor::Diagnostic &d) {
    diagnostics += d.location + ": " + d.message + "\n";
  });
  auto module = session.parse(source);
  ASSERT_TRUE(succeeded(module)) << diagnostics;
  std::string pipeline = "dtensor-autodiff";
  if (!options.empty())
    pipeline += "{" + options.str() + "}";
  ASSERT_TRUE(succeeded(session.runPipeline(**module, pipeline)))
      << diagnostics;
  Session::stripPlacements(**module);
  ASSERT_TRUE(succeeded(session.lower(**module, Stage::LLVM, {})))
      << diagnostics;
  auto exe = session.compile(**module);
  ASSERT_TRUE(succeeded(exe)) << diagnostics;

  // Argument shapes from the forward function's signature, read back from
  // a parse of the source (the lowered module has memrefs).
  Session shapes;
  auto original = shapes.parse(source);
  ASSERT_TRUE(succeeded(original));
  auto func = (*original)->lookupSymbol<func::FuncOp>(name);
  ASSERT_TRUE(func);
  std::mt19937 rng(1234);
  std::vector<HostTensor> args;
  for (Type type : func.getArgumentTypes()) {
    auto tensorType = cast<RankedTensorType>(type);
    if (tensorType.getElementType().isInteger(64)) {
      // Ids for embedding lookups: rows 0..4 (the tests' tables have 5).
      HostTensor ids(ElementType::I64, tensorType.getShape());
      for (int64_t i = 0; i < ids.getNumElements(); ++i)
        ids.set(i, static_cast<double>(rng() % 5));
      args.push_back(ids);
      continue;
    }
    HostTensor arg = randomTensor(tensorType.getShape(), rng);
    if (tensorType.getElementType().isF32()) {
      HostTensor narrow(ElementType::F32, tensorType.getShape());
      for (int64_t i = 0; i < arg.getNumElements(); ++i)
        narrow.set(i, arg.get(i));
      arg = narrow;
    }
    args.push_back(arg);
  }
  if (adjust)
    adjust(args);
  std::vector<HostTensor> seeds;
  for (Type type : func.getResultTypes()) {
    auto tensorType = cast<RankedTensorType>(type);
    HostTensor seed = randomTensor(tensorType.getShape(), rng);
    if (tensorType.getElementType().isF32()) {
      HostTensor narrow(ElementType::F32, tensorType.getShape());
      for (int64_t i = 0; i < seed.getNumElements(); ++i)
        narrow.set(i, seed.get(i));
      seed = narrow;
    }
    seeds.push_back(seed);
  }

  std::vector<const HostTensor *> jointArgs;
  for (const HostTensor &a : args)
    jointArgs.push_back(&a);
  for (const HostTensor &s : seeds)
    jointArgs.push_back(&s);
  auto joint = (*exe)->invoke((name + "_grad").str(), jointArgs);
  ASSERT_TRUE(bool(joint)) << llvm::toString(joint.takeError());
  size_t numResults = seeds.size();
  ASSERT_EQ(joint->size(), numResults + wrt.size());

  const double eps = precision.eps;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<HostTensor> plus = args, minus = args;
    double predicted = 0;
    for (auto [i, index] : llvm::enumerate(wrt)) {
      HostTensor u = randomTensor(args[index].shape, rng);
      for (int64_t e = 0; e < u.getNumElements(); ++e) {
        plus[index].set(e, args[index].get(e) + eps * u.get(e));
        minus[index].set(e, args[index].get(e) - eps * u.get(e));
      }
      predicted += dot((*joint)[numResults + i], u);
    }
    std::vector<const HostTensor *> plusArgs, minusArgs;
    for (size_t i = 0; i < args.size(); ++i) {
      plusArgs.push_back(&plus[i]);
      minusArgs.push_back(&minus[i]);
    }
    auto fPlus = (*exe)->invoke(name, plusArgs);
    auto fMinus = (*exe)->invoke(name, minusArgs);
    ASSERT_TRUE(bool(fPlus)) << llvm::toString(fPlus.takeError());
    ASSERT_TRUE(bool(fMinus)) << llvm::toString(fMinus.takeError());
    double measured = 0;
    for (size_t r = 0; r < numResults; ++r)
      measured += (dot((*fPlus)[r], seeds[r]) - dot((*fMinus)[r], seeds[r])) /
                  (2 * eps);
    double scale = std::max({std::abs(measured), std::abs(predicted), 1.0});
    EXPECT_NEAR(predicted, measured, precision.tolerance * scale)
        << "trial " << trial << " of @" << name.str();
  }
}

// Mixed precision (issue 27), f32 storage and f64 statistics as bf16 and
// f32 in training: an RMSNorm whose sum of squares accumulates the
// narrow rows in the wide type and whose output is computed wide and
// truncated, a matmul of narrow operands accumulating wide, extf/truncf on
// whole tensors. The gradients come back in the arguments' type.
TEST(Autodiff, MixedPrecisionMatchesFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x6xf32>)
    -> (tensor<4x6xf32>, tensor<4xf64>) {
  %zd = arith.constant 0.0 : f64
  %e1 = tensor.empty() : tensor<4xf64>
  %f1 = linalg.fill ins(%zd : f64) outs(%e1 : tensor<4xf64>) -> tensor<4xf64>
  %ss = linalg.generic {indexing_maps = [#id, #row],
                        iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%f1 : tensor<4xf64>) {
  ^bb0(%a: f32, %acc: f64):
    %af = arith.extf %a : f32 to f64
    %sq = arith.mulf %af, %af : f64
    %s = arith.addf %acc, %sq : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #row, #col, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss, %g : tensor<4x8xf32>, tensor<4xf64>, tensor<8xf32>)
      outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %s: f64, %gn: f32, %out: f32):
    %inv = arith.constant 0.125 : f64
    %eps = arith.constant 1.0e-5 : f64
    %mean = arith.mulf %s, %inv : f64
    %var = arith.addf %mean, %eps : f64
    %r = math.rsqrt %var : f64
    %af = arith.extf %a : f32 to f64
    %gf = arith.extf %gn : f32 to f64
    %y = arith.mulf %af, %r : f64
    %z = arith.mulf %y, %gf : f64
    %zt = arith.truncf %z : f64 to f32
    linalg.yield %zt : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<4x6xf64>
  %f3 = linalg.fill ins(%zd : f64) outs(%e3 : tensor<4x6xf64>) -> tensor<4x6xf64>
  %m = linalg.matmul ins(%n, %w : tensor<4x8xf32>, tensor<8x6xf32>)
                     outs(%f3 : tensor<4x6xf64>) -> tensor<4x6xf64>
  %t = arith.truncf %m : tensor<4x6xf64> to tensor<4x6xf32>
  %h = math.tanh %t : tensor<4x6xf32>
  return %h, %ss : tensor<4x6xf32>, tensor<4xf64>
}
)mlir",
                 "f", {0, 1, 2}, "", 3, {}, Precision{1e-3, 1e-4});
}

// Rank-reducing and strided slices (the q/k/v split of a fused
// projection, every other element), and an insertion (issue 27).
TEST(Autodiff, StridedAndRankReducingSlicesMatchFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(R"mlir(
func.func @f(%x: tensor<4x3x6xf64>, %d: tensor<5x6xf64>)
    -> (tensor<4x6xf64>, tensor<2x3x3xf64>, tensor<5x6xf64>, tensor<f64>) {
  %q = tensor.extract_slice %x[0, 1, 0] [4, 1, 6] [1, 1, 1]
      : tensor<4x3x6xf64> to tensor<4x6xf64>
  %s = tensor.extract_slice %x[1, 0, 1] [2, 3, 3] [2, 1, 2]
      : tensor<4x3x6xf64> to tensor<2x3x3xf64>
  %r = tensor.extract_slice %x[0, 2, 0] [2, 1, 3] [3, 1, 2]
      : tensor<4x3x6xf64> to tensor<2x3xf64>
  %sq = arith.mulf %r, %r : tensor<2x3xf64>
  %i = tensor.insert_slice %sq into %d[1, 0] [2, 3] [2, 2]
      : tensor<2x3xf64> into tensor<5x6xf64>
  %one = tensor.extract_slice %x[3, 2, 5] [1, 1, 1] [1, 1, 1]
      : tensor<4x3x6xf64> to tensor<f64>
  %q2 = arith.mulf %q, %q : tensor<4x6xf64>
  return %q2, %s, %i, %one : tensor<4x6xf64>, tensor<2x3x3xf64>, tensor<5x6xf64>, tensor<f64>
}
)mlir",
                 "f", {0, 1});
}

// Matmul, relu, annotations: the TP MLP.
TEST(Autodiff, MlpMatchesFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(R"mlir(
dtensor.mesh @tp shape = [4]
func.func @mlp(%x: tensor<8x16xf64>, %w1: tensor<16x32xf64>,
               %w2: tensor<32x16xf64>) -> tensor<8x16xf64> {
  %xr = dtensor.annotate %x layout <@tp, [R]> : tensor<8x16xf64>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<16x32xf64>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<32x16xf64>
  %zero = arith.constant 0.0 : f64
  %e1 = tensor.empty() : tensor<8x32xf64>
  %f1 = linalg.fill ins(%zero : f64) outs(%e1 : tensor<8x32xf64>) -> tensor<8x32xf64>
  %h = linalg.matmul ins(%xr, %w1c : tensor<8x16xf64>, tensor<16x32xf64>)
                     outs(%f1 : tensor<8x32xf64>) -> tensor<8x32xf64>
  %e2 = tensor.empty() : tensor<8x32xf64>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf64>) outs(%e2 : tensor<8x32xf64>) {
  ^bb0(%in: f64, %out: f64):
    %r = arith.maximumf %in, %zero : f64
    linalg.yield %r : f64
  } -> tensor<8x32xf64>
  %e3 = tensor.empty() : tensor<8x16xf64>
  %f3 = linalg.fill ins(%zero : f64) outs(%e3 : tensor<8x16xf64>) -> tensor<8x16xf64>
  %y = linalg.matmul ins(%a, %w2r : tensor<8x32xf64>, tensor<32x16xf64>)
                     outs(%f3 : tensor<8x16xf64>) -> tensor<8x16xf64>
  %yr = dtensor.annotate %y layout <@tp, [R]> : tensor<8x16xf64>
  return %yr : tensor<8x16xf64>
}
)mlir",
                 "mlp", {0, 1, 2});
}

// RMSNorm (reduction, broadcast, sqrt, division), a contraction written as
// a generic, a residual add used twice (the input feeds two paths).
TEST(Autodiff, NormContractionResidualMatchesFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(R"mlir(
#x = affine_map<(b, s, h) -> (b, s, h)>
#bs = affine_map<(b, s, h) -> (b, s)>
#h = affine_map<(b, s, h) -> (h)>
#in = affine_map<(b, s, o, k) -> (b, s, k)>
#w = affine_map<(b, s, o, k) -> (o, k)>
#out = affine_map<(b, s, o, k) -> (b, s, o)>
func.func @block(%x: tensor<2x4x8xf64>, %g: tensor<8xf64>,
                 %w: tensor<8x8xf64>) -> tensor<2x4x8xf64> {
  %zero = arith.constant 0.0 : f64
  %inv = arith.constant 0.125 : f64
  %eps = arith.constant 1.0e-6 : f64
  %e0 = tensor.empty() : tensor<2x4xf64>
  %f0 = linalg.fill ins(%zero : f64) outs(%e0 : tensor<2x4xf64>) -> tensor<2x4xf64>
  %sq = linalg.generic {indexing_maps = [#x, #bs],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x4x8xf64>) outs(%f0 : tensor<2x4xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %p = arith.mulf %in, %in : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<2x4xf64>
  %e1 = tensor.empty() : tensor<2x4x8xf64>
  %n = linalg.generic {indexing_maps = [#x, #bs, #h, #x],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sq, %g : tensor<2x4x8xf64>, tensor<2x4xf64>, tensor<8xf64>)
      outs(%e1 : tensor<2x4x8xf64>) {
  ^bb0(%in: f64, %ss: f64, %gain: f64, %o: f64):
    %mean = arith.mulf %ss, %inv : f64
    %var = arith.addf %mean, %eps : f64
    %rms = math.sqrt %var : f64
    %y = arith.divf %in, %rms : f64
    %z = arith.mulf %y, %gain : f64
    linalg.yield %z : f64
  } -> tensor<2x4x8xf64>
  %e2 = tensor.empty() : tensor<2x4x8xf64>
  %f2 = linalg.fill ins(%zero : f64) outs(%e2 : tensor<2x4x8xf64>) -> tensor<2x4x8xf64>
  %u = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%n, %w : tensor<2x4x8xf64>, tensor<8x8xf64>)
      outs(%f2 : tensor<2x4x8xf64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %p = arith.mulf %a, %b : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<2x4x8xf64>
  %e3 = tensor.empty() : tensor<2x4x8xf64>
  %r = linalg.add ins(%x, %u : tensor<2x4x8xf64>, tensor<2x4x8xf64>)
      outs(%e3 : tensor<2x4x8xf64>) -> tensor<2x4x8xf64>
  return %r : tensor<2x4x8xf64>
}
)mlir",
                 "block", {0, 1, 2});
}

// Softmax, transpose, broadcast, exp, tanh, subtraction, negation, rsqrt,
// log, and two results.
TEST(Autodiff, SoftmaxTransposeBroadcastMatchFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(R"mlir(
#id = affine_map<(i, j) -> (i, j)>
func.func @f(%x: tensor<4x6xf64>, %b: tensor<6xf64>)
    -> (tensor<6x4xf64>, tensor<4x6xf64>) {
  %e0 = tensor.empty() : tensor<4x6xf64>
  %bb = linalg.broadcast ins(%b : tensor<6xf64>) outs(%e0 : tensor<4x6xf64>)
      dimensions = [0]
  %e1 = tensor.empty() : tensor<4x6xf64>
  %one = arith.constant 1.5 : f64
  %t = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %bb : tensor<4x6xf64>, tensor<4x6xf64>)
      outs(%e1 : tensor<4x6xf64>) {
  ^bb0(%a: f64, %c: f64, %o: f64):
    %th = math.tanh %a : f64
    %ex = math.exp %c : f64
    %d = arith.subf %th, %ex : f64
    %n = arith.negf %d : f64
    %sq = arith.mulf %c, %c : f64
    %sq1 = arith.addf %sq, %one : f64
    %rs = math.rsqrt %sq1 : f64
    %lg = math.log %sq1 : f64
    %m = arith.mulf %n, %rs : f64
    %s = arith.addf %m, %lg : f64
    linalg.yield %s : f64
  } -> tensor<4x6xf64>
  %e2 = tensor.empty() : tensor<4x6xf64>
  %sm = linalg.softmax dimension(1) ins(%t : tensor<4x6xf64>)
      outs(%e2 : tensor<4x6xf64>) -> tensor<4x6xf64>
  %e3 = tensor.empty() : tensor<6x4xf64>
  %tr = linalg.transpose ins(%sm : tensor<4x6xf64>) outs(%e3 : tensor<6x4xf64>)
      permutation = [1, 0]
  return %tr, %t : tensor<6x4xf64>, tensor<4x6xf64>
}
)mlir",
                 "f", {0, 1});
}

// Reshapes, slices, padding, concatenation, elementwise ops on tensors.
TEST(Autodiff, TensorOpsMatchFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(R"mlir(
func.func @f(%x: tensor<4x6xf64>, %y: tensor<2x6xf64>) -> tensor<3x12xf64> {
  %c = tensor.concat dim(0) %x, %y : (tensor<4x6xf64>, tensor<2x6xf64>)
      -> tensor<6x6xf64>
  %s = tensor.extract_slice %c[1, 2] [4, 3] [1, 1]
      : tensor<6x6xf64> to tensor<4x3xf64>
  %zero = arith.constant 0.0 : f64
  %p = tensor.pad %s low[1, 0] high[1, 3] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f64
  } : tensor<4x3xf64> to tensor<6x6xf64>
  %e = tensor.expand_shape %p [[0, 1], [2]] output_shape [3, 2, 6]
      : tensor<6x6xf64> into tensor<3x2x6xf64>
  %r = tensor.collapse_shape %e [[0], [1, 2]]
      : tensor<3x2x6xf64> into tensor<3x12xf64>
  %sum = arith.constant 0.0 : f64
  %e1 = tensor.empty() : tensor<3x12xf64>
  %sq = linalg.mul ins(%r, %r : tensor<3x12xf64>, tensor<3x12xf64>)
      outs(%e1 : tensor<3x12xf64>) -> tensor<3x12xf64>
  %ex = math.exp %r : tensor<3x12xf64>
  %q = arith.divf %sq, %ex : tensor<3x12xf64>
  return %q : tensor<3x12xf64>
}
)mlir",
                 "f", {0, 1});
}

// LayerNorm: mean and variance reductions, their broadcasts back, rsqrt,
// gain and bias; batch_matmul after it.
TEST(Autodiff, LayerNormBatchMatmulMatchFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(R"mlir(
#x = affine_map<(b, s, h) -> (b, s, h)>
#bs = affine_map<(b, s, h) -> (b, s)>
#h = affine_map<(b, s, h) -> (h)>
func.func @ln(%x: tensor<2x3x4xf64>, %g: tensor<4xf64>, %beta: tensor<4xf64>,
              %w: tensor<2x4x5xf64>) -> tensor<2x3x5xf64> {
  %zero = arith.constant 0.0 : f64
  %inv = arith.constant 0.25 : f64
  %eps = arith.constant 1.0e-5 : f64
  %e0 = tensor.empty() : tensor<2x3xf64>
  %f0 = linalg.fill ins(%zero : f64) outs(%e0 : tensor<2x3xf64>) -> tensor<2x3xf64>
  %sum = linalg.generic {indexing_maps = [#x, #bs],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x3x4xf64>) outs(%f0 : tensor<2x3xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %s = arith.addf %acc, %in : f64
    linalg.yield %s : f64
  } -> tensor<2x3xf64>
  %e1 = tensor.empty() : tensor<2x3x4xf64>
  %c = linalg.generic {indexing_maps = [#x, #bs, #x],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sum : tensor<2x3x4xf64>, tensor<2x3xf64>) outs(%e1 : tensor<2x3x4xf64>) {
  ^bb0(%in: f64, %s: f64, %o: f64):
    %m = arith.mulf %s, %inv : f64
    %d = arith.subf %in, %m : f64
    linalg.yield %d : f64
  } -> tensor<2x3x4xf64>
  %var = linalg.generic {indexing_maps = [#x, #bs],
                         iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%c : tensor<2x3x4xf64>) outs(%f0 : tensor<2x3xf64>) {
  ^bb0(%in: f64, %acc: f64):
    %p = arith.mulf %in, %in : f64
    %q = arith.mulf %p, %inv : f64
    %s = arith.addf %acc, %q : f64
    linalg.yield %s : f64
  } -> tensor<2x3xf64>
  %e2 = tensor.empty() : tensor<2x3x4xf64>
  %n = linalg.generic {indexing_maps = [#x, #bs, #h, #h, #x],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c, %var, %g, %beta : tensor<2x3x4xf64>, tensor<2x3xf64>, tensor<4xf64>, tensor<4xf64>)
      outs(%e2 : tensor<2x3x4xf64>) {
  ^bb0(%in: f64, %v: f64, %gain: f64, %bias: f64, %o: f64):
    %ve = arith.addf %v, %eps : f64
    %r = math.rsqrt %ve : f64
    %y = arith.mulf %in, %r : f64
    %z = arith.mulf %y, %gain : f64
    %t = arith.addf %z, %bias : f64
    linalg.yield %t : f64
  } -> tensor<2x3x4xf64>
  %e3 = tensor.empty() : tensor<2x3x5xf64>
  %f3 = linalg.fill ins(%zero : f64) outs(%e3 : tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  %out = linalg.batch_matmul ins(%n, %w : tensor<2x3x4xf64>, tensor<2x4x5xf64>)
      outs(%f3 : tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
  return %out : tensor<2x3x5xf64>
}
)mlir",
                 "ln", {0, 1, 2, 3});
}

// Embedding lookups (a repeated id included): the table's gradient is the
// scatter-add of the cotangent rows.
TEST(Autodiff, EmbeddingMatchesFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(R"mlir(
func.func @embed(%ids: tensor<2x4x1xi64>, %t: tensor<5x3xf64>) -> tensor<2x4x3xf64> {
  %g = tensor.gather %t[%ids] gather_dims([0])
      : (tensor<5x3xf64>, tensor<2x4x1xi64>) -> tensor<2x4x3xf64>
  %s = math.sin %g : tensor<2x4x3xf64>
  return %s : tensor<2x4x3xf64>
}
)mlir",
                 "embed", {1});
}

// Only the marked arguments are differentiated; an unused one gets zeros.
// Max, min and product reductions (linalg.generic and linalg.reduce), of
// a computed element: the gradient goes to the extreme element, and to
// every factor as the product of the others.
constexpr llvm::StringLiteral kReductions = R"mlir(
#x = affine_map<(i, j) -> (i, j)>
#r = affine_map<(i, j) -> (i)>
func.func @f(%x: tensor<4x6xf64>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) {
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %inf = arith.constant 0x7FF0000000000000 : f64
  %one = arith.constant 1.0 : f64
  %e = tensor.empty() : tensor<4xf64>
  %fm = linalg.fill ins(%ninf : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %fn = linalg.fill ins(%inf : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %fp = linalg.fill ins(%one : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %mx = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf64>) outs(%fm : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %s = arith.mulf %a, %a : f64
    %m = arith.maximumf %acc, %s : f64
    linalg.yield %m : f64
  } -> tensor<4xf64>
  %mn = linalg.reduce ins(%x : tensor<4x6xf64>) outs(%fn : tensor<4xf64>) dimensions = [1]
    (%a: f64, %acc: f64) {
      %m = arith.minnumf %a, %acc : f64
      linalg.yield %m : f64
    }
  %pr = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf64>) outs(%fp : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %m = arith.mulf %acc, %a : f64
    linalg.yield %m : f64
  } -> tensor<4xf64>
  return %mx, %mn, %pr : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}
)mlir";

TEST(Autodiff, MaxMinProductReductionsMatchFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(kReductions, "f", {0});
}

// The product's gradient where factors are zero: row 1 has one zero (its
// gradient is the product of the others), row 2 two (all gradients zero).
// The product is a polynomial, so central differences hold there too.
TEST(Autodiff, ProductReductionWithZerosMatchesFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(kReductions, "f", {0}, "", 3,
                 [](std::vector<HostTensor> &args) {
                   args[0].set(1 * 6 + 2, 0.0);
                   args[0].set(2 * 6 + 3, 0.0);
                   args[0].set(2 * 6 + 4, 0.0);
                 });
}

// The normalisations' closed forms (docs/autodiff.md, "Normalisations"):
// cross-entropy as log_softmax + nll (mean) and as logsumexp - pick, a
// softmax, and linalg.softmax of x - m, whose row max is a stabilising
// shift (no gradient) and whose one-hot pick cotangent is summed in closed
// form; targets outside the classes (7 and -1, picking nothing) included.
// Beside them the forms the closed forms must leave alone: m - log(sum
// exp(x - m)) (= 2m - lse, the max keeps its gradient), m[n] + log(sum
// over every row of exp(x - m)) (the sum mixes the rows' shifts) and a
// label-smoothed loss (its cotangent of log_softmax is not one-hot).
// Mixed precision: f32 logits and max, f64 statistics.
constexpr llvm::StringLiteral kNormalisations = R"mlir(
#x = affine_map<(n, v) -> (n, v)>
#r = affine_map<(n, v) -> (n)>
#c = affine_map<(n, v) -> (v)>
#n = affine_map<(n) -> (n)>
#s = affine_map<(n) -> ()>
func.func @nll(%x: tensor<4x6xf64>, %t: tensor<4xi64>) -> tensor<f64> {
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %zero = arith.constant 0.0 : f64
  %minus_inv = arith.constant -0.25 : f64
  %e = tensor.empty() : tensor<4xf64>
  %fm = linalg.fill ins(%ninf : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf64>) outs(%fm : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %r = arith.maximumf %acc, %a : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %ex = tensor.empty() : tensor<4x6xf64>
  %sh = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<4x6xf64>, tensor<4xf64>) outs(%ex : tensor<4x6xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %d = arith.subf %a, %b : f64
    linalg.yield %d : f64
  } -> tensor<4x6xf64>
  %fs = linalg.fill ins(%zero : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %se = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%sh : tensor<4x6xf64>) outs(%fs : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %p = math.exp %a : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %lp = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%sh, %se : tensor<4x6xf64>, tensor<4xf64>) outs(%ex : tensor<4x6xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %l = math.log %b : f64
    %d = arith.subf %a, %l : f64
    linalg.yield %d : f64
  } -> tensor<4x6xf64>
  %pk = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%lp, %t : tensor<4x6xf64>, tensor<4xi64>) outs(%fs : tensor<4xf64>) {
  ^bb0(%a: f64, %ti: i64, %acc: f64):
    %v = linalg.index 1 : index
    %tx = arith.index_cast %ti : i64 to index
    %hit = arith.cmpi eq, %v, %tx : index
    %p = arith.select %hit, %a, %zero : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %e0 = tensor.empty() : tensor<f64>
  %f0 = linalg.fill ins(%zero : f64) outs(%e0 : tensor<f64>) -> tensor<f64>
  %loss = linalg.generic {indexing_maps = [#n, #s], iterator_types = ["reduction"]}
      ins(%pk : tensor<4xf64>) outs(%f0 : tensor<f64>) {
  ^bb0(%a: f64, %acc: f64):
    %w = arith.mulf %a, %minus_inv : f64
    %s = arith.addf %acc, %w : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  return %loss : tensor<f64>
}
func.func @lse(%x: tensor<4x6xf64>, %t: tensor<4xi64>) -> tensor<4xf64> {
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4xf64>
  %fm = linalg.fill ins(%ninf : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf64>) outs(%fm : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %r = arith.maximumf %acc, %a : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %fs = linalg.fill ins(%zero : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %se = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x6xf64>, tensor<4xf64>) outs(%fs : tensor<4xf64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %d = arith.subf %a, %b : f64
    %p = math.exp %d : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %pk = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x, %t : tensor<4x6xf64>, tensor<4xi64>) outs(%fs : tensor<4xf64>) {
  ^bb0(%a: f64, %ti: i64, %acc: f64):
    %v = linalg.index 1 : index
    %tx = arith.index_cast %ti : i64 to index
    %hit = arith.cmpi ne, %v, %tx : index
    %p = arith.select %hit, %zero, %a : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %loss = linalg.generic {indexing_maps = [#n, #n, #n, #n], iterator_types = ["parallel"]}
      ins(%m, %se, %pk : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) outs(%e : tensor<4xf64>) {
  ^bb0(%a: f64, %b: f64, %p: f64, %o: f64):
    %l = math.log %b : f64
    %lse = arith.addf %a, %l : f64
    %d = arith.subf %lse, %p : f64
    linalg.yield %d : f64
  } -> tensor<4xf64>
  return %loss : tensor<4xf64>
}
func.func @softmax(%x: tensor<4x6xf64>) -> tensor<4x6xf64> {
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4xf64>
  %fm = linalg.fill ins(%ninf : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %m = linalg.reduce ins(%x : tensor<4x6xf64>) outs(%fm : tensor<4xf64>) dimensions = [1]
    (%a: f64, %acc: f64) {
      %r = arith.maxnumf %a, %acc : f64
      linalg.yield %r : f64
    }
  %ex = tensor.empty() : tensor<4x6xf64>
  %p = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<4x6xf64>, tensor<4xf64>) outs(%ex : tensor<4x6xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %d = arith.subf %a, %b : f64
    %q = math.exp %d : f64
    linalg.yield %q : f64
  } -> tensor<4x6xf64>
  %fs = linalg.fill ins(%zero : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %se = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%p : tensor<4x6xf64>) outs(%fs : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %s = arith.addf %acc, %a : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %y = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%p, %se : tensor<4x6xf64>, tensor<4xf64>) outs(%ex : tensor<4x6xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %q = arith.divf %a, %b : f64
    linalg.yield %q : f64
  } -> tensor<4x6xf64>
  return %y : tensor<4x6xf64>
}
func.func @softmax_op(%x: tensor<4x6xf64>) -> tensor<4x6xf64> {
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %e = tensor.empty() : tensor<4xf64>
  %fm = linalg.fill ins(%ninf : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf64>) outs(%fm : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %r = arith.maximumf %acc, %a : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %ex = tensor.empty() : tensor<4x6xf64>
  %sh = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<4x6xf64>, tensor<4xf64>) outs(%ex : tensor<4x6xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %d = arith.subf %a, %b : f64
    linalg.yield %d : f64
  } -> tensor<4x6xf64>
  %y = linalg.softmax dimension(1) ins(%sh : tensor<4x6xf64>)
      outs(%ex : tensor<4x6xf64>) -> tensor<4x6xf64>
  return %y : tensor<4x6xf64>
}
func.func @not_invariant(%x: tensor<4x6xf64>) -> tensor<4xf64> {
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4xf64>
  %fm = linalg.fill ins(%ninf : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf64>) outs(%fm : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %r = arith.maximumf %acc, %a : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %fs = linalg.fill ins(%zero : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %se = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x6xf64>, tensor<4xf64>) outs(%fs : tensor<4xf64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %d = arith.subf %a, %b : f64
    %p = math.exp %d : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %y = linalg.generic {indexing_maps = [#n, #n, #n], iterator_types = ["parallel"]}
      ins(%m, %se : tensor<4xf64>, tensor<4xf64>) outs(%e : tensor<4xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %l = math.log %b : f64
    %d = arith.subf %a, %l : f64
    linalg.yield %d : f64
  } -> tensor<4xf64>
  return %y : tensor<4xf64>
}
func.func @smoothed(%x: tensor<4x6xf64>, %w: tensor<6xf64>) -> tensor<f64> {
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4xf64>
  %fm = linalg.fill ins(%ninf : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf64>) outs(%fm : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %r = arith.maximumf %acc, %a : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %fs = linalg.fill ins(%zero : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %se = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x6xf64>, tensor<4xf64>) outs(%fs : tensor<4xf64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %d = arith.subf %a, %b : f64
    %p = math.exp %d : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %ex = tensor.empty() : tensor<4x6xf64>
  %lp = linalg.generic {indexing_maps = [#x, #r, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m, %se : tensor<4x6xf64>, tensor<4xf64>, tensor<4xf64>) outs(%ex : tensor<4x6xf64>) {
  ^bb0(%a: f64, %b: f64, %c: f64, %o: f64):
    %l = math.log %c : f64
    %d = arith.subf %a, %b : f64
    %q = arith.subf %d, %l : f64
    linalg.yield %q : f64
  } -> tensor<4x6xf64>
  %e0 = tensor.empty() : tensor<f64>
  %f0 = linalg.fill ins(%zero : f64) outs(%e0 : tensor<f64>) -> tensor<f64>
  %loss = linalg.generic {indexing_maps = [#x, #c, affine_map<(n, v) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%lp, %w : tensor<4x6xf64>, tensor<6xf64>) outs(%f0 : tensor<f64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %q = arith.mulf %a, %b : f64
    %nq = arith.negf %q : f64
    %s = arith.addf %acc, %nq : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  return %loss : tensor<f64>
}
func.func @across_rows(%x: tensor<4x6xf64>) -> tensor<4xf64> {
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4xf64>
  %fm = linalg.fill ins(%ninf : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf64>) outs(%fm : tensor<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %r = arith.maximumf %acc, %a : f64
    linalg.yield %r : f64
  } -> tensor<4xf64>
  %e0 = tensor.empty() : tensor<f64>
  %f0 = linalg.fill ins(%zero : f64) outs(%e0 : tensor<f64>) -> tensor<f64>
  %se = linalg.generic {indexing_maps = [#x, #r, affine_map<(n, v) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x, %m : tensor<4x6xf64>, tensor<4xf64>) outs(%f0 : tensor<f64>) {
  ^bb0(%a: f64, %b: f64, %acc: f64):
    %d = arith.subf %a, %b : f64
    %p = math.exp %d : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  %y = linalg.generic {indexing_maps = [#n, affine_map<(n) -> ()>, #n], iterator_types = ["parallel"]}
      ins(%m, %se : tensor<4xf64>, tensor<f64>) outs(%e : tensor<4xf64>) {
  ^bb0(%a: f64, %b: f64, %o: f64):
    %l = math.log %b : f64
    %d = arith.addf %a, %l : f64
    linalg.yield %d : f64
  } -> tensor<4xf64>
  return %y : tensor<4xf64>
}
func.func @nll_mixed(%x: tensor<4x6xf32>, %t: tensor<4xi64>) -> tensor<f64> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f64
  %minus_inv = arith.constant -0.25 : f64
  %e32 = tensor.empty() : tensor<4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e32 : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf32>) outs(%fm : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf64>
  %fs = linalg.fill ins(%zero : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  %se = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : tensor<4x6xf32>, tensor<4xf32>) outs(%fs : tensor<4xf64>) {
  ^bb0(%a: f32, %b: f32, %acc: f64):
    %a64 = arith.extf %a : f32 to f64
    %b64 = arith.extf %b : f32 to f64
    %d = arith.subf %a64, %b64 : f64
    %p = math.exp %d : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %ex = tensor.empty() : tensor<4x6xf64>
  %lp = linalg.generic {indexing_maps = [#x, #r, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%x, %m, %se : tensor<4x6xf32>, tensor<4xf32>, tensor<4xf64>) outs(%ex : tensor<4x6xf64>) {
  ^bb0(%a: f32, %b: f32, %c: f64, %o: f64):
    %a64 = arith.extf %a : f32 to f64
    %b64 = arith.extf %b : f32 to f64
    %d = arith.subf %a64, %b64 : f64
    %l = math.log %c : f64
    %q = arith.subf %d, %l : f64
    linalg.yield %q : f64
  } -> tensor<4x6xf64>
  %pk = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%lp, %t : tensor<4x6xf64>, tensor<4xi64>) outs(%fs : tensor<4xf64>) {
  ^bb0(%a: f64, %ti: i64, %acc: f64):
    %v = linalg.index 1 : index
    %tx = arith.index_cast %ti : i64 to index
    %hit = arith.cmpi eq, %tx, %v : index
    %p = arith.select %hit, %a, %zero : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<4xf64>
  %e0 = tensor.empty() : tensor<f64>
  %f0 = linalg.fill ins(%zero : f64) outs(%e0 : tensor<f64>) -> tensor<f64>
  %loss = linalg.generic {indexing_maps = [#n, #s], iterator_types = ["reduction"]}
      ins(%pk : tensor<4xf64>) outs(%f0 : tensor<f64>) {
  ^bb0(%a: f64, %acc: f64):
    %w = arith.mulf %a, %minus_inv : f64
    %s = arith.addf %acc, %w : f64
    linalg.yield %s : f64
  } -> tensor<f64>
  return %loss : tensor<f64>
}
)mlir";

/// Targets 7 and -1 (rows 1 and 2) pick no class.
void pickNothingInTwoRows(std::vector<HostTensor> &args) {
  args[1].set(1, 7.0);
  args[1].set(2, -1.0);
}

TEST(Autodiff, CrossEntropyMatchesFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(kNormalisations, "nll", {0});
  checkGradients(kNormalisations, "nll", {0}, "", 3, pickNothingInTwoRows);
  checkGradients(kNormalisations, "lse", {0});
  checkGradients(kNormalisations, "lse", {0}, "", 3, pickNothingInTwoRows);
  checkGradients(kNormalisations, "nll_mixed", {0}, "", 3, pickNothingInTwoRows,
                 Precision{1e-3, 1e-4});
}

TEST(Autodiff, SoftmaxWithStabilisingShiftMatchesFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(kNormalisations, "softmax", {0});
  checkGradients(kNormalisations, "softmax_op", {0});
}

TEST(Autodiff, ShiftsAndSumsLeftAloneMatchFiniteDifferences) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(kNormalisations, "not_invariant", {0});
  checkGradients(kNormalisations, "smoothed", {0, 1});
  checkGradients(kNormalisations, "across_rows", {0});
}

TEST(Autodiff, MarkedArgumentsOnly) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkGradients(R"mlir(
func.func @f(%x: tensor<4x4xf64>, %w: tensor<4x4xf64> {dtensor.param = "w"},
             %unused: tensor<4xf64> {dtensor.requires_grad}) -> tensor<4x4xf64> {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x4xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<4x4xf64>) -> tensor<4x4xf64>
  %y = linalg.matmul ins(%x, %w : tensor<4x4xf64>, tensor<4x4xf64>)
                     outs(%f : tensor<4x4xf64>) -> tensor<4x4xf64>
  return %y : tensor<4x4xf64>
}
)mlir",
                 "f", {1, 2});
}

} // namespace

namespace {

/// A one-layer model with a mean-squared loss (tanh activation, bias).
constexpr const char *kLoss = R"mlir(
#id = affine_map<(i, j) -> (i, j)>
#all = affine_map<(i, j) -> ()>
func.func @loss(%x: tensor<4x6xf64>, %t: tensor<4x3xf64>,
                %w: tensor<6x3xf64> {dtensor.param = "w"},
                %b: tensor<3xf64> {dtensor.param = "b"}) -> tensor<f64> {
  %zero = arith.constant 0.0 : f64
  %e = tensor.empty() : tensor<4x3xf64>
  %f = linalg.fill ins(%zero : f64) outs(%e : tensor<4x3xf64>) -> tensor<4x3xf64>
  %y = linalg.matmul ins(%x, %w : tensor<4x6xf64>, tensor<6x3xf64>)
                     outs(%f : tensor<4x3xf64>) -> tensor<4x3xf64>
  %e1 = tensor.empty() : tensor<4x3xf64>
  %yb = linalg.generic {indexing_maps = [#id, affine_map<(i, j) -> (j)>, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : tensor<4x3xf64>, tensor<3xf64>) outs(%e1 : tensor<4x3xf64>) {
  ^bb0(%p: f64, %q: f64, %o: f64):
    %s = arith.addf %p, %q : f64
    %r = math.tanh %s : f64
    linalg.yield %r : f64
  } -> tensor<4x3xf64>
  %e2 = tensor.empty() : tensor<f64>
  %f2 = linalg.fill ins(%zero : f64) outs(%e2 : tensor<f64>) -> tensor<f64>
  %l = linalg.generic {indexing_maps = [#id, #id, #all],
                       iterator_types = ["reduction", "reduction"]}
      ins(%yb, %t : tensor<4x3xf64>, tensor<4x3xf64>) outs(%f2 : tensor<f64>) {
  ^bb0(%p: f64, %q: f64, %acc: f64):
    %d = arith.subf %p, %q : f64
    %d2 = arith.mulf %d, %d : f64
    %r = arith.addf %acc, %d2 : f64
    linalg.yield %r : f64
  } -> tensor<f64>
  return %l : tensor<f64>
}
)mlir";

// dtensor-train-steps: K steps, unrolled or as one scf.for, equal K
// host-driven steps of the joint function (forward loss, gradients with a
// seed of one, w -= lr * g). Unrolled, the loss of every step is returned;
// in a loop, the last step's.
/// One parameter's update on the host, torch.optim's: `p` updated in
/// place from its gradient `g` at `step` (1-based), `state` its optimizer
/// state (zero-initialised, sized by the caller).
using HostUpdate = std::function<void(HostTensor &p, const HostTensor &g,
                                      std::vector<double> &state, int step)>;

/// 3 steps of kLoss by dtensor-train-steps{`options`} (in a loop or
/// unrolled) against 3 host-driven steps: the joint function's gradients,
/// `update` applied to w and b (with `stateSize` doubles of state per
/// element); losses and trained weights to 1e-12.
void checkHostDrivenSteps(llvm::StringRef options, bool unroll,
                          unsigned seed, unsigned stateSize,
                          const HostUpdate &update) {
  Session session;
  auto module = session.parse(kLoss);
  ASSERT_TRUE(succeeded(module));
  ASSERT_TRUE(succeeded(session.runPipeline(
      **module, ("dtensor-autodiff,dtensor-train-steps{steps=3 " + options +
                 " unroll=" + (unroll ? "1" : "0") + "}")
                    .str())));
  Session::stripPlacements(**module);
  ASSERT_TRUE(succeeded(session.lower(**module, Stage::LLVM, {})));
  auto exe = session.compile(**module);
  ASSERT_TRUE(succeeded(exe));

  std::mt19937 rng(seed);
  HostTensor x = randomTensor({4, 6}, rng), t = randomTensor({4, 3}, rng);
  HostTensor w = randomTensor({6, 3}, rng), b = randomTensor({3}, rng);
  auto trained = (*exe)->invoke("loss_train", {&x, &t, &w, &b});
  ASSERT_TRUE(bool(trained)) << llvm::toString(trained.takeError());
  size_t losses = unroll ? 3 : 1;
  ASSERT_EQ(trained->size(), losses + 2); // losses, w, b

  HostTensor lossSeed(ElementType::F64, {});
  lossSeed.set(0, 1.0);
  std::vector<double> stateW(w.getNumElements() * stateSize);
  std::vector<double> stateB(b.getNumElements() * stateSize);
  for (int step = 1; step <= 3; ++step) {
    auto joint = (*exe)->invoke("loss_grad", {&x, &t, &w, &b, &lossSeed});
    ASSERT_TRUE(bool(joint)) << llvm::toString(joint.takeError());
    if (unroll || step == 3) {
      EXPECT_NEAR((*trained)[unroll ? step - 1 : 0].get(0), (*joint)[0].get(0),
                  1e-12)
          << "loss of step " << step;
    }
    update(w, (*joint)[1], stateW, step);
    update(b, (*joint)[2], stateB, step);
  }
  if (unroll) { // The loss goes down.
    EXPECT_LT((*trained)[2].get(0), (*trained)[0].get(0));
  }
  for (int64_t i = 0; i < w.getNumElements(); ++i)
    EXPECT_NEAR((*trained)[losses].get(i), w.get(i), 1e-12);
  for (int64_t i = 0; i < b.getNumElements(); ++i)
    EXPECT_NEAR((*trained)[losses + 1].get(i), b.get(i), 1e-12);
}

void checkSgdSteps(bool unroll) {
  checkHostDrivenSteps("learning-rate=0.25", unroll, 7, 0,
                       [](HostTensor &p, const HostTensor &g,
                          std::vector<double> &, int) {
                         for (int64_t i = 0; i < p.getNumElements(); ++i)
                           p.set(i, p.get(i) - 0.25 * g.get(i));
                       });
}

TEST(TrainSteps, UnrolledMatchHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkSgdSteps(/*unroll=*/true);
}

TEST(TrainSteps, LoopMatchesHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkSgdSteps(/*unroll=*/false);
}

} // namespace

namespace {

// Adam: K steps, unrolled or in a loop (bias corrections from the loop's
// step number), equal torch.optim.Adam's update computed on the host from
// the joint function's gradients (moments from zero, bias corrected).
// With `adamw`, torch.optim.AdamW: the weight decayed by 1 - lr * wd first.
void checkAdamSteps(bool unroll, bool adamw = false) {
  const double decay = adamw ? 0.1 : 0.0;
  checkHostDrivenSteps(
      std::string("optimizer=") + (adamw ? "adamw weight-decay=0.1" : "adam") +
          " learning-rate=0.05 beta1=0.8 beta2=0.95 epsilon=1e-6",
      unroll, 9, 2,
      [&](HostTensor &p, const HostTensor &g, std::vector<double> &state,
          int step) {
        double c1 = 1 - std::pow(0.8, step), c2 = 1 - std::pow(0.95, step);
        for (int64_t i = 0; i < p.getNumElements(); ++i) {
          double &m = state[2 * i], &v = state[2 * i + 1];
          p.set(i, p.get(i) * (1 - 0.05 * decay));
          m = 0.8 * m + 0.2 * g.get(i);
          v = 0.95 * v + 0.05 * g.get(i) * g.get(i);
          double update = (m / c1) / (std::sqrt(v / c2) + 1e-6);
          p.set(i, p.get(i) - 0.05 * update);
        }
      });
}

TEST(TrainSteps, AdamUnrolledMatchesHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkAdamSteps(/*unroll=*/true);
}

TEST(TrainSteps, AdamLoopMatchesHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkAdamSteps(/*unroll=*/false);
}

TEST(TrainSteps, AdamWUnrolledMatchesHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkAdamSteps(/*unroll=*/true, /*adamw=*/true);
}

TEST(TrainSteps, AdamWLoopMatchesHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkAdamSteps(/*unroll=*/false, /*adamw=*/true);
}

// SGD with momentum and L2 weight decay: torch.optim.SGD's update
// (b = momentum * b + g + wd * w, the buffer starting at zero; w -= lr * b).
void checkMomentumSteps(bool unroll) {
  checkHostDrivenSteps(
      "optimizer=sgd momentum=0.9 weight-decay=0.05 learning-rate=0.1",
      unroll, 11, 1,
      [](HostTensor &p, const HostTensor &g, std::vector<double> &buffer,
         int) {
        for (int64_t i = 0; i < p.getNumElements(); ++i) {
          buffer[i] = 0.9 * buffer[i] + g.get(i) + 0.05 * p.get(i);
          p.set(i, p.get(i) - 0.1 * buffer[i]);
        }
      });
}

TEST(TrainSteps, MomentumUnrolledMatchesHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkMomentumSteps(/*unroll=*/true);
}

TEST(TrainSteps, MomentumLoopMatchesHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkMomentumSteps(/*unroll=*/false);
}

// state=arguments: 3 calls of one step each, the optimizer state (slots per
// element of w and b, then the steps taken) passed back in, equal 3
// host-driven steps; the returned step count is 3.
void checkStatefulCalls(llvm::StringRef options, unsigned seed,
                        unsigned numSlots, const HostUpdate &update) {
  Session session;
  auto module = session.parse(kLoss);
  ASSERT_TRUE(succeeded(module));
  ASSERT_TRUE(succeeded(session.runPipeline(
      **module, ("dtensor-autodiff,dtensor-train-steps{steps=1 state=arguments " +
                 options + "}")
                    .str())));
  Session::stripPlacements(**module);
  ASSERT_TRUE(succeeded(session.lower(**module, Stage::LLVM, {})));
  auto exe = session.compile(**module);
  ASSERT_TRUE(succeeded(exe));

  std::mt19937 rng(seed);
  HostTensor x = randomTensor({4, 6}, rng), t = randomTensor({4, 3}, rng);
  HostTensor w = randomTensor({6, 3}, rng), b = randomTensor({3}, rng);
  // The compiled run's weights and state (zeros: a fresh run).
  HostTensor cw = w, cb = b;
  std::vector<HostTensor> slots;
  for (unsigned i = 0; i < numSlots; ++i)
    slots.push_back(HostTensor(ElementType::F64, {6, 3}));
  for (unsigned i = 0; i < numSlots; ++i)
    slots.push_back(HostTensor(ElementType::F64, {3}));
  HostTensor taken(ElementType::F32, {});
  taken.set(0, 0.0);

  HostTensor lossSeed(ElementType::F64, {});
  lossSeed.set(0, 1.0);
  std::vector<double> stateW(w.getNumElements() * numSlots);
  std::vector<double> stateB(b.getNumElements() * numSlots);
  for (int step = 1; step <= 3; ++step) {
    std::vector<HostTensor *> args{&x, &t, &cw, &cb};
    for (HostTensor &slot : slots)
      args.push_back(&slot);
    args.push_back(&taken);
    auto trained = (*exe)->invoke("loss_train", args);
    ASSERT_TRUE(bool(trained)) << llvm::toString(trained.takeError());
    ASSERT_EQ(trained->size(), 3 + slots.size() + 1);
    auto joint = (*exe)->invoke("loss_grad", {&x, &t, &w, &b, &lossSeed});
    ASSERT_TRUE(bool(joint)) << llvm::toString(joint.takeError());
    EXPECT_NEAR((*trained)[0].get(0), (*joint)[0].get(0), 1e-12)
        << "loss of call " << step;
    update(w, (*joint)[1], stateW, step);
    update(b, (*joint)[2], stateB, step);
    cw = (*trained)[1];
    cb = (*trained)[2];
    for (size_t i = 0; i < slots.size(); ++i)
      slots[i] = (*trained)[3 + i];
    taken = (*trained)[3 + slots.size()];
    EXPECT_EQ(taken.get(0), static_cast<double>(step));
  }
  for (int64_t i = 0; i < w.getNumElements(); ++i)
    EXPECT_NEAR(cw.get(i), w.get(i), 1e-12);
  for (int64_t i = 0; i < b.getNumElements(); ++i)
    EXPECT_NEAR(cb.get(i), b.get(i), 1e-12);
  // The moments / buffers returned are the host's.
  for (int64_t i = 0; i < w.getNumElements(); ++i)
    for (unsigned k = 0; k < numSlots; ++k)
      EXPECT_NEAR(slots[k].get(i), stateW[numSlots * i + k], 1e-12);
}

TEST(TrainSteps, AdamWStateAcrossCallsMatchesHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkStatefulCalls(
      "optimizer=adamw weight-decay=0.1 learning-rate=0.05 beta1=0.8 "
      "beta2=0.95 epsilon=1e-6",
      13, 2,
      [](HostTensor &p, const HostTensor &g, std::vector<double> &state,
         int step) {
        double c1 = 1 - std::pow(0.8, step), c2 = 1 - std::pow(0.95, step);
        for (int64_t i = 0; i < p.getNumElements(); ++i) {
          double &m = state[2 * i], &v = state[2 * i + 1];
          p.set(i, p.get(i) * (1 - 0.05 * 0.1));
          m = 0.8 * m + 0.2 * g.get(i);
          v = 0.95 * v + 0.05 * g.get(i) * g.get(i);
          p.set(i, p.get(i) - 0.05 * (m / c1) / (std::sqrt(v / c2) + 1e-6));
        }
      });
}

TEST(TrainSteps, MomentumStateAcrossCallsMatchesHostDrivenSteps) {
  DTENSOR_REQUIRE_CPU_TARGET();
  checkStatefulCalls(
      "optimizer=sgd momentum=0.9 learning-rate=0.1", 17, 1,
      [](HostTensor &p, const HostTensor &g, std::vector<double> &buffer,
         int) {
        for (int64_t i = 0; i < p.getNumElements(); ++i) {
          buffer[i] = 0.9 * buffer[i] + g.get(i);
          p.set(i, p.get(i) - 0.1 * buffer[i]);
        }
      });
}

} // namespace
