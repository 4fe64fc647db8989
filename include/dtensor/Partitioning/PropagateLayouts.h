//===- PropagateLayouts.h - layout propagation as an API --------*- C++ -*-===//
//
// What dtensor-propagate-layouts does to each function of a module, callable
// on one function: the pass itself and the frontend (dtensor-autodiff reads
// the layouts the forward would get on a copy of it) use it.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_PARTITIONING_PROPAGATELAYOUTS_H
#define DTENSOR_PARTITIONING_PROPAGATELAYOUTS_H

#include "dtensor/Analysis/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Support/LLVM.h"

namespace mlir::dtensor {

/// Gives every tensor value of `func` a layout, in program order: local
/// tensors at its boundary become global arguments and results, then, if a
/// layout in it names a mesh, each op takes the strategy whose input
/// redistributions the cost model of `hw` prices lowest, annotations become
/// redistributions where layouts disagree, and every op, argument and
/// result carries its layout. A function without a body is left as it is;
/// one that names no mesh, with its boundary globalized only. Fails with an
/// error on `func` (a function on several meshes, of more than one block, with
/// an invalid layout, or a redistribution that has no plan). `symbols` caches
/// mesh lookups across calls.
LogicalResult propagateLayouts(func::FuncOp func, const HardwareModel &hw,
                               SymbolTableCollection &symbols);

/// As above, with a cache of its own.
LogicalResult propagateLayouts(func::FuncOp func, const HardwareModel &hw);

} // namespace mlir::dtensor

#endif // DTENSOR_PARTITIONING_PROPAGATELAYOUTS_H
