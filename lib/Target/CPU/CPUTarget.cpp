//===- CPUTarget.cpp - CPU ranks over MPI ---------------------------------===//

#include "dtensor/Target/CPU/CPUTarget.h"

#include "dtensor/Target/Target.h"
#include "dtensor/Conversion/DTensorToRuntime/Passes.h"
#include "dtensor/Target/CPU/Passes.h"

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
  // Compile time: repeated layers become one function called N times (after
  // the runtime lowering, where no future crosses a layer boundary: a
  // collective in flight is a handle and a buffer).
  pm.addPass(createOutlineRepeatedPass());
  // arith/math on tensors have no bufferization: make them linalg.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  addBufferizationPasses(pm);
  // Function by function, on the context's thread pool.
  OpPassManager &perFunction = pm.nest<func::FuncOp>();
  perFunction.addPass(createReuseCollectiveBuffersPass());
  perFunction.addPass(createConvertLinalgToLoopsPass());
  // bf16 and f16 arithmetic in f32, rounded back after each op (what the
  // runtime's collectives do for these types too).
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16", "f16"};
  emulate.targetTypeStr = "f32";
  perFunction.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  // The remaining bf16 <-> f32 conversions as integer ops: a libcall
  // (__truncsfbf2) would leave artifacts needing a libgcc that has it
  // (GCC >= 13), and the rounding is the same (to nearest even).
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  perFunction.addPass(arith::createArithExpandOpsPass(expand));
  perFunction.addPass(createLowerAffinePass());
  // Rollback support costs memory and time; the output is the same.
  perFunction.addPass(
      createSCFToControlFlowPass({/*allowPatternRollback=*/false}));
  perFunction.addPass(memref::createExpandStridedMetadataPass());
  perFunction.addPass(createLowerAffinePass());
  perFunction.addPass(createArithToLLVMConversionPass());
  perFunction.addPass(createConvertMathToLLVMPass());
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
    registerDTensorCPUPasses();
    PassPipelineRegistration<>(
        "dtensor-cpu-lowering",
        "per-rank program -> LLVM dialect for CPU ranks over the MPI runtime",
        [](OpPassManager &pm) { buildCPULoweringPipeline(pm); });
  });
}
