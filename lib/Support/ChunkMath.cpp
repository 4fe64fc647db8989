//===- ChunkMath.cpp - torch.chunk arithmetic for shards ------------------===//

#include "dtensor/Support/ChunkMath.h"
#include "dtensor/Support/SafeMath.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>

namespace mlir::dtensor {

int64_t maxChunkSize(int64_t length, int64_t numChunks) {
  // (length + numChunks - 1) / numChunks wraps for a length near 2^63.
  return checkedCeilDiv(length, numChunks).value_or(0);
}

Chunk chunkOf(int64_t length, int64_t numChunks, int64_t index) {
  int64_t full = maxChunkSize(length, numChunks);
  // full * (index + 1) can exceed 2^63 - 1 when length is near it; any
  // value past `length` clamps to it.
  int64_t begin = std::min(length, saturatingProduct({full, index}));
  int64_t end = std::min(length, saturatingProduct({full, index + 1}));
  return {begin, end - begin};
}

Chunk nestedChunkOf(int64_t length, llvm::ArrayRef<int64_t> numChunks,
                    llvm::ArrayRef<int64_t> indices) {
  Chunk chunk{0, length};
  for (auto [n, index] : llvm::zip_equal(numChunks, indices)) {
    Chunk inner = chunkOf(chunk.size, n, index);
    chunk = {chunk.offset + inner.offset, inner.size};
  }
  return chunk;
}

llvm::SmallVector<int64_t> chunkSizes(int64_t length,
                                      llvm::ArrayRef<int64_t> numChunks) {
  // The set of sizes some rank holds after each split. Splitting `a` over
  // `n` ranks gives full = ceil(a/n) to the first a/full ranks, the
  // remainder to the next one, and nothing to the rest: at most three
  // sizes, found without visiting every rank.
  llvm::SmallVector<int64_t> sizes = {length};
  for (int64_t n : numChunks) {
    llvm::SmallVector<int64_t> next;
    for (int64_t size : sizes) {
      int64_t full = maxChunkSize(size, n);
      if (full == 0) {
        next.push_back(0);
        continue;
      }
      int64_t fullRanks = size / full;
      if (fullRanks > 0)
        next.push_back(full);
      int64_t remainder = size - fullRanks * full;
      if (remainder > 0)
        next.push_back(remainder);
      if (fullRanks + (remainder > 0 ? 1 : 0) < n)
        next.push_back(0);
    }
    llvm::sort(next);
    next.erase(std::unique(next.begin(), next.end()), next.end());
    sizes = std::move(next);
  }
  return sizes;
}

std::optional<int64_t> uniformChunkSize(int64_t length,
                                        llvm::ArrayRef<int64_t> numChunks) {
  llvm::SmallVector<int64_t> sizes = chunkSizes(length, numChunks);
  if (sizes.size() != 1)
    return std::nullopt;
  return sizes.front();
}

} // namespace mlir::dtensor
