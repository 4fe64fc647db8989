//===- SafeMath.h - overflow-checked size arithmetic and limits -*- C++ -*-===//
//
// The one place for arithmetic on tensor sizes, element counts, mesh sizes
// and group sizes that come from the input program. Every product or sum of
// such numbers goes through these helpers: they return std::nullopt instead
// of wrapping, so a caller turns an overflow into a diagnostic instead of a
// negative size, a type that does not parse back, or a zero-sized buffer.
//
// The resource limits bound what the compiler accepts before it does any
// work proportional to it (cost models that visit every rank of a group,
// ring decompositions with one step per rank, host buffers of a whole
// tensor). They are far above anything a real program uses.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_SAFEMATH_H
#define DTENSOR_SUPPORT_SAFEMATH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/MathExtras.h"

#include <cstdint>
#include <optional>

namespace mlir::dtensor {

/// Most processes a mesh may have (2^20, about a million ranks).
constexpr int64_t kMaxMeshProcesses = int64_t(1) << 20;
/// Largest static tensor dimension (2^40).
constexpr int64_t kMaxDimSize = int64_t(1) << 40;
/// Most elements a static tensor may have (2^48).
constexpr int64_t kMaxNumElements = int64_t(1) << 48;

/// a * b, or std::nullopt on int64 overflow.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t result;
  if (llvm::MulOverflow(a, b, result))
    return std::nullopt;
  return result;
}

/// a + b, or std::nullopt on int64 overflow.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t result;
  if (llvm::AddOverflow(a, b, result))
    return std::nullopt;
  return result;
}

/// ceil(a / b) for a >= 0, b > 0, without forming a + b - 1 (which wraps
/// for a near 2^63); std::nullopt for other arguments.
inline std::optional<int64_t> checkedCeilDiv(int64_t a, int64_t b) {
  if (a < 0 || b <= 0)
    return std::nullopt;
  return a / b + (a % b != 0 ? 1 : 0);
}

/// The product of `values`, or std::nullopt on overflow. Values equal to
/// `skip` (e.g. the dynamic-size sentinel) are left out.
inline std::optional<int64_t> checkedProduct(llvm::ArrayRef<int64_t> values,
                                             std::optional<int64_t> skip = {}) {
  int64_t result = 1;
  for (int64_t value : values) {
    if (skip && value == *skip)
      continue;
    if (llvm::MulOverflow(result, value, result))
      return std::nullopt;
  }
  return result;
}

/// The product of non-negative `values`, clamped to INT64_MAX instead of
/// wrapping, for estimates (costs, byte counts) that must stay monotone.
inline int64_t saturatingProduct(llvm::ArrayRef<int64_t> values) {
  int64_t result = 1;
  for (int64_t value : values)
    if (llvm::MulOverflow(result, value, result))
      return INT64_MAX;
  return result;
}

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_SAFEMATH_H
