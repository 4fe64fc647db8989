// REQUIRES: cpu-target
// Issue 26, item 5: an uneven shard passes through a reshape that leaves
// its dim alone, as PyTorch's test_dtensor_view_op_uneven asserts (0
// collectives): 5 rows over 4 ranks (2, 1, 1, 1) are the same rows before
// and after merging or splitting the other dims. Only the outer dim of a
// merged or split group must split evenly (DTensor's view rules), so that
// case still redistributes (here it gathers the rows first).
// RUN: sed 's/NRANKS/4/g' %s > %t.4.mlir
// RUN: sed 's/NRANKS/2/g' %s > %t.2.mlir
// RUN: dtensor-opt %t.4.mlir --verify-each --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=COMM
// RUN: dtensor-opt %t.4.mlir --verify-each --dtensor-spmd | FileCheck %s --check-prefix=IR
// Forward and backward (dtensor-autodiff): no collective either way.
// RUN: dtensor-opt %t.4.mlir --dtensor-autodiff=wrt=0 --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=GRAD
// Numerics on CPU ranks against the unsharded program.
// RUN: dtensor-opt %t.4.mlir --dtensor-autodiff=wrt=0 -o %t.4.grad.mlir
// RUN: dtensor-opt %t.2.mlir --dtensor-autodiff=wrt=0 -o %t.2.grad.mlir
// RUN: for f in collapse expand collapse_unit outer_even outer_uneven; do \
// RUN:   timeout 120 dtensor-run %t.4.mlir -n 4 --entry $f --seed 3 | FileCheck %s --check-prefix=EXEC || exit 1; \
// RUN:   timeout 120 dtensor-run %t.2.mlir -n 2 --entry $f --seed 4 | FileCheck %s --check-prefix=EXEC || exit 1; \
// RUN:   timeout 120 dtensor-run %t.4.grad.mlir -n 4 --entry ${f}_grad --seed 5 | FileCheck %s --check-prefix=EXEC || exit 1; \
// RUN: done
// RUN: timeout 120 dtensor-run %t.2.grad.mlir -n 2 --entry collapse_grad --seed 6 | FileCheck %s --check-prefix=EXEC
// EXEC: ok
// EXEC: PASS

dtensor.mesh @m shape = [NRANKS]

// COMM-LABEL: comm report for @collapse
// COMM-NEXT:    collective
// COMM-NEXT:    total        0
// IR-LABEL: func.func @collapse(
// IR-SAME: %[[X:.*]]: tensor<?x2x2x2xf32>
// IR-NOT: dtensor.{{all_gather|all_reduce|reduce_scatter|all_to_all|permute|broadcast}}
// IR: tensor.collapse_shape %[[X]] {{\[}}[0], [1], [2, 3]] : tensor<?x2x2x2xf32> into tensor<?x2x4xf32>
// IR-NOT: dtensor.{{all_gather|all_reduce|reduce_scatter|all_to_all|permute|broadcast}}
// IR: return
// GRAD-LABEL: comm report for @collapse_grad
// GRAD-NEXT:    collective
// GRAD-NEXT:    total        0
// GRAD-NEXT:    forward:
// GRAD-NEXT:      total      0
// GRAD-NEXT:    backward:
// GRAD-NEXT:      total      0
func.func @collapse(%x: tensor<5x2x2x2xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<5x2x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  %y = tensor.collapse_shape %x [[0], [1], [2, 3]] : tensor<5x2x2x2xf32> into tensor<5x2x4xf32>
  return %y : tensor<5x2x4xf32>
}

// The inverse: the local output shape takes this rank's row count.
// COMM-LABEL: comm report for @expand
// COMM-NEXT:    collective
// COMM-NEXT:    total        0
// IR-LABEL: func.func @expand(
// IR-SAME: %[[X:.*]]: tensor<?x2x4xf32>
// IR-NOT: dtensor.{{all_gather|all_reduce|reduce_scatter|all_to_all|permute|broadcast}}
// IR: tensor.expand_shape %[[X]] {{\[}}[0], [1], [2, 3]] output_shape [%{{.*}}, 2, 2, 2] : tensor<?x2x4xf32> into tensor<?x2x2x2xf32>
// IR-NOT: dtensor.{{all_gather|all_reduce|reduce_scatter|all_to_all|permute|broadcast}}
// IR: return
// GRAD-LABEL: comm report for @expand_grad
// GRAD-NEXT:    collective
// GRAD-NEXT:    total        0
func.func @expand(%x: tensor<5x2x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<5x2x2x2xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  %y = tensor.expand_shape %x [[0], [1], [2, 3]] output_shape [5, 2, 2, 2] : tensor<5x2x4xf32> into tensor<5x2x2x2xf32>
  return %y : tensor<5x2x2x2xf32>
}

// Unit dims beside the sharded dim leave it alone too (5x1x6 -> 5x6).
// COMM-LABEL: comm report for @collapse_unit
// COMM-NEXT:    collective
// COMM-NEXT:    total        0
// GRAD-LABEL: comm report for @collapse_unit_grad
// GRAD-NEXT:    collective
// GRAD-NEXT:    total        0
func.func @collapse_unit(%x: tensor<5x1x6xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  %y = tensor.collapse_shape %x [[0, 1], [2]] : tensor<5x1x6xf32> into tensor<5x6xf32>
  return %y : tensor<5x6xf32>
}

// The outer dim of a merged group keeps its shard when it splits evenly
// (8 rows over 4 or 2 ranks) ...
// COMM-LABEL: comm report for @outer_even
// COMM-NEXT:    collective
// COMM-NEXT:    total        0
func.func @outer_even(%x: tensor<8x3x2xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<24x2xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  %y = tensor.collapse_shape %x [[0, 1], [2]] : tensor<8x3x2xf32> into tensor<24x2xf32>
  return %y : tensor<24x2xf32>
}

// ... and not when it splits unevenly: 5 rows of 3 are chunks 2, 1, 1, 1
// of 3 elements, but 15 elements over 4 ranks are chunks 4, 4, 4, 3.
// COMM-LABEL: comm report for @outer_uneven
// COMM-NEXT:    collective
// COMM-NEXT:    all_gather   1
// COMM-NEXT:    total        1
// IR-LABEL: func.func @outer_uneven(
// IR: dtensor.all_gather
// IR: tensor.collapse_shape {{.*}} : tensor<5x3x4xf32> into tensor<15x4xf32>
func.func @outer_uneven(%x: tensor<5x3x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<15x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  %y = tensor.collapse_shape %x [[0, 1], [2]] : tensor<5x3x4xf32> into tensor<15x4xf32>
  return %y : tensor<15x4xf32>
}
