//===- Passes.td - passes of fusion and overlap ------------*- tablegen -*-===//
//
// The passes of this stage (docs/design.md, "Stages"); their reference page
// is generated into docs/generated/OverlapPasses.md.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_OVERLAP_PASSES_TD
#define DTENSOR_OVERLAP_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif // DTENSOR_OVERLAP_PASSES_TD
