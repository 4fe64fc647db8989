//===- SetTarget.cpp - the module's target from a command-line spec -------===//
//
// The `dtensor-set-target` pass: what `--target` on the tools and
// PipelineOptions::target run first.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Target/Target.h"
#include "dtensor/Target/Passes.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_SETTARGETPASS
#include "dtensor/Target/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {

struct SetTargetPass : dtensor::impl::SetTargetPassBase<SetTargetPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    TargetAttr old = getTarget(module);
    StringRef backend = old.getBackend(), hardware = old.getHardware();
    if (!target.empty()) {
      std::string error;
      FailureOr<TargetAttr> spec =
          parseTargetSpec(module.getContext(), target, error);
      if (failed(spec)) {
        module.emitError() << error;
        return signalPassFailure();
      }
      backend = spec->getBackend();
      hardware = spec->getHardware();
    }
    // The chip belongs to the backend it was given for.
    StringRef chip = backend == old.getBackend() ? old.getChip() : "";
    setTarget(module,
              TargetAttr::get(module.getContext(), backend, hardware, chip,
                              hardwareFile.empty() ? old.getHardwareFile()
                                                   : StringRef(hardwareFile),
                              costTable.empty() ? old.getCostTable()
                                                : StringRef(costTable)));
  }
};

} // namespace
