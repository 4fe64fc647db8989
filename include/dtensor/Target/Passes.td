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

def FoldEmptyTensorsPass : Pass<"dtensor-fold-empty-tensors"> {
  let summary = "replaces values without elements by tensor.empty before "
                "bufferization";
  let description = [{
    A tensor with a static dimension of size 0 holds no elements, but MLIR's
    slice verifiers reject any static offset into a static dimension of size
    0 (`offset 0 is out-of-bounds: 0 >= 0`), and one-shot-bufferize slices
    and copies such values as any other: a `tensor.pad` of an empty source,
    an `extract_slice` of one, or a `collapse_shape` of `tensor<0x?xf32>`
    (its memref form folds `0 * ?` to a static 0 that the memref verifier
    rejects) become invalid IR. Empty values arise from the user's program
    (PyTorch allows empty tensors) and from `dtensor-specialize-rank` for a
    rank whose uneven shard is empty. Run right before bufferization
    (`addBufferizationPasses`, every target), this pass rewrites, to a
    fixpoint:

    1. every use of a side-effect-free op's result with a static size-0
       dimension into a `tensor.empty` of the same sizes (dynamic sizes
       reified from the op);
    2. an `extract_slice`, `collapse_shape`, `expand_shape` or `cast` of a
       source with a static size-0 dimension into a `tensor.empty` of the
       result's sizes;
    3. a `tensor.pad` of such a source, or one whose static padding alone
       fills a static result dim (the source dim is 0 at run time), into a
       `tensor.generate` with the pad's body (every element is padding);
    4. an `insert_slice` of such a source into its destination.

    Ops whose result shapes cannot be reified are left alone.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def HoistBroadcastDimsPass : Pass<"dtensor-hoist-broadcast-dims"> {
  let summary = "computes a reduction once where its result does not depend "
                "on a loop dim, then broadcasts it";
  let description = [{
    A `linalg.generic` on tensors with a reduction loop and a parallel loop
    dim `d` that no input's indexing map reads computes the same values for
    every index of `d`: the reduction is repeated `size(d)` times. Such ops
    arise when upstream elementwise fusion folds a constant operand (a
    `linalg.fill`) into a contraction: the backward of `sum(x @ w)` seeds
    with ones, and `ones @ w^T` becomes a generic reading only `w`, which
    no longer maps to a matmul library call and reduces `w` once per row.
    The pass rewrites such an op into

    1. the same generic without the dims `d` (its body, its inputs, its
       other loops; every output's map without the results `d`), into a
       smaller `tensor.empty`, or a smaller `linalg.fill` of the same value
       where the body reads the output's initial value;
    2. a `linalg.broadcast` of each result back to the op's result type.

    An output in a float narrower than f32 (bf16, f16) that the body
    accumulates as `out + x` is summed in f32 instead and rounded once, in
    a `linalg.generic` that broadcasts and truncates: the op was a
    contraction, which the matmul library accumulates in f32, and a sum of
    thousands of bf16 terms in bf16 loses most of its bits.

    A dim qualifies only if (a) it is parallel, (b) no input map is a
    function of it, (c) it is a plain result of every output map, (d) the
    body has no `linalg.index`, and (e) every output's initial value is not
    read by the body or is a `linalg.fill` (the same along every dim).
    Other ops are left alone. The CUDA lowering runs it after
    `dtensor-cuda-fuse-elementwise`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // DTENSOR_TARGET_PASSES_TD
