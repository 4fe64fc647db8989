// Activation checkpointing (dtensor-autodiff{checkpoint=...}): the
// recomputation moves the backward's reads of the checkpointed module's
// activations to recomputed copies, so the forward's copies die in the
// forward. The modelled peak live memory per rank (`dtensor.memory_baseline`,
// what the scheduling passes budget against) drops from 4608 to 4096 bytes
// for this MLP; the communication stays the same (the checkpointed module
// has no collectives of its own). Numerics: test/e2e/autodiff.mlir.
//
// RUN: dtensor-opt %s --pass-pipeline='builtin.module(dtensor-autodiff,dtensor-spmd,dtensor-async-collectives)' | FileCheck %s --check-prefix=KEEP
// RUN: dtensor-opt %s --pass-pipeline='builtin.module(dtensor-autodiff{checkpoint=mlp},dtensor-spmd,dtensor-async-collectives)' | FileCheck %s --check-prefix=RECOMPUTE
// RUN: dtensor-opt %s --pass-pipeline='builtin.module(dtensor-autodiff{checkpoint=mlp},dtensor-spmd,dtensor-comm-report)' -o /dev/null | FileCheck %s --check-prefix=COMM

// KEEP-LABEL: func.func @mlp_grad(
// KEEP-SAME: dtensor.memory_baseline = 4608
// RECOMPUTE-LABEL: func.func @mlp_grad(
// RECOMPUTE-SAME: dtensor.memory_baseline = 4096
// COMM-LABEL: comm report for @mlp_grad
// COMM: forward:
// COMM-NEXT: all_reduce 1 0
// COMM-NEXT: total 1 0
// COMM-NEXT: backward:
// COMM-NEXT: all_reduce 1 0
// COMM-NEXT: total 1 0

// A two-layer MLP whose up projection and activation form module `mlp`.
dtensor.mesh @tp shape = [4] names = ["tp"]
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>,
               %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %xr = dtensor.annotate %x layout <@tp, [R]> : tensor<8x16xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<16x32xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<32x16xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%xr, %w1c : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f1 : tensor<8x32xf32>) {dtensor.module = "mlp.up"} -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) attrs = {dtensor.module = "mlp.act"} {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>
  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2r : tensor<8x32xf32>, tensor<32x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %yr = dtensor.annotate %y layout <@tp, [R]> : tensor<8x16xf32>
  return %yr : tensor<8x16xf32>
}

