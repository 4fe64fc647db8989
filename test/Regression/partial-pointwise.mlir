// REQUIRES: cpu-target
// Issue 26, item 6: a Partial stays Partial through a pointwise op that is
// linear in it (x * c, x / c, -x of a P(sum) or P(avg) value, with c a
// constant or a replicated scalar; PyTorch's test_mul_partial and
// test_mul_div_scalar_partial: 0 collectives), and a max (min) of P(max)
// (P(min)) values stays P(max) (P(min)) (test_partial_propagation: 0).
// x + c is not linear in x: it still reduces first.
// RUN: sed 's/NRANKS/4/g' %s > %t.4.mlir
// RUN: sed 's/NRANKS/2/g' %s > %t.2.mlir
// RUN: dtensor-opt %t.4.mlir --verify-each --dtensor-spmd --dtensor-comm-report -o /dev/null | FileCheck %s --check-prefix=COMM
// RUN: dtensor-opt %t.4.mlir --verify-each --dtensor-propagate-layouts | FileCheck %s --check-prefix=LAYOUT
// Numerics on CPU ranks against the unsharded program (the S(0) results
// of 5 rows are uneven).
// RUN: for f in mul_sum div_avg neg_sum scalar_arg mul_square add_const add_scalar_arg max_named max_generic min_tensor max_replicated; do \
// RUN:   timeout 120 dtensor-run %t.4.mlir -n 4 --entry $f --seed 7 | FileCheck %s --check-prefix=EXEC || exit 1; \
// RUN:   timeout 120 dtensor-run %t.2.mlir -n 2 --entry $f --seed 8 | FileCheck %s --check-prefix=EXEC || exit 1; \
// RUN: done
// EXEC: ok
// EXEC: PASS

dtensor.mesh @m shape = [NRANKS]
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>

// x * 2.0 (a captured constant) of the P(sum) result of a K-split matmul:
// the product stays P(sum), as requested.
// COMM-LABEL: comm report for @mul_sum
// COMM-NEXT:    collective
// COMM-NEXT:    total            0
// LAYOUT-LABEL: func.func @mul_sum
// LAYOUT: linalg.generic
// LAYOUT-SAME: dtensor.layouts = [#dtensor.layout<@m, [P(sum)]>]
func.func @mul_sum(%x: tensor<5x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>},
                   %w: tensor<8x6xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P]>}) {
  %c = arith.constant 2.0 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x6xf32>) -> tensor<5x6xf32>
  %p = linalg.matmul ins(%x, %w : tensor<5x8xf32>, tensor<8x6xf32>) outs(%f : tensor<5x6xf32>) -> tensor<5x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<5x6xf32>) outs(%e : tensor<5x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<5x6xf32>
  return %y : tensor<5x6xf32>
}

// x / 2.0 (the constant inside the body) of a P(avg) value.
// COMM-LABEL: comm report for @div_avg
// COMM-NEXT:    collective
// COMM-NEXT:    total            0
// LAYOUT-LABEL: func.func @div_avg
// LAYOUT: linalg.generic
// LAYOUT-SAME: dtensor.layouts = [#dtensor.layout<@m, [P(avg)]>]
func.func @div_avg(%x: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(avg)]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(avg)]>}) {
  %e = tensor.empty() : tensor<5x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<5x6xf32>) outs(%e : tensor<5x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c = arith.constant 2.0 : f32
    %d = arith.divf %a, %c : f32
    linalg.yield %d : f32
  } -> tensor<5x6xf32>
  return %y : tensor<5x6xf32>
}

// -(x * 3.0) of a P(sum) value: a chain of linear ops.
// COMM-LABEL: comm report for @neg_sum
// COMM-NEXT:    collective
// COMM-NEXT:    total            0
// LAYOUT-LABEL: func.func @neg_sum
// LAYOUT: linalg.generic
// LAYOUT-SAME: dtensor.layouts = [#dtensor.layout<@m, [P(sum)]>]
func.func @neg_sum(%x: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P]>}) {
  %c = arith.constant 3.0 : f32
  %e = tensor.empty() : tensor<5x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<5x6xf32>) outs(%e : tensor<5x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %n = arith.negf %m : f32
    linalg.yield %n : f32
  } -> tensor<5x6xf32>
  return %y : tensor<5x6xf32>
}

// A scalar operand of the op (replicated) as the factor.
// COMM-LABEL: comm report for @scalar_arg
// COMM-NEXT:    collective
// COMM-NEXT:    total            0
// LAYOUT-LABEL: func.func @scalar_arg
// LAYOUT: linalg.generic
// LAYOUT-SAME: dtensor.layouts = [#dtensor.layout<@m, [P(sum)]>]
func.func @scalar_arg(%x: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P]>}) {
  %s = arith.constant 1.5 : f32
  %e = tensor.empty() : tensor<5x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<5x6xf32>, f32) outs(%e : tensor<5x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %b, %a : f32
    linalg.yield %m : f32
  } -> tensor<5x6xf32>
  return %y : tensor<5x6xf32>
}

// x * x is not linear in x: the matmul's partial sums are reduced before
// the product (the old rule kept P(sum) here: a wrong result).
// COMM-LABEL: comm report for @mul_square
// COMM-NEXT:    collective
// COMM-NEXT:    all_reduce       1
// COMM-NEXT:    total            1
// LAYOUT-LABEL: func.func @mul_square
// LAYOUT: dtensor.redistribute %{{.*}} from <@m, [P(sum)]> to <@m, [R]>
// LAYOUT: linalg.generic
// LAYOUT-SAME: dtensor.layouts = [#dtensor.layout<@m, [R]>]
func.func @mul_square(%x: tensor<5x8xf32> {dtensor.layout = #dtensor.layout<@m, [S(1)]>},
                      %w: tensor<8x6xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P]>}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x6xf32>) -> tensor<5x6xf32>
  %p = linalg.matmul ins(%x, %w : tensor<5x8xf32>, tensor<8x6xf32>) outs(%f : tensor<5x6xf32>) -> tensor<5x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<5x6xf32>) outs(%e : tensor<5x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<5x6xf32>
  return %y : tensor<5x6xf32>
}

// Nor is x + c, with c a captured constant or a scalar operand.
// COMM-LABEL: comm report for @add_const
// COMM-NEXT:    collective
// COMM-NEXT:    reduce_scatter   1
// COMM-NEXT:    total            1
// LAYOUT-LABEL: func.func @add_const
// LAYOUT: dtensor.redistribute %{{.*}} from <@m, [P(sum)]> to <@m, [S(0)]>
// LAYOUT-NEXT: linalg.generic
// LAYOUT-SAME: dtensor.layouts = [#dtensor.layout<@m, [S(0)]>]
func.func @add_const(%x: tensor<5x6xf32>) -> tensor<5x6xf32> {
  %p = dtensor.annotate %x layout <@m, [P]> : tensor<5x6xf32>
  %c = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<5x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<5x6xf32>) outs(%e : tensor<5x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.addf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<5x6xf32>
  %r = dtensor.annotate %y layout <@m, [S(0)]> : tensor<5x6xf32>
  return %r : tensor<5x6xf32>
}

// (The old rule kept P(sum) through x + s with s a scalar operand: the
// sum over ranks then adds s once per rank.)
// COMM-LABEL: comm report for @add_scalar_arg
// COMM-NEXT:    collective
// COMM-NEXT:    all_reduce       1
// COMM-NEXT:    total            1
// LAYOUT-LABEL: func.func @add_scalar_arg
// LAYOUT: dtensor.redistribute %{{.*}} from <@m, [P(sum)]> to <@m, [R]>
// LAYOUT: linalg.generic
// LAYOUT-SAME: dtensor.layouts = [#dtensor.layout<@m, [R]>]
func.func @add_scalar_arg(%x: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P]>}) {
  %s = arith.constant 1.5 : f32
  %e = tensor.empty() : tensor<5x6xf32>
  %y = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<5x6xf32>, f32) outs(%e : tensor<5x6xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.addf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<5x6xf32>
  return %y : tensor<5x6xf32>
}

// linalg.max of two P(max) values is P(max), where reducing each operand
// first costs two all_reduces.
// COMM-LABEL: comm report for @max_named
// COMM-NEXT:    collective
// COMM-NEXT:    total            0
// LAYOUT-LABEL: func.func @max_named
// LAYOUT: linalg.max
// LAYOUT-SAME: dtensor.layouts = [#dtensor.layout<@m, [P(max)]>]
func.func @max_named(%x: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(max)]>}, %y: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(max)]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(max)]>}) {
  %e = tensor.empty() : tensor<5x6xf32>
  %z = linalg.max ins(%x, %y : tensor<5x6xf32>, tensor<5x6xf32>) outs(%e : tensor<5x6xf32>) -> tensor<5x6xf32>
  return %z : tensor<5x6xf32>
}

// The same as a generic of arith.maxnumf.
// COMM-LABEL: comm report for @max_generic
// COMM-NEXT:    collective
// COMM-NEXT:    total            0
func.func @max_generic(%x: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(max)]>}, %y: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(max)]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(max)]>}) {
  %e = tensor.empty() : tensor<5x6xf32>
  %z = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<5x6xf32>, tensor<5x6xf32>) outs(%e : tensor<5x6xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %m = arith.maxnumf %u, %v : f32
    linalg.yield %m : f32
  } -> tensor<5x6xf32>
  return %z : tensor<5x6xf32>
}

// arith.minimumf on tensors of two P(min) values.
// COMM-LABEL: comm report for @min_tensor
// COMM-NEXT:    collective
// COMM-NEXT:    total            0
func.func @min_tensor(%x: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(min)]>}, %y: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(min)]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(min)]>}) {
  %z = arith.minimumf %x, %y : tensor<5x6xf32>
  return %z : tensor<5x6xf32>
}

// A max of a P(max) value and a replicated one (a ReLU-like clamp at a
// constant) stays P(max).
// COMM-LABEL: comm report for @max_replicated
// COMM-NEXT:    collective
// COMM-NEXT:    total            0
func.func @max_replicated(%x: tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(max)]>})
    -> (tensor<5x6xf32> {dtensor.layout = #dtensor.layout<@m, [P(max)]>}) {
  %c = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<5x6xf32>
  %z = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<5x6xf32>) outs(%e : tensor<5x6xf32>) {
  ^bb0(%u: f32, %o: f32):
    %m = arith.maximumf %u, %c : f32
    linalg.yield %m : f32
  } -> tensor<5x6xf32>
  return %z : tensor<5x6xf32>
}
