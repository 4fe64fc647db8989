//===- Buffers.h - buffers of lowered per-rank programs ---------*- C++ -*-===//
//
// What the passes that reason about buffers after bufferization share
// (the runtime calls that read and write them are RuntimeCalls.h's): every
// op that makes a view of a buffer without copying it
// (freeing after the last use, finding a matmul's zero fill, reusing a
// collective's input). ViewLikeOpInterface is not all of them:
// memref.transpose does not implement it in MLIR 22, and memref.cast is a
// cast. Missing one frees a buffer while a view of it is still read.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_CONVERSION_DTENSORTORUNTIME_BUFFERS_H
#define DTENSOR_CONVERSION_DTENSORTORUNTIME_BUFFERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/SmallPtrSet.h"

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

} // namespace mlir::dtensor

#endif // DTENSOR_CONVERSION_DTENSORTORUNTIME_BUFFERS_H
