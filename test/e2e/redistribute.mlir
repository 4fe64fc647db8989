// REQUIRES: cpu-target
// Every redistribution kind, executed on CPU ranks over MPI and compared with
// the unsharded program (dtensor-run exits 0 only within tolerance).
// The mesh size is substituted so that each case runs on 2 and on 4 ranks.
// RUN: sed 's/NRANKS/4/g' %s > %t.4.mlir
// RUN: sed 's/NRANKS/2/g' %s > %t.2.mlir
// RUN: for f in all_gather all_gather_uneven reduce_scatter reduce_scatter_uneven all_reduce all_to_all all_to_all_uneven local_chunk partition_avg max_reduce; do \
// RUN:   timeout 120 dtensor-run %t.4.mlir -n 4 --entry $f --seed 7 | FileCheck %s --check-prefix=PASS || exit 1; \
// RUN:   timeout 120 dtensor-run %t.2.mlir -n 2 --entry $f --seed 7 | FileCheck %s --check-prefix=PASS || exit 1; \
// RUN: done
// PASS: PASS

dtensor.mesh @m shape = [NRANKS]

func.func private @all_gather(%x: tensor<8x6xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<8x6xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  return %x : tensor<8x6xf32>
}
func.func private @all_gather_uneven(%x: tensor<7x5xf64> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<7x5xf64> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  return %x : tensor<7x5xf64>
}
func.func private @reduce_scatter(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>})
    -> (tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x : tensor<8x8xf32>
}
func.func private @reduce_scatter_uneven(%x: tensor<257x3xf32> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>})
    -> (tensor<257x3xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  return %x : tensor<257x3xf32>
}
func.func private @all_reduce(%x: tensor<6x6xi64> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>})
    -> (tensor<6x6xi64> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  return %x : tensor<6x6xi64>
}
func.func private @all_to_all(%x: tensor<8x12xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<8x12xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x : tensor<8x12xf32>
}
func.func private @all_to_all_uneven(%x: tensor<6x5xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<6x5xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  return %x : tensor<6x5xf32>
}
func.func private @local_chunk(%x: tensor<6x4xi32> {dtensor.layout = #dtensor.layout<@m, [R]>})
    -> (tensor<6x4xi32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  return %x : tensor<6x4xi32>
}
func.func private @partition_avg(%x: tensor<4x4xf32> {dtensor.layout = #dtensor.layout<@m, [R]>})
    -> (tensor<4x4xf32> {dtensor.layout = #dtensor.layout<@m, [P(avg)]>}) {
  return %x : tensor<4x4xf32>
}
func.func private @max_reduce(%x: tensor<5x4xf32> {dtensor.layout = #dtensor.layout<@m, [P(max)]>})
    -> (tensor<5x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}) {
  return %x : tensor<5x4xf32>
}
