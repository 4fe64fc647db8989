//===- RuntimeCalls.h - the runtime ABI as the compiler sees it -*- C++ -*-===//
//
// The calls of the runtime ABI that compiled code makes, read from its one
// description (include/dtensor/Runtime/RuntimeABI.def and ElementTypes.def):
// dtensor-lower-to-runtime names and checks the calls it builds with it, and
// later passes recognise a call by its callee's exact name through
// classifyRuntimeCall, never by matching parts of it.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_CONVERSION_DTENSORTORUNTIME_RUNTIMECALLS_H
#define DTENSOR_CONVERSION_DTENSORTORUNTIME_RUNTIMECALLS_H

#include "dtensor/Runtime/RuntimeABI.def"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir::dtensor {

/// The collectives of the ABI, one per row of DTENSOR_RT_COLLECTIVES.
enum class RuntimeCollective {
#define DTENSOR_RT_ENUM(T, ENUM, NAME, IMPL, PARAMS, ARGS) ENUM,
  DTENSOR_RT_COLLECTIVES(DTENSOR_RT_ENUM, )
#undef DTENSOR_RT_ENUM
};

/// The other functions compiled code calls, one per row of
/// DTENSOR_RT_FUNCTIONS.
enum class RuntimeFunction {
#define DTENSOR_RT_ENUM(ENUM, NAME, RESULT, PARAMS) ENUM,
  DTENSOR_RT_FUNCTIONS(DTENSOR_RT_ENUM)
#undef DTENSOR_RT_ENUM
};

/// all_reduce, all_gather, ...: the collective's part of its symbols.
StringRef getRuntimeCollectiveName(RuntimeCollective collective);

/// dtensor_rt_[start_]<name>_<suffix>.
std::string getRuntimeCollectiveSymbol(RuntimeCollective collective, bool async,
                                       StringRef suffix);

/// How many operands a call of the collective has in MLIR: the context, the
/// input and output buffers, then the table's parameters, each
/// (rank, descriptor) pair being one unranked memref.
unsigned getRuntimeCollectiveNumOperands(RuntimeCollective collective);

/// dtensor_rt_<name> of a function of DTENSOR_RT_FUNCTIONS.
StringRef getRuntimeFunctionSymbol(RuntimeFunction function);

/// The ABI's suffix of an element type (ElementTypes.def: f32, bf16, ...),
/// or failure when the runtime has no collectives on it.
FailureOr<StringRef> getRuntimeElementSuffix(Type type);

/// The ABI's element suffixes, in the table's order.
ArrayRef<StringLiteral> getRuntimeElementSuffixes();

/// A call of the runtime ABI: a collective (started or not) or one of the
/// other functions. For a collective: (ctx, input, output, ...), returning a
/// handle when it only starts it; the runtime reads the input and writes the
/// output, until the wait of the handle if started.
struct RuntimeCall {
  func::CallOp call;
  /// Set for a collective.
  std::optional<RuntimeCollective> collective;
  /// Set for the other functions.
  std::optional<RuntimeFunction> function;
  bool async = false;
  /// The element type's suffix of a collective.
  StringRef suffix;

  bool isCollective() const { return collective.has_value(); }
  bool is(RuntimeCollective kind) const { return collective == kind; }
  bool is(RuntimeFunction kind) const { return function == kind; }
  Value getInput() const { return call->getOperand(1); }
  Value getOutput() const { return call->getOperand(2); }
  Value getHandle() const { return async ? call->getResult(0) : Value(); }
};

/// `op` (possibly null) as a call of the runtime ABI: a func.call whose
/// callee is exactly one of the ABI's symbols, with the operand and result
/// counts of its row; nothing otherwise.
std::optional<RuntimeCall> classifyRuntimeCall(Operation *op);

} // namespace mlir::dtensor

#endif // DTENSOR_CONVERSION_DTENSORTORUNTIME_RUNTIMECALLS_H
