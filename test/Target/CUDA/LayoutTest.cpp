//===- LayoutTest.cpp - dtensor-cuda-layout-test --------------------------===//
//
// Checks on the host the index arithmetic the CUDA runtime hands to the
// device (lib/Target/CUDA/Runtime/Layouts.h), by emulating what the device
// does with it:
//
// - planStridedCopy: every launch is run through the copy kernel's own
//   index formula (Kernels.cu) over host arrays, and the result compared
//   with an element-by-element strided copy; views are dense, transposed,
//   sliced, padded, with size-1 dimensions, and of rank up to 11 (more than
//   one launch).
// - orientMatrix + planGemm: the plan is run through cuBLASLt's documented
//   column-major semantics (D = op(A).op(B), element (i, j) of a rows x
//   cols matrix at i + j*ld, strided batches) over host arrays, and the
//   result compared with the row-major product; operands row-major,
//   transposed, padded, with size-1 dimensions, batched.
//
// Prints one line per failure and "N passed, N failed"; exit status 1 on a
// failure.
//
//===----------------------------------------------------------------------===//

#include "Layouts.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>

using namespace dtensor::rt::cuda;

namespace {

int passed = 0, failed = 0;

void report(bool ok, const std::string &what) {
  if (ok) {
    ++passed;
    return;
  }
  ++failed;
  std::printf("FAIL %s\n", what.c_str());
}

std::string shape(const std::vector<int64_t> &v) {
  std::string s;
  for (int64_t x : v)
    s += (s.empty() ? "" : "x") + std::to_string(x);
  return s;
}

//===----------------------------------------------------------------------===//
// Strided copy
//===----------------------------------------------------------------------===//

/// The body of Kernels.cu's stridedCopy, one "thread" per element.
void emulateKernel(std::vector<int> &dst, int64_t dstBase,
                   const std::vector<int> &src, int64_t srcBase,
                   const DTensorCopyArgs &a) {
  for (int64_t i = 0; i < a.count; ++i) {
    int64_t rest = i, d = 0, s = 0;
    for (int k = a.rank - 1; k >= 0; --k) {
      int64_t size = a.sizes[k];
      int64_t coord = rest % size;
      rest /= size;
      d += coord * a.dstStrides[k];
      s += coord * a.srcStrides[k];
    }
    dst.at(dstBase + d) = src.at(srcBase + s);
  }
}

/// Strides of a row-major layout of `sizes` in dimension order `order`
/// (order[0] outermost), each dimension padded by `pad` elements.
std::vector<int64_t> stridesFor(const std::vector<int64_t> &sizes,
                                const std::vector<int> &order, int64_t pad,
                                int64_t &extent) {
  std::vector<int64_t> strides(sizes.size());
  int64_t step = 1;
  for (int i = static_cast<int>(order.size()) - 1; i >= 0; --i) {
    strides[order[i]] = step;
    step *= sizes[order[i]] + pad;
  }
  extent = step;
  return strides;
}

void checkCopy(const std::vector<int64_t> &sizes, std::mt19937 &rng) {
  int rank = static_cast<int>(sizes.size());
  std::vector<int> dstOrder(rank), srcOrder(rank);
  std::iota(dstOrder.begin(), dstOrder.end(), 0);
  std::iota(srcOrder.begin(), srcOrder.end(), 0);
  std::shuffle(srcOrder.begin(), srcOrder.end(), rng);
  if (rng() % 2)
    std::shuffle(dstOrder.begin(), dstOrder.end(), rng);
  int64_t dstExtent = 0, srcExtent = 0;
  int64_t dstPad = rng() % 2, srcPad = rng() % 3;
  std::vector<int64_t> dstStrides =
      stridesFor(sizes, dstOrder, dstPad, dstExtent);
  std::vector<int64_t> srcStrides =
      stridesFor(sizes, srcOrder, srcPad, srcExtent);
  int64_t dstOffset = rng() % 4, srcOffset = rng() % 4;
  std::vector<int> src(srcExtent + srcOffset), want(dstExtent + dstOffset, -1),
      got(dstExtent + dstOffset, -1);
  std::iota(src.begin(), src.end(), 1);
  // The reference: every element, by its coordinates.
  int64_t count = 1;
  for (int64_t s : sizes)
    count *= s;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, d = dstOffset, s = srcOffset;
    for (int k = rank - 1; k >= 0; --k) {
      int64_t c = rest % sizes[k];
      rest /= sizes[k];
      d += c * dstStrides[k];
      s += c * srcStrides[k];
    }
    want[d] = src[s];
  }
  std::vector<CopyLaunch> launches =
      planStridedCopy(sizes, dstStrides, srcStrides);
  for (const CopyLaunch &l : launches) {
    if (l.args.rank > DTENSOR_COPY_MAX_RANK) {
      report(false, "copy " + shape(sizes) + ": a launch of rank " +
                        std::to_string(l.args.rank));
      return;
    }
    emulateKernel(got, dstOffset + l.dstOffset, src, srcOffset + l.srcOffset,
                  l.args);
  }
  report(got == want, "copy " + shape(sizes) + " dst strides " +
                          shape(dstStrides) + " src strides " +
                          shape(srcStrides));
}

void checkCopies() {
  std::mt19937 rng(12345);
  std::vector<std::vector<int64_t>> shapes = {
      {7},
      {3, 5},
      {1, 6},
      {6, 1},
      {4, 1, 5},
      {2, 3, 4},
      {1, 1, 1},
      {2, 3, 4, 5},
      {3, 1, 2, 1, 4},
      {2, 2, 2, 2, 2, 2, 2, 2, 2},
      {2, 1, 3, 2, 2, 1, 2, 2, 2, 2, 3}};
  for (const auto &s : shapes)
    for (int trial = 0; trial < 20; ++trial)
      checkCopy(s, rng);
  // Merging: a dense copy of any shape is one launch of rank 1.
  auto dense = planStridedCopy({2, 3, 4}, {12, 4, 1}, {12, 4, 1});
  report(dense.size() == 1 && dense[0].args.rank == 1 &&
             dense[0].args.count == 24,
         "a dense 2x3x4 copy is one launch of rank 1");
  // Zero elements: nothing to launch.
  report(planStridedCopy({3, 0, 2}, {2, 2, 1}, {2, 2, 1}).empty(),
         "a copy of zero elements has no launches");
  // Rank 9 that cannot merge: 2 launches of rank 8.
  std::vector<int64_t> nine(9, 2), strides(9);
  for (int k = 0; k < 9; ++k)
    strides[k] = int64_t(1) << (2 * (8 - k)); // gaps between all dims
  auto split = planStridedCopy(nine, strides, strides);
  report(split.size() == 2 && split[0].args.rank == 8 &&
             split[1].dstOffset == strides[0],
         "an unmergeable rank-9 copy is 2 launches of rank 8");
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

/// Element (i, j) of op(X) where X is column-major rows x cols with `ld`.
double opElement(const std::vector<double> &mem, int64_t base,
                 const LtOperand &x, int64_t i, int64_t j) {
  return x.transpose ? mem.at(base + j + i * x.ld)
                     : mem.at(base + i + j * x.ld);
}

/// One product through the plan: our A stored with (rowStride, colStride)
/// or transposed, our B likewise, both with padding and batch strides.
void checkGemm(int64_t batch, int64_t m, int64_t k, int64_t n, bool transA,
               bool transB, int64_t padA, int64_t padB) {
  std::string name =
      "gemm " + std::to_string(batch) + "x[" + std::to_string(m) + "x" +
      std::to_string(k) + "]x[" + std::to_string(k) + "x" + std::to_string(n) +
      "]" + (transA ? " transA" : "") + (transB ? " transB" : "") + " pad " +
      std::to_string(padA) + "," + std::to_string(padB);
  // Strides of our A [M,K]: row-major (ld = K + pad) or transposed
  // (column-major, ld = M + pad).
  int64_t aRow = transA ? 1 : k + padA, aCol = transA ? m + padA : 1;
  int64_t bRow = transB ? 1 : n + padB, bCol = transB ? k + padB : 1;
  int64_t aBatch = (transA ? k * (m + padA) : m * (k + padA)) + 3;
  int64_t bBatch = (transB ? n * (k + padB) : k * (n + padB)) + 5;
  std::vector<double> amem(batch * aBatch, 0), bmem(batch * bBatch, 0);
  auto aAt = [&](int64_t p, int64_t i, int64_t l) -> double & {
    return amem.at(p * aBatch + i * aRow + l * aCol);
  };
  auto bAt = [&](int64_t p, int64_t l, int64_t j) -> double & {
    return bmem.at(p * bBatch + l * bRow + j * bCol);
  };
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t l = 0; l < k; ++l)
        aAt(p, i, l) = 1 + (p * 7 + i * 3 + l) % 13;
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < n; ++j)
        bAt(p, l, j) = 1 + (p * 5 + l * 2 + j * 3) % 11;
  }
  Orientation oa, ob;
  if (!orientMatrix(m, k, aRow, aCol, oa) ||
      !orientMatrix(k, n, bRow, bCol, ob)) {
    report(false, name + ": an operand was not oriented");
    return;
  }
  GemmPlan g = planGemm(batch, m, k, n, oa, aBatch, ob, bBatch);
  // Shape consistency of cuBLASLt's problem: op(A') is m x k, op(B') k x n,
  // leading dimensions at least the stored rows.
  bool shapesOk = g.m == n && g.n == m && g.k == k &&
                  (g.a.transpose ? g.a.cols : g.a.rows) == g.m &&
                  (g.a.transpose ? g.a.rows : g.a.cols) == g.k &&
                  (g.b.transpose ? g.b.cols : g.b.rows) == g.k &&
                  (g.b.transpose ? g.b.rows : g.b.cols) == g.n &&
                  g.a.ld >= g.a.rows && g.b.ld >= g.b.rows && g.ldc >= g.m;
  if (!shapesOk) {
    report(false, name + ": inconsistent cuBLASLt shapes");
    return;
  }
  // D = op(A').op(B') in cuBLASLt's column-major terms, A' = our B memory,
  // B' = our A memory; D lands in C's memory.
  std::vector<double> c(batch * m * n, 0);
  for (int64_t p = 0; p < g.batch; ++p)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < g.k; ++l)
          acc += opElement(bmem, p * g.a.batchStride, g.a, i, l) *
                 opElement(amem, p * g.b.batchStride, g.b, l, j);
        c.at(p * g.batchStrideC + i + j * g.ldc) = acc;
      }
  // The row-major product.
  bool ok = true;
  for (int64_t p = 0; p < batch && ok; ++p)
    for (int64_t i = 0; i < m && ok; ++i)
      for (int64_t j = 0; j < n && ok; ++j) {
        double want = 0;
        for (int64_t l = 0; l < k; ++l)
          want += aAt(p, i, l) * bAt(p, l, j);
        ok = c.at((p * m + i) * n + j) == want;
      }
  report(ok, name);
}

void checkGemms() {
  int64_t sizes[][4] = {{1, 4, 5, 6}, {1, 1, 5, 6}, {1, 4, 1, 6}, {1, 4, 5, 1},
                        {1, 1, 1, 1}, {3, 4, 5, 6}, {2, 7, 3, 2}, {2, 1, 4, 1}};
  for (auto &s : sizes)
    for (int t = 0; t < 4; ++t)
      for (int pad = 0; pad < 2; ++pad)
        checkGemm(s[0], s[1], s[2], s[3], t & 1, t & 2, pad, 2 * pad);
  // Neither row- nor column-major: must be refused (and packed).
  Orientation o;
  report(!orientMatrix(4, 5, 10, 2, o),
         "a matrix with strides (10, 2) is not oriented");
  report(orientMatrix(4, 5, 5, 1, o) && !o.transposed && o.ld == 5,
         "a dense 4x5 matrix is row-major with ld 5");
  report(orientMatrix(4, 5, 1, 4, o) && o.transposed && o.ld == 4,
         "a 4x5 view with strides (1, 4) is column-major with ld 4");
}

} // namespace

int main() {
  checkCopies();
  checkGemms();
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
