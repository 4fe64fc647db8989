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
  // Resource limits before any work proportional to the sizes (the input
  // was verified when it was parsed).
  pm.addPass(createScreenInputPass({/*verify=*/false}));
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
  // Collectives inside loops produce fresh buffers each iteration.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  // What LLVM has no intrinsic for (tanh, erf, ...) calls libm; rsqrt and
  // friends were expanded by the LLVM conversion above.
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

LogicalResult mlir::dtensor::buildOverlapPipeline(OpPassManager &pm,
                                                  const OverlapOptions &options,
                                                  std::string *error) {
  return addOverlapPasses(pm, options, error);
}

namespace {
struct SPMDPipelineCLOptions
    : public PassPipelineOptions<SPMDPipelineCLOptions> {
  PassOptions::Option<std::string> hardware{
      *this, "hardware",
      llvm::cl::desc("cost-model preset: h100, h200 or cpu"),
      llvm::cl::init("h200")};
};

struct OverlapPipelineCLOptions
    : public PassPipelineOptions<OverlapPipelineCLOptions> {
  PassOptions::ListOption<std::string> passes{
      *this, "passes",
      llvm::cl::desc("scheduling passes in order: split-matmul-all-reduce, "
                     "async-collectives, bucket-collectives, "
                     "reorder-compute-for-overlap, sink-waits, raise-comms, "
                     "default (default: split-matmul-all-reduce, "
                     "async-collectives, reorder-compute-for-overlap, "
                     "sink-waits, raise-comms)")};
  PassOptions::Option<std::string> hardware{
      *this, "hardware", llvm::cl::desc("cost-model preset: h100, h200 or cpu"),
      llvm::cl::init("h200")};
  PassOptions::Option<std::string> hardwareFile{
      *this, "hardware-file",
      llvm::cl::desc("JSON hardware description overriding fields of a "
                     "preset"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> costTable{
      *this, "cost-table",
      llvm::cl::desc("JSON per-op cost table (op name -> microseconds)"),
      llvm::cl::init("")};
  PassOptions::Option<double> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("allowed growth of the peak live memory over the "
                     "unscheduled program (0.2: 20%; negative: no limit)"),
      llvm::cl::init(0.2)};
  PassOptions::Option<bool> reportMemory{
      *this, "report-memory",
      llvm::cl::desc("emit a remark per function and pass with the peak "
                     "live memory before and after"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> bucketCapBytes{
      *this, "bucket-cap-bytes",
      llvm::cl::desc("largest bucket of bucket-collectives, in bytes"),
      llvm::cl::init(25 * 1024 * 1024)};
};
} // namespace

void mlir::dtensor::registerPipelines() {
  registerPassPipeline(
      "dtensor-overlap",
      "per-rank program -> scheduled for communication/compute overlap "
      "(the passes named by `passes`, in order, under one memory budget)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        OverlapPipelineCLOptions cl;
        if (failed(cl.parseFromString(text)))
          return failure();
        OverlapOptions options;
        options.passes.assign(cl.passes.begin(), cl.passes.end());
        options.hardware = cl.hardware;
        options.hardwareFile = cl.hardwareFile;
        options.costTable = cl.costTable;
        options.memoryBudget = cl.memoryBudget;
        options.reportMemory = cl.reportMemory;
        options.bucketCapBytes = cl.bucketCapBytes;
        std::string error;
        if (failed(buildOverlapPipeline(pm, options, &error)))
          return errorHandler(error);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(OverlapPipelineCLOptions());
      });
  PassPipelineRegistration<SPMDPipelineCLOptions>(
      "dtensor-spmd",
      "global view with placement requests -> per-rank program "
      "(screen, propagate, plan, partition, canonicalize, cse)",
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
