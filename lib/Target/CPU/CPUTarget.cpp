//===- CPUTarget.cpp - CPU ranks over MPI ---------------------------------===//

#include "dtensor/Target/CPU/CPUTarget.h"

#include "dtensor/Target/Target.h"
#include "dtensor/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

using namespace mlir;
using namespace mlir::dtensor;

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
  // bf16 and f16 arithmetic in f32, rounded back after each op (what the
  // runtime's collectives do for these types too).
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16", "f16"};
  emulate.targetTypeStr = "f32";
  pm.addNestedPass<func::FuncOp>(
      arith::createArithEmulateUnsupportedFloats(emulate));
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

namespace {
class CPUTargetBackend : public TargetBackend {
public:
  StringRef getName() const override { return "cpu"; }
  void buildLoweringPipeline(OpPassManager &pm, TargetAttr) const override {
    buildCPULoweringPipeline(pm);
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    OpPassManager pm(ModuleOp::getOperationName());
    buildCPULoweringPipeline(pm);
    pm.getDependentDialects(registry);
  }
  StringRef getRuntimeLibrary() const override { return "dtensor_runtime"; }
};
} // namespace

void mlir::dtensor::registerCPUTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerTargetBackend(std::make_unique<CPUTargetBackend>());
    PassPipelineRegistration<>(
        "dtensor-cpu-lowering",
        "per-rank program -> LLVM dialect for CPU ranks over the MPI runtime",
        [](OpPassManager &pm) { buildCPULoweringPipeline(pm); });
  });
}
