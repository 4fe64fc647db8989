//===- Passes.td - dtensor compiler passes -----------------*- tablegen -*-===//

#ifndef DTENSOR_TRANSFORMS_PASSES_TD
#define DTENSOR_TRANSFORMS_PASSES_TD

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
  let summary = "K training steps (SGD or Adam) of a joint forward + backward function, as a loop";
  let description = [{
    For each joint function written by `dtensor-autodiff` (marked
    `dtensor.forward_results`; all of them, or those named by `functions`)
    adds `@<f>_train` (`@f_grad` gives `@f_train`): the forward's arguments
    in, then `steps` training steps in one `scf.for` (or, with `unroll`, in
    straight-line code), each running the
    joint function's body with seed cotangents of ones (PyTorch's
    `loss.sum().backward()`) and updating every differentiated argument in
    its own layout, by SGD (`w <- w - lr * dw`) or by Adam (PyTorch's
    `torch.optim.Adam` without weight decay: moments from zero, bias
    corrected). Returns the forward results of the last step (unrolled: of
    every step), then the differentiated arguments after the last step.
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
           "sgd or adam">,
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
  ];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def PropagateLayoutsPass
    : Pass<"dtensor-propagate-layouts", "::mlir::ModuleOp"> {
  let summary = "assigns a layout to every tensor value of a global program";
  let description = [{
    Starting from the user's requests (`dtensor.annotate`, `dtensor.layout`
    argument and result attributes), walks each function in program order
    and picks, for every op, the sharding strategy whose redistributions
    cost least under the cost model: those of its operands, and those its
    results would need in the ops that use them, looking a few ops ahead
    (ties go to the strategy that shards the most work). Where a consumer
    needs another layout than its producer has, a `dtensor.redistribute` is
    inserted; a chain of redistributions whose intermediate layout nothing
    else uses is folded into one. Annotations are replaced by
    redistributions or removed; every op result ends up with a
    `dtensor.layouts` attribute and every argument with `dtensor.layout`.
  }];
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
    the IR is left unchanged. A joint forward + backward function of
    dtensor-autodiff (`dtensor.forward_results = N`) also gets its
    collectives split into forward (those its first N results depend on)
    and backward.
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"table\"",
           "output format: table or json">,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "file to write the report to ('-': standard output)">,
  ];
}

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

def ExportTimelinePass
    : Pass<"dtensor-export-timeline", "::mlir::ModuleOp"> {
  let summary = "draws the modelled schedule of each per-rank function";
  let description = [{
    Simulates how one rank runs each function with a body, in program
    order: one compute lane, and one communication stream per
    (mesh, mesh_axes) group (or one for all, `comm-streams=single`). An
    async collective runs on its stream from its `dtensor.async_start`
    until it is done and its `dtensor.wait` blocks compute until then; a
    synchronous collective blocks compute until it is done; collectives of
    one stream run in issue order. Op times come from the module's target
    (`#dtensor.target`: the cost model of its hardware, or its per-op cost
    table).
    Writes a Chrome-trace JSON file (`trace`, for Perfetto) and an SVG
    picture (`svg`), and prints one line per function with the total
    modelled time and the exposed communication time (the time compute
    waits for collectives). The IR is left unchanged. See docs/timeline.md.
  }];
  let options = [
    Option<"tracePath", "trace", "std::string", /*default=*/"\"\"",
           "file to write the Chrome-trace JSON to ('-': standard output)">,
    Option<"svgPath", "svg", "std::string", /*default=*/"\"\"",
           "file to write the SVG picture to ('-': standard output)">,
    Option<"commStreams", "comm-streams", "std::string",
           /*default=*/"\"per-group\"",
           "communication streams: per-group or single">,
  ];
}

//===----------------------------------------------------------------------===//
// Overlap scheduling (docs/scheduling.md)
//===----------------------------------------------------------------------===//

// The options every scheduling pass shares, declared once. The memory
// budget's baseline is the `dtensor.memory_baseline` attribute of each
// function: the peak live memory (bytes) of its body before the first
// scheduling pass ran, written by that pass, read by the later ones, so a
// pass alone and inside `dtensor-overlap` decide alike.
defvar SchedulingOptions = [
    Option<"memoryBudget", "memory-budget", "double", /*default=*/"0.2",
           "allowed growth of the peak live memory over the unscheduled "
           "program (0.2: 20%; negative: no limit)">,
    Option<"reportMemory", "report-memory", "bool", /*default=*/"false",
           "emit a remark per function with the peak live memory before "
           "and after">,
];

def MakeCollectivesAsyncPass
    : Pass<"dtensor-async-collectives", "::mlir::ModuleOp"> {
  let summary = "turns synchronous collectives into async_start + wait";
  let description = [{
    Wraps every synchronous collective at the top level of a single-block
    function body (plain, coalesced and fused ones) in a
    `dtensor.async_start` and gives each of its results a `dtensor.wait`
    right before the result's first use, or before the next barrier (an op
    with regions other than linalg-style element bodies, an op with side
    effects, the terminator) when that comes first. The collective is
    issued where it was, so the order of collectives does not change.
  }];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect"];
}

def SinkWaitsPass : Pass<"dtensor-sink-waits", "::mlir::ModuleOp"> {
  let summary = "moves each dtensor.wait to just before its first consumer";
  let description = [{
    Each wait moves as late as possible: right before the first op that
    uses its result, or before the next barrier when no op before it does.
    Waits that end up before the same op keep their relative order. A move
    that would raise the peak live memory over the budget is refused.
  }];
  let options = SchedulingOptions;
}

def RaiseCommsPass : Pass<"dtensor-raise-comms", "::mlir::ModuleOp"> {
  let summary = "moves each dtensor.async_start as early as it can go";
  let description = [{
    Each async start moves up to right after the last op it depends on:
    the producers of its operands, the previous collective (synchronous or
    asynchronous; the order of collectives never changes) or the previous
    barrier. Its wait stays where it is. A move that would raise the peak
    live memory over the budget is refused.
  }];
  let options = SchedulingOptions;
}

def ReorderComputeForOverlapPass
    : Pass<"dtensor-reorder-compute-for-overlap", "::mlir::ModuleOp"> {
  let summary = "orders compute between collectives to hide communication";
  let description = [{
    PyTorch Inductor's reorder_compute_for_overlap on per-rank programs.
    With the collectives c0, c1, ... in issue order, it schedules the
    ancestors of c0 and c0; then, between each pair c(i-1), c(i):
    1. the compute c(i) needs that does not depend on c(i-1);
    2. if that is shorter than c(i-1), further ready compute that does not
       depend on c(i-1), the compute feeding the earliest collective first,
       skipping an op when less than half of its time would still overlap
       c(i-1) (`prev - total <= cost / 2`);
    3. the rest c(i) needs (what depends on c(i-1), its wait included);
    4. c(i) itself;
    and finally everything else, in program order. Compute of step 2 rolls
    over to the next collective when c(i) does not depend on c(i-1). Costs
    come from the module's target (`#dtensor.target`): the cost model of its
    hardware, or its per-op cost table (`cost_table`, JSON: op name -> microseconds,
    "default" for other ops that are not free, a wait costs 0 unless
    listed; ops the table lacks without a "default" use the cost model).
    Ties go to program order, so the result is deterministic. A move that
    would raise the peak live memory over the budget is refused (the op
    waits for its place in program order).
  }];
  let options = SchedulingOptions;
}

def BucketCollectivesPass
    : Pass<"dtensor-bucket-collectives", "::mlir::ModuleOp"> {
  let summary = "coalesces adjacent collectives of one kind and group";
  let description = [{
    Merges a collective into the one issued just before it (no other
    collective in between, both synchronous or both asynchronous) into an
    `all_reduce_coalesced`, `all_gather_coalesced` or
    `reduce_scatter_coalesced` when both are of the same kind, on the same
    mesh and axes, with the same reduction and element type, the bucket
    stays within `bucket-cap-bytes` (each tensor counting the larger of its
    input and output), the cost model says one launch is faster than two,
    and the merged op can be placed without moving other ops: at the first
    collective when the second's operands are ready there, else at the
    second when nothing in between uses the first's results. Merges that
    would raise the peak live memory over the budget are refused.
  }];
  let options = [
    Option<"bucketCapBytes", "bucket-cap-bytes", "int64_t",
           /*default=*/"26214400",
           "largest bucket, in bytes (default 25 MiB)">,
  ] # SchedulingOptions;
  let dependentDialects = ["::mlir::dtensor::DTensorDialect"];
}

def ScreenInputPass : Pass<"dtensor-screen-input", "::mlir::ModuleOp"> {
  let summary = "rejects input that upstream MLIR mishandles or that is too "
                "large, then verifies";
  let description = [{
    The first step of every pipeline, run on the module as parsed and before
    anything else reads it (`dtensor-opt` parses without verifying and runs
    this pass first; `screenInput` in `include/dtensor/Transforms/Screen.h`
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

def SpecializeRankPass : Pass<"dtensor-specialize-rank", "::mlir::ModuleOp"> {
  let summary = "the per-rank program of one process, coordinates constant";
  let description = [{
    Replaces every `dtensor.coord` of a per-rank program by the constant
    the process with world rank `rank` gets: the row-major index of its
    coordinates on the op's axes, its coordinates being the row-major
    unravelling of `rank` over the mesh shape (how the runtime places
    processes on a mesh). Followed by `canonicalize`, the shard offsets and
    the sizes of uneven shards fold to that process's values: what one rank
    runs, to inspect or to compile ahead of time per rank. The collectives
    stay the same on every rank (`docs/scheduling.md`, collective order).
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"-1",
           "world rank of the process (required)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def SplitMatmulAllReducePass
    : Pass<"dtensor-split-matmul-all-reduce", "::mlir::ModuleOp"> {
  let summary = "splits matmul + all_reduce into row chunks that pipeline";
  let description = [{
    An all_reduce whose operand is a matmul's product (`linalg.matmul` or
    any `linalg` contraction `C[rows..., n] = sum_k A[rows..., k] * B[k,
    n]`, B possibly transposed, into zeros, A of rank 2 or 3) and nothing
    else's becomes `chunks` row chunks: chunk i slices A along a row dim,
    multiplies it by B into the matching slice of the zero init and
    all-reduces the chunk; a `tensor.concat` assembles the result. Every
    element is computed and reduced exactly as before, for every reduce
    kind (an all_reduce is elementwise across ranks). On its own the split
    only adds launches: the scheduling passes that follow
    (async-collectives, reorder-compute-for-overlap, sink-waits) run chunk
    i's all_reduce while chunk i + 1 is multiplied, which is what the cost
    gate assumes.

    The gate builds one chunk for each count tried (`chunks`, or 2, 4 and 8
    when `chunks` is 0; the chunked dim is the first row dim the count
    divides), asks the cost estimator for its matmul, its all_reduce and the
    concat, and models the two-stage pipeline: chunk matmuls back to back,
    each chunk's all_reduce after its matmul and the previous all_reduce,
    then the concat. The count with the shortest pipeline is taken if it
    beats the matmul followed by the whole all_reduce by `threshold`
    (`force` skips the gate). A split that would raise the peak live memory
    over the budget is undone. Each candidate all_reduce gets a remark
    saying whether it was split and why (not). Asynchronous all_reduces are
    left alone: run the pass before async-collectives.
  }];
  let options = [
    Option<"chunks", "chunks", "int64_t", /*default=*/"0",
           "number of row chunks (0: the best of 2, 4 and 8 by the cost "
           "model)">,
    Option<"force", "force", "bool", /*default=*/"false",
           "split every legal candidate, whatever the cost model says">,
    Option<"threshold", "threshold", "double", /*default=*/"1.0",
           "speedup (unsplit / pipelined modelled time) a split must show">,
  ] # SchedulingOptions;
  let statistics = [
    Statistic<"numSplit", "split", "all_reduces split into row chunks">,
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// Comm-compute fusion (docs/fusion.md)
//===----------------------------------------------------------------------===//

def FuseCollectiveMatmulPass
    : Pass<"dtensor-fuse-collective-matmul", "::mlir::ModuleOp"> {
  let summary = "fuses all_gather + matmul and matmul + reduce_scatter";
  let description = [{
    On per-rank programs, replaces an all_gather whose result is the row
    operand A of matmuls (`linalg.matmul` or any `linalg` contraction
    `C[rows..., n] = sum_k A[rows..., k] * B[k, n]`, B possibly transposed,
    into zeros) by one `dtensor.all_gather_matmul` with one B per matmul,
    and a reduce_scatter whose operand is such a matmul's product by
    `dtensor.matmul_reduce_scatter`. Views that leave the last (contracted)
    dim alone may sit between collective and matmul (`tensor.collapse_shape`,
    `tensor.expand_shape`, `linalg.transpose`, `tensor.extract_slice`, zero
    `tensor.pad`, `tensor.cast`); they move to the other side of the matmul.
    A of rank 2 or 3; an all_gather along A's last dim is not fused, a
    reduce_scatter along any dim is. Matmuls whose B depends on the gathered
    A are not fused; other users of the gathered A take the fused op's
    `gathered` result; a product with users besides the reduce_scatter is
    not fused. Asynchronous collectives with work between start and wait
    (already overlapped) are left alone. All-gathers are fused first.

    The cost gate compares the collective followed (preceded) by the whole
    matmul with the op's ring pipeline, n steps of one chunk's matmul each
    overlapped with one chunk's ring shift; `min-rows` replaces it by a row
    count, `force` skips it. Each all_gather and reduce_scatter gets a remark
    saying whether it was fused and why (not), with the modelled times and
    the break-even row count.
  }];
  let options = [
    Option<"force", "force", "bool", /*default=*/"false",
           "fuse every legal candidate, whatever the cost model says">,
    Option<"minRows", "min-rows", "int64_t", /*default=*/"0",
           "fuse where the product has at least this many rows instead of "
           "asking the cost model (0: ask the cost model)">,
    Option<"threshold", "threshold", "double", /*default=*/"1.0",
           "speedup (unfused / pipelined modelled time) a fusion must show">,
  ];
  let statistics = [
    Statistic<"numAllGatherMatmul", "all-gather-matmul",
              "all_gathers fused with their matmuls">,
    Statistic<"numMatmulReduceScatter", "matmul-reduce-scatter",
              "reduce_scatters fused with their matmul">,
  ];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect"];
}

def DecomposeFusedPass : Pass<"dtensor-decompose-fused", "::mlir::ModuleOp"> {
  let summary = "lowers fused comm + compute ops into ring pipelines";
  let description = [{
    Replaces each `dtensor.all_gather_matmul` and
    `dtensor.matmul_reduce_scatter` (asynchronous ones at their
    `async_start`) by group-size unrolled steps: each step multiplies the
    chunk at hand while a `dtensor.permute` ring shift in
    `dtensor.async_start` / `dtensor.wait` moves the next one.
    all_gather_matmul writes each chunk's products (and the gathered A,
    where used) into the chunk's row block of the result with
    `tensor.insert_slice`, in group order; matmul_reduce_scatter passes an
    accumulator around the ring, adding at each step the partial product of
    the chunk it holds, until it holds this rank's chunk. The result is the
    fused op's semantics exactly (up to floating-point summation order).
    `dtensor-lower-to-runtime` applies the same decomposition.
  }];
  let dependentDialects = ["::mlir::dtensor::DTensorDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect"];
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

#endif // DTENSOR_TRANSFORMS_PASSES_TD
