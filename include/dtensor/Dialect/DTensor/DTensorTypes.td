//===- DTensorTypes.td - dtensor types ---------------------*- tablegen -*-===//

#ifndef DTENSOR_TYPES_TD
#define DTENSOR_TYPES_TD

include "dtensor/Dialect/DTensor/DTensorBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def DTensor_FutureType : TypeDef<DTensor_Dialect, "Future"> {
  let mnemonic = "future";
  let summary = "the pending result of an asynchronous collective";
  let description = [{
    `!dtensor.future<tensor<4x16xf32>>` is produced by `dtensor.async_start`
    and turned into its tensor by exactly one `dtensor.wait`.
  }];
  let parameters = (ins "::mlir::RankedTensorType":$valueType);
  let assemblyFormat = "`<` $valueType `>`";
}

#endif // DTENSOR_TYPES_TD
