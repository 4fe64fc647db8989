// REQUIRES: cpu-target
// RUN: dtensor-opt %s --verify-each --dtensor-spmd | FileCheck %s
// RUN: timeout 120 dtensor-run %s -n 4 --entry split_rows --seed 5 | FileCheck %s --check-prefix=EXEC
// RUN: sed 's/shape = \[4\] names/shape = [3] names/' %dtensor_src_root/examples/attention.mlir > %t.attn3.mlir
// RUN: dtensor-opt %t.attn3.mlir --dtensor-apply-tp-plan=plan=%dtensor_src_root/examples/attention.plan.json -o %t.attn3.planned.mlir
// RUN: dtensor-opt %t.attn3.planned.mlir --verify-each --dtensor-spmd -o /dev/null
// RUN: timeout 120 dtensor-run %t.attn3.planned.mlir -n 3 --seed 6 | FileCheck %s --check-prefix=EXEC

// Issue 11: a reshape that splits an evenly sharded dim was refused
// ("reshape of an unevenly sharded tensor") because the reshape rule
// carries the shard onto the first dim of the split (8 rows over 4 ranks,
// 2 each, onto the size-2 dim of 8 -> 2x4: 1, 1, 0, 0). Propagation now
// drops strategies that shard a reshape unevenly and redistributes first
// (here one all_to_all onto the unsplit dim); the attention example
// compiles and runs on 3 ranks for the same reason.

dtensor.mesh @tp shape = [4]

// CHECK-LABEL: func.func @split_rows
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32>
// CHECK-SAME: -> (tensor<2x4x4xf32> {{.*}}#dtensor.layout<@tp, [S(2)]>})
// CHECK: %[[T:.*]] = dtensor.all_to_all %[[X]] on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
// CHECK: tensor.expand_shape %[[T]] {{\[}}[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xf32> into tensor<2x4x4xf32>
// EXEC: ok
// EXEC: PASS
func.func @split_rows(%x: tensor<8x16xf32>) -> tensor<2x4x16xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
  %e = tensor.expand_shape %a [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  return %e : tensor<2x4x16xf32>
}
