//===- MemRef.cpp - memref descriptors and strided copies -----------------===//

#include "MemRef.h"

#include "CommBackend.h"

#include <cstring>

namespace dtensor::rt {

int64_t StridedView::getNumElements() const {
  int64_t n = 1;
  for (int64_t size : sizes)
    n *= size;
  return n;
}

bool StridedView::isContiguous() const {
  int64_t expected = 1;
  for (int64_t d = getRank() - 1; d >= 0; --d) {
    if (sizes[d] == 0)
      return true;
    if (sizes[d] != 1 && strides[d] != expected)
      return false;
    expected *= sizes[d];
  }
  return true;
}

bool StridedView::hasContiguousChunks(int64_t dim) const {
  return isContiguous() && outerSize(sizes, dim) == 1;
}

StridedView StridedView::chunk(int64_t dim, int64_t index,
                               int64_t chunkSize) const {
  StridedView result = *this;
  result.sizes[dim] = chunkSize;
  result.data += static_cast<ptrdiff_t>(index * chunkSize * strides[dim]) *
                 static_cast<ptrdiff_t>(elemSize);
  return result;
}

StridedView contiguousView(void *data, const std::vector<int64_t> &sizes,
                           size_t elemSize) {
  StridedView view;
  view.data = static_cast<char *>(data);
  view.elemSize = elemSize;
  view.sizes = sizes;
  view.strides.assign(sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 2; d >= 0; --d)
    view.strides[d] = view.strides[d + 1] * sizes[d + 1];
  return view;
}

StridedView decodeMemRef(int64_t rank, const void *descriptor, size_t elemSize,
                         const char *op, const char *what) {
  if (!descriptor)
    fatal(op, std::string("null ") + what + " descriptor");
  if (rank < 0)
    fatal(op, std::string(what) + " has negative rank " + std::to_string(rank));
  // { T *allocated; T *aligned; int64_t offset; int64_t sizes[rank];
  //   int64_t strides[rank]; }
  const char *bytes = static_cast<const char *>(descriptor);
  char *aligned = nullptr;
  std::memcpy(&aligned, bytes + sizeof(void *), sizeof(void *));
  const char *fields = bytes + 2 * sizeof(void *);
  int64_t offset = 0;
  std::memcpy(&offset, fields, sizeof(int64_t));
  StridedView view;
  view.elemSize = elemSize;
  view.sizes.resize(rank);
  view.strides.resize(rank);
  if (rank > 0) {
    std::memcpy(view.sizes.data(), fields + sizeof(int64_t),
                rank * sizeof(int64_t));
    std::memcpy(view.strides.data(), fields + (1 + rank) * sizeof(int64_t),
                rank * sizeof(int64_t));
  }
  for (int64_t d = 0; d < rank; ++d)
    if (view.sizes[d] < 0)
      fatal(op, std::string(what) + " has negative size " +
                    std::to_string(view.sizes[d]) + " in dimension " +
                    std::to_string(d));
  if (offset < 0)
    fatal(op,
          std::string(what) + " has negative offset " + std::to_string(offset));
  view.data = aligned +
              static_cast<ptrdiff_t>(offset) * static_cast<ptrdiff_t>(elemSize);
  if (!aligned && view.getNumElements() > 0)
    fatal(op, std::string(what) + " has a null data pointer");
  return view;
}

namespace {

template <typename Word>
void copyRow(char *dst, int64_t dstStride, const char *src, int64_t srcStride,
             int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    Word w;
    std::memcpy(&w, src + i * srcStride * sizeof(Word), sizeof(Word));
    std::memcpy(dst + i * dstStride * sizeof(Word), &w, sizeof(Word));
  }
}

void copyDims(const StridedView &dst, const StridedView &src, int64_t dim,
              char *d, const char *s) {
  int64_t rank = dst.getRank();
  int64_t n = dst.sizes[dim];
  size_t elem = dst.elemSize;
  if (dim == rank - 1) {
    int64_t ds = dst.strides[dim], ss = src.strides[dim];
    if ((ds == 1 && ss == 1) || n == 1) {
      std::memcpy(d, s, n * elem);
      return;
    }
    switch (elem) {
    case 4:
      copyRow<uint32_t>(d, ds, s, ss, n);
      return;
    case 8:
      copyRow<uint64_t>(d, ds, s, ss, n);
      return;
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(d + i * ds * elem, s + i * ss * elem, elem);
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    copyDims(dst, src, dim + 1, d + i * dst.strides[dim] * elem,
             s + i * src.strides[dim] * elem);
}

} // namespace

void copyView(const StridedView &dst, const StridedView &src) {
  if (dst.getNumElements() == 0)
    return;
  if (dst.getRank() == 0) {
    std::memcpy(dst.data, src.data, dst.elemSize);
    return;
  }
  if (dst.isContiguous() && src.isContiguous()) {
    std::memcpy(dst.data, src.data, dst.getNumBytes());
    return;
  }
  copyDims(dst, src, 0, dst.data, src.data);
}

std::string formatShape(const std::vector<int64_t> &sizes) {
  if (sizes.empty())
    return "scalar";
  std::string result;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d)
      result += "x";
    result += std::to_string(sizes[d]);
  }
  return result;
}

int64_t outerSize(const std::vector<int64_t> &sizes, int64_t dim) {
  int64_t n = 1;
  for (int64_t d = 0; d < dim; ++d)
    n *= sizes[d];
  return n;
}

} // namespace dtensor::rt
