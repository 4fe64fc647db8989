//===- Session.h - the embedded C++ API of the compiler ---------*- C++ -*-===//
//
// A Session owns an MLIR context with everything the compiler needs
// registered. Through it a client parses (or builds) a module, lowers it to a
// chosen stage, prints it, JIT-compiles the LLVM stage into an Executable and
// calls functions on host tensors. Diagnostics go to a callback.
//
//   dtensor::Session session;
//   session.setDiagnosticCallback([](const dtensor::Diagnostic &d) { ... });
//   auto module = session.parseFile("mlp.mlir");
//   session.lower(**module, dtensor::Stage::PerRank, {});
//   llvm::outs() << dtensor::Session::print(**module);
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_COMPILER_SESSION_H
#define DTENSOR_COMPILER_SESSION_H

#include "dtensor/Compiler/Pipelines.h"
#include "dtensor/Support/HostTensor.h"
#include "dtensor/Support/MemRefCall.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;
class MLIRContext;
} // namespace mlir

namespace mlir::dtensor {

/// How far to take a program.


struct Diagnostic {
  enum class Severity { Error, Warning, Note, Remark };
  Severity severity;
  /// "file:line:col" or "" where unknown.
  std::string location;
  std::string message;
};
using DiagnosticCallback = std::function<void(const Diagnostic &)>;


class Executable;

class Session {
public:
  Session();
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// Receives every diagnostic; without one they print to stderr.
  void setDiagnosticCallback(DiagnosticCallback callback);
  MLIRContext &getContext();

  FailureOr<OwningOpRef<ModuleOp>> parse(llvm::StringRef source,
                                         llvm::StringRef name = "<input>");
  FailureOr<OwningOpRef<ModuleOp>> parseFile(llvm::StringRef path);

  /// Lowers `module` in place from stage `from` (default: the global
  /// view) to stage `to`, with the passes buildPipeline adds. Lowering to
  /// the LLVM stage records the public functions' tensor signatures for
  /// Executable::invoke first.
  LogicalResult lower(ModuleOp module, Stage to,
                      const PipelineOptions &options = {},
                      Stage from = Stage::Global);
  /// Runs a textual pass pipeline on `module`: anchored on the module, as
  /// mlir-opt's --pass-pipeline takes it ("builtin.module(dtensor-spmd)"),
  /// or without the anchor ("dtensor-spmd,canonicalize"). Emits an error
  /// and fails for an unparsable pipeline or another anchor.
  LogicalResult runPipeline(ModuleOp module, llvm::StringRef pipeline);
  /// Removes every placement request and layout from a global program so
  /// that it describes the unsharded computation on one process.
  static void stripPlacements(ModuleOp module);

  /// JIT-compiles a module at the LLVM stage.
  FailureOr<std::unique_ptr<Executable>> compile(ModuleOp module);

  static std::string print(Operation *op);

  /// Chooses the function the host calls: `name`, or the only public
  /// function when `name` is empty. Makes it the only public function and
  /// erases the functions it does not reach (they would be compiled for
  /// nothing). Errors say what is missing or ambiguous.
  static llvm::Expected<func::FuncOp> selectEntry(ModuleOp module,
                                                  llvm::StringRef name);
  /// The results of `entry` whose contents the program leaves undefined (a
  /// tensor.empty returned as it is, seen through annotate, redistribute
  /// and tensor.cast): the host reports them and never compares them.
  static std::vector<bool> getUndefinedResults(func::FuncOp entry);
  /// The upper bound (exclusive) of random integer values for argument
  /// `argIndex` of `entry`: the rows of the smallest embedding table it
  /// indexes (tensor.gather), else 16.
  static int64_t getIntegerInputBound(func::FuncOp entry, unsigned argIndex);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// A JIT-compiled module.
class Executable {
public:
  ~Executable();
  /// Calls public function `name` (compiled with its C interface): tensor
  /// arguments in order, tensor results returned. Argument element types
  /// and ranks must match the function's.
  llvm::Expected<std::vector<HostTensor>>
  invoke(llvm::StringRef name, llvm::ArrayRef<const HostTensor *> args);

private:
  friend class Session;
  using Signature = CallSignature;
  std::unique_ptr<ExecutionEngine> engine;
  llvm::StringMap<Signature> signatures;
};

} // namespace mlir::dtensor

#endif // DTENSOR_COMPILER_SESSION_H
