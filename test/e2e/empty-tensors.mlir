// REQUIRES: cpu-target
// Tensors with a global dim of size 0 (issue 26) compile and run: PyTorch
// allows them. Upstream's slice verifiers reject every static offset into
// a static dim of size 0, so partitioning builds no slice or pad of an
// empty value (it once emitted "offset 0 is out-of-bounds: 0 >= 0").
// Each entry is compared with the unsharded program on 2 and 4 CPU ranks.
// RUN: sed 's/NRANKS/4/g' %s > %t.4.mlir
// RUN: sed 's/NRANKS/2/g' %s > %t.2.mlir
// RUN: for f in k_split uneven_next_to_empty rows_sharded empty_k \
// RUN:     from_r_0x8 from_s0_0x8 from_s1_0x8 from_p_0x8 from_r_0x7 from_s0_0x7 from_s1_0x7 from_p_0x7 from_r_8x0 from_s0_8x0 from_s1_8x0 from_p_8x0 from_r_5x0 from_s0_5x0 from_s1_5x0 from_p_5x0; do \
// RUN:   timeout 120 dtensor-run %t.4.mlir -n 4 --entry $f --seed 5 | FileCheck %s || exit 1; \
// RUN:   timeout 120 dtensor-run %t.2.mlir -n 2 --entry $f --seed 5 | FileCheck %s || exit 1; \
// RUN: done
// RUN: timeout 120 dtensor-run %t.4.mlir -n 4 --entry mesh2d --seed 5 | FileCheck %s
// Fused, scheduled and split (both decline a matmul with an empty dim):
// RUN: for f in k_split rows_sharded empty_k; do \
// RUN:   timeout 120 dtensor-run %t.4.mlir -n 4 --entry $f --seed 6 --fuse --split-all-reduce=2 --overlap=default | FileCheck %s || exit 1; \
// RUN: done
// CHECK-NOT: FAIL
// CHECK: PASS

dtensor.mesh @m shape = [NRANKS]
dtensor.mesh @g shape = [2, 2]

// The issue's case: 0 rows, K sharded; the P(sum) product returned in
// every layout, and transposed.
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

// An uneven dim next to the empty one: 7 columns over 4 ranks are padded
// to 8 for the reduce_scatter and the all_gather.
func.func @uneven_next_to_empty(%x: tensor<0x12xf32>, %w: tensor<12x7xf32>)
    -> (tensor<0x7xf32>, tensor<0x7xf32>, tensor<7x0xf32>) {
  %xs = dtensor.annotate %x layout <@m, [S(1)]> : tensor<0x12xf32>
  %ws = dtensor.annotate %w layout <@m, [S(0)]> : tensor<12x7xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<0x7xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<0x7xf32>) -> tensor<0x7xf32>
  %c = linalg.matmul ins(%xs, %ws : tensor<0x12xf32>, tensor<12x7xf32>) outs(%f : tensor<0x7xf32>) -> tensor<0x7xf32>
  %r1 = dtensor.annotate %c layout <@m, [S(1)]> : tensor<0x7xf32>
  %rr = dtensor.annotate %r1 layout <@m, [R]> : tensor<0x7xf32>
  %et = tensor.empty() : tensor<7x0xf32>
  %t = linalg.transpose ins(%r1 : tensor<0x7xf32>) outs(%et : tensor<7x0xf32>) permutation = [1, 0]
  %rt = dtensor.annotate %t layout <@m, [S(0)]> : tensor<7x0xf32>
  return %r1, %rr, %rt : tensor<0x7xf32>, tensor<0x7xf32>, tensor<7x0xf32>
}

// 0 rows sharded S(0) into a matmul, gathered back.
func.func @rows_sharded(%x: tensor<0x12xf32>, %w: tensor<12x8xf32>) -> (tensor<0x8xf32>, tensor<0x8xf32>) {
  %xs = dtensor.annotate %x layout <@m, [S(0)]> : tensor<0x12xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<0x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<0x8xf32>) -> tensor<0x8xf32>
  %c = linalg.matmul ins(%xs, %w : tensor<0x12xf32>, tensor<12x8xf32>) outs(%f : tensor<0x8xf32>) -> tensor<0x8xf32>
  %r = dtensor.annotate %c layout <@m, [R]> : tensor<0x8xf32>
  %s = dtensor.annotate %c layout <@m, [S(1)]> : tensor<0x8xf32>
  return %r, %s : tensor<0x8xf32>, tensor<0x8xf32>
}

// A contraction dim of 0: the product is all zeros, in every layout.
func.func @empty_k(%x: tensor<6x0xf32>, %w: tensor<0x8xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>) {
  %xs = dtensor.annotate %x layout <@m, [S(1)]> : tensor<6x0xf32>
  %ws = dtensor.annotate %w layout <@m, [S(0)]> : tensor<0x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6x8xf32>) -> tensor<6x8xf32>
  %c = linalg.matmul ins(%xs, %ws : tensor<6x0xf32>, tensor<0x8xf32>) outs(%f : tensor<6x8xf32>) -> tensor<6x8xf32>
  %r = dtensor.annotate %c layout <@m, [R]> : tensor<6x8xf32>
  %s = dtensor.annotate %c layout <@m, [S(0)]> : tensor<6x8xf32>
  return %r, %s : tensor<6x8xf32>, tensor<6x8xf32>
}

// The empty dim not sharded, the other sharded on a 2-D mesh, with a
// pointwise op between the redistributions.
func.func @mesh2d(%x: tensor<5x0xf32>) -> (tensor<5x0xf32>, tensor<5x0xf32>) {
  %xs = dtensor.annotate %x layout <@g, [S(0), S(1)]> : tensor<5x0xf32>
  %e = tensor.empty() : tensor<5x0xf32>
  %y = linalg.exp ins(%xs : tensor<5x0xf32>) outs(%e : tensor<5x0xf32>) -> tensor<5x0xf32>
  %r = dtensor.annotate %y layout <@g, [R, S(0)]> : tensor<5x0xf32>
  %t = dtensor.annotate %y layout <@g, [S(1), S(0)]> : tensor<5x0xf32>
  return %r, %t : tensor<5x0xf32>, tensor<5x0xf32>
}

// Each source layout of an empty value returned in every layout: 0 rows
// (columns even or not), 0 columns (rows even or not).
func.func private @from_r_0x8(%x: tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [R]>})
    -> (tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<0x8xf32>, tensor<0x8xf32>, tensor<0x8xf32>
}
func.func private @from_s0_0x8(%x: tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<0x8xf32>, tensor<0x8xf32>, tensor<0x8xf32>
}
func.func private @from_s1_0x8(%x: tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<0x8xf32>, tensor<0x8xf32>, tensor<0x8xf32>
}
func.func private @from_p_0x8(%x: tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>})
    -> (tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<0x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<0x8xf32>, tensor<0x8xf32>, tensor<0x8xf32>
}
func.func private @from_r_0x7(%x: tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [R]>})
    -> (tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<0x7xf32>, tensor<0x7xf32>, tensor<0x7xf32>
}
func.func private @from_s0_0x7(%x: tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<0x7xf32>, tensor<0x7xf32>, tensor<0x7xf32>
}
func.func private @from_s1_0x7(%x: tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<0x7xf32>, tensor<0x7xf32>, tensor<0x7xf32>
}
func.func private @from_p_0x7(%x: tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>})
    -> (tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<0x7xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<0x7xf32>, tensor<0x7xf32>, tensor<0x7xf32>
}
func.func private @from_r_8x0(%x: tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>})
    -> (tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<8x0xf32>, tensor<8x0xf32>, tensor<8x0xf32>
}
func.func private @from_s0_8x0(%x: tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<8x0xf32>, tensor<8x0xf32>, tensor<8x0xf32>
}
func.func private @from_s1_8x0(%x: tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<8x0xf32>, tensor<8x0xf32>, tensor<8x0xf32>
}
func.func private @from_p_8x0(%x: tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>})
    -> (tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<8x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<8x0xf32>, tensor<8x0xf32>, tensor<8x0xf32>
}
func.func private @from_r_5x0(%x: tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>})
    -> (tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<5x0xf32>, tensor<5x0xf32>, tensor<5x0xf32>
}
func.func private @from_s0_5x0(%x: tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<5x0xf32>, tensor<5x0xf32>, tensor<5x0xf32>
}
func.func private @from_s1_5x0(%x: tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<5x0xf32>, tensor<5x0xf32>, tensor<5x0xf32>
}
func.func private @from_p_5x0(%x: tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>})
    -> (tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}, tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>}, tensor<5x0xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  return %x, %x, %x : tensor<5x0xf32>, tensor<5x0xf32>, tensor<5x0xf32>
}
