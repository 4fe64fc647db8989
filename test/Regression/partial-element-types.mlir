// RUN: dtensor-opt %s -split-input-file --verify-each --dtensor-spmd -verify-diagnostics | FileCheck %s

// Issue 11: P(max) on complex numbers and P(sum) on i1 passed the compiler
// and failed only at CPU lowering. The layout ops reject them (LAYOUT6)
// and propagation never picks a strategy that would produce one: a sum
// over an i1 dim sharded on the mesh gathers first instead of reducing
// into P(sum).

dtensor.mesh @tp shape = [4]

func.func @complex_max(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  // expected-error @+1 {{LAYOUT6] placement P(max) is not defined on 'complex<f32>' elements}}
  %y = dtensor.annotate %x layout <@tp, [P(max)]> : tensor<8xcomplex<f32>>
  return %y : tensor<8xcomplex<f32>>
}

// -----

dtensor.mesh @tp shape = [4]

// CHECK-LABEL: func.func @i1_sum
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xi1> {{.*}}) -> (tensor<4xi1> {{.*}}#dtensor.layout<@tp, [R]>})
// CHECK: %[[G:.*]] = dtensor.all_gather %[[X]] on @tp axes = [0] gather_dim = 0 : tensor<2x4xi1> -> tensor<8x4xi1>
// CHECK: linalg.generic {{.*}} ins(%[[G]] : tensor<8x4xi1>)
// CHECK-NOT: dtensor.all_reduce
func.func @i1_sum(%x: tensor<8x4xi1>) -> tensor<4xi1> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x4xi1>
  %false = arith.constant false
  %e = tensor.empty() : tensor<4xi1>
  %f = linalg.fill ins(%false : i1) outs(%e : tensor<4xi1>) -> tensor<4xi1>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%a : tensor<8x4xi1>) outs(%f : tensor<4xi1>) {
  ^bb0(%in: i1, %acc: i1):
    %r = arith.addi %acc, %in : i1
    linalg.yield %r : i1
  } -> tensor<4xi1>
  %y = dtensor.annotate %s layout <@tp, [R]> : tensor<4xi1>
  return %y : tensor<4xi1>
}

// -----

dtensor.mesh @tp shape = [4]

// R -> P(sum) of complex numbers (found by scripts/fuzz.sh, seed 2641: a
// mutant of @complex_max): the local partition built a float constant of
// complex type and crashed. Complex values are moved by collectives only;
// the step is refused with its reason.
func.func @complex_partition(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  // expected-error @+1 {{cannot plan the redistribution: R -> P(sum): a complex value has no local partition or rescale}}
  %y = dtensor.redistribute %x to <@tp, [P(sum)]> : tensor<8xcomplex<f32>>
  return %y : tensor<8xcomplex<f32>>
}
