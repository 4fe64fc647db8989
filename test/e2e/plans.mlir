// REQUIRES: cpu-target
// Plans that communicate only what they must (issue 15), each checked by its
// comm report on 2 and 4 ranks and numerically against the unsharded
// program on 2 and 4 CPU ranks.
// RUN: sed 's/NRANKS/2/g' %s > %t.2.mlir
// RUN: sed 's/NRANKS/4/g' %s > %t.4.mlir
// RUN: dtensor-opt %t.2.mlir --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=COMM
// RUN: dtensor-opt %t.4.mlir --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=COMM
// RUN: for f in matmul_cat softmax rmsnorm layernorm k_split_avg max_i32 int_partial_sum; do \
// RUN:   timeout 120 dtensor-run %t.2.mlir -n 2 --entry $f | FileCheck %s || exit 1; \
// RUN:   timeout 120 dtensor-run %t.4.mlir -n 4 --entry $f | FileCheck %s || exit 1; \
// RUN: done
// RUN: timeout 300 dtensor-run %t.4.mlir -n 4 --entry softmax_2d | FileCheck %s
// CHECK: max relative error {{.*}} ok
// CHECK: PASS

dtensor.mesh @m shape = [NRANKS]

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>

// The seed's matmul/cat/all_reduce: both K-split products are P(sum), the
// Partial flows through the concat, and one all_reduce sums both halves.
// COMM-LABEL: comm report for @matmul_cat
// COMM-NEXT: collective
// COMM-NEXT: all_reduce 1 0 2048
// COMM-NEXT: total 1 0 2048
func.func private @matmul_cat(
    %a: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>},
    %b: tensor<32x16xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>},
    %c: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>},
    %d: tensor<32x16xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<32x16xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %z = arith.constant dense<0.0> : tensor<16x16xf32>
  %x = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x16xf32>) outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = linalg.matmul ins(%c, %d : tensor<16x32xf32>, tensor<32x16xf32>) outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
  %cat = tensor.concat dim(0) %x, %y : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<32x16xf32>
  return %cat : tensor<32x16xf32>
}

// Softmax over the sharded dim: the decomposition's row maximum and row sum
// are the only values that move (two all_reduces of 64 floats), not the
// 128x8192 input.
// COMM-LABEL: comm report for @softmax
// COMM-NEXT: collective
// COMM-NEXT: all_reduce 2 0 1024
// COMM-NEXT: total 2 0 1024
func.func private @softmax(%x: tensor<128x8192xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<128x8192xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  %e = tensor.empty() : tensor<128x8192xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<128x8192xf32>) outs(%e : tensor<128x8192xf32>) -> tensor<128x8192xf32>
  return %s : tensor<128x8192xf32>
}

// RMSNorm over the sharded hidden dim: one all_reduce of the row sums of
// squares.
// COMM-LABEL: comm report for @rmsnorm
// COMM-NEXT: collective
// COMM-NEXT: all_reduce 1 0 512
// COMM-NEXT: total 1 0 512
func.func private @rmsnorm(
    %x: tensor<128x8192xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>},
    %w: tensor<8192xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>, dtensor.param})
    -> (tensor<128x8192xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<128x8192xf32>) outs(%z : tensor<128xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  %e2 = tensor.empty() : tensor<128x8192xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss, %w : tensor<128x8192xf32>, tensor<128xf32>, tensor<8192xf32>) outs(%e2 : tensor<128x8192xf32>) {
  ^bb0(%a: f32, %s: f32, %g: f32, %o: f32):
    %n = arith.constant 8192.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %ms = arith.divf %s, %n : f32
    %me = arith.addf %ms, %eps : f32
    %r = math.rsqrt %me : f32
    %v = arith.mulf %a, %r : f32
    %out = arith.mulf %v, %g : f32
    linalg.yield %out : f32
  } -> tensor<128x8192xf32>
  return %y : tensor<128x8192xf32>
}

// LayerNorm over the sharded hidden dim (two passes: mean, then variance):
// two all_reduces of row statistics.
// COMM-LABEL: comm report for @layernorm
// COMM-NEXT: collective
// COMM-NEXT: all_reduce 2 0 1024
// COMM-NEXT: total 2 0 1024
func.func private @layernorm(
    %x: tensor<128x8192xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>},
    %gamma: tensor<8192xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>, dtensor.param},
    %beta: tensor<8192xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>, dtensor.param})
    -> (tensor<128x8192xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<128xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e1 : tensor<128xf32>) -> tensor<128xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<128x8192xf32>) outs(%z : tensor<128xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  %e2 = tensor.empty() : tensor<128x8192xf32>
  %cen = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<128x8192xf32>, tensor<128xf32>) outs(%e2 : tensor<128x8192xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %n = arith.constant 8192.0 : f32
    %mean = arith.divf %s, %n : f32
    %d = arith.subf %a, %mean : f32
    linalg.yield %d : f32
  } -> tensor<128x8192xf32>
  %var = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%cen : tensor<128x8192xf32>) outs(%z : tensor<128xf32>) {
  ^bb0(%d: f32, %acc: f32):
    %sq = arith.mulf %d, %d : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%cen, %var, %gamma, %beta : tensor<128x8192xf32>, tensor<128xf32>, tensor<8192xf32>, tensor<8192xf32>) outs(%e2 : tensor<128x8192xf32>) {
  ^bb0(%d: f32, %v: f32, %g: f32, %b: f32, %o: f32):
    %n = arith.constant 8192.0 : f32
    %eps = arith.constant 1.0e-5 : f32
    %vn = arith.divf %v, %n : f32
    %ve = arith.addf %vn, %eps : f32
    %r = math.rsqrt %ve : f32
    %t = arith.mulf %d, %r : f32
    %tg = arith.mulf %t, %g : f32
    %out = arith.addf %tg, %b : f32
    linalg.yield %out : f32
  } -> tensor<128x8192xf32>
  return %y : tensor<128x8192xf32>
}

// A K-split matmul requested as P(avg): each rank scales its P(sum) part by
// the group size, nothing moves (both operands stay sharded).
// COMM-LABEL: comm report for @k_split_avg
// COMM-NEXT: collective
// COMM-NEXT: total 0 0 0
func.func private @k_split_avg(
    %a: tensor<16x64xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>},
    %b: tensor<64x16xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<16x16xf32> {dtensor.layout = #dtensor.layout<@m, [P(avg)]>}) {
  %z = arith.constant dense<0.0> : tensor<16x16xf32>
  %x = linalg.matmul ins(%a, %b : tensor<16x64xf32>, tensor<64x16xf32>) outs(%z : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %x : tensor<16x16xf32>
}

// An i32 max reduction over the sharded dim: P(max), one all_reduce of the
// row maxima instead of gathering the input.
// COMM-LABEL: comm report for @max_i32
// COMM-NEXT: collective
// COMM-NEXT: all_reduce 1 0 256
// COMM-NEXT: total 1 0 256
func.func private @max_i32(%x: tensor<64x2048xi32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>})
    -> (tensor<64xi32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  %init = arith.constant dense<-2147483648> : tensor<64xi32>
  %r = linalg.reduce ins(%x : tensor<64x2048xi32>) outs(%init : tensor<64xi32>) dimensions = [1]
    (%a: i32, %b: i32) {
      %m = arith.maxsi %a, %b : i32
      linalg.yield %m : i32
    }
  return %r : tensor<64xi32>
}

// Integer R -> P(sum): the replicated operand of the sum stays whole on
// coordinate 0 and is zero elsewhere (exact), so nothing moves.
// COMM-LABEL: comm report for @int_partial_sum
// COMM-NEXT: collective
// COMM-NEXT: total 0 0 0
func.func private @int_partial_sum(
    %x: tensor<8x16xi32> {dtensor.layout = #dtensor.layout<@m, [R]>},
    %y: tensor<8x16xi32> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>})
    -> (tensor<8x16xi32> {dtensor.layout = #dtensor.layout<@m, [P(sum)]>}) {
  %s = arith.addi %x, %y : tensor<8x16xi32>
  return %s : tensor<8x16xi32>
}

// On a 2-D mesh, batch rows over one axis and the softmax dim over the
// other: the statistics are all-reduced over the second axis only (4 ranks).
// COMM-LABEL: comm report for @softmax_2d
// COMM-NEXT: collective
// COMM-NEXT: all_reduce 2 0 1024
// COMM-NEXT: total 2 0 1024
dtensor.mesh @m22 shape = [2, 2]
func.func private @softmax_2d(%x: tensor<4x64x8192xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), S(2)]>})
    -> (tensor<4x64x8192xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), S(2)]>}) {
  %e = tensor.empty() : tensor<4x64x8192xf32>
  %s = linalg.softmax dimension(2) ins(%x : tensor<4x64x8192xf32>) outs(%e : tensor<4x64x8192xf32>) -> tensor<4x64x8192xf32>
  return %s : tensor<4x64x8192xf32>
}
