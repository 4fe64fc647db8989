//===- MemRef.h - memref descriptors and strided copies ---------*- C++ -*-===//
//
// Decoding of the ranked memref descriptors the ABI passes (see Runtime.h)
// and the strided copies that move data between them and the contiguous
// staging buffers of a CommBackend.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_LIB_RUNTIME_MEMREF_H
#define DTENSOR_LIB_RUNTIME_MEMREF_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dtensor::rt {

/// A strided view of elements of `elemSize` bytes: element (i0, ..., ik)
/// lives at data + elemSize * sum(i_d * strides[d]). Strides are in
/// elements, as in memref descriptors.
struct StridedView {
  char *data = nullptr;
  size_t elemSize = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;

  int64_t getRank() const { return static_cast<int64_t>(sizes.size()); }
  int64_t getNumElements() const;
  size_t getNumBytes() const { return getNumElements() * elemSize; }
  /// True if the elements are dense and row-major (the strides of size-1
  /// dimensions do not matter).
  bool isContiguous() const;
  /// True if the view is contiguous and every dimension before `dim` has
  /// size 1, so that its chunks along `dim` are consecutive dense blocks.
  bool hasContiguousChunks(int64_t dim) const;
  /// The `index`-th of the chunks of `chunkSize` elements along `dim`.
  StridedView chunk(int64_t dim, int64_t index, int64_t chunkSize) const;
};

/// The dense row-major view of `sizes` at `data`.
StridedView contiguousView(void *data, const std::vector<int64_t> &sizes,
                           size_t elemSize);

/// Decodes the ranked descriptor `{allocated, aligned, offset, sizes[rank],
/// strides[rank]}` at `descriptor`. `what` ("input", "output", "perm") and
/// `op` are for the messages of fatal() on a null descriptor, a negative
/// rank, size or offset.
StridedView decodeMemRef(int64_t rank, const void *descriptor, size_t elemSize,
                         const char *op, const char *what);

/// Copies every element of `src` to the same position in `dst`; the two
/// views have equal sizes and element sizes.
void copyView(const StridedView &dst, const StridedView &src);

/// "2x3x4" (or "scalar" for rank 0).
std::string formatShape(const std::vector<int64_t> &sizes);

/// Product of the sizes before `dim`.
int64_t outerSize(const std::vector<int64_t> &sizes, int64_t dim);

} // namespace dtensor::rt

#endif // DTENSOR_LIB_RUNTIME_MEMREF_H
