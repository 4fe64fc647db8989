//===- Target.h - what a module is compiled for -----------------*- C++ -*-===//
//
// The one place where backend and hardware facts come from. A module's
// `dtensor.target` attribute (#dtensor.target<backend, "hardware", ...>)
// names both; every pass that needs the cost model's hardware, and the
// lowering, read it through these functions. A backend (CPU ranks over MPI,
// CUDA ranks over NCCL) registers a TargetBackend that contributes its
// lowering pipeline; docs/design.md describes the seam.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_TARGET_TARGET_H
#define DTENSOR_TARGET_TARGET_H

#include "dtensor/Dialect/DTensor/DTensor.h"
#include "dtensor/Analysis/CostEstimator.h"
#include "dtensor/Analysis/CostModel.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class OpPassManager;
} // namespace mlir

namespace mlir::dtensor {

/// The target of a module without a `dtensor.target` attribute.
constexpr llvm::StringLiteral kDefaultBackend = "cpu";
constexpr llvm::StringLiteral kDefaultHardware = "h200";

TargetAttr getDefaultTarget(MLIRContext *context);

/// The target of the module that is or contains `op`: its `dtensor.target`
/// attribute, or the default target.
TargetAttr getTarget(Operation *op);

/// Sets the target of `module`.
void setTarget(ModuleOp module, TargetAttr target);

/// Parses the command-line form `<backend>[:<hardware>]` (`cuda:h100`,
/// `cpu`); the hardware defaults to kDefaultHardware. Fails with a message
/// in `error`.
FailureOr<TargetAttr> parseTargetSpec(MLIRContext *context,
                                      llvm::StringRef spec,
                                      std::string &error);

/// The cost model's hardware of `op`'s target (its preset, overridden by its
/// hardware file). Emits an error on `op`, its message after `prefix`, and
/// fails for an unreadable hardware file.
FailureOr<HardwareModel> getTargetHardware(Operation *op,
                                           llvm::StringRef prefix = "");

/// The cost estimator of `op`'s target: its cost table when it names one,
/// falling back to the default estimator of its hardware. Emits an error on
/// `op` and fails for an unreadable file.
FailureOr<std::unique_ptr<CostEstimator>>
getTargetCostEstimator(Operation *op, llvm::StringRef prefix = "");

/// A code-generation backend: how a scheduled per-rank (or unsharded)
/// program becomes the LLVM dialect for the backend's runtime library.
class TargetBackend {
public:
  virtual ~TargetBackend();
  /// The name in #dtensor.target<name, ...>.
  virtual llvm::StringRef getName() const = 0;
  /// Adds the lowering of a module whose target is `target` to `pm` (a
  /// module pass manager).
  virtual void buildLoweringPipeline(OpPassManager &pm,
                                     TargetAttr target) const = 0;
  /// The dialects the lowering may create.
  virtual void getDependentDialects(DialectRegistry &registry) const = 0;
  /// The runtime library compiled programs of this backend link against
  /// (e.g. "dtensor_runtime").
  virtual llvm::StringRef getRuntimeLibrary() const = 0;
};

/// Adds what every backend's lowering does to make buffers of tensors: One-Shot
/// Bufferize across function boundaries (identity layouts at the
/// boundaries; fresh buffers allowed out of loops, which collectives in
/// loops produce each iteration), then canonicalize.
void addBufferizationPasses(OpPassManager &pm);

/// Registers `backend` under its name (idempotent per name).
void registerTargetBackend(std::unique_ptr<TargetBackend> backend);
/// The backend registered under `name`, or null.
const TargetBackend *lookupTargetBackend(llvm::StringRef name);
/// The names of the registered backends, sorted.
std::vector<std::string> getTargetBackendNames();

} // namespace mlir::dtensor

#endif // DTENSOR_TARGET_TARGET_H
