//===- dtensor-opt.cpp - opt-style driver for the dtensor compiler --------===//
//
// Registers the dtensor dialect, the upstream dialects the pipeline uses and
// the project's passes (no registerAll*), then hands over to MlirOptMain.
//
// The input is parsed without verification and screened first
// (dtensor-screen-input, which then verifies): some input makes upstream
// verifiers crash (include/dtensor/Transforms/Screen.h), so it must be
// rejected before any of them runs.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Compiler/Registration.h"
#include "dtensor/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  DialectRegistry registry;
  dtensor::registerDialects(registry);
  dtensor::registerPasses();
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "dtensor compiler: passes over dtensor programs\n",
      registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  // Screen, then verify, then the requested pipeline. Where the user
  // turned the parser's verifier off (to test passes on invalid IR), the
  // IR is left as parsed.
  if (config.shouldVerifyOnParsing()) {
    MlirOptMainConfig requested = config;
    config.verifyOnParsing(false);
    config.setPassPipelineSetupFn([requested](PassManager &pm) {
      pm.addPass(dtensor::createScreenInputPass());
      return requested.setupPassPipeline(pm);
    });
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return EXIT_FAILURE;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
