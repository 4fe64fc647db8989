//===- Pipelines.h - the compiler's pass pipelines --------------*- C++ -*-===//

#ifndef DTENSOR_COMPILER_PIPELINES_H
#define DTENSOR_COMPILER_PIPELINES_H

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

/// Registers the pipelines with the pass registry (`--dtensor-spmd`).
void registerPipelines();

} // namespace mlir::dtensor

#endif // DTENSOR_COMPILER_PIPELINES_H
