//===- Registration.cpp - dialects and passes of the compiler -------------===//

#include "dtensor/Compiler/Registration.h"
#include "dtensor/Compiler/Pipelines.h"
#ifdef DTENSOR_HAS_CPU_TARGET
#include "dtensor/Target/CPU/CPUTarget.h"
#endif

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Analysis/Passes.h"
#include "dtensor/Conversion/DTensorToRuntime/Passes.h"
#include "dtensor/Frontend/Passes.h"
#include "dtensor/Overlap/Passes.h"
#include "dtensor/Partitioning/Passes.h"
#include "dtensor/Target/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#ifdef DTENSOR_HAS_CUDA_TARGET
#include "dtensor/Target/CUDA/CUDAPipeline.h"
#endif

void mlir::dtensor::registerDialects(DialectRegistry &registry) {
  registry.insert<DTensorDialect, affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                  math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
  // What bufferization and the LLVM translation of lowered programs need.
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerSubsetOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
#ifdef DTENSOR_HAS_CUDA_TARGET
  registerCUDADialects(registry);
#endif
}

void mlir::dtensor::registerTargets() {
#ifdef DTENSOR_HAS_CPU_TARGET
  registerCPUTarget();
#endif
#ifdef DTENSOR_HAS_CUDA_TARGET
  registerCUDATarget();
#endif
}

void mlir::dtensor::registerPasses() {
  // One registration per pipeline stage (docs/design.md, "Stages"); each
  // backend registers its own passes with registerTargets().
  registerFrontendPasses();
  registerPartitioningPasses();
  registerOverlapPasses();
  registerDTensorToRuntimePasses();
  registerTargetPasses();
  registerAnalysisPasses();
  registerTargets();
  registerPipelines();
  registerCanonicalizerPass();
  registerCSEPass();
  registerSymbolDCEPass();
}
