//===- DTensorInterfaces.td - dtensor op interfaces --------*- tablegen -*-===//

#ifndef DTENSOR_INTERFACES_TD
#define DTENSOR_INTERFACES_TD

include "mlir/IR/OpBase.td"

def DTensor_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::dtensor";
  let description = [{
    A per-rank op that communicates among the processes of a group: the
    processes that share their coordinates on every mesh axis except
    `mesh_axes`. The group size is the product of the sizes of `mesh_axes`;
    a process's index in the group is its row-major coordinate over
    `mesh_axes`.
  }];
  let methods = [
    InterfaceMethod<"The mesh symbol.", "::mlir::FlatSymbolRefAttr",
                    "getMeshAttr", (ins), [{ return $_op.getMeshAttr(); }]>,
    InterfaceMethod<"The mesh axes spanned by the group.",
                    "::llvm::ArrayRef<int64_t>", "getMeshAxes", (ins),
                    [{ return $_op.getMeshAxes(); }]>,
    InterfaceMethod<[{
        Checks the op against the resolved mesh and its group size
        (shape constraints that depend on the number of ranks).
      }], "::llvm::LogicalResult", "verifyWithGroupSize",
      (ins "int64_t":$groupSize)>,
  ];
}

#endif // DTENSOR_INTERFACES_TD
