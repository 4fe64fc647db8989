//===- dtensor-opt.cpp - opt-style driver for the dtensor compiler --------===//
//
// Registers the dtensor dialect, the upstream dialects the pipeline uses and
// the project's passes, targets and pipelines (no registerAll*), then hands
// over to MlirOptMain. `--target=<backend>[:<hardware>]` sets the module's
// target (dtensor-set-target) before the passes run.
//
// The input is parsed without verification and screened first
// (dtensor-screen-input, which then verifies): some input makes upstream
// verifiers crash (include/dtensor/Frontend/Screen.h), so it must be
// rejected before any of them runs.
//
//===----------------------------------------------------------------------===//

#include "dtensor/Compiler/Registration.h"
#include "dtensor/Frontend/Passes.h"
#include "dtensor/Target/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

static llvm::cl::opt<std::string>
    target("target",
           llvm::cl::desc("compile for <backend>[:<hardware>] (cpu, cuda; "
                          "h100, h200, cpu): sets the module's "
                          "dtensor.target before the passes run"),
           llvm::cl::init(""));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  DialectRegistry registry;
  dtensor::registerDialects(registry);
  dtensor::registerPasses();
  auto [inputFile, outputFile] = registerAndParseCLIOptions(
      argc, argv, "dtensor compiler: passes over dtensor programs\n",
      registry);

  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFile, outputFile, registry));

  // Screen, then verify, then set the target, then the requested pipeline.
  // Where the user turned the parser's verifier off (to test passes on
  // invalid IR), the IR is left as parsed.
  bool screen = config.shouldVerifyOnParsing();
  if (screen || !target.empty()) {
    MlirOptMainConfig passes = config;
    config.verifyOnParsing(false);
    config.setPassPipelineSetupFn([passes, screen](PassManager &pm) {
      if (screen)
        pm.addPass(dtensor::createScreenInputPass());
      if (!target.empty())
        pm.addPass(dtensor::createSetTargetPass({target, "", ""}));
      return passes.setupPassPipeline(pm);
    });
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
