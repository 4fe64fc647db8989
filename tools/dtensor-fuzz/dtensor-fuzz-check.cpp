//===- dtensor-fuzz-check.cpp - classify one program for the fuzzer -------===//
//
// Runs one program through pass pipelines in process and says how each
// ended, one line per pipeline on stdout:
//
//   PIPELINE <text>     before the pipeline starts (flushed, so a crash is
//                       attributed to the pipeline that was running)
//   ACCEPTED            the pipeline succeeded and left valid IR
//   DIAGNOSTIC <msg>    it stopped with an error diagnostic (fine)
//   INVALID <pass> <msg> the pass succeeded but left IR the verifier
//                       rejects (a bug); the process exits with code 3
//                       right away, before any later pass runs on bad IR
//
// The input is parsed without verification and screened first, like
// dtensor-opt does (a parse or screen error is one DIAGNOSTIC line for the
// whole input). Crashes and hangs are left to the caller (scripts/fuzz),
// which runs this tool in a child process with a timeout.
//
// Usage: dtensor-fuzz-check <file> <pipeline>...
//
//===----------------------------------------------------------------------===//

#include "dtensor/Compiler/Registration.h"
#include "dtensor/Frontend/Screen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>
#include <unistd.h>

using namespace mlir;

namespace {

/// The first error message since the last reset, on one line.
struct FirstError {
  std::string message;
  void record(Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error || !message.empty())
      return;
    message = diag.str();
    for (char &c : message)
      if (c == '\n')
        c = ' ';
    if (message.size() > 300)
      message.resize(300);
  }
};

/// Verifies after every successful pass; on failure reports the pass and
/// ends the process before another pass sees the invalid IR.
struct VerifyAfterEachPass : public PassInstrumentation {
  explicit VerifyAfterEachPass(FirstError &errors) : errors(errors) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    errors.message.clear();
    if (succeeded(verify(op)))
      return;
    llvm::outs() << "INVALID " << pass->getArgument() << " "
                 << errors.message << "\n";
    llvm::outs().flush();
    std::fflush(stdout);
    _exit(3);
  }
  FirstError &errors;
};

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    llvm::errs() << "usage: dtensor-fuzz-check <file> <pipeline>...\n";
    return 2;
  }
  DialectRegistry registry;
  dtensor::registerDialects(registry);
  dtensor::registerPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // One thread: passes run in a fixed order, crashes are reproducible.
  context.disableMultithreading();

  FirstError errors;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    errors.record(diag);
    return success();
  });

  auto buffer = llvm::MemoryBuffer::getFile(argv[1]);
  if (!buffer) {
    llvm::errs() << "cannot read " << argv[1] << "\n";
    return 2;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module =
      dtensor::parseAndScreen(sourceMgr, &context);
  if (!module) {
    llvm::outs() << "PIPELINE parse\nDIAGNOSTIC " << errors.message << "\n";
    return 0;
  }

  for (int i = 2; i < argc; ++i) {
    llvm::outs() << "PIPELINE " << argv[i] << "\n";
    llvm::outs().flush();
    errors.message.clear();
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager pm(&context, ModuleOp::getOperationName());
    pm.enableVerifier(false);
    std::string parseError;
    llvm::raw_string_ostream os(parseError);
    // The text names its anchor (`builtin.module(...)`): parsed on its own,
    // not into `pm`, which would nest it under the module and run it on the
    // (absent) inner modules only.
    FailureOr<OpPassManager> parsed = parsePassPipeline(argv[i], os);
    if (succeeded(parsed) &&
        parsed->getOpAnchorName() != ModuleOp::getOperationName())
      os << "the pipeline must be anchored on " << ModuleOp::getOperationName();
    if (failed(parsed) || !parseError.empty()) {
      llvm::errs() << "bad pipeline '" << argv[i] << "': " << parseError
                   << "\n";
      return 2;
    }
    static_cast<OpPassManager &>(pm) = std::move(*parsed);
    pm.addInstrumentation(std::make_unique<VerifyAfterEachPass>(errors));
    if (failed(pm.run(*copy))) {
      llvm::outs() << "DIAGNOSTIC " << errors.message << "\n";
      continue;
    }
    llvm::outs() << "ACCEPTED\n";
  }
  llvm::outs().flush();
  return 0;
}
