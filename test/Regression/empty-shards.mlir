// REQUIRES: cpu-target
// A tensor smaller than the mesh: 2 rows over 4 ranks, so ranks 2 and 3 hold
// 0-row shards (issue 11: they once produced an out-of-bounds
// extract_slice). Numerics against the unsharded program, also fused,
// scheduled and with a forced split.
// RUN: timeout 120 dtensor-run %s -n 4 --seed 2 | FileCheck %s
// RUN: timeout 120 dtensor-run %s -n 4 --seed 3 --fuse --overlap=default | FileCheck %s
// RUN: timeout 120 dtensor-run %s -n 4 --seed 4 --split-all-reduce=2 | FileCheck %s
// RUN: dtensor-opt %s --verify-each --dtensor-spmd | FileCheck %s --check-prefix=LOCAL
// Uneven shards are dynamic per rank: 1, 1, 0, 0 rows.
// LOCAL: func.func @f(%arg0: tensor<?x16xf32> {dtensor.global_type = tensor<2x16xf32>
// CHECK: max relative error {{.*}} ok
// CHECK: PASS

dtensor.mesh @tp shape = [4]
func.func @f(%x: tensor<2x16xf32>, %w: tensor<16x8xf32>) -> tensor<2x8xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<2x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
  %c = linalg.matmul ins(%xs, %w : tensor<2x16xf32>, tensor<16x8xf32>) outs(%f : tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = dtensor.annotate %c layout <@tp, [R]> : tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}
