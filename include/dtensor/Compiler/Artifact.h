//===- Artifact.h - ahead-of-time compiled programs -------------*- C++ -*-===//
//
// Compiles a global-view program ahead of time into a shared library (or an
// object file, or LLVM IR) for a target backend: the per-rank program's
// functions with their C interface (`_mlir_ciface_<entry>`), linked against
// the backend's runtime library, plus this C API:
//
//   const char *dtensor_artifact_manifest(void);
//     JSON that says what was compiled: {"target", "entry", "unsharded",
//     "integer_bounds" (per argument: the exclusive bound of meaningful
//     integer values, e.g. an embedding table's rows), "undefined_results"
//     (per result: left undefined by the program, never compared), and
//     "layouts" (the entry's EntryLayouts, dtensor/Support/EntryLayouts.h)
//     or, for an unsharded program, "signature" (element types and shapes
//     of its arguments and results)}.
//   int dtensor_artifact_init(int *argc, char ***argv);
//     Starts the runtime (dtensor_rt_init: rank, world size and the
//     communicators come from the launcher's environment: dtensor-launch,
//     torchrun, mpirun or srun) and registers the program's meshes; 0 on
//     success. An unsharded artifact may also run in a process whose
//     runtime another artifact started.
//   void dtensor_artifact_run(void **packed);
//     Calls the entry on buffers in the target's memory (device memory for
//     CUDA: dtensor_rt_buffer_alloc), in packed form: packed[i] points to
//     the i-th parameter of `_mlir_ciface_<entry>` (see
//     dtensor/Support/MemRefCall.h).
//   void dtensor_artifact_finalize(void);
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
  /// The input is already a per-rank program (dtensor-opt --dtensor-spmd's
  /// output, or written by hand, with `dtensor.layout` on the entry's
  /// arguments and results): compile it from the per-rank stage on.
  bool perRank = false;
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
