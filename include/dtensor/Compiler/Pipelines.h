//===- Pipelines.h - the compiler's pass pipeline ---------------*- C++ -*-===//
//
// One phase-aware pipeline builder: every place that compiles (the
// registered dtensor-opt pipelines, Session::lower, the launcher) describes
// what it wants with PipelineOptions and a range of stages, and
// buildPipeline adds the passes. docs/design.md lists the stages.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_COMPILER_PIPELINES_H
#define DTENSOR_COMPILER_PIPELINES_H

#include "dtensor/Overlap/Overlap.h"

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::dtensor {

/// The stages of a program, in pipeline order.
enum class Stage {
  /// As written: global view with placement requests.
  Global,
  /// Every tensor value has a layout (dtensor-propagate-layouts).
  Propagated,
  /// Every redistribution is one collective step (+ plan-redistributions).
  Planned,
  /// The per-rank program (+ partition, canonicalize, cse).
  PerRank,
  /// Fused and scheduled for overlap (+ fuse-collective-matmul, forced
  /// split-matmul-all-reduce, the scheduling passes).
  Scheduled,
  /// Lowered for the module's target backend (+ dtensor-lower-to-target):
  /// the LLVM dialect.
  LLVM,
};

/// `global`, `propagated`, `planned`, `per-rank`, `scheduled`, `llvm`.
std::optional<Stage> parseStage(llvm::StringRef name);
llvm::StringRef getStageName(Stage stage);

struct PipelineOptions {
  /// The target as `<backend>[:<hardware>]` (`cuda:h100`), set on the module
  /// first; empty: the module's own `dtensor.target` (or the default).
  std::string target;
  /// Files set on the module's target first (empty: the module's own): a
  /// JSON hardware description overriding the preset, a per-op cost table.
  std::string hardwareFile;
  std::string costTable;
  /// Fusion, first step to the scheduled stage.
  FuseOptions fuse;
  /// Split every matmul + all_reduce into this many row chunks regardless of
  /// the cost model, after fusion (0: none; otherwise at least 2).
  int64_t splitAllReduce = 0;
  /// The scheduling passes and their shared options, last step to the
  /// scheduled stage.
  OverlapOptions overlap;
};

/// Adds to `pm` (a module pass manager) the passes that take a module from
/// stage `from` to stage `to`; with target fields, dtensor-set-target first.
/// Fails with a message in `error` for an empty or backward range, an
/// invalid split count or an unknown scheduling pass.
LogicalResult buildPipeline(OpPassManager &pm, Stage from, Stage to,
                            const PipelineOptions &options,
                            std::string *error = nullptr);

/// Registers the pipelines with the pass registry: dtensor-pipeline
/// (any range), dtensor-spmd (global -> per-rank), dtensor-overlap
/// (per-rank -> scheduled), and the lowering of each target backend.
void registerPipelines();

} // namespace mlir::dtensor

#endif // DTENSOR_COMPILER_PIPELINES_H
