//===- Layouts.cpp - index arithmetic of the device copy and matmul -------===//

#include "Layouts.h"

#include <algorithm>

namespace dtensor::rt::cuda {

namespace {

void addLaunches(std::vector<CopyLaunch> &launches,
                 const std::vector<int64_t> &sizes,
                 const std::vector<int64_t> &dst,
                 const std::vector<int64_t> &src, size_t first,
                 int64_t dstOffset, int64_t srcOffset) {
  size_t rank = sizes.size() - first;
  if (rank > DTENSOR_COPY_MAX_RANK) {
    for (int64_t i = 0; i < sizes[first]; ++i)
      addLaunches(launches, sizes, dst, src, first + 1,
                  dstOffset + i * dst[first], srcOffset + i * src[first]);
    return;
  }
  CopyLaunch launch;
  launch.dstOffset = dstOffset;
  launch.srcOffset = srcOffset;
  launch.args.count = 1;
  launch.args.rank = static_cast<int32_t>(rank);
  for (size_t k = 0; k < rank; ++k) {
    launch.args.sizes[k] = sizes[first + k];
    launch.args.dstStrides[k] = dst[first + k];
    launch.args.srcStrides[k] = src[first + k];
    launch.args.count *= sizes[first + k];
  }
  launches.push_back(launch);
}

} // namespace

std::vector<CopyLaunch>
planStridedCopy(const std::vector<int64_t> &sizes,
                const std::vector<int64_t> &dstStrides,
                const std::vector<int64_t> &srcStrides) {
  std::vector<int64_t> s, d, r;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 0)
      return {};
    if (sizes[k] == 1)
      continue;
    // Merge into the previous (outer) dimension when it steps exactly over
    // this one in both views.
    if (!s.empty() && d.back() == dstStrides[k] * sizes[k] &&
        r.back() == srcStrides[k] * sizes[k]) {
      s.back() *= sizes[k];
      d.back() = dstStrides[k];
      r.back() = srcStrides[k];
      continue;
    }
    s.push_back(sizes[k]);
    d.push_back(dstStrides[k]);
    r.push_back(srcStrides[k]);
  }
  std::vector<CopyLaunch> launches;
  addLaunches(launches, s, d, r, 0, 0, 0);
  return launches;
}

bool orientMatrix(int64_t rows, int64_t cols, int64_t rowStride,
                  int64_t colStride, Orientation &o) {
  int64_t r = std::max<int64_t>(rows, 1), c = std::max<int64_t>(cols, 1);
  if ((cols == 1 || colStride == 1) && (rows == 1 || rowStride >= c)) {
    o.transposed = false;
    o.ld = rows == 1 ? c : rowStride;
    return true;
  }
  if ((rows == 1 || rowStride == 1) && (cols == 1 || colStride >= r)) {
    o.transposed = true;
    o.ld = cols == 1 ? r : colStride;
    return true;
  }
  return false;
}

GemmPlan planGemm(int64_t batch, int64_t m, int64_t k, int64_t n,
                  const Orientation &ourA, int64_t strideA,
                  const Orientation &ourB, int64_t strideB) {
  GemmPlan p;
  p.m = n;
  p.n = m;
  p.k = k;
  p.batch = batch;
  // Our B [K,N]: row-major is column-major [N,K] (op N); transposed is
  // column-major [K,N] (op T).
  p.a.transpose = ourB.transposed;
  p.a.rows = ourB.transposed ? k : n;
  p.a.cols = ourB.transposed ? n : k;
  p.a.ld = ourB.ld;
  p.a.batchStride = batch > 1 ? strideB : 0;
  // Our A [M,K]: row-major is column-major [K,M] (op N); transposed is
  // column-major [M,K] (op T).
  p.b.transpose = ourA.transposed;
  p.b.rows = ourA.transposed ? m : k;
  p.b.cols = ourA.transposed ? k : m;
  p.b.ld = ourA.ld;
  p.b.batchStride = batch > 1 ? strideA : 0;
  p.ldc = n;
  p.batchStrideC = m * n;
  return p;
}

} // namespace dtensor::rt::cuda
