//===- dtensor-opt.cpp - opt-style driver for the dtensor compiler --------===//
//
// Registers the dtensor dialect, the upstream dialects the pipeline uses and
// the project's passes (no registerAll*), then hands over to MlirOptMain.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::dtensor::registerDialects(registry);
  mlir::dtensor::registerPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "dtensor compiler: passes over dtensor programs\n",
      registry));
}
