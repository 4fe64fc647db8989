//===- Screen.h - reject input before upstream code sees it -----*- C++ -*-===//
//
// One place for the input checks that must run before the verifier and the
// passes: input that reaches known bugs of upstream MLIR 22, and sizes over
// the resource limits of dtensor/Support/SafeMath.h. `dtensor-opt` parses
// without verifying and runs `dtensor-screen-input` (this check, then the
// verifier) first; other drivers call screenInput on the parsed,
// unverified module and verify after it.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_FRONTEND_SCREEN_H
#define DTENSOR_FRONTEND_SCREEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir::dtensor {

/// Emits a diagnostic on every op under `root` (inclusive) that is screened
/// out; fails if there was any. Safe on IR that has not been verified.
LogicalResult screenInput(Operation *root);

/// Parses the main buffer of `sourceMgr` without verifying, screens it and
/// verifies it: what a driver calls instead of parseSourceFile<ModuleOp>
/// (which verifies first and crashes on screened input). Null after a
/// diagnostic.
OwningOpRef<ModuleOp> parseAndScreen(llvm::SourceMgr &sourceMgr,
                                     MLIRContext *context);

} // namespace mlir::dtensor

#endif // DTENSOR_FRONTEND_SCREEN_H
