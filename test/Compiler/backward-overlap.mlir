// The scheduling passes on the backward: the joint forward + backward
// functions of dtensor-autodiff are ordinary per-rank programs after
// partitioning, so dtensor-overlap buckets their gradient collectives and
// overlaps them with the backward compute that remains.
//
// Bucketing (passes=bucket-collectives,default) of FSDP + TP on 2x2
// (examples/fsdp_tp_mlp.mlir): the two gradient reduce_scatters over dp of
// the backward become one asynchronous reduce_scatter_coalesced (as the
// forward's two FSDP all_gathers become one all_gather_coalesced).
// RUN: dtensor-opt %dtensor_src_root/examples/fsdp_tp_mlp.mlir --pass-pipeline='builtin.module(dtensor-autodiff,dtensor-spmd,dtensor-overlap{passes=bucket-collectives,default},dtensor-comm-report)' -o /dev/null | FileCheck %s --check-prefix=BUCKET
// Without bucketing they stay two:
// RUN: dtensor-opt %dtensor_src_root/examples/fsdp_tp_mlp.mlir --pass-pipeline='builtin.module(dtensor-autodiff,dtensor-spmd,dtensor-overlap,dtensor-comm-report)' -o /dev/null | FileCheck %s --check-prefix=NOBUCKET
//
// Overlap (the default pipeline) of the same model at Llama-3-8B MLP sizes
// (docs/images/fsdp_tp_mlp_llama8b.mlir): the first gradient's
// reduce_scatter (w2, the last layer's) is issued as soon as its gradient is
// computed and waited for only at the end: the rest of the backward (the
// input gradient of the last layer, relu's gradient, w1's gradient) and the
// forward's split all_reduce run under it. Numerics of scheduled and
// bucketed backwards: test/e2e/autodiff.mlir.
// RUN: dtensor-opt %dtensor_src_root/docs/images/fsdp_tp_mlp_llama8b.mlir --pass-pipeline='builtin.module(dtensor-autodiff{functions=fsdp_tp_mlp},dtensor-spmd,dtensor-overlap)' | FileCheck %s --check-prefix=OVERLAP

// BUCKET-LABEL: comm report for @fsdp_tp_mlp_grad
// BUCKET: forward:
// BUCKET-NEXT: all_gather_coalesced 1 1
// BUCKET-NEXT: all_reduce 1 1
// BUCKET-NEXT: total 2 2
// BUCKET-NEXT: backward:
// BUCKET-NEXT: reduce_scatter_coalesced 1 1
// BUCKET-NEXT: total 1 1

// NOBUCKET-LABEL: comm report for @fsdp_tp_mlp_grad
// NOBUCKET: backward:
// NOBUCKET-NEXT: reduce_scatter 2 2
// NOBUCKET-NEXT: total 2 2

// OVERLAP-LABEL: func.func @fsdp_tp_mlp_grad(
// The last layer's weight gradient, then its reduce_scatter started:
// OVERLAP: linalg.generic
// OVERLAP: %[[RS1:.*]] = dtensor.async_start
// OVERLAP-NEXT: dtensor.reduce_scatter
// The remaining backward compute runs while it is in flight:
// OVERLAP: linalg.generic
// OVERLAP: linalg.generic
// OVERLAP: dtensor.async_start
// OVERLAP-NEXT: dtensor.reduce_scatter
// OVERLAP: linalg.matmul
// OVERLAP: dtensor.wait %[[RS1]]
// OVERLAP: return
