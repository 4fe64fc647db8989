// REQUIRES: cpu-target
// Local tensors at a program's boundary, as test_dtensor_compile.py uses
// them: DTensor.from_local of an input, redistribute, to_local of the
// output (with grad_placements), and the gradients through them. Propagation
// makes such an argument global, laid out as its from_local says (each rank
// passes its local part), and such a result global, laid out as its
// to_local says; dtensor-run then checks outputs and gradients against the
// unsharded program like any other (relative error 1e-5), on 4 and 2 ranks.
//
// RUN: split-file %s %t
// from_local(x, [Shard(0)]).redistribute([Replicate()]).to_local() + 2, the
// gradient of x included (test_dynamo_dtensor_from_local_redistribute):
// RUN: dtensor-opt %t/redistribute.mlir --dtensor-autodiff -o %t.r4.mlir
// RUN: sed -e 's/shape = \[4\]/shape = [2]/' -e 's/2x16xf32/4x16xf32/g' %t.r4.mlir > %t.r2.mlir
// RUN: timeout 120 dtensor-run %t.r4.mlir -n 4 --entry f_grad --seed 41 --tolerance 1e-5 | FileCheck %s --check-prefix=RED
// RUN: timeout 120 dtensor-run %t.r2.mlir -n 2 --entry f_grad --seed 42 --tolerance 1e-5 | FileCheck %s --check-prefix=RED
// RUN: dtensor-opt %t.r4.mlir --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=RED-COMM
//
// A Partial local input redistributed to Shard(1), to_local().sum() taken
// backward (test_dtensor_contiguous_dtensor_noncontiguous_local_as_tangent):
// forward one reduce_scatter; backward the Shard(1) gradient goes back to
// Replicate (the Partial input's gradient layout), one all_gather.
// RUN: dtensor-opt %t/partial.mlir --dtensor-autodiff -o %t.p4.mlir
// RUN: sed -e 's/shape = \[4\]/shape = [2]/' -e 's/4x2x8xf32/4x4x8xf32/g' %t.p4.mlir > %t.p2.mlir
// RUN: timeout 120 dtensor-run %t.p4.mlir -n 4 --entry f_grad --seed 43 --tolerance 1e-5 | FileCheck %s --check-prefix=PART
// RUN: timeout 120 dtensor-run %t.p2.mlir -n 2 --entry f_grad --seed 44 --tolerance 1e-5 | FileCheck %s --check-prefix=PART
// RUN: dtensor-opt %t.p4.mlir --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=PART-COMM
//
// to_local(grad_placements=[Partial()]) of a Replicate output: each rank's
// gradient of its local output is a partial sum of the global gradient, so
// the backward reduces it (one all_reduce) before the elementwise gradient
// of the Shard(0) input and the replicated weight. Without grad_placements
// the gradient is taken as Replicate and nothing is reduced (GP-R).
// RUN: dtensor-opt %t/grad-placements.mlir --dtensor-autodiff -o %t.g4.mlir
// RUN: sed -e 's/shape = \[4\]/shape = [2]/' -e 's/2x8xf32/4x8xf32/g' %t.g4.mlir > %t.g2.mlir
// RUN: timeout 120 dtensor-run %t.g4.mlir -n 4 --entry f_grad --seed 45 --tolerance 1e-5 | FileCheck %s --check-prefix=GP
// RUN: timeout 120 dtensor-run %t.g2.mlir -n 2 --entry f_grad --seed 46 --tolerance 1e-5 | FileCheck %s --check-prefix=GP
// RUN: dtensor-opt %t.g4.mlir --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=GP-COMM
// RUN: sed -e '/dtensor.grad_layout/d' %t/grad-placements.mlir | dtensor-opt --dtensor-autodiff --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=GP-R

// RED: @f_grad on {{[24]}} ranks
// RED: output #0 tensor<8x16xf32> on @tp [R]: {{.*}} ok
// RED: output #1 tensor<8x16xf32> on @tp [S(0)]: {{.*}} ok
// RED: PASS
// RED-COMM-LABEL: comm report for @f_grad
// RED-COMM: forward:
// RED-COMM-NEXT: all_gather 1 0
// RED-COMM-NEXT: total 1 0
// RED-COMM-NEXT: backward:
// RED-COMM-NEXT: total 0 0 0

// PART: @f_grad on {{[24]}} ranks
// PART: output #0 tensor<4x8x8xf32> on @tp [S(1)]: {{.*}} ok
// PART: output #1 tensor<4x8x8xf32> on @tp [R]: {{.*}} ok
// PART: PASS
// PART-COMM-LABEL: comm report for @f_grad
// PART-COMM: forward:
// PART-COMM-NEXT: reduce_scatter 1 0
// PART-COMM-NEXT: total 1 0
// PART-COMM-NEXT: backward:
// PART-COMM-NEXT: all_gather 1 0
// PART-COMM-NEXT: total 1 0

// GP: @f_grad on {{[24]}} ranks
// GP: output #0 tensor<8x8xf32> on @tp [R]: {{.*}} ok
// GP: output #1 tensor<8x8xf32> on @tp [S(0)]: {{.*}} ok
// GP: output #2 tensor<8x8xf32> on @tp [R]: {{.*}} ok
// GP: PASS
// GP-COMM-LABEL: comm report for @f_grad
// GP-COMM: forward:
// GP-COMM-NEXT: all_gather 1 0
// GP-COMM-NEXT: total 1 0
// GP-COMM-NEXT: backward:
// GP-COMM-NEXT: all_reduce 1 0
// GP-COMM-NEXT: total 1 0
// GP-R-LABEL: comm report for @f_grad
// GP-R: backward:
// GP-R-NEXT: total 0 0 0

//--- redistribute.mlir
dtensor.mesh @tp shape = [4]
func.func @f(%x: tensor<2x16xf32> {dtensor.requires_grad}) -> tensor<8x16xf32> {
  %g = dtensor.from_local %x layout <@tp, [S(0)]> : tensor<2x16xf32> -> tensor<8x16xf32>
  %r = dtensor.redistribute %g to <@tp, [R]> : tensor<8x16xf32>
  %l = dtensor.to_local %r layout <@tp, [R]> : tensor<8x16xf32> -> tensor<8x16xf32>
  %c = arith.constant dense<2.0> : tensor<8x16xf32>
  %y = arith.addf %l, %c : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

//--- partial.mlir
dtensor.mesh @tp shape = [4]
func.func @f(%x: tensor<4x8x8xf32> {dtensor.requires_grad}) -> tensor<4x2x8xf32> {
  %g = dtensor.from_local %x layout <@tp, [P(sum)]> : tensor<4x8x8xf32> -> tensor<4x8x8xf32>
  %s = dtensor.redistribute %g to <@tp, [S(1)]> : tensor<4x8x8xf32>
  %l = dtensor.to_local %s layout <@tp, [S(1)]> : tensor<4x8x8xf32> -> tensor<4x2x8xf32>
  return %l : tensor<4x2x8xf32>
}

//--- grad-placements.mlir
#id = affine_map<(i, j) -> (i, j)>
dtensor.mesh @tp shape = [4]
func.func @f(%x: tensor<2x8xf32> {dtensor.requires_grad}, %w: tensor<8x8xf32> {dtensor.param = "w"})
    -> tensor<8x8xf32> {
  %xg = dtensor.from_local %x layout <@tp, [S(0)]> : tensor<2x8xf32> -> tensor<8x8xf32>
  %wg = dtensor.from_local %w layout <@tp, [R]> : tensor<8x8xf32> -> tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%xg, %wg : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %r = dtensor.redistribute %y to <@tp, [R]> : tensor<8x8xf32>
  %l = dtensor.to_local %r layout <@tp, [R]>
      {dtensor.grad_layout = #dtensor.layout<@tp, [P(sum)]>}
      : tensor<8x8xf32> -> tensor<8x8xf32>
  return %l : tensor<8x8xf32>
}
