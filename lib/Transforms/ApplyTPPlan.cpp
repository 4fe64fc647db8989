//===- ApplyTPPlan.cpp - (in progress) ----------------------------------------===//

#include "dtensor/Transforms/Passes.h"

namespace mlir::dtensor {
#define GEN_PASS_DEF_APPLYTPPLANPASS
#include "dtensor/Transforms/Passes.h.inc"
} // namespace mlir::dtensor

using namespace mlir;
using namespace mlir::dtensor;

namespace {
struct ApplyTPPlanPass : dtensor::impl::ApplyTPPlanPassBase<ApplyTPPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation()->emitError("ApplyTPPlan: not implemented yet");
    signalPassFailure();
  }
};
} // namespace
