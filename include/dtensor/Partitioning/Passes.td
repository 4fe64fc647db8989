//===- Passes.td - passes of partitioning ------------------*- tablegen -*-===//
//
// The passes of this stage (docs/design.md, "Stages"); their reference page
// is generated into docs/generated/PartitioningPasses.md.
//
//===----------------------------------------------------------------------===//

#ifndef DTENSOR_PARTITIONING_PASSES_TD
#define DTENSOR_PARTITIONING_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif // DTENSOR_PARTITIONING_PASSES_TD
