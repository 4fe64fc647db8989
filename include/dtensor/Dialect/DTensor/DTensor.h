//===- DTensor.h - the dtensor dialect --------------------------*- C++ -*-===//
//
// Public header of the dtensor dialect: dialect, enums, attributes, types,
// interfaces and ops.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_DTENSOR_H
#define DTENSOR_DTENSOR_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dtensor/Dialect/DTensor/DTensorAttrNames.h"
#include "dtensor/Dialect/DTensor/DTensorDialect.h.inc"
#include "dtensor/Dialect/DTensor/DTensorEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dtensor/Dialect/DTensor/DTensorAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dtensor/Dialect/DTensor/DTensorTypes.h.inc"

#include "dtensor/Dialect/DTensor/DTensorInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dtensor/Dialect/DTensor/DTensorOps.h.inc"

namespace mlir::dtensor {

/// Starts a diagnostic for a violated documented constraint: the message
/// begins with the constraint id in brackets, e.g. "[AG3] ...".
InFlightDiagnostic emitConstraintError(Operation *op, llvm::StringRef id);

/// Checks that a value of element type `elementType` laid out as `from` can
/// be redistributed to `to` (RD2-RD5 of dtensor.redistribute). On failure,
/// reports through `emitError(id)` with the violated constraint's id.
LogicalResult
checkRedistribution(LayoutAttr from, LayoutAttr to, Type elementType,
                    llvm::function_ref<InFlightDiagnostic(llvm::StringRef id)>
                        emitError);

/// The dtensor.mesh that `name` refers to from `from`, or null. Where it is
/// missing and `diagnose` is set, emits "<name> does not name a
/// dtensor.mesh" at `from`. `symbols` (optional) caches the tables.
MeshOp lookupMesh(Operation *from, SymbolRefAttr name, bool diagnose = true,
                  SymbolTableCollection *symbols = nullptr);

/// Looks up the mesh `layout` refers to and checks LAYOUT1-LAYOUT3, LAYOUT5 and LAYOUT6 for a
/// tensor of type `type`. Returns the mesh, or null after a diagnostic.
MeshOp verifyLayoutFor(Operation *op, LayoutAttr layout,
                       RankedTensorType type,
                       SymbolTableCollection &symbolTable);

/// True if a Partial placement reducing with `kind` is defined on
/// `elementType` elements (LAYOUT6): no min/max on complex numbers, no
/// sum/avg/product on i1.
bool partialAllowsElementType(ReduceKind kind, Type elementType);

/// For each tensor dimension of a rank-`rank` tensor, the mesh axes that
/// shard it, in split order.
llvm::SmallVector<llvm::SmallVector<int64_t>>
shardingAxesPerDim(LayoutAttr layout, int64_t rank);

} // namespace mlir::dtensor

#endif // DTENSOR_DTENSOR_H
