//===- CUDAPipeline.h - the CUDA target's lowering pipeline -----*- C++ -*-===//
//
// Per-rank program (func + linalg/tensor/arith on tensors + dtensor
// collectives) -> LLVM dialect host code that calls the CUDA runtime
// (mgpu* launches and allocations on the rank's stream, dtensor_rt_matmul_*
// for matmuls, dtensor_rt_* collectives) with the generated kernels embedded
// as a gpu.binary. docs/cuda-target.md describes the stages.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_TARGET_CUDA_CUDAPIPELINE_H
#define DTENSOR_TARGET_CUDA_CUDAPIPELINE_H

#include <string>

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace mlir::dtensor {

struct CUDALoweringOptions {
  /// Target GPU architecture of the kernels.
  std::string chip = "sm_90";
  /// PTX ISA features; sm_90 needs PTX 8.0.
  std::string features = "+ptx80";
  /// CUDA toolkit root holding bin/ptxas and bin/fatbinary.
  std::string toolkit = "/usr/local/cuda";
  /// Kernel binary format: "fatbin" (SASS for `chip` plus PTX), "bin"
  /// (cubin) or "isa" (PTX text, JIT-compiled by the driver; needs no
  /// toolkit). fatbin and bin fall back to isa, with a warning, where the
  /// toolkit has no ptxas/fatbinary.
  std::string format = "fatbin";
  /// Optimization level of the device code (0-3).
  unsigned optLevel = 3;
  /// Threads per block of the generated elementwise/reduction kernels.
  int64_t blockSize = 256;
  /// Bytes per access of vectorized elementwise kernels (0: scalar).
  int64_t vectorBytes = 16;
  /// Pass the runtime context (dtensor_rt_context()) to matmul calls.
  bool matmulContext = true;
};

/// Appends the CUDA lowering to `pm` (on builtin.module).
void buildCUDALoweringPipeline(OpPassManager &pm,
                               const CUDALoweringOptions &options);

/// The dialects and interfaces the CUDA lowering needs (gpu, nvvm, the
/// NVVM target attribute and the LLVM IR translations of both).
void registerCUDADialects(DialectRegistry &registry);

/// The CUDA target's passes (dtensor-cuda-*) and the upstream GPU passes of
/// the pipeline (convert-parallel-loops-to-gpu, gpu-kernel-outlining,
/// nvvm-attach-target, convert-gpu-to-nvvm, gpu-to-llvm,
/// gpu-module-to-binary).
void registerCUDAPasses();

/// `dtensor-cuda-lowering` with its options.
void registerCUDAPipeline();

/// Registers the `cuda` backend with the target registry, its passes and
/// the dtensor-cuda-lowering pipeline.
void registerCUDATarget();

} // namespace mlir::dtensor

#endif // DTENSOR_TARGET_CUDA_CUDAPIPELINE_H
