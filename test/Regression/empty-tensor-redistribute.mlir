// A global dim of size 0 (issue 26): upstream's extract_slice verifier
// rejects every static offset into a static dim of size 0 ("offset 0 is
// out-of-bounds: 0 >= 0"), even for an empty slice. Partitioning builds no
// slice or pad of a value with an empty static dim: its chunk is a
// tensor.empty of the chunk's sizes (it has no elements either). Numerics
// on CPU ranks: test/e2e/empty-tensors.mlir.
// RUN: dtensor-opt %s -split-input-file --verify-each --dtensor-spmd | FileCheck %s

// R -> S(1) of 0 x 7: the local chunk of the columns.
// CHECK-LABEL: func.func @local_chunk
// CHECK-NOT:     tensor.extract_slice
// CHECK-NOT:     tensor.pad
// CHECK:         %[[E:.*]] = tensor.empty(%{{.*}}) : tensor<0x?xf32>
// CHECK:         return %[[E]]
dtensor.mesh @m shape = [4]
func.func @local_chunk(%x: tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [R]>})
    -> (tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x : tensor<0x7xf32>
}

// -----

// P(sum) -> S(1) of 0 x 7: padded to 8 columns for the reduce_scatter,
// then the chunk of this rank.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK-NOT:     tensor.extract_slice
// CHECK-NOT:     tensor.pad
// CHECK:         %[[B:.*]] = tensor.empty() : tensor<0x8xf32>
// CHECK:         %[[S:.*]] = dtensor.reduce_scatter %[[B]] {{.*}} : tensor<0x8xf32> -> tensor<0x2xf32>
// CHECK:         tensor.empty(%{{.*}}) : tensor<0x?xf32>
dtensor.mesh @m shape = [4]
func.func @reduce_scatter(%x: tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>})
    -> (tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x : tensor<0x7xf32>
}

// -----

// S(0) -> R of 5 x 0 (rows uneven, no columns): padded to 2 rows for the
// all_gather, then the 5 rows.
// CHECK-LABEL: func.func @all_gather
// CHECK-NOT:     tensor.extract_slice
// CHECK-NOT:     tensor.pad
// CHECK:         %[[B:.*]] = tensor.empty() : tensor<2x0xf32>
// CHECK:         %[[G:.*]] = dtensor.all_gather %[[B]] {{.*}} : tensor<2x0xf32> -> tensor<8x0xf32>
// CHECK:         %[[R:.*]] = tensor.empty() : tensor<5x0xf32>
// CHECK:         return %[[R]]
dtensor.mesh @m shape = [4]
func.func @all_gather(%x: tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  return %x : tensor<5x0xf32>
}

// -----

// The K-split matmul of the issue: 0 rows, its P(sum) product returned
// S(0), S(1) and R, and transposed S(0).
// CHECK-LABEL: func.func @k_split
// CHECK-NOT:     tensor.extract_slice
// CHECK-NOT:     tensor.pad
// CHECK:         return
dtensor.mesh @m shape = [4]
func.func @k_split(%x: tensor<0x12xf32>, %w: tensor<12x8xf32>)
    -> (tensor<0x8xf32>, tensor<0x8xf32>, tensor<0x8xf32>, tensor<8x0xf32>) {
  %xs = dtensor.annotate %x layout <@m, [S(1)]> : tensor<0x12xf32>
  %ws = dtensor.annotate %w layout <@m, [S(0)]> : tensor<12x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<0x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<0x8xf32>) -> tensor<0x8xf32>
  %c = linalg.matmul ins(%xs, %ws : tensor<0x12xf32>, tensor<12x8xf32>) outs(%f : tensor<0x8xf32>) -> tensor<0x8xf32>
  %r0 = dtensor.annotate %c layout <@m, [S(0)]> : tensor<0x8xf32>
  %r1 = dtensor.annotate %c layout <@m, [S(1)]> : tensor<0x8xf32>
  %rr = dtensor.annotate %c layout <@m, [R]> : tensor<0x8xf32>
  %et = tensor.empty() : tensor<8x0xf32>
  %t = linalg.transpose ins(%c : tensor<0x8xf32>) outs(%et : tensor<8x0xf32>) permutation = [1, 0]
  %rt = dtensor.annotate %t layout <@m, [S(0)]> : tensor<8x0xf32>
  return %r0, %r1, %rr, %rt : tensor<0x8xf32>, tensor<0x8xf32>, tensor<0x8xf32>, tensor<8x0xf32>
}
