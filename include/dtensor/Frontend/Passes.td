//===- Passes.td - passes of the frontend ------------------*- tablegen -*-===//
//
// The passes of this stage (docs/design.md, "Stages"); their reference page
// is generated into docs/generated/FrontendPasses.md.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_FRONTEND_PASSES_TD
#define DTENSOR_FRONTEND_PASSES_TD

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

def AutodiffPass : Pass<"dtensor-autodiff", "::mlir::ModuleOp"> {
  let summary = "derives the joint forward + backward function of a global-view function";
  let description = [{
    Reverse-mode differentiation on the global view. For each function `@f`
    (all functions with a body, or those named by `functions`) it adds
    `@f<suffix>` (default `@f_grad`): the arguments of `@f` followed by one
    seed cotangent per floating-point tensor result (marked
    `dtensor.cotangent = <result index>`), returning the results of `@f`
    followed by the gradient of every differentiable argument (marked
    `dtensor.grad_of = <argument index>`). The gradient is the
    vector-Jacobian product with the seeds; seeds of ones give PyTorch's
    `out.sum().backward()`. The function is marked
    `dtensor.forward_results = N` (its first N results are the forward's),
    which the comm report uses to split forward and backward traffic.

    Differentiable arguments: those listed in `wrt` (argument indices), else
    those marked `dtensor.param` or `dtensor.requires_grad`, else every
    floating-point tensor argument. The backward is written in the same
    global-view ops: a `linalg.generic` per operand gradient of a linalg op
    (its body differentiated op by op), `tensor` reshapes, slices, pads and
    concatenations, and layout requests that follow DTensor's rules (the
    gradient of a value redistributed from a known layout is requested in
    that layout, `P` becoming `R`; argument gradients and seeds take their
    argument's and result's layouts). Ops without a rule are reported by
    name; no gradient is guessed.

    Activation checkpointing: ops marked `dtensor.checkpoint`, or whose
    `dtensor.module` is one of `checkpoint` (or a submodule of one), are
    recomputed at the start of the backward (marked `dtensor.recomputed`)
    and the backward uses the recomputed values, so the forward's copies
    die in the forward. See docs/autodiff.md.
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "functions to differentiate (default: every function with a body)">,
    ListOption<"wrt", "wrt", "int64_t",
               "indices of the arguments to differentiate with respect to">,
    Option<"suffix", "suffix", "std::string", /*default=*/"\"_grad\"",
           "suffix of the joint function's name">,
    Option<"gradLayouts", "grad-layouts", "std::string",
           /*default=*/"\"argument\"",
           "argument: each argument's gradient is requested in the "
           "argument's layout (Partial made Replicate); free: argument "
           "gradients are left as propagation makes them (a Partial "
           "gradient stays Partial, as after PyTorch's backward())">,
    ListOption<"checkpoint", "checkpoint", "std::string",
               "modules (`dtensor.module` names, and their submodules) whose "
               "forward is recomputed in the backward instead of kept">,
  ];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TrainStepsPass : Pass<"dtensor-train-steps", "::mlir::ModuleOp"> {
  let summary = "K training steps (SGD, Adam or AdamW) of a joint forward + backward function, as a loop";
  let description = [{
    For each joint function written by `dtensor-autodiff` (marked
    `dtensor.forward_results`; all of them, or those named by `functions`)
    adds `@<f>_train` (`@f_grad` gives `@f_train`): the forward's arguments
    in, then `steps` training steps in one `scf.for` (or, with `unroll`, in
    straight-line code), each running the
    joint function's body with seed cotangents of ones (PyTorch's
    `loss.sum().backward()`) and updating every differentiated argument in
    its own layout, as `torch.optim` does: SGD (`w <- w - lr * dw`; with
    `momentum`, `b <- momentum * b + dw`, `w <- w - lr * b`), Adam (moments
    from zero, bias corrected) or AdamW (Adam with the weight decayed by
    `1 - lr * weight-decay` before the step). `weight-decay` is L2 for SGD
    and Adam (`dw + wd * w`) and decoupled for AdamW; its default is
    torch.optim's (0.01 for AdamW, 0 otherwise). The optimizer state and
    the update's arithmetic are at least f32: bf16 and f16 weights keep f32
    moments and momentum buffers, and are stored in their own type; with
    `master-weights=f32` they are updated through f32 master copies (state
    like the moments) and stored rounded from them. Returns the forward
    results of the last step (unrolled: of every step), then the
    differentiated arguments after the last step. With `state=arguments`
    the optimizer state is the caller's: after the forward's arguments come,
    per updated argument (in argument order), its master copy (where kept)
    and its state slots (Adam: `exp_avg`, `exp_avg_sq`; SGD with momentum:
    `momentum_buffer`), then `step`, a `tensor<f32>` holding the number of
    steps taken before the call (Adam's bias corrections count on from it);
    the same state after the call's steps is returned last, in the same
    order, each marked `dtensor.optimizer_state`. Zeros (and the weights
    themselves as masters) are the state of a fresh run.
    Updated arguments are laid out as their gradients (the arguments' own
    layouts) on entry, in the loop and on return, so weights stay sharded
    across steps. The program is an ordinary global-view function:
    propagation, planning and partitioning compile it.
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "joint functions to train (default: every joint function)">,
    Option<"steps", "steps", "int64_t", /*default=*/"1",
           "number of training steps">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, adam or adamw">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD: momentum (torch.optim.SGD's, no dampening)">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "weight decay (default: 0.01 for adamw, 0 otherwise); L2 for "
           "sgd and adam, decoupled for adamw">,
    Option<"learningRate", "learning-rate", "double", /*default=*/"0.01",
           "learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9",
           "Adam: decay of the first moment">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999",
           "Adam: decay of the second moment">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1e-8",
           "Adam: added to the root of the second moment">,
    Option<"unroll", "unroll", "bool", /*default=*/"false",
           "unroll the steps in straight-line code instead of one scf.for">,
    Option<"state", "state", "std::string", /*default=*/"\"fresh\"",
           "fresh: the optimizer state starts at zero in every call; "
           "arguments: it is passed in after the forward's arguments and "
           "returned after the updated arguments, so that calls continue "
           "one training run">,
    Option<"masterWeights", "master-weights", "std::string",
           /*default=*/"\"none\"",
           "none: a bf16 or f16 weight is updated in f32 and stored in its "
           "own type every step; f32: it is updated through an f32 master "
           "copy (optimizer state), and the stored weight is the master "
           "rounded">,
  ];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ScreenInputPass : Pass<"dtensor-screen-input", "::mlir::ModuleOp"> {
  let summary = "rejects input that upstream MLIR mishandles or that is too "
                "large, then verifies";
  let description = [{
    The first step of every pipeline, run on the module as parsed and before
    anything else reads it (`dtensor-opt` parses without verifying and runs
    this pass first; `screenInput` in `include/dtensor/Frontend/Screen.h`
    is the same check for other drivers). It emits a diagnostic for:

    - input that reaches known bugs of upstream MLIR 22 (stock `mlir-opt`
      crashes or emits invalid IR on it): a `tensor.concat` whose `dim` is
      out of range (its verifier reads out of bounds), a
      `tensor.expand_shape` whose `output_shape` contradicts its result type
      (it verifies, then bufferization builds an invalid
      `memref.expand_shape`);
    - sizes beyond the resource limits of `include/dtensor/Support/
      SafeMath.h`: a static tensor dimension over 2^40, a static tensor of
      more than 2^48 elements, a mesh of more than 2^20 processes (checked
      by the mesh verifier, MESH1), before any work proportional to them.

    Then it runs the verifier on the module (unless `verify=false`).
    `dtensor-opt --mlir-very-unsafe-disable-verifier-on-parsing` skips the
    screening with the verifier.
  }];
  let options = [
    Option<"verify", "verify", "bool", /*default=*/"true",
           "run the verifier after screening">,
  ];
}

#endif // DTENSOR_FRONTEND_PASSES_TD
