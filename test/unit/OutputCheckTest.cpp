//===- OutputCheckTest.cpp - the allclose check of dtensor-run ------------===//

#include "dtensor/Support/OutputCheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir::dtensor;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

HostTensor tensor(ElementType type, std::vector<double> values) {
  HostTensor t(type, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    t.set(i, values[i]);
  return t;
}

OutputTolerance tolerance(double rtol, std::optional<double> atol,
                          double floor = 0) {
  OutputTolerance t;
  t.rtol = rtol;
  t.atol = atol;
  t.atolFloor = floor;
  return t;
}

// An output that is zero in exact math: rounding noise on both sides. The
// old check (max|a-b| / max|b| <= rtol) failed it; auto atol's floor passes
// it, atol 0 does not.
TEST(OutputCheck, ZeroInExactMath) {
  HostTensor got = tensor(ElementType::F32, {3e-6, -1e-6, 0});
  HostTensor want = tensor(ElementType::F32, {-2e-6, 4e-6, 1e-6});
  Comparison c = compareTensors(got, want, tolerance(1e-4, std::nullopt, 1e-5));
  EXPECT_TRUE(c.good);
  EXPECT_TRUE(c.autoAtol);
  EXPECT_DOUBLE_EQ(c.atol, 1e-5);
  EXPECT_GT(c.maxRelativeError, 1.0);
  Comparison strict = compareTensors(got, want, tolerance(1e-4, 0.0));
  EXPECT_FALSE(strict.good);
  EXPECT_EQ(strict.numBad, 3);
  EXPECT_FALSE(strict.autoAtol);
  // The worst: the largest difference past a bound of ~0.
  EXPECT_EQ(strict.worst, 0);
  EXPECT_NEAR(strict.got, 3e-6, 1e-12);
}

// Auto atol is rtol times the reference's largest magnitude when that is
// above the floor: an error small against the output's largest value
// passes anywhere in it, as the old check did.
TEST(OutputCheck, AutoAtolScalesWithTheOutput) {
  HostTensor want = tensor(ElementType::F32, {100, 0.001, -50});
  HostTensor got = tensor(ElementType::F32, {100, 0.006, -50});
  Comparison c = compareTensors(got, want, tolerance(1e-4, std::nullopt, 1e-5));
  EXPECT_NEAR(c.atol, 1e-2, 1e-9);
  EXPECT_TRUE(c.good);
  EXPECT_EQ(c.worst, 1);
  EXPECT_NEAR(c.allowed, 1e-2 + 1e-4 * 0.001, 1e-9);
  // Given explicitly, atol is absolute: torch.allclose.
  Comparison absolute = compareTensors(got, want, tolerance(1e-4, 1e-5));
  EXPECT_FALSE(absolute.good);
  EXPECT_EQ(absolute.numBad, 1);
  // The bound at the worst element is atol + rtol*|b| exactly.
  HostTensor big = tensor(ElementType::F64, {10, 10});
  HostTensor off = tensor(ElementType::F64, {10.5, 10.25});
  EXPECT_TRUE(compareTensors(off, big, tolerance(0.05, 0.0)).good);
  EXPECT_FALSE(compareTensors(off, big, tolerance(0.04, 0.0)).good);
  EXPECT_TRUE(compareTensors(off, big, tolerance(0.04, 0.1)).good);
}

// NaN equals NaN; a NaN or an infinity against anything else fails; equal
// infinities are equal.
TEST(OutputCheck, NaNAndInfinities) {
  HostTensor want = tensor(ElementType::F32, {kNaN, kInf, 1});
  Comparison same = compareTensors(want, want, tolerance(1e-4, std::nullopt));
  EXPECT_TRUE(same.good);
  EXPECT_EQ(same.worst, -1);
  EXPECT_EQ(same.numNaN, 1);
  EXPECT_EQ(same.maxRelativeError, 0);

  HostTensor nanGot = tensor(ElementType::F32, {kNaN, kInf, kNaN});
  Comparison c = compareTensors(nanGot, want, tolerance(1e6, 1e6));
  EXPECT_FALSE(c.good);
  EXPECT_EQ(c.numBad, 1);
  EXPECT_EQ(c.worst, 2);
  EXPECT_TRUE(std::isinf(c.maxRelativeError));

  HostTensor numberGot = tensor(ElementType::F32, {0, kInf, 1});
  EXPECT_FALSE(compareTensors(numberGot, want, tolerance(1e6, 1e6)).good);
  HostTensor minusInf = tensor(ElementType::F32, {kNaN, -kInf, 1});
  EXPECT_FALSE(compareTensors(minusInf, want, tolerance(1e6, 1e6)).good);
}

// Integers compare exactly, i64 beyond 2^53 included (a double would not
// tell these apart).
TEST(OutputCheck, IntegersExactly) {
  HostTensor want(ElementType::I64, {1});
  HostTensor got(ElementType::I64, {1});
  int64_t a = (int64_t(1) << 60) + 1, b = int64_t(1) << 60;
  std::memcpy(want.data.data(), &b, 8);
  std::memcpy(got.data.data(), &a, 8);
  CheckTolerances none;
  OutputTolerance exact = none.resolve(0, ElementType::I64);
  EXPECT_EQ(exact.rtol, 0);
  ASSERT_TRUE(exact.atol.has_value());
  EXPECT_EQ(*exact.atol, 0);
  EXPECT_FALSE(compareTensors(got, want, exact).good);
  EXPECT_TRUE(compareTensors(want, want, exact).good);
  HostTensor i32 = tensor(ElementType::I32, {7, -3});
  HostTensor i32Off = tensor(ElementType::I32, {7, -4});
  EXPECT_FALSE(
      compareTensors(i32Off, i32, none.resolve(0, ElementType::I32)).good);
}

TEST(OutputCheck, DefaultsByElementType) {
  CheckTolerances none;
  OutputTolerance f32 = none.resolve(0, ElementType::F32);
  EXPECT_EQ(f32.rtol, 1e-4);
  EXPECT_FALSE(f32.atol.has_value());
  EXPECT_EQ(f32.atolFloor, 1e-5);
  EXPECT_EQ(none.resolve(0, ElementType::F64).atolFloor, 1e-10);
  EXPECT_EQ(none.resolve(0, ElementType::F16).rtol, 5e-3);
  EXPECT_EQ(none.resolve(0, ElementType::F16).atolFloor, 1e-3);
  EXPECT_EQ(none.resolve(0, ElementType::BF16).rtol, 4e-2);
  EXPECT_EQ(none.resolve(0, ElementType::BF16).atolFloor, 1e-2);
}

TEST(OutputCheck, ParseAndResolve) {
  CheckTolerances t;
  EXPECT_EQ(t.parse("rtol", "1e-3"), "");
  EXPECT_EQ(t.parse("atol", "2:auto"), "");
  EXPECT_EQ(t.parse("atol", "1e-6"), "");
  EXPECT_EQ(t.parse("atol", "1:0"), "");
  EXPECT_EQ(t.parse("tolerance", "3:0.5"), "");
  // A later value replaces an earlier one.
  EXPECT_EQ(t.parse("atol", "1:2e-5"), "");

  OutputTolerance out0 = t.resolve(0, ElementType::F32);
  EXPECT_EQ(out0.rtol, 1e-3);
  EXPECT_EQ(out0.atol, 1e-6);
  OutputTolerance out1 = t.resolve(1, ElementType::BF16);
  EXPECT_EQ(out1.rtol, 1e-3);
  EXPECT_EQ(out1.atol, 2e-5);
  OutputTolerance out2 = t.resolve(2, ElementType::F32);
  EXPECT_FALSE(out2.atol.has_value());
  // Global values leave integer outputs exact; an override does not.
  OutputTolerance int0 = t.resolve(0, ElementType::I32);
  EXPECT_EQ(int0.rtol, 0);
  EXPECT_EQ(int0.atol, 0.0);
  OutputTolerance int3 = t.resolve(3, ElementType::I32);
  EXPECT_EQ(int3.rtol, 0.5);
  EXPECT_EQ(int3.atol, 0.0);

  EXPECT_EQ(t.validate(), "");
  EXPECT_EQ(t.validateOutputs(4, "f"), "");
  EXPECT_EQ(t.validateOutputs(3, "f"), "--tolerance=3:0.5: @f has 3 results");
  CheckTolerances atolOnly;
  EXPECT_EQ(atolOnly.parse("atol", "1:2e-5"), "");
  EXPECT_EQ(atolOnly.validateOutputs(1, "g"), "--atol=1:2e-5: @g has 1 result");

  // The arguments give the same tolerances to another process.
  CheckTolerances copy;
  for (const std::string &arg : t.toArgs()) {
    llvm::StringRef text(arg);
    ASSERT_TRUE(text.consume_front("--"));
    auto [name, value] = text.split('=');
    EXPECT_EQ(copy.parse(name, value), "") << arg;
  }
  for (size_t i = 0; i < 4; ++i)
    for (ElementType type : {ElementType::F32, ElementType::I64}) {
      OutputTolerance x = t.resolve(i, type), y = copy.resolve(i, type);
      EXPECT_EQ(x.rtol, y.rtol);
      EXPECT_EQ(x.atol, y.atol);
    }
}

TEST(OutputCheck, InvalidValues) {
  CheckTolerances t;
  EXPECT_EQ(t.parse("atol", "-1"),
            "--atol must be a finite number >= 0, got -1");
  EXPECT_EQ(t.parse("rtol", "nan"),
            "--rtol must be a finite number >= 0, got nan");
  EXPECT_EQ(t.parse("tolerance", "2:inf"),
            "--tolerance must be a finite number >= 0, got inf");
  EXPECT_EQ(t.parse("rtol", "auto"),
            "--rtol expects VALUE or OUTPUT:VALUE (VALUE a number >= 0, "
            "OUTPUT an output index), got 'auto'");
  for (const char *bad : {"", "x", "1:", ":1", "-2:1", "1:2:3", "0x:1"})
    EXPECT_NE(t.parse("atol", bad), "") << bad;
  EXPECT_FALSE(t.rtol || t.atol || !t.rtolFor.empty() || !t.atolFor.empty());
  // Set through the API.
  t.rtol = -1;
  EXPECT_EQ(t.validate(), "--rtol must be a finite number >= 0, got -1");
  t.rtol.reset();
  t.atolFor[2] = {kNaN, "--atol=2:nan"};
  EXPECT_EQ(t.validate(), "--atol must be a finite number >= 0, got nan");
}

} // namespace
