//===- Pipelines.cpp - the compiler's pass pipelines ----------------------===//

#include "dtensor/Compiler/Pipelines.h"

#include "dtensor/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::dtensor;

void mlir::dtensor::buildSPMDPipeline(OpPassManager &pm,
                                      const SPMDPipelineOptions &options) {
  pm.addPass(createPropagateLayoutsPass({options.hardware}));
  pm.addPass(createPlanRedistributionsPass({options.hardware}));
  pm.addPass(createPartitionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::dtensor::buildCPULoweringPipeline(OpPassManager &pm) {
  pm.addPass(createLowerToRuntimePass());
  // arith/math on tensors have no bufferization: make them linalg.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

namespace {
struct SPMDPipelineCLOptions
    : public PassPipelineOptions<SPMDPipelineCLOptions> {
  PassOptions::Option<std::string> hardware{
      *this, "hardware",
      llvm::cl::desc("cost-model preset: h100, h200 or cpu"),
      llvm::cl::init("h200")};
};
} // namespace

void mlir::dtensor::registerPipelines() {
  PassPipelineRegistration<SPMDPipelineCLOptions>(
      "dtensor-spmd",
      "global view with placement requests -> per-rank program "
      "(propagate, plan, partition, canonicalize, cse)",
      [](OpPassManager &pm, const SPMDPipelineCLOptions &cl) {
        SPMDPipelineOptions options;
        options.hardware = cl.hardware;
        buildSPMDPipeline(pm, options);
      });
  PassPipelineRegistration<>(
      "dtensor-cpu-lowering",
      "per-rank program -> LLVM dialect for CPU ranks over the MPI runtime",
      [](OpPassManager &pm) { buildCPULoweringPipeline(pm); });
}
