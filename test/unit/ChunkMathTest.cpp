//===- ChunkMathTest.cpp - torch.chunk arithmetic -------------------------===//

#include "dtensor/Support/ChunkMath.h"
#include "dtensor/Support/SafeMath.h"

#include "llvm/ADT/STLExtras.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

using namespace mlir::dtensor;

namespace {

TEST(ChunkMath, EvenSplit) {
  EXPECT_EQ(maxChunkSize(8, 4), 2);
  for (int64_t r = 0; r < 4; ++r)
    EXPECT_EQ(chunkOf(8, 4, r), (Chunk{2 * r, 2}));
}

TEST(ChunkMath, UnevenTrailingRankSmaller) {
  // 257 over 2 ranks is 129 + 128.
  EXPECT_EQ(chunkOf(257, 2, 0), (Chunk{0, 129}));
  EXPECT_EQ(chunkOf(257, 2, 1), (Chunk{129, 128}));
}

TEST(ChunkMath, UnevenTrailingRankEmpty) {
  // 6 rows over 4 ranks is 2, 2, 2, 0 (torch.chunk makes three chunks).
  EXPECT_EQ(chunkOf(6, 4, 0), (Chunk{0, 2}));
  EXPECT_EQ(chunkOf(6, 4, 2), (Chunk{4, 2}));
  EXPECT_EQ(chunkOf(6, 4, 3), (Chunk{6, 0}));
  // 5 over 4: 2, 2, 1, 0.
  EXPECT_EQ(chunkOf(5, 4, 2), (Chunk{4, 1}));
  EXPECT_EQ(chunkOf(5, 4, 3), (Chunk{5, 0}));
}

TEST(ChunkMath, MoreRanksThanElements) {
  EXPECT_EQ(maxChunkSize(2, 4), 1);
  EXPECT_EQ(chunkOf(2, 4, 1), (Chunk{1, 1}));
  EXPECT_EQ(chunkOf(2, 4, 2), (Chunk{2, 0}));
  EXPECT_EQ(chunkOf(0, 3, 0), (Chunk{0, 0}));
}

TEST(ChunkMath, ChunksTileTheDimension) {
  for (int64_t length = 0; length < 40; ++length) {
    for (int64_t n = 1; n < 9; ++n) {
      int64_t next = 0;
      for (int64_t r = 0; r < n; ++r) {
        Chunk c = chunkOf(length, n, r);
        EXPECT_EQ(c.offset, next) << length << "/" << n << " rank " << r;
        EXPECT_LE(c.size, maxChunkSize(length, n));
        next += c.size;
      }
      EXPECT_EQ(next, length);
    }
  }
}

TEST(ChunkMath, NestedSplitIsChunkOfChunk) {
  // 10 over [2, 2]: outer 5 + 5, inner 3 + 2 of each.
  EXPECT_EQ(nestedChunkOf(10, {2, 2}, {0, 0}), (Chunk{0, 3}));
  EXPECT_EQ(nestedChunkOf(10, {2, 2}, {0, 1}), (Chunk{3, 2}));
  EXPECT_EQ(nestedChunkOf(10, {2, 2}, {1, 0}), (Chunk{5, 3}));
  EXPECT_EQ(nestedChunkOf(10, {2, 2}, {1, 1}), (Chunk{8, 2}));
  EXPECT_EQ(nestedChunkOf(10, {}, {}), (Chunk{0, 10}));
}

TEST(ChunkMath, UniformChunkSize) {
  EXPECT_EQ(uniformChunkSize(8, {4}), 2);
  EXPECT_EQ(uniformChunkSize(16, {2, 4}), 2);
  EXPECT_EQ(uniformChunkSize(7, {}), 7);
  EXPECT_EQ(uniformChunkSize(6, {4}), std::nullopt);
  EXPECT_EQ(uniformChunkSize(257, {2}), std::nullopt);
  // 12 over [2, 4]: 6 + 6, each 2, 2, 2, 0: uneven.
  EXPECT_EQ(uniformChunkSize(12, {2, 4}), std::nullopt);
}

} // namespace

namespace {

TEST(ChunkMath, UniformChunkSizeMatchesEnumeration) {
  // The closed form agrees with visiting every rank.
  for (int64_t length = 0; length < 30; ++length) {
    for (int64_t n = 1; n < 7; ++n) {
      bool uniform = true;
      for (int64_t r = 1; r < n; ++r)
        uniform &= chunkOf(length, n, r).size == chunkOf(length, n, 0).size;
      std::optional<int64_t> got = uniformChunkSize(length, {n});
      EXPECT_EQ(got.has_value(), uniform) << length << "/" << n;
      if (got)
        EXPECT_EQ(*got, chunkOf(length, n, 0).size);
    }
  }
}

TEST(ChunkMath, ChunkSizes) {
  using Sizes = llvm::SmallVector<int64_t>;
  EXPECT_EQ(chunkSizes(8, {4}), (Sizes{2}));
  EXPECT_EQ(chunkSizes(10, {4}), (Sizes{1, 3}));
  EXPECT_EQ(chunkSizes(3, {4}), (Sizes{0, 1}));
  EXPECT_EQ(chunkSizes(6, {4}), (Sizes{0, 2}));
  // 3 over [2, 2]: 2 + 1, then 1 + 1 and 1 + 0.
  EXPECT_EQ(chunkSizes(3, {2, 2}), (Sizes{0, 1}));
  EXPECT_EQ(chunkSizes(0, {2}), (Sizes{0}));
  EXPECT_EQ(chunkSizes(5, {}), (Sizes{5}));
}

TEST(ChunkMath, ChunkSizesMatchEnumeration) {
  // The closed form agrees with visiting every rank of two nested splits.
  for (int64_t length = 0; length < 30; ++length) {
    for (int64_t n0 = 1; n0 < 6; ++n0) {
      for (int64_t n1 = 1; n1 < 6; ++n1) {
        llvm::SmallVector<int64_t> visited;
        for (int64_t i0 = 0; i0 < n0; ++i0)
          for (int64_t i1 = 0; i1 < n1; ++i1)
            visited.push_back(nestedChunkOf(length, {n0, n1}, {i0, i1}).size);
        llvm::sort(visited);
        visited.erase(std::unique(visited.begin(), visited.end()),
                      visited.end());
        EXPECT_EQ(chunkSizes(length, {n0, n1}), visited)
            << length << "/" << n0 << "x" << n1;
      }
    }
  }
}

TEST(ChunkMath, UniformChunkSizeOfHugeSplitIsFast) {
  // Must not visit every rank: 2^40 ranks.
  EXPECT_EQ(uniformChunkSize(int64_t(1) << 41, {int64_t(1) << 40}), 2);
  EXPECT_EQ(uniformChunkSize(3, {int64_t(1) << 40}), std::nullopt);
}

} // namespace

// (L + n - 1) / n wrapped for L near 2^63 (issue 11): the chunk size of
// INT64_MAX over 2 came out negative.
TEST(ChunkMath, NoOverflowNearInt64Max) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(maxChunkSize(kMax, 2), kMax / 2 + 1);
  EXPECT_EQ(maxChunkSize(kMax, 1), kMax);
  Chunk last = chunkOf(kMax, 2, 1);
  EXPECT_EQ(last.offset, kMax / 2 + 1);
  EXPECT_EQ(last.size, kMax / 2);
  EXPECT_EQ(chunkOf(kMax, 3, 2).offset + chunkOf(kMax, 3, 2).size, kMax);
  EXPECT_EQ(chunkSizes(kMax, {2}), (llvm::SmallVector<int64_t>{kMax / 2, kMax / 2 + 1}));
}

TEST(SafeMath, CheckedArithmetic) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(checkedMul(int64_t(1) << 62, 2), std::nullopt);
  EXPECT_EQ(checkedMul(int64_t(1) << 61, 2), int64_t(1) << 62);
  EXPECT_EQ(checkedAdd(kMax, 1), std::nullopt);
  EXPECT_EQ(checkedCeilDiv(kMax, 2), kMax / 2 + 1);
  EXPECT_EQ(checkedCeilDiv(5, 0), std::nullopt);
  EXPECT_EQ(checkedCeilDiv(-1, 2), std::nullopt);
  EXPECT_EQ(checkedProduct({int64_t(1) << 32, int64_t(1) << 31}),
            std::nullopt);
  EXPECT_EQ(checkedProduct({int64_t(1) << 31, int64_t(1) << 31}),
            int64_t(1) << 62);
  constexpr int64_t kSentinel = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(checkedProduct({4, kSentinel, 8}, kSentinel), 32);
  EXPECT_EQ(saturatingProduct({int64_t(1) << 40, int64_t(1) << 40}), kMax);
}
