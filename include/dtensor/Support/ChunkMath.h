//===- ChunkMath.h - torch.chunk arithmetic for shards ----------*- C++ -*-===//
//
// Sizes and offsets of shards under torch.chunk semantics: a dimension of
// length L split over n ranks gives each chunk ceil(L / n) elements; rank r
// holds [r * ceil(L/n), min(L, (r + 1) * ceil(L/n))), so trailing ranks may
// hold fewer elements or none.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_CHUNKMATH_H
#define DTENSOR_SUPPORT_CHUNKMATH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace mlir::dtensor {

/// A contiguous range [offset, offset + size) of one tensor dimension.
struct Chunk {
  int64_t offset = 0;
  int64_t size = 0;
  bool operator==(const Chunk &other) const {
    return offset == other.offset && size == other.size;
  }
};

/// ceil(length / numChunks): the padded size every chunk is brought to
/// around collectives. Requires length >= 0 and numChunks > 0 (0
/// otherwise); exact for every int64 length.
int64_t maxChunkSize(int64_t length, int64_t numChunks);

/// The chunk that rank `index` of `numChunks` holds of a dimension of
/// `length` elements. Requires 0 <= index < numChunks.
Chunk chunkOf(int64_t length, int64_t numChunks, int64_t index);

/// The chunk held after splitting by several mesh dimensions in order:
/// `numChunks[i]` ranks on the i-th splitting mesh dimension, the caller at
/// `indices[i]` on it. The result is relative to the full dimension.
Chunk nestedChunkOf(int64_t length, llvm::ArrayRef<int64_t> numChunks,
                    llvm::ArrayRef<int64_t> indices);

/// The sizes the ranks hold after the nested split, each once, ascending
/// (a 0 first where some rank holds nothing).
llvm::SmallVector<int64_t> chunkSizes(int64_t length,
                                      llvm::ArrayRef<int64_t> numChunks);

/// The chunk size every rank holds after the nested split, or std::nullopt
/// if the ranks hold different sizes (uneven sharding).
std::optional<int64_t> uniformChunkSize(int64_t length,
                                        llvm::ArrayRef<int64_t> numChunks);

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_CHUNKMATH_H
