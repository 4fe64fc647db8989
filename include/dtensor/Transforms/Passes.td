//===- Passes.td - dtensor compiler passes -----------------*- tablegen -*-===//

#ifndef DTENSOR_TRANSFORMS_PASSES_TD
#define DTENSOR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ApplyTPPlanPass : Pass<"dtensor-apply-tp-plan", "::mlir::ModuleOp"> {
  let summary = "applies a PyTorch-style tensor-parallel plan to a program";
  let description = [{
    Turns a parallelize_module-style plan (ColwiseParallel, RowwiseParallel,
    SequenceParallel, PrepareModuleInput, PrepareModuleOutput) into
    `dtensor.annotate` requests on the global-view program. Ops are matched to
    plan entries by their `dtensor.module` attribute; parameters are function
    arguments carrying `dtensor.param`. See docs/tp-plans.md for the plan
    format.
  }];
  let options = [
    Option<"planFile", "plan", "std::string", /*default=*/"\"\"",
           "path of the JSON plan file">,
    Option<"planText", "plan-json", "std::string", /*default=*/"\"\"",
           "the JSON plan itself (instead of a file)">,
    Option<"meshName", "mesh", "std::string", /*default=*/"\"\"",
           "mesh to parallelize over (default: the module's only mesh)">,
  ];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect"];
}

def PropagateLayoutsPass
    : Pass<"dtensor-propagate-layouts", "::mlir::ModuleOp"> {
  let summary = "assigns a layout to every tensor value of a global program";
  let description = [{
    Starting from the user's requests (`dtensor.annotate`, `dtensor.layout`
    argument and result attributes), walks each function in program order
    and picks, for every op, the sharding strategy whose input
    redistributions cost least under the cost model (ties go to the strategy
    that shards the most work). Where a consumer needs another layout than
    its producer has, a `dtensor.redistribute` is inserted. Annotations are
    replaced by redistributions or removed; every op result ends up with a
    `dtensor.layouts` attribute and every argument with `dtensor.layout`.
  }];
  let options = [
    Option<"hardware", "hardware", "std::string", /*default=*/"\"h200\"",
           "cost-model preset: h100, h200 or cpu">,
  ];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect",
                           "::mlir::tensor::TensorDialect"];
}

def PlanRedistributionsPass
    : Pass<"dtensor-plan-redistributions", "::mlir::ModuleOp"> {
  let summary = "splits each redistribution into a min-cost chain of steps";
  let description = [{
    Replaces every `dtensor.redistribute` with a chain of redistributions
    that each change one mesh dimension, i.e. one collective or local step
    (all_gather, reduce_scatter, all_reduce, all_to_all, local chunk, local
    partition). The chain is a shortest path over placement states under the
    cost model, so `P -> S(d)` is one reduce_scatter rather than an
    all_reduce and a chunk.
  }];
  let options = [
    Option<"hardware", "hardware", "std::string", /*default=*/"\"h200\"",
           "cost-model preset: h100, h200 or cpu">,
  ];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect"];
}

def PartitionPass : Pass<"dtensor-partition", "::mlir::ModuleOp"> {
  let summary = "rewrites global-view functions into per-rank programs";
  let description = [{
    Requires propagated layouts and planned redistributions. Every value
    gets its local type (dynamic where shards are uneven), every op is
    rewritten on local tensors, and every redistribution step becomes its
    collective, with padding around collectives for uneven shards and
    `dtensor.coord`-based slicing for local chunks.
  }];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def CommReportPass : Pass<"dtensor-comm-report", "::mlir::ModuleOp"> {
  let summary = "reports the collectives of each per-rank function";
  let description = [{
    A static equivalent of PyTorch's CommDebugMode: for each function, the
    number of collectives of each kind (fused ones included), the bytes each
    rank sends into them and their modelled time. Prints a table or JSON;
    the IR is left unchanged.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"table\"",
           "output format: table or json">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "file to write the report to ('-': standard output)">,
    Option<"hardware", "hardware", "std::string", /*default=*/"\"h200\"",
           "cost-model preset: h100, h200 or cpu">,
  ];
}

def LowerToRuntimePass : Pass<"dtensor-lower-to-runtime", "::mlir::ModuleOp"> {
  let summary = "lowers per-rank collectives to calls of the runtime ABI";
  let description = [{
    Prepares a per-rank program for bufferization and code generation:
    every collective becomes a call of the runtime (include/dtensor/Runtime/
    Runtime.h) on memrefs bridged with `bufferization.to_buffer` /
    `to_tensor`; `dtensor.async_start` becomes a `start_*` call whose handle
    `dtensor.wait` completes; `dtensor.coord` asks the runtime. Fused ops are
    expanded into their collective and their matmuls, coalesced ones into one
    call per tensor. Ops without a bufferization model are expanded too:
    `tensor.gather` into a `linalg.generic` of `tensor.extract`s,
    `tensor.concat` into `tensor.insert_slice`s, `linalg.softmax` into its
    reductions. Meshes are numbered in module order (the host registers them
    with the same numbers) and removed with the other dtensor attributes.
    Public functions get `llvm.emit_c_interface` so hosts can call them
    through `_mlir_ciface_<name>`.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // DTENSOR_TRANSFORMS_PASSES_TD
