//===- Passes.td - passes of the CPU target ----------------*- tablegen -*-===//
//
// The passes of this stage (docs/design.md, "Stages"); their reference page
// is generated into docs/generated/CPUTargetPasses.md.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_TARGET_CPU_PASSES_TD
#define DTENSOR_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def OutlineRepeatedPass
    : Pass<"dtensor-outline-repeated", "::mlir::ModuleOp"> {
  let summary = "outlines a repeated run of ops (e.g. layers) into one function";
  let description = [{
    Keeps the code that later passes process linear in the number of
    repeated layers: in each function whose body is a single block, finds
    the longest run of top-level ops that repeats with one period (a
    transformer's layers, however the scheduler interleaved them), cuts it
    into pieces of one period, outlines the first piece into a private
    function and replaces every piece that is structurally identical to it
    by a `func.call` of that function. Values a piece uses from outside
    become arguments (weights, the previous piece's outputs, in-flight
    buffers and handles), values used after the piece become results; side
    effect free ops built from constants alone (constants, `tensor.empty`,
    fills of a constant) are cloned into the function instead. A piece
    that differs is left in place. Ops keep their order, so a collective
    started in one piece and completed in the next still overlaps the
    compute in between.

    Pieces shorter than `min-ops` ops and runs of fewer than `min-repeats`
    pieces are left alone. Run after `dtensor-lower-to-runtime` (the
    `dtensor-cpu-lowering` pipeline does): pieces then hold only upstream
    ops and runtime calls.
  }];
  let options = [
    Option<"minOps", "min-ops", "int64_t", /*default=*/"16",
           "smallest piece (top-level ops) worth outlining">,
    Option<"minRepeats", "min-repeats", "int64_t", /*default=*/"2",
           "fewest identical pieces worth outlining">,
  ];
  let statistics = [
    Statistic<"numOutlined", "outlined", "functions outlined">,
    Statistic<"numCalls", "calls", "pieces replaced by calls">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

#endif // DTENSOR_TARGET_CPU_PASSES_TD
