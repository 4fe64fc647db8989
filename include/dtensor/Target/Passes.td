//===- Passes.td - the target passes -----------------------*- tablegen -*-===//
//
// The passes of this stage (docs/design.md, "Stages"); their reference page
// is generated into docs/generated/TargetPasses.md.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_TARGET_PASSES_TD
#define DTENSOR_TARGET_PASSES_TD

include "mlir/Pass/PassBase.td"

def SetTargetPass : Pass<"dtensor-set-target", "::mlir::ModuleOp"> {
  let summary = "sets the module's target (backend, hardware, cost files)";
  let description = [{
    Sets fields of the module's `dtensor.target` attribute (starting from
    the default target where the module has none): `target` as written on
    the command line, `<backend>[:<hardware>]` (`cuda:h100`, `cpu`), and the
    hardware description and cost table files. Fields not given are kept
    (the chip only while the backend stays). What the tools' `--target`
    option and the pipeline builder's target fields run first; the one place
    where a pipeline overrides the hardware a module names.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "<backend>[:<hardware>], e.g. cuda:h200">,
    Option<"hardwareFile", "hardware-file", "std::string", /*default=*/"\"\"",
           "JSON hardware description overriding fields of the preset">,
    Option<"costTable", "cost-table", "std::string", /*default=*/"\"\"",
           "JSON per-op cost table (op name -> microseconds)">,
  ];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect"];
}

def LowerToTargetPass : Pass<"dtensor-lower-to-target", "::mlir::ModuleOp"> {
  let summary = "runs the lowering pipeline of the module's target backend";
  let description = [{
    Reads the module's `#dtensor.target` (the default target without one)
    and runs the lowering pipeline its backend registered (for `cpu`: the
    `dtensor-cpu-lowering` pipeline) as a dynamic pipeline on the module.
    Fails with an error naming the backends this build has when the
    target's backend is not one of them.
  }];
}

#endif // DTENSOR_TARGET_PASSES_TD
