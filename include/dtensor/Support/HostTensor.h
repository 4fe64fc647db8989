//===- HostTensor.h - dense host arrays and .npy files ----------*- C++ -*-===//

#ifndef DTENSOR_SUPPORT_HOSTTENSOR_H
#define DTENSOR_SUPPORT_HOSTTENSOR_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::dtensor {

enum class ElementType { F32, F64, I32, I64 };

/// Size in bytes and .npy descriptor ('<f4', ...) of an element type.
int64_t getByteWidth(ElementType type);
llvm::StringRef getNpyDescr(ElementType type);
llvm::StringRef getElementTypeName(ElementType type);

/// A dense row-major array on the host.
struct HostTensor {
  ElementType type = ElementType::F32;
  llvm::SmallVector<int64_t> shape;
  std::vector<char> data;

  HostTensor() = default;
  HostTensor(ElementType type, llvm::ArrayRef<int64_t> shape);
  int64_t getNumElements() const;
  /// Element `i` (row-major) as a double, and set from a double.
  double get(int64_t i) const;
  void set(int64_t i, double value);
};

/// Reads a .npy file (version 1.0/2.0, little-endian f4/f8/i4/i8, C order).
llvm::Expected<HostTensor> readNpy(llvm::StringRef path);
/// Writes a .npy file.
llvm::Error writeNpy(llvm::StringRef path, const HostTensor &tensor);

/// The chunk of `tensor` selected by per-dim [offsets, offsets + sizes).
HostTensor sliceHostTensor(const HostTensor &tensor,
                           llvm::ArrayRef<int64_t> offsets,
                           llvm::ArrayRef<int64_t> sizes);

/// Calls `fn(globalIndex, localIndex)` for every element of a block of
/// shape `sizes` placed at `offsets` inside a tensor of `shape`.
void forEachInBlock(llvm::ArrayRef<int64_t> shape,
                    llvm::ArrayRef<int64_t> offsets,
                    llvm::ArrayRef<int64_t> sizes,
                    llvm::function_ref<void(int64_t, int64_t)> fn);

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_HOSTTENSOR_H
