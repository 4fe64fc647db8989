//===- HostTensor.h - dense host arrays and .npy files ----------*- C++ -*-===//

#ifndef DTENSOR_SUPPORT_HOSTTENSOR_H
#define DTENSOR_SUPPORT_HOSTTENSOR_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace mlir::dtensor {

/// The element types of the runtime ABI (dtensor/Runtime/ElementTypes.def).
enum class ElementType {
#define DTENSOR_ELEMENT_TYPE(NAME, ENUM, BYTES) ENUM,
#include "dtensor/Runtime/ElementTypes.def"
};

/// Size in bytes, and name: the ABI suffix and MLIR spelling ("bf16").
int64_t getByteWidth(ElementType type);
llvm::StringRef getElementTypeName(ElementType type);
/// The element type named `name` (an MLIR type's spelling), if any.
std::optional<ElementType> parseElementType(llvm::StringRef name);
/// The .npy descriptor a tensor of `type` is written with ('<f4', ...):
/// bf16, which NumPy lacks, is written as f32 ('<f4').
llvm::StringRef getNpyDescr(ElementType type);

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

/// Reads a .npy file (version 1.0/2.0, little-endian f2/f4/f8/i4/i8, C
/// order).
llvm::Expected<HostTensor> readNpy(llvm::StringRef path);
/// `tensor` with its elements converted to `type` (rounding to nearest).
HostTensor castHostTensor(const HostTensor &tensor, ElementType type);
/// Writes a .npy file (bf16 as f32: read it back with castHostTensor).
llvm::Error writeNpy(llvm::StringRef path, const HostTensor &tensor);

/// The chunk of `tensor` selected by per-dim [offsets, offsets + sizes).
/// A tensor of uniform random values from `rng`: floats in [-1, 1),
/// integers in [0, integerBound). dtensor-run and dtensor-launch draw their
/// inputs with it, argument by argument from one generator seeded with the
/// --seed, so one seed gives the same inputs in both.
HostTensor makeRandomTensor(ElementType type, llvm::ArrayRef<int64_t> shape,
                            std::mt19937_64 &rng, int64_t integerBound);
/// A fresh seed from the system's entropy, for runs given no --seed.
uint64_t makeFreshSeed();

/// "tensor<8x16xf32>".
std::string describeTensorType(ElementType type, llvm::ArrayRef<int64_t> shape);

/// Argument `index` read from the .npy `file`, which must hold `type` (f32
/// for bf16: .npy has no bf16) of exactly `shape`; errors name the input,
/// the file and both types.
llvm::Expected<HostTensor> readInputNpy(int64_t index, llvm::StringRef file,
                                        ElementType type,
                                        llvm::ArrayRef<int64_t> shape);

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
