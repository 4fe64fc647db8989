//===- Artifact.h - ahead-of-time compiled programs -------------*- C++ -*-===//
//
// Compiles a global-view program ahead of time into a shared library (or an
// object file, or LLVM IR) for a target backend: the per-rank program's
// functions with their C interface (`_mlir_ciface_<entry>`), linked against
// the backend's runtime library, plus
//
//   const char *dtensor_artifact_manifest(void);
//
// returning JSON that says what was compiled: {"target", "entry",
// "unsharded", and "layouts" (the entry's EntryLayouts, see
// dtensor/Support/EntryLayouts.h) or, for an unsharded program, "signature"
// (element types and shapes of its arguments and results)}.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_COMPILER_ARTIFACT_H
#define DTENSOR_COMPILER_ARTIFACT_H

#include "dtensor/Compiler/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::dtensor {

class Session;

struct ArtifactOptions {
  enum class Emit { SharedLibrary, Object, LLVMIR };
  /// The public function the artifact is for; empty: the only public one.
  std::string entry;
  /// Compile the unsharded reference program (placements stripped).
  bool unsharded = false;
  /// Target, fusion and scheduling of the lowering.
  PipelineOptions pipeline;
  Emit emit = Emit::SharedLibrary;
  std::string outputPath;
  /// Where the backend's runtime library lies (linked with -L and an rpath).
  std::string runtimeDir;
  /// The compiler driver that links the shared library.
  std::string linker = "c++";
};

/// Compiles `module` (a global-view program, changed in place) and writes the
/// artifact to options.outputPath.
llvm::Error compileArtifact(Session &session, ModuleOp module,
                            const ArtifactOptions &options);

} // namespace mlir::dtensor

#endif // DTENSOR_COMPILER_ARTIFACT_H
