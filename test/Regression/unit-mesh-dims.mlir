// REQUIRES: cpu-target
// RUN: dtensor-opt %s -split-input-file --verify-each --dtensor-spmd | FileCheck %s
// RUN: sed 's/shape = \[2, 1\]/shape = [1, 2]/' %s > %t.12.mlir
// RUN: dtensor-opt %t.12.mlir -split-input-file --verify-each --dtensor-spmd | FileCheck %s --check-prefix=M12
// RUN: timeout 120 dtensor-run %s -n 2 --entry unit_axis --seed 3 | FileCheck %s --check-prefix=EXEC
// RUN: timeout 120 dtensor-run %t.12.mlir -n 2 --entry unit_axis --seed 4 | FileCheck %s --check-prefix=EXEC

// Issue 11: meshes with dimensions of size 1 (2x1, 1x2, 4x1, [1]; PyTorch
// accepts them). Propagation asks for [S(1), R] where the weight is laid
// out [S(1), S(1)]: on a one-process axis that redistribution moves
// nothing. The planner used to erase it, handing the matmul the weight's
// own layout, which is not a strategy of the matmul ("not one of its
// sharding strategies"); it now keeps the step, which partitions to no
// communication.

dtensor.mesh @m shape = [2, 1]

// CHECK-LABEL: func.func @unit_axis
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32> {{.*}}, %[[W:.*]]: tensor<16x16xf32> {{.*}}#dtensor.layout<@m, [S(1), S(1)]>})
// CHECK-SAME: -> (tensor<8x16xf32> {{.*}}#dtensor.layout<@m, [S(1), R]>})
// CHECK-NOT: dtensor.all_gather
// CHECK: linalg.matmul ins(%[[X]], %[[W]] : tensor<8x16xf32>, tensor<16x16xf32>)
// M12-LABEL: func.func @unit_axis
// M12-SAME: -> (tensor<8x32xf32> {{.*}}#dtensor.layout<@m, [S(1), R]>})
// M12: dtensor.all_gather {{.*}} on @m axes = [1] gather_dim = 1 : tensor<8x16xf32> -> tensor<8x32xf32>
// EXEC: ok
// EXEC: PASS
func.func @unit_axis(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %xr = dtensor.annotate %x layout <@m, [R, R]> : tensor<8x16xf32>
  %wc = dtensor.annotate %w layout <@m, [S(1), S(1)]> : tensor<16x32xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%xr, %wc : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = dtensor.annotate %h layout <@m, [S(1), R]> : tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

dtensor.mesh @one shape = [1]

// A one-process mesh: everything is local.
// CHECK-LABEL: func.func @single
// CHECK-NOT: dtensor.all
// CHECK: return
func.func @single(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = dtensor.annotate %x layout <@one, [S(0)]> : tensor<8xf32>
  %b = dtensor.redistribute %a to <@one, [R]> : tensor<8xf32>
  %c = dtensor.redistribute %b to <@one, [P(sum)]> : tensor<8xf32>
  %d = dtensor.redistribute %c to <@one, [R]> : tensor<8xf32>
  return %d : tensor<8xf32>
}
