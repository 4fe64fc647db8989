//===- LowerToTarget.cpp - the lowering of the module's target backend ----===//
//
// The `dtensor-lower-to-target` pass: looks the module's backend up in the
// target registry (dtensor/Target/Target.h) and runs its lowering pipeline
// as a dynamic pipeline, so that the target written in the module, not one
// fixed when the pass manager was built, decides the lowering.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/Target.h"
#include "dtensor/Target/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_LOWERTOTARGETPASS
#include "dtensor/Target/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

struct LowerToTargetPass
    : dtensor::impl::LowerToTargetPassBase<LowerToTargetPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    // Dynamic pipelines may not load dialects while running: declare what
    // every registered backend's lowering creates.
    for (const std::string &name : getTargetBackendNames())
      lookupTargetBackend(name)->getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    TargetAttr target = getTarget(module);
    const TargetBackend *backend = lookupTargetBackend(target.getBackend());
    if (!backend) {
      std::vector<std::string> names = getTargetBackendNames();
      module.emitError() << "target backend '" << target.getBackend()
                         << "' is not part of this build (it has: "
                         << (names.empty() ? std::string("none")
                                           : llvm::join(names, ", "))
                         << ")";
      return signalPassFailure();
    }
    OpPassManager pm(ModuleOp::getOperationName());
    backend->buildLoweringPipeline(pm, target);
    if (failed(runPipeline(pm, module)))
      return signalPassFailure();
  }
};

} // namespace
