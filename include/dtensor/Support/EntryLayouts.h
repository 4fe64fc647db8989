//===- EntryLayouts.h - an entry's argument and result layouts --*- C++ -*-===//
//
// What a launcher needs to know about a compiled entry function to feed it
// and to check it: the meshes, and for every argument and result its global
// type and layout. The compiler writes it (Sharding/Layout.h,
// getEntryLayouts) as JSON; launchers read it back:
//
//   {"entry": "mlp",
//    "meshes": [{"name": "m", "shape": [4], "devices": []}],
//    "args": [{"type": "f32", "shape": [8, 16], "mesh": 0,
//              "placements": ["S(0)"]}],
//    "results": [...]}
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_ENTRYLAYOUTS_H
#define DTENSOR_SUPPORT_ENTRYLAYOUTS_H

#include "dtensor/Support/HostLayout.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::dtensor {

/// A global tensor and how it is laid out.
struct HostTensorSpec {
  ElementType type = ElementType::F32;
  std::vector<int64_t> shape;
  /// Index into EntryLayouts::meshes.
  int64_t mesh = 0;
  HostLayout layout;
};

struct EntryLayouts {
  std::string entry;
  std::vector<HostMesh> meshes;
  std::vector<HostTensorSpec> args, results;

  /// The mesh the entry runs on: its first argument's, else its first
  /// result's; none for an entry without tensors.
  std::optional<int64_t> getEntryMesh() const;
  const HostMesh &getMesh(const HostTensorSpec &spec) const {
    return meshes[spec.mesh];
  }
  /// "tensor<8x16xf32> on @m [S(0)]".
  std::string describe(const HostTensorSpec &spec) const;

  std::string toJSON() const;
  /// Parses and checks what toJSON writes (mesh indices, layouts against
  /// their meshes and tensors, sizes).
  static llvm::Expected<EntryLayouts> fromJSON(llvm::StringRef text);
};

/// The element type named `name` ("f32", ...), as getElementTypeName
/// prints it.
std::optional<ElementType> parseElementTypeName(llvm::StringRef name);

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_ENTRYLAYOUTS_H
