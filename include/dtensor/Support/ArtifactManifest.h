//===- ArtifactManifest.h - what an artifact says of itself -*- C++ -*-===//
//
// The JSON an artifact of dtensor-compile returns from
// dtensor_artifact_manifest(), as one type: the compiler writes it
// (Compiler/Artifact.cpp), launchers read it (Launcher/LoadedArtifact.cpp):
//
//   {"target": "cuda:h200", "entry": "mlp", "unsharded": false,
//    "integer_bounds": [16, ...], "undefined_results": [false, ...],
//    "layouts": {EntryLayouts}}                       (sharded artifacts)
//    "signature": {"args": [{"type": "f32", "shape": [8, 16]}, ...],
//                  "results": [...]}                  (unsharded ones)
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_SUPPORT_ARTIFACTMANIFEST_H
#define DTENSOR_SUPPORT_ARTIFACTMANIFEST_H

#include "dtensor/Support/EntryLayouts.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::dtensor {

/// A global tensor's element type and shape.
struct TensorSignature {
  ElementType type = ElementType::F32;
  std::vector<int64_t> shape;
};

struct ArtifactManifest {
  /// "<backend>:<hardware>".
  std::string target;
  std::string entry;
  /// The reference program: global shapes, no placements.
  bool unsharded = false;
  /// Sharded artifacts: the entry's layouts.
  EntryLayouts layouts;
  /// Every artifact's global tensors: written for unsharded artifacts, read
  /// from the layouts of sharded ones.
  std::vector<TensorSignature> args, results;
  /// Per argument: the bound of random integer inputs.
  std::vector<int64_t> integerBounds;
  /// Per result: whether its values are undefined (not compared).
  std::vector<bool> undefinedResults;

  /// The target's backend ("cuda", "cpu").
  llvm::StringRef getBackend() const {
    return llvm::StringRef(target).split(':').first;
  }

  std::string toJSON() const;
  /// Parses and checks what toJSON writes.
  static llvm::Expected<ArtifactManifest> fromJSON(llvm::StringRef text);
};

} // namespace mlir::dtensor

#endif // DTENSOR_SUPPORT_ARTIFACTMANIFEST_H
