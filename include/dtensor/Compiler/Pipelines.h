//===- Pipelines.h - the compiler's pass pipelines --------------*- C++ -*-===//

#ifndef DTENSOR_COMPILER_PIPELINES_H
#define DTENSOR_COMPILER_PIPELINES_H

#include "dtensor/Transforms/Overlap.h"

#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::dtensor {

struct SPMDPipelineOptions {
  /// Cost-model preset used for strategy choice and planning.
  std::string hardware = "h200";
};

/// Global view with placement requests -> per-rank program: propagate
/// layouts, plan redistributions, partition, clean up.
void buildSPMDPipeline(OpPassManager &pm, const SPMDPipelineOptions &options);

/// Per-rank (or unsharded) program -> LLVM dialect for CPU ranks: runtime
/// calls for collectives, One-Shot Bufferize, loops, LLVM conversions.
/// Entry functions get `llvm.emit_c_interface`.
void buildCPULoweringPipeline(OpPassManager &pm);

/// Per-rank program -> the same program scheduled for communication/compute
/// overlap: the scheduling passes `options.passes` names, in order, under
/// one peak-memory budget (docs/scheduling.md). Fails with a message in
/// `error` for an unknown pass name.
LogicalResult buildOverlapPipeline(OpPassManager &pm,
                                   const OverlapOptions &options,
                                   std::string *error = nullptr);

/// Registers the pipelines with the pass registry (`--dtensor-spmd`).
void registerPipelines();

} // namespace mlir::dtensor

#endif // DTENSOR_COMPILER_PIPELINES_H
