//===- Passes.td - lowering to the runtime ABI -------------*- tablegen -*-===//
//
// The passes of this stage (docs/design.md, "Stages"); their reference page
// is generated into docs/generated/DTensorToRuntimePasses.md.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_CONVERSION_DTENSORTORUNTIME_PASSES_TD
#define DTENSOR_CONVERSION_DTENSORTORUNTIME_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToRuntimePass : Pass<"dtensor-lower-to-runtime", "::mlir::ModuleOp"> {
  let summary = "lowers per-rank collectives to calls of the runtime ABI";
  let description = [{
    Prepares a per-rank program for bufferization and code generation:
    every collective becomes a call of the runtime (include/dtensor/Runtime/
    Runtime.h) on memrefs bridged with `bufferization.to_buffer` /
    `to_tensor`; `dtensor.async_start` becomes a `start_*` call whose handle
    `dtensor.wait` completes; `dtensor.coord` asks the runtime. Fused ops
    become their ring pipelines first (as `dtensor-decompose-fused` does),
    coalesced ones one call per tensor. Ops without a bufferization model are expanded too:
    `tensor.gather` into a `linalg.generic` of `tensor.extract`s,
    `tensor.concat` into `tensor.insert_slice`s, `linalg.softmax` into its
    reductions. Meshes are numbered in module order (the host registers them
    with the same numbers) and removed with the other dtensor attributes.
    Public functions get `llvm.emit_c_interface` so hosts can call them
    through `_mlir_ciface_<name>`.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// Compile time
//===----------------------------------------------------------------------===//

def ReuseCollectiveBuffersPass
    : Pass<"dtensor-reuse-collective-buffers", "::mlir::func::FuncOp"> {
  let summary = "drops the copies and fresh buffers of runtime collectives "
                "that bufferized code proves unneeded";
  let description = [{
    Runs on a function after `dtensor-lower-to-runtime` and One-Shot
    Bufferize, where every buffer and alias is explicit. The runtime reads a
    collective's input and writes its output until the call returns, or for
    a started collective until the `dtensor_rt_wait` of its handle.

    - A started collective's private input copy (which the lowering makes
      so that bufferization may reuse the input's buffer meanwhile) is
      removed when no op between the copy and the wait, in the start's
      block, may write the copied buffer or an alias of it (upstream alias
      analysis; a runtime collective writes its output only, a wait the
      output of its start; any other call may write anything); or, when
      the wait lies elsewhere (a future carried to the next iteration of
      a loop, a handle passed to an outlined layer), when the copied buffer
      is a function argument or a constant that no op of the function may
      write.
    - An all_reduce writes its result into its input buffer (the runtime
      then reduces in place) when that buffer is an allocation of the
      call's block that dies at the collective: every other use of it or of
      a view of it ends before the call (a use by a started collective at
      its wait), and none escapes (a terminator, an op returning a memref).
      Otherwise the result goes to the fresh buffer the lowering made.

    Function arguments and constants are never written; coalesced
    collectives (one call per tensor) keep distinct outputs because a
    buffer that a later call still reads does not die at the earlier one.
    The `dtensor-cpu-lowering` and CUDA pipelines run it right after
    bufferization.
  }];
  let statistics = [
    Statistic<"numCopiesElided", "copies-elided",
              "input copies of started collectives removed">,
    Statistic<"numInPlace", "in-place", "all_reduces made in place">,
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

#endif // DTENSOR_CONVERSION_DTENSORTORUNTIME_PASSES_TD
