//===- Buffers.h - buffers of lowered per-rank programs ---------*- C++ -*-===//
//
// What the passes that reason about buffers after bufferization share: the
// runtime calls that read and write them (dtensor-lower-to-runtime's
// output), and every op that makes a view of a buffer without copying it
// (freeing after the last use, finding a matmul's zero fill, reusing a
// collective's input). ViewLikeOpInterface is not all of them:
// memref.transpose does not implement it in MLIR 22, and memref.cast is a
// cast. Missing one frees a buffer while a view of it is still read.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_TRANSFORMS_BUFFERS_H
#define DTENSOR_TRANSFORMS_BUFFERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <optional>
#include <string>

namespace mlir::dtensor {

/// The buffer `op`'s result views, or null when `op` makes no view.
inline Value getViewedBuffer(Operation *op) {
  if (op->getNumResults() != 1 ||
      !isa<BaseMemRefType>(op->getResult(0).getType()))
    return nullptr;
  if (auto view = dyn_cast<ViewLikeOpInterface>(op))
    return view.getViewSource();
  if (auto transpose = dyn_cast<memref::TransposeOp>(op))
    return transpose.getIn();
  if (auto cast = dyn_cast<memref::CastOp>(op))
    return cast.getSource();
  return nullptr;
}

/// The buffer `value` is a view (or cast) of, through every view.
inline Value getRootBuffer(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    Value viewed = getViewedBuffer(def);
    if (!viewed)
      break;
    value = viewed;
  }
  return value;
}

/// Every value that is `root` or a view of it.
inline llvm::SmallPtrSet<Value, 8> getAliases(Value root) {
  llvm::SmallPtrSet<Value, 8> aliases;
  SmallVector<Value> work = {root};
  while (!work.empty()) {
    Value value = work.pop_back_val();
    if (!aliases.insert(value).second)
      continue;
    for (Operation *user : value.getUsers())
      if (getViewedBuffer(user) == value)
        work.push_back(user->getResult(0));
  }
  return aliases;
}

/// Whether `op` or an op nested in it has an operand in `values`.
inline bool usesAnyOf(Operation *op,
                      const llvm::SmallPtrSetImpl<Value> &values) {
  bool uses = false;
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands())
      uses |= values.contains(operand);
  });
  return uses;
}

/// The nearest op before `op` in its block that uses `buffer` or a view of
/// it (in the op or its regions), or null: what last wrote or read the
/// buffer there (finding a matmul's init, a reduction's fill).
inline Operation *getLastUserBefore(Operation *op, Value buffer) {
  llvm::SmallPtrSet<Value, 8> aliases = getAliases(getRootBuffer(buffer));
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
    if (usesAnyOf(prev, aliases))
      return prev;
  return nullptr;
}

/// The runtime ABI's function names (include/dtensor/Runtime/Runtime.h) as
/// dtensor-lower-to-runtime calls them: dtensor_rt_[start_]<kind>_<type>
/// for a collective, dtensor_rt_wait(ctx, handle) to complete a started one.
inline constexpr llvm::StringLiteral kRuntimePrefix = "dtensor_rt_";
inline constexpr llvm::StringLiteral kRuntimeStart = "start_";
inline constexpr llvm::StringLiteral kRuntimeWait = "dtensor_rt_wait";

/// dtensor_rt_[start_]<kind>_<suffix>.
inline std::string getRuntimeCollectiveName(StringRef kind, bool async,
                                            StringRef suffix) {
  return (kRuntimePrefix + (async ? kRuntimeStart : "") + kind + "_" + suffix)
      .str();
}

/// A call of a runtime collective: (ctx, input, output, mesh, mask, ...),
/// returning a handle when it only starts the collective. The runtime reads
/// the input and writes the output, until the wait of the handle if started.
struct RuntimeCollectiveCall {
  func::CallOp call;
  /// all_reduce, all_gather, reduce_scatter, all_to_all, all_to_all_v,
  /// permute, broadcast.
  StringRef kind;
  bool async = false;
  Value getInput() const { return call->getOperand(1); }
  Value getOutput() const { return call->getOperand(2); }
  Value getHandle() const { return async ? call->getResult(0) : Value(); }
};

/// `op` (possibly null) as a runtime collective call, or nothing.
inline std::optional<RuntimeCollectiveCall>
matchRuntimeCollective(Operation *op) {
  auto call = dyn_cast_or_null<func::CallOp>(op);
  if (!call)
    return std::nullopt;
  StringRef name = call.getCallee();
  if (!name.consume_front(kRuntimePrefix))
    return std::nullopt;
  bool async = name.consume_front(kRuntimeStart);
  for (StringRef kind :
       {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
        "all_to_all_v", "permute", "broadcast"}) {
    // The rest is the element type's suffix (f32, bf16, ...).
    StringRef rest = name;
    if (rest.consume_front(kind) && rest.consume_front("_") && !rest.empty() &&
        !rest.contains('_') && call->getNumOperands() >= 3 &&
        call->getNumResults() == (async ? 1u : 0u))
      return RuntimeCollectiveCall{call, kind, async};
  }
  return std::nullopt;
}

/// Whether `op` is a dtensor_rt_wait call; its handle is the last operand
/// (after the context).
inline bool isRuntimeWait(Operation *op) {
  auto call = dyn_cast_or_null<func::CallOp>(op);
  return call && call.getCallee() == kRuntimeWait &&
         call->getNumOperands() >= 1;
}

} // namespace mlir::dtensor

#endif // DTENSOR_TRANSFORMS_BUFFERS_H
