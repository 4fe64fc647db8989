//===- Registration.h - dialects and passes of the compiler -----*- C++ -*-===//

#ifndef DTENSOR_COMPILER_REGISTRATION_H
#define DTENSOR_COMPILER_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::dtensor {

/// Adds the dtensor dialect and the upstream dialects that global-view and
/// per-rank programs use (func, linalg, tensor, arith, math).
void registerDialects(DialectRegistry &registry);

/// Registers the target backends this build has (CMake switches
/// DTENSOR_ENABLE_*_TARGET) with the target registry.
void registerTargets();

/// Registers the project's passes, target backends and pipelines, and the
/// few upstream passes its pipelines use, so that opt-style drivers can name
/// them.
void registerPasses();

} // namespace mlir::dtensor

#endif // DTENSOR_COMPILER_REGISTRATION_H
