// REQUIRES: cpu-target
// Row-sharded embedding tables with fewer rows than torch.chunk gives every
// rank: some rank holds no rows at all, so its local table is empty and the
// lookup must not read it (the partitioner pads it to one zero row; an
// empty table reaches the compiled code as a null buffer, so a read crashes
// the rank). Executed on CPU ranks and compared with the unsharded program.
// RUN: sed 's/NRANKS/4/g' %s > %t.4.mlir
// RUN: sed 's/NRANKS/2/g' %s > %t.2.mlir
// RUN: for f in rows_3 rows_6_i32; do \
// RUN:   timeout 120 dtensor-run %t.4.mlir -n 4 --entry $f --seed 9 | FileCheck %s || exit 1; \
// RUN:   timeout 120 dtensor-run %t.2.mlir -n 2 --entry $f --seed 9 | FileCheck %s || exit 1; \
// RUN: done
// RUN: timeout 120 dtensor-run %t.4.mlir -n 4 --entry rows_3_nested --seed 9 | FileCheck %s
// CHECK: max relative error {{.*}} ok
// CHECK: PASS

dtensor.mesh @m shape = [NRANKS]
dtensor.mesh @m2 shape = [2, 2]

// 3 rows over 4 ranks: 1, 1, 1, 0 (over 2: 2, 1).
func.func private @rows_3(
    %table: tensor<3x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>,
                             dtensor.param = "emb.weight"},
    %ids: tensor<5x1xi64> {dtensor.layout = #dtensor.layout<@m, [R]>})
    -> (tensor<5x8xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %g = tensor.gather %table[%ids] gather_dims([0])
      : (tensor<3x8xf32>, tensor<5x1xi64>) -> tensor<5x8xf32>
  return %g : tensor<5x8xf32>
}

// 6 rows over 4 ranks: 2, 2, 2, 0; i32 ids of a batch of sequences.
func.func private @rows_6_i32(
    %table: tensor<6x4xf64> {dtensor.layout = #dtensor.layout<@m, [S(0)]>,
                             dtensor.param = "emb.weight"},
    %ids: tensor<2x3x1xi32> {dtensor.layout = #dtensor.layout<@m, [R]>})
    -> (tensor<2x3x4xf64> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %g = tensor.gather %table[%ids] gather_dims([0])
      : (tensor<6x4xf64>, tensor<2x3x1xi32>) -> tensor<2x3x4xf64>
  return %g : tensor<2x3x4xf64>
}

// 3 rows split over both axes of a 2x2 mesh: 2 + 1, then 1 + 1 and 1 + 0.
func.func private @rows_3_nested(
    %table: tensor<3x8xf32> {dtensor.layout = #dtensor.layout<@m2, [S(0), S(0)]>,
                             dtensor.param = "emb.weight"},
    %ids: tensor<4x1xi64> {dtensor.layout = #dtensor.layout<@m2, [R, R]>})
    -> (tensor<4x8xf32> {dtensor.layout = #dtensor.layout<@m2, [R, R]>}) {
  %g = tensor.gather %table[%ids] gather_dims([0])
      : (tensor<3x8xf32>, tensor<4x1xi64>) -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
