//===- CPUTarget.h - CPU ranks over MPI -------------------------*- C++ -*-===//
//
// The `cpu` backend: per-rank programs lowered to the LLVM dialect for the
// host, calling the runtime library `dtensor_runtime` (the ABI of
// dtensor/Runtime/Runtime.h over MPI).
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_TARGET_CPU_CPUTARGET_H
#define DTENSOR_TARGET_CPU_CPUTARGET_H

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::dtensor {

/// Per-rank (or unsharded) program -> LLVM dialect for CPU ranks: runtime
/// calls for collectives, One-Shot Bufferize, loops, LLVM conversions.
/// bf16 and f16 arithmetic is computed in f32. Entry functions get
/// `llvm.emit_c_interface`.
void buildCPULoweringPipeline(OpPassManager &pm);

/// Registers the `cpu` backend with the target registry and its lowering
/// as the `dtensor-cpu-lowering` pipeline.
void registerCPUTarget();

} // namespace mlir::dtensor

#endif // DTENSOR_TARGET_CPU_CPUTARGET_H
