// RUN: split-file %s %t
// RUN: dtensor-opt %t/rules.mlir -split-input-file --dtensor-propagate-layouts | FileCheck %t/rules.mlir
// RUN: dtensor-opt %t/programs.mlir -split-input-file --dtensor-propagate-layouts | FileCheck %t/programs.mlir
// RUN: dtensor-opt %t/programs.mlir -split-input-file --dtensor-spmd | FileCheck %t/programs.mlir --check-prefix=SPMD
// RUN: dtensor-opt %t/errors.mlir -split-input-file --dtensor-propagate-layouts -verify-diagnostics -o /dev/null


// Propagation gives every tensor value a layout: arguments and results get
// `dtensor.layout`, op results `dtensor.layouts`, annotations become
// redistributions where the layouts differ. Each op takes the sharding
// strategy whose redistributions cost least (its operands', and with one op
// of lookahead its results'); created values (empty, splat constants,
// fills) take the layout their consumer asks for.

//--- rules.mlir

// One rule per op kind.

dtensor.mesh @tp shape = [4]

// Routed matmul: tokens and experts sharded along the same mesh axis is
// one strategy (expert parallelism): the expert weights stay where they
// are, no redistribution; the result is sharded by tokens.
// CHECK-LABEL: func.func @routed_matmul_experts
// CHECK-NOT: dtensor.redistribute
// CHECK: dtensor.routed_matmul {{.*}} {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NOT: dtensor.redistribute
// CHECK: return
func.func @routed_matmul_experts(%x: tensor<8x6xf32>, %ids: tensor<8x2xi64>, %w: tensor<4x6x5xf32> {dtensor.param = "experts"}) -> tensor<8x2x5xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x6xf32>
  %is = dtensor.annotate %ids layout <@tp, [S(0)]> : tensor<8x2xi64>
  %ws = dtensor.annotate %w layout <@tp, [S(0)]> : tensor<4x6x5xf32>
  %y = dtensor.routed_matmul %xs, %is, %ws : tensor<8x6xf32>, tensor<8x2xi64>, tensor<4x6x5xf32> -> tensor<8x2x5xf32>
  return %y : tensor<8x2x5xf32>
}

// Routed matmul with replicated experts and a sharded hidden dim (x S(1),
// w S(1)): the contraction is split, the result Partial(sum).
// CHECK-LABEL: func.func @routed_matmul_hidden
// CHECK: dtensor.routed_matmul {{.*}} {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
func.func @routed_matmul_hidden(%x: tensor<8x8xf32>, %ids: tensor<8x1xi32>, %w: tensor<4x8x5xf32>) -> tensor<8x1x5xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x8xf32>
  %ws = dtensor.annotate %w layout <@tp, [S(1)]> : tensor<4x8x5xf32>
  %y = dtensor.routed_matmul %xs, %ids, %ws : tensor<8x8xf32>, tensor<8x1xi32>, tensor<4x8x5xf32> -> tensor<8x1x5xf32>
  return %y : tensor<8x1x5xf32>
}

// Row-sharded A: the result is row-sharded; the unannotated B is
// Replicate; the zero fill and its empty take the consumer's layout.
// CHECK-LABEL: func.func @matmul_rows
// CHECK-SAME: (%[[A:[^:]*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
// CHECK-SAME: %[[B:[^:]*]]: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-SAME: -> (tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: %[[E:.*]] = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<8x32xf32>
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[F:.*]] = linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} ins(%[[Z]] : f32) outs(%[[E]] : tensor<8x32xf32>)
// CHECK-NEXT: %[[M:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} ins(%[[A]], %[[B]] : {{.*}}) outs(%[[F]] : tensor<8x32xf32>)
// CHECK-NEXT: return %[[M]]
func.func @matmul_rows(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %as = dtensor.annotate %a layout <@tp, [S(0)]> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul ins(%as, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %m : tensor<8x32xf32>
}

// Column-sharded B (an argument layout): the result is column-sharded.
// CHECK-LABEL: func.func @matmul_columns
// CHECK-SAME: (%[[A:[^:]*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>},
// CHECK-SAME: %[[B:[^:]*]]: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-SAME: -> (tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: arith.constant
// CHECK-NEXT: linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: %[[M:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} ins(%[[A]], %[[B]] :
// CHECK-NEXT: return %[[M]]
func.func @matmul_columns(%a: tensor<8x16xf32>, %b: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<8x32xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %m : tensor<8x32xf32>
}

// K-sharded A and B: the result is Partial(sum), and so is its zero init.
// CHECK-LABEL: func.func @matmul_k
// CHECK-SAME: (%[[A:[^:]*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
// CHECK-SAME: %[[B:[^:]*]]: tensor<16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-SAME: -> (tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
// CHECK-NEXT: tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: arith.constant
// CHECK-NEXT: linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: %[[M:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%[[A]], %[[B]] :
// CHECK-NEXT: return %[[M]]
func.func @matmul_k(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %as = dtensor.annotate %a layout <@tp, [S(1)]> : tensor<8x16xf32>
  %bs = dtensor.annotate %b layout <@tp, [S(0)]> : tensor<16x32xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul ins(%as, %bs : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %m : tensor<8x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Batch-sharded operands: a batch-sharded result.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-SAME: -> (tensor<4x8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NEXT: %[[M:.*]] = linalg.batch_matmul {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} ins(%arg0, %arg1 :
// CHECK-NEXT: return %[[M]]
func.func @batch_matmul(%a: tensor<4x8x16xf32>, %b: tensor<4x16x32xf32>) -> tensor<4x8x32xf32> {
  %as = dtensor.annotate %a layout <@tp, [S(0)]> : tensor<4x8x16xf32>
  %bs = dtensor.annotate %b layout <@tp, [S(0)]> : tensor<4x16x32xf32>
  %e = tensor.empty() : tensor<4x8x32xf32>
  %m = linalg.batch_matmul ins(%as, %bs : tensor<4x8x16xf32>, tensor<4x16x32xf32>) outs(%e : tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  return %m : tensor<4x8x32xf32>
}

// Sharded contraction dim: Partial(sum), with a zero splat init.
// CHECK-LABEL: func.func @batch_matmul_k
// CHECK-SAME: (%{{[^:]*}}: tensor<4x8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(2)]>},
// CHECK-SAME: %{{[^:]*}}: tensor<4x16x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-SAME: -> (tensor<4x8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
// CHECK-NEXT: arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} dense<0.000000e+00> : tensor<4x8x32xf32>
// CHECK-NEXT: %[[M:.*]] = linalg.batch_matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%arg0, %arg1 :
// CHECK-NEXT: return %[[M]]
func.func @batch_matmul_k(%a: tensor<4x8x16xf32>, %b: tensor<4x16x32xf32>) -> tensor<4x8x32xf32> {
  %as = dtensor.annotate %a layout <@tp, [S(2)]> : tensor<4x8x16xf32>
  %bs = dtensor.annotate %b layout <@tp, [S(1)]> : tensor<4x16x32xf32>
  %z = arith.constant dense<0.0> : tensor<4x8x32xf32>
  %m = linalg.batch_matmul ins(%as, %bs : tensor<4x8x16xf32>, tensor<4x16x32xf32>) outs(%z : tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  return %m : tensor<4x8x32xf32>
}

// -----

dtensor.mesh @tp shape = [4]
#id = affine_map<(i, j) -> (i, j)>

// An elementwise generic keeps its operands' shard.
// CHECK-LABEL: func.func @elementwise_generic
// CHECK-SAME: -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[E:.*]] = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: %[[G:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}}) outs(%[[E]] : tensor<8x16xf32>) attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK: return %[[G]]
func.func @elementwise_generic(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x16xf32>
  %ys = dtensor.annotate %y layout <@tp, [S(1)]> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
    ins(%xs, %ys : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %t = math.tanh %m : f32
      linalg.yield %t : f32
    } -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A sharded reduction dim leaves the result Partial with the combiner's
// reduction: sum, max, min (linalg.reduce and linalg.generic alike).
// CHECK-LABEL: func.func @reduce_sum
// CHECK-SAME: -> (tensor<8xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
// CHECK-NEXT: tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: arith.constant 0.0
// CHECK-NEXT: linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: linalg.reduce ins(%arg0 : tensor<8x16xf32>) {{.*}} dimensions = [1] {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
func.func @reduce_sum(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.reduce ins(%xs : tensor<8x16xf32>) outs(%f : tensor<8xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  return %r : tensor<8xf32>
}

// A -inf init is a valid Partial(max) start on every rank.
// CHECK-LABEL: func.func @reduce_max
// CHECK-SAME: -> (tensor<8xf32> {dtensor.layout = #dtensor.layout<@tp, [P(max)]>})
// CHECK-NEXT: arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [P(max)]>]} dense<0xFF800000> : tensor<8xf32>
// CHECK-NEXT: linalg.reduce ins(%arg0 : tensor<8x16xf32>) {{.*}} dimensions = [1] {dtensor.layouts = [#dtensor.layout<@tp, [P(max)]>]}
func.func @reduce_max(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x16xf32>
  %init = arith.constant dense<0xFF800000> : tensor<8xf32>
  %r = linalg.reduce ins(%xs : tensor<8x16xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %m = arith.maximumf %a, %acc : f32
      linalg.yield %m : f32
    }
  return %r : tensor<8xf32>
}

// CHECK-LABEL: func.func @reduce_min_generic
// CHECK-SAME: -> (tensor<8xi32> {dtensor.layout = #dtensor.layout<@tp, [P(min)]>})
// CHECK-NEXT: arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [P(min)]>]} dense<2147483647> : tensor<8xi32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%arg0 : tensor<8x16xi32>) {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [P(min)]>]}
func.func @reduce_min_generic(%x: tensor<8x16xi32>) -> tensor<8xi32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x16xi32>
  %init = arith.constant dense<2147483647> : tensor<8xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
    ins(%xs : tensor<8x16xi32>) outs(%init : tensor<8xi32>) {
    ^bb0(%a: i32, %acc: i32):
      %m = arith.minsi %a, %acc : i32
      linalg.yield %m : i32
    } -> tensor<8xi32>
  return %r : tensor<8xi32>
}

// Reducing an unsharded dim keeps the other dim's shard.
// CHECK-LABEL: func.func @reduce_unsharded_dim
// CHECK-SAME: -> (tensor<8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK: linalg.reduce ins(%arg0 : tensor<8x16xf32>) {{.*}} {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
func.func @reduce_unsharded_dim(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.reduce ins(%xs : tensor<8x16xf32>) outs(%f : tensor<8xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  return %r : tensor<8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A transpose moves the shard with its dim.
// CHECK-LABEL: func.func @transpose
// CHECK-SAME: -> (tensor<16x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[E:.*]] = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} : tensor<16x8xf32>
// CHECK-NEXT: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<8x16xf32>) outs(%[[E]] : tensor<16x8xf32>) permutation = [1, 0] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: return %[[T]]
func.func @transpose(%x: tensor<8x16xf32>) -> tensor<16x8xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%xs : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  return %t : tensor<16x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Reshapes: the first dim of a group carries the group's shard.
// CHECK-LABEL: func.func @reshapes
// CHECK-SAME: -> (tensor<16x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<8x4x4xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[A:.*]] = tensor.expand_shape %arg0 {{.*}} {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<16x8xf32> into tensor<4x4x8xf32>
// CHECK-NEXT: %[[B:.*]] = tensor.collapse_shape %[[A]] {{.*}} {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<4x4x8xf32> into tensor<16x8xf32>
// CHECK-NEXT: %[[C:.*]] = tensor.expand_shape %arg1 {{.*}} {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} : tensor<8x16xf32> into tensor<8x4x4xf32>
// CHECK-NEXT: return %[[B]], %[[C]]
func.func @reshapes(%x: tensor<16x8xf32>, %y: tensor<8x16xf32>) -> (tensor<16x8xf32>, tensor<8x4x4xf32>) {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<16x8xf32>
  %a = tensor.expand_shape %xs [[0, 1], [2]] output_shape [4, 4, 8] : tensor<16x8xf32> into tensor<4x4x8xf32>
  %b = tensor.collapse_shape %a [[0, 1], [2]] : tensor<4x4x8xf32> into tensor<16x8xf32>
  %ys = dtensor.annotate %y layout <@tp, [S(1)]> : tensor<8x16xf32>
  %c = tensor.expand_shape %ys [[0], [1, 2]] output_shape [8, 4, 4] : tensor<8x16xf32> into tensor<8x4x4xf32>
  return %b, %c : tensor<16x8xf32>, tensor<8x4x4xf32>
}

// A shard on the inner dim of a collapsed group is moved first.
// CHECK-LABEL: func.func @collapse_inner_dim
// CHECK-SAME: -> (tensor<16x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %arg0 from <@tp, [S(1)]> to <@tp, [S(0)]> : tensor<4x4x8xf32>
// CHECK-NEXT: %[[B:.*]] = tensor.collapse_shape %[[R]] {{.*}} {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NEXT: return %[[B]]
func.func @collapse_inner_dim(%x: tensor<4x4x8xf32>) -> tensor<16x8xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<4x4x8xf32>
  %b = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<4x4x8xf32> into tensor<16x8xf32>
  return %b : tensor<16x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A slice of the unsharded dim keeps the shard; a slice of the sharded dim
// needs it elsewhere first.
// CHECK-LABEL: func.func @slices
// CHECK-SAME: -> (tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<4x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[A:.*]] = tensor.extract_slice %arg0[0, 2] [8, 4] [1, 1] {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %arg0 from <@tp, [S(0)]> to <@tp, [S(1)]> : tensor<8x16xf32>
// CHECK-NEXT: %[[B:.*]] = tensor.extract_slice %[[R]][2, 0] [4, 16] [1, 1] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @slices(%x: tensor<8x16xf32>) -> (tensor<8x4xf32>, tensor<4x16xf32>) {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
  %a = tensor.extract_slice %xs[0, 2] [8, 4] [1, 1] : tensor<8x16xf32> to tensor<8x4xf32>
  %b = tensor.extract_slice %xs[2, 0] [4, 16] [1, 1] : tensor<8x16xf32> to tensor<4x16xf32>
  return %a, %b : tensor<8x4xf32>, tensor<4x16xf32>
}

// A rank-reducing slice that drops the sharded dim: the shard cannot stay
// on a dim the result does not have (it would claim a Replicate result).
// CHECK-LABEL: func.func @slice_dropping_sharded_dim
// CHECK-SAME: -> (tensor<16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %arg0 from <@tp, [S(0)]> to <@tp, [S(1)]> : tensor<1x16xf32>
// CHECK-NEXT: %[[A:.*]] = tensor.extract_slice %[[R]][0, 0] [1, 16] [1, 1] {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<1x16xf32> to tensor<16xf32>
// CHECK-NEXT: return %[[A]]
func.func @slice_dropping_sharded_dim(%x: tensor<1x16xf32>) -> tensor<16xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<1x16xf32>
  %a = tensor.extract_slice %xs[0, 0] [1, 16] [1, 1] : tensor<1x16xf32> to tensor<16xf32>
  return %a : tensor<16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Concatenating along the unsharded dim keeps the shard; along the sharded
// dim both operands move.
// CHECK-LABEL: func.func @concat
// CHECK-SAME: -> (tensor<8x32xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<16x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[A:.*]] = tensor.concat dim(1) %arg0, %arg1 {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NEXT: %[[X:.*]] = dtensor.redistribute %arg0 from <@tp, [S(0)]> to <@tp, [S(1)]>
// CHECK-NEXT: %[[Y:.*]] = dtensor.redistribute %arg1 from <@tp, [S(0)]> to <@tp, [S(1)]>
// CHECK-NEXT: %[[B:.*]] = tensor.concat dim(0) %[[X]], %[[Y]] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @concat(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> (tensor<8x32xf32>, tensor<16x16xf32>) {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
  %ys = dtensor.annotate %y layout <@tp, [S(0)]> : tensor<8x16xf32>
  %a = tensor.concat dim(1) %xs, %ys : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x32xf32>
  %b = tensor.concat dim(0) %xs, %ys : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  return %a, %b : tensor<8x32xf32>, tensor<16x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Padding the unsharded dim keeps the shard; padding the sharded one needs
// it elsewhere.
// CHECK-LABEL: func.func @pad
// CHECK-SAME: -> (tensor<8x20xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<10x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK: %[[A:.*]] = tensor.pad %arg0 low[0, 2] high[0, 2]
// CHECK: } {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<8x16xf32> to tensor<8x20xf32>
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %arg0 from <@tp, [S(0)]> to <@tp, [S(1)]>
// CHECK-NEXT: %[[B:.*]] = tensor.pad %[[R]] low[1, 0] high[1, 0]
// CHECK: } {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} : tensor<8x16xf32> to tensor<10x16xf32>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @pad(%x: tensor<8x16xf32>) -> (tensor<8x20xf32>, tensor<10x16xf32>) {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %a = tensor.pad %xs low[0, 2] high[0, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x16xf32> to tensor<8x20xf32>
  %b = tensor.pad %xs low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x16xf32> to tensor<10x16xf32>
  return %a, %b : tensor<8x20xf32>, tensor<10x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// arith and math ops on tensors: the unannotated (Replicate) operand takes
// its local chunk, everything stays S(1).
// CHECK-LABEL: func.func @arith_math
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>},
// CHECK-SAME: %[[Y:[^:]*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-NEXT: %[[YS:.*]] = dtensor.redistribute %[[Y]] from <@tp, [R]> to <@tp, [S(1)]>
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[X]], %[[YS]] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: %[[B:.*]] = math.exp %[[A]] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: %[[C:.*]] = arith.mulf %[[B]], %[[A]] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: %[[D:.*]] = arith.negf %[[C]] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: return %[[D]]
func.func @arith_math(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x16xf32>
  %a = arith.addf %xs, %y : tensor<8x16xf32>
  %b = math.exp %a : tensor<8x16xf32>
  %c = arith.mulf %b, %a : tensor<8x16xf32>
  %d = arith.negf %c : tensor<8x16xf32>
  return %d : tensor<8x16xf32>
}

// Ops linear in a Partial(sum) operand keep it pending: a sum of two
// partials, a product and a quotient by a replicated tensor.
// CHECK-LABEL: func.func @partial_linear_ops
// CHECK-SAME: -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
// CHECK-NEXT: %[[A:.*]] = arith.addf %arg0, %arg1 {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: %[[B:.*]] = arith.mulf %[[A]], %arg2 {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: %[[C:.*]] = arith.divf %[[B]], %arg2 {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: return %[[C]]
func.func @partial_linear_ops(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>, %s: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %xp = dtensor.annotate %x layout <@tp, [P]> : tensor<8x16xf32>
  %yp = dtensor.annotate %y layout <@tp, [P]> : tensor<8x16xf32>
  %a = arith.addf %xp, %yp : tensor<8x16xf32>
  %b = arith.mulf %a, %s : tensor<8x16xf32>
  %c = arith.divf %b, %s : tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// A nonlinear op needs the reduction done: with a Replicate request after
// it, one all_reduce in front of it.
// CHECK-LABEL: func.func @partial_nonlinear
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %arg0 from <@tp, [P(sum)]> to <@tp, [R]>
// CHECK-NEXT: %[[E:.*]] = math.exp %[[R]] {dtensor.layouts = [#dtensor.layout<@tp, [R]>]}
// CHECK-NEXT: return %[[E]]
func.func @partial_nonlinear(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %xp = dtensor.annotate %x layout <@tp, [P]> : tensor<8x16xf32>
  %a = math.exp %xp : tensor<8x16xf32>
  %r = dtensor.annotate %a layout <@tp, [R]> : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// softmax cannot split its axis: rows stay, columns move to rows.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: %[[E:.*]] = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NEXT: %[[A:.*]] = linalg.softmax {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} dimension(1) ins(%arg0 : tensor<8x16xf32>) outs(%[[E]] : tensor<8x16xf32>)
// CHECK-NEXT: %[[E2:.*]] = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %arg1 from <@tp, [S(1)]> to <@tp, [S(0)]>
// CHECK-NEXT: %[[B:.*]] = linalg.softmax {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} dimension(1) ins(%[[R]] : tensor<8x16xf32>) outs(%[[E2]] : tensor<8x16xf32>)
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @softmax(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %a = linalg.softmax dimension(1) ins(%xs : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %ys = dtensor.annotate %y layout <@tp, [S(1)]> : tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %b = linalg.softmax dimension(1) ins(%ys : tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %a, %b : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A softmax whose input arrives sharded along its dim, large enough that
// two all_reduces of row statistics cost less than moving the input (the
// 8x16 one above is not): it is decomposed and its pieces propagate, the
// row maximum P(max) and the row sum P(sum) all-reduced, the rows stay
// sharded.
// CHECK-LABEL: func.func @softmax_statistics
// CHECK-NOT: linalg.softmax
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<128x8192xf32>) {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [P(max)]>]}
// CHECK: arith.maxnumf
// CHECK: %[[MAXR:.*]] = dtensor.redistribute %[[MAX]] from <@tp, [P(max)]> to <@tp, [R]> : tensor<128xf32>
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%arg0, %[[MAXR]] : {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[EXP]] : {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK: %[[SUMR:.*]] = dtensor.redistribute %[[SUM]] from <@tp, [P(sum)]> to <@tp, [R]> : tensor<128xf32>
// CHECK: %[[DIV:.*]] = linalg.generic {{.*}} ins(%[[EXP]], %[[SUMR]] : {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK: arith.divf
// CHECK-NOT: dtensor.redistribute
// CHECK: return %[[DIV]]
func.func @softmax_statistics(%x: tensor<128x8192xf32>) -> tensor<128x8192xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<128x8192xf32>
  %e = tensor.empty() : tensor<128x8192xf32>
  %s = linalg.softmax dimension(1) ins(%xs : tensor<128x8192xf32>) outs(%e : tensor<128x8192xf32>) -> tensor<128x8192xf32>
  %r = dtensor.annotate %s layout <@tp, [S(1)]> : tensor<128x8192xf32>
  return %r : tensor<128x8192xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A concat only moves elements: any Partial flows through it (here P(max)
// of integers), reduced once after it.
// CHECK-LABEL: func.func @concat_partial
// CHECK-NEXT: %[[C:.*]] = tensor.concat dim(0) %arg0, %arg1 {dtensor.layouts = [#dtensor.layout<@tp, [P(max)]>]}
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %[[C]] from <@tp, [P(max)]> to <@tp, [R]> : tensor<16x16xi32>
// CHECK-NEXT: return %[[R]]
func.func @concat_partial(%x: tensor<8x16xi32>, %y: tensor<8x16xi32>) -> tensor<16x16xi32> {
  %xs = dtensor.annotate %x layout <@tp, [P(max)]> : tensor<8x16xi32>
  %ys = dtensor.annotate %y layout <@tp, [P(max)]> : tensor<8x16xi32>
  %c = tensor.concat dim(0) %xs, %ys : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<16x16xi32>
  %r = dtensor.annotate %c layout <@tp, [R]> : tensor<16x16xi32>
  return %r : tensor<16x16xi32>
}

// -----

dtensor.mesh @tp shape = [4]

// Embedding lookups: a row-sharded table is a sum over the vocabulary
// (Partial(sum)); a column-sharded table gives the feature (last) dim.
// CHECK-LABEL: func.func @embedding_rows
// CHECK-SAME: (%{{[^:]*}}: tensor<64x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
// CHECK-SAME: %{{[^:]*}}: tensor<8x1xi32> {dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-SAME: -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
// CHECK-NEXT: %[[G:.*]] = tensor.gather %arg0[%arg1] gather_dims([0]) {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: return %[[G]]
func.func @embedding_rows(%table: tensor<64x16xf32>, %ids: tensor<8x1xi32>) -> tensor<8x16xf32> {
  %t = dtensor.annotate %table layout <@tp, [S(0)]> : tensor<64x16xf32>
  %g = tensor.gather %t[%ids] gather_dims([0]) : (tensor<64x16xf32>, tensor<8x1xi32>) -> tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @embedding_columns
// CHECK-SAME: -> (tensor<2x8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(2)]>})
// CHECK-NEXT: %[[G:.*]] = tensor.gather %arg0[%arg1] gather_dims([0]) {dtensor.layouts = [#dtensor.layout<@tp, [S(2)]>]}
// CHECK-NEXT: return %[[G]]
func.func @embedding_columns(%table: tensor<64x16xf32>, %ids: tensor<2x8x1xi32>) -> tensor<2x8x16xf32> {
  %t = dtensor.annotate %table layout <@tp, [S(1)]> : tensor<64x16xf32>
  %g = tensor.gather %t[%ids] gather_dims([0]) : (tensor<64x16xf32>, tensor<2x8x1xi32>) -> tensor<2x8x16xf32>
  return %g : tensor<2x8x16xf32>
}

//--- programs.mlir

// Whole programs: norms, annotations, results, created values, folded
// chains and cost-driven choices. The SPMD lines check the collectives the
// full pipeline makes of them.

dtensor.mesh @tp shape = [4]
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// RMS norm sharded on the sequence dim: every row is local, no
// communication.
// CHECK-LABEL: func.func @rmsnorm_sequence
// CHECK-SAME: (%{{[^:]*}}: tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-SAME: -> (tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NOT: dtensor.redistribute
// CHECK: %[[SS:.*]] = linalg.generic {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK: math.rsqrt %[[SS]] {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NOT: dtensor.redistribute
// CHECK: linalg.generic {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NOT: dtensor.redistribute
// CHECK: return
// SPMD-LABEL: func.func @rmsnorm_sequence
// SPMD-SAME: tensor<256x4096xf32>
// SPMD-NOT: = dtensor.
// SPMD: return
func.func @rmsnorm_sequence(%x: tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<1024x4096xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1024xf32>) -> tensor<1024xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
    ins(%x : tensor<1024x4096xf32>) outs(%f : tensor<1024xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %s = arith.addf %sq, %acc : f32
      linalg.yield %s : f32
    } -> tensor<1024xf32>
  %rstd = math.rsqrt %ss : tensor<1024xf32>
  %e2 = tensor.empty() : tensor<1024x4096xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
    ins(%x, %rstd : tensor<1024x4096xf32>, tensor<1024xf32>) outs(%e2 : tensor<1024x4096xf32>) {
    ^bb0(%a: f32, %r: f32, %o: f32):
      %m = arith.mulf %a, %r : f32
      linalg.yield %m : f32
    } -> tensor<1024x4096xf32>
  return %y : tensor<1024x4096xf32>
}

// RMS norm sharded on the hidden dim: the sum of squares is Partial(sum)
// and one all_reduce makes it whole for rsqrt. Not a reduce_scatter then
// an all_gather: the lookahead sees that the scaling needs it replicated.
// CHECK-LABEL: func.func @rmsnorm_hidden
// CHECK-SAME: (%{{[^:]*}}: tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-SAME: -> (tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK: %[[SS:.*]] = linalg.generic {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK: } -> tensor<1024xf32>
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %[[SS]] from <@tp, [P(sum)]> to <@tp, [R]> : tensor<1024xf32>
// CHECK-NEXT: %[[RSTD:.*]] = math.rsqrt %[[R]] {dtensor.layouts = [#dtensor.layout<@tp, [R]>]}
// CHECK-NOT: dtensor.redistribute
// CHECK: linalg.generic {{.*}} ins(%arg0, %[[RSTD]] : {{.*}}) {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NOT: dtensor.redistribute
// CHECK: return
// SPMD-LABEL: func.func @rmsnorm_hidden
// SPMD-SAME: tensor<1024x1024xf32>
// SPMD-NOT: dtensor.all_gather
// SPMD-NOT: dtensor.reduce_scatter
// SPMD: dtensor.all_reduce %{{.*}} on @tp axes = [0] reduce = sum : tensor<1024xf32>
// SPMD-NOT: dtensor.all_
// SPMD: return
func.func @rmsnorm_hidden(%x: tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) -> tensor<1024x4096xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1024xf32>) -> tensor<1024xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
    ins(%x : tensor<1024x4096xf32>) outs(%f : tensor<1024xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %s = arith.addf %sq, %acc : f32
      linalg.yield %s : f32
    } -> tensor<1024xf32>
  %rstd = math.rsqrt %ss : tensor<1024xf32>
  %e2 = tensor.empty() : tensor<1024x4096xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
    ins(%x, %rstd : tensor<1024x4096xf32>, tensor<1024xf32>) outs(%e2 : tensor<1024x4096xf32>) {
    ^bb0(%a: f32, %r: f32, %o: f32):
      %m = arith.mulf %a, %r : f32
      linalg.yield %m : f32
    } -> tensor<1024x4096xf32>
  return %y : tensor<1024x4096xf32>
}

// Layer norm on the hidden dim: the mean's sum and the variance's sum are
// each Partial(sum) and each one all_reduce.
// CHECK-LABEL: func.func @layernorm_hidden
// CHECK: %[[SUM:.*]] = linalg.reduce ins(%arg0 : tensor<1024x4096xf32>) {{.*}} {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK: %[[H:.*]] = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [R]>]} dense<4.096000e+03> : tensor<1024xf32>
// CHECK-NEXT: %[[SUMR:.*]] = dtensor.redistribute %[[SUM]] from <@tp, [P(sum)]> to <@tp, [R]> : tensor<1024xf32>
// CHECK-NEXT: %[[MEAN:.*]] = arith.divf %[[SUMR]], %[[H]] {dtensor.layouts = [#dtensor.layout<@tp, [R]>]}
// CHECK: %[[XC:.*]] = linalg.generic {{.*}} ins(%arg0, %[[MEAN]] : {{.*}}) {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK: %[[SS:.*]] = linalg.generic {{.*}} ins(%[[XC]] : {{.*}}) {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK: } -> tensor<1024xf32>
// CHECK-NEXT: %[[SSR:.*]] = dtensor.redistribute %[[SS]] from <@tp, [P(sum)]> to <@tp, [R]> : tensor<1024xf32>
// CHECK-NEXT: %[[VAR:.*]] = arith.divf %[[SSR]], %[[H]] {dtensor.layouts = [#dtensor.layout<@tp, [R]>]}
// CHECK-NEXT: %[[RSTD:.*]] = math.rsqrt %[[VAR]] {dtensor.layouts = [#dtensor.layout<@tp, [R]>]}
// CHECK-NEXT: tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[XC]], %[[RSTD]] : {{.*}}) {{.*}} attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NOT: dtensor.redistribute
// CHECK: return
// SPMD-LABEL: func.func @layernorm_hidden
// SPMD-NOT: dtensor.all_gather
// SPMD-NOT: dtensor.reduce_scatter
// SPMD: dtensor.all_reduce %{{.*}} on @tp axes = [0] reduce = sum : tensor<1024xf32>
// SPMD-NOT: dtensor.all_gather
// SPMD-NOT: dtensor.reduce_scatter
// SPMD: dtensor.all_reduce %{{.*}} on @tp axes = [0] reduce = sum : tensor<1024xf32>
// SPMD-NOT: dtensor.all_
// SPMD: return
func.func @layernorm_hidden(%x: tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}) -> tensor<1024x4096xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1024xf32>) -> tensor<1024xf32>
  %sum = linalg.reduce ins(%x : tensor<1024x4096xf32>) outs(%f : tensor<1024xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  %h = arith.constant dense<4096.0> : tensor<1024xf32>
  %mean = arith.divf %sum, %h : tensor<1024xf32>
  %e2 = tensor.empty() : tensor<1024x4096xf32>
  %xc = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
    ins(%x, %mean : tensor<1024x4096xf32>, tensor<1024xf32>) outs(%e2 : tensor<1024x4096xf32>) {
    ^bb0(%a: f32, %m: f32, %o: f32):
      %d = arith.subf %a, %m : f32
      linalg.yield %d : f32
    } -> tensor<1024x4096xf32>
  %e3 = tensor.empty() : tensor<1024xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1024xf32>) -> tensor<1024xf32>
  %ss = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
    ins(%xc : tensor<1024x4096xf32>) outs(%f2 : tensor<1024xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %sq = arith.mulf %a, %a : f32
      %s = arith.addf %sq, %acc : f32
      linalg.yield %s : f32
    } -> tensor<1024xf32>
  %var = arith.divf %ss, %h : tensor<1024xf32>
  %rstd = math.rsqrt %var : tensor<1024xf32>
  %e4 = tensor.empty() : tensor<1024x4096xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
    ins(%xc, %rstd : tensor<1024x4096xf32>, tensor<1024xf32>) outs(%e4 : tensor<1024x4096xf32>) {
    ^bb0(%a: f32, %r: f32, %o: f32):
      %m = arith.mulf %a, %r : f32
      linalg.yield %m : f32
    } -> tensor<1024x4096xf32>
  return %y : tensor<1024x4096xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// An argument annotated one way takes that layout; one annotated two ways
// stays Replicate and is redistributed for each request. An annotation of
// an intermediate is a redistribution.
// CHECK-LABEL: func.func @annotations
// CHECK-SAME: (%[[X:[^:]*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
// CHECK-SAME: %[[Y:[^:]*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-SAME: -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[Y0:.*]] = dtensor.redistribute %[[Y]] from <@tp, [R]> to <@tp, [S(0)]>
// CHECK-NEXT: %[[Y1:.*]] = dtensor.redistribute %[[Y]] from <@tp, [R]> to <@tp, [S(1)]>
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[X]], %[[Y0]] {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NEXT: %[[AS:.*]] = dtensor.redistribute %[[A]] from <@tp, [S(0)]> to <@tp, [S(1)]>
// CHECK-NEXT: %[[B:.*]] = arith.addf %[[AS]], %[[Y1]] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: return %[[B]]
// SPMD-LABEL: func.func @annotations
// SPMD-SAME: (%{{[^:]*}}: tensor<2x16xf32> {{.*}}, %{{[^:]*}}: tensor<8x16xf32> {{.*}}) -> (tensor<8x4xf32>
// SPMD: dtensor.all_to_all %{{.*}} on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
// SPMD-NOT: = dtensor.
// SPMD: return
func.func @annotations(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
  %y0 = dtensor.annotate %y layout <@tp, [S(0)]> : tensor<8x16xf32>
  %y1 = dtensor.annotate %y layout <@tp, [S(1)]> : tensor<8x16xf32>
  %a = arith.addf %xs, %y0 : tensor<8x16xf32>
  %as = dtensor.annotate %a layout <@tp, [S(1)]> : tensor<8x16xf32>
  %b = arith.addf %as, %y1 : tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}

// Requested result layouts are met at the return (a Partial(sum) to S(0)
// is one reduce_scatter; S(1) to R one all_gather); an unrequested result
// keeps its layout.
// CHECK-LABEL: func.func @result_layouts
// CHECK-SAME: -> (tensor<64x1024xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<64x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>}, tensor<64x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
// CHECK-NEXT: %[[Z:.*]] = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} dense<0.000000e+00>
// CHECK-NEXT: %[[M:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%arg0, %arg1 : {{.*}}) outs(%[[Z]] :
// CHECK-NEXT: %[[RS:.*]] = dtensor.redistribute %[[M]] from <@tp, [P(sum)]> to <@tp, [S(0)]> : tensor<64x1024xf32>
// CHECK-NEXT: %[[AG:.*]] = dtensor.redistribute %arg0 from <@tp, [S(1)]> to <@tp, [R]> : tensor<64x4096xf32>
// CHECK-NEXT: return %[[RS]], %[[AG]], %arg0
func.func @result_layouts(%a: tensor<64x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}, %b: tensor<4096x1024xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
    -> (tensor<64x1024xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, tensor<64x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>}, tensor<64x4096xf32>) {
  %z = arith.constant dense<0.0> : tensor<64x1024xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%z : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  return %m, %a, %a : tensor<64x1024xf32>, tensor<64x4096xf32>, tensor<64x4096xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Created values take their consumer's layout. Partial(sum) only where
// every rank may hold the value: a zero fill can, a fill of one cannot (it
// stays Replicate and is divided locally); a splat constant takes the
// shard of its consumer; an unused one stays Replicate.
// CHECK-LABEL: func.func @created_values
// CHECK-SAME: -> (tensor<64x1024xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}, tensor<64x1024xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>}, tensor<64x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}, tensor<64x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>})
// CHECK-NEXT: %[[E0:.*]] = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[F0:.*]] = linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%[[ZERO]] : f32) outs(%[[E0]] :
// CHECK-NEXT: %[[M0:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%arg0, %arg1 : {{.*}}) outs(%[[F0]] :
// CHECK-NEXT: %[[E1:.*]] = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [R]>]}
// CHECK-NEXT: %[[F1:.*]] = linalg.fill {dtensor.layouts = [#dtensor.layout<@tp, [R]>]} ins(%[[ONE]] : f32) outs(%[[E1]] :
// CHECK-NEXT: %[[P1:.*]] = dtensor.redistribute %[[F1]] from <@tp, [R]> to <@tp, [P(sum)]>
// CHECK-NEXT: %[[M1:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%arg0, %arg1 : {{.*}}) outs(%[[P1]] :
// CHECK-NEXT: %[[C:.*]] = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]} dense<2.000000e+00> : tensor<64x4096xf32>
// CHECK-NEXT: %[[S:.*]] = arith.addf %arg2, %[[C]] {dtensor.layouts = [#dtensor.layout<@tp, [S(1)]>]}
// CHECK-NEXT: %[[U:.*]] = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [R]>]} dense<3.000000e+00> : tensor<64x4096xf32>
// CHECK-NEXT: return %[[M0]], %[[M1]], %[[S]], %[[U]]
func.func @created_values(%a: tensor<64x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>}, %b: tensor<4096x1024xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, %x: tensor<64x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>})
    -> (tensor<64x1024xf32>, tensor<64x1024xf32>, tensor<64x4096xf32>, tensor<64x4096xf32>) {
  %e = tensor.empty() : tensor<64x1024xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %f0 = linalg.fill ins(%zero : f32) outs(%e : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %m0 = linalg.matmul ins(%a, %b : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%f0 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %e1 = tensor.empty() : tensor<64x1024xf32>
  %f1 = linalg.fill ins(%one : f32) outs(%e1 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%f1 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %c = arith.constant dense<2.0> : tensor<64x4096xf32>
  %s = arith.addf %x, %c : tensor<64x4096xf32>
  %u = arith.constant dense<3.0> : tensor<64x4096xf32>
  return %m0, %m1, %s, %u : tensor<64x1024xf32>, tensor<64x1024xf32>, tensor<64x4096xf32>, tensor<64x4096xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Partial -> Replicate across a K-sharded matmul followed by a Shard(0)
// request becomes one redistribution P -> S(0): one reduce_scatter.
// CHECK-LABEL: func.func @fold_chain
// CHECK-SAME: -> (tensor<64x1024xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: arith.constant
// CHECK-NEXT: %[[M:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: %[[RS:.*]] = dtensor.redistribute %[[M]] from <@tp, [P(sum)]> to <@tp, [S(0)]> : tensor<64x1024xf32>
// CHECK-NEXT: return %[[RS]]
// SPMD-LABEL: func.func @fold_chain
// SPMD-NOT: = dtensor.
// SPMD: dtensor.reduce_scatter %{{.*}} on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<64x1024xf32> -> tensor<16x1024xf32>
// SPMD-NOT: = dtensor.
// SPMD: return
func.func @fold_chain(%a: tensor<64x4096xf32>, %b: tensor<4096x1024xf32>) -> tensor<64x1024xf32> {
  %as = dtensor.annotate %a layout <@tp, [S(1)]> : tensor<64x4096xf32>
  %bs = dtensor.annotate %b layout <@tp, [S(0)]> : tensor<4096x1024xf32>
  %z = arith.constant dense<0.0> : tensor<64x1024xf32>
  %m = linalg.matmul ins(%as, %bs : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%z : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %r = dtensor.annotate %m layout <@tp, [R]> : tensor<64x1024xf32>
  %s = dtensor.annotate %r layout <@tp, [S(0)]> : tensor<64x1024xf32>
  return %s : tensor<64x1024xf32>
}

// The same with a user redistribution and a result request.
// CHECK-LABEL: func.func @fold_chain_result
// CHECK-SAME: -> (tensor<64x1024xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: arith.constant
// CHECK-NEXT: %[[M:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: %[[RS:.*]] = dtensor.redistribute %[[M]] from <@tp, [P(sum)]> to <@tp, [S(0)]> : tensor<64x1024xf32>
// CHECK-NEXT: return %[[RS]]
// SPMD-LABEL: func.func @fold_chain_result
// SPMD-NOT: = dtensor.
// SPMD: dtensor.reduce_scatter %{{.*}} on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<64x1024xf32> -> tensor<16x1024xf32>
// SPMD-NOT: = dtensor.
// SPMD: return
func.func @fold_chain_result(%a: tensor<64x4096xf32>, %b: tensor<4096x1024xf32>) -> (tensor<64x1024xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) {
  %as = dtensor.annotate %a layout <@tp, [S(1)]> : tensor<64x4096xf32>
  %bs = dtensor.annotate %b layout <@tp, [S(0)]> : tensor<4096x1024xf32>
  %z = arith.constant dense<0.0> : tensor<64x1024xf32>
  %m = linalg.matmul ins(%as, %bs : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%z : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %r = dtensor.redistribute %m to <@tp, [R]> : tensor<64x1024xf32>
  return %r : tensor<64x1024xf32>
}

// Where another op uses the Replicate value, the chain stays.
// CHECK-LABEL: func.func @no_fold_shared
// CHECK: %[[M:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]}
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %[[M]] from <@tp, [P(sum)]> to <@tp, [R]>
// CHECK-NEXT: %[[E:.*]] = math.exp %[[R]] {dtensor.layouts = [#dtensor.layout<@tp, [R]>]}
// CHECK-NEXT: %[[S:.*]] = dtensor.redistribute %[[R]] from <@tp, [R]> to <@tp, [S(0)]>
// CHECK-NEXT: return %[[S]], %[[E]]
func.func @no_fold_shared(%a: tensor<64x4096xf32>, %b: tensor<4096x1024xf32>) -> (tensor<64x1024xf32>, tensor<64x1024xf32>) {
  %as = dtensor.annotate %a layout <@tp, [S(1)]> : tensor<64x4096xf32>
  %bs = dtensor.annotate %b layout <@tp, [S(0)]> : tensor<4096x1024xf32>
  %z = arith.constant dense<0.0> : tensor<64x1024xf32>
  %m = linalg.matmul ins(%as, %bs : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%z : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  %r = dtensor.annotate %m layout <@tp, [R]> : tensor<64x1024xf32>
  %e = math.exp %r : tensor<64x1024xf32>
  %s = dtensor.annotate %r layout <@tp, [S(0)]> : tensor<64x1024xf32>
  return %s, %e : tensor<64x1024xf32>, tensor<64x1024xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Conflicts are resolved by cost, not by operand order: the same program
// with a row-sharded A and a K-sharded B gathers the small B (rows stay),
// or moves the small A to K (Partial result) when B is the large one.
// CHECK-LABEL: func.func @cost_small_weight
// CHECK-SAME: -> (tensor<4096x64xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: arith.constant
// CHECK-NEXT: %[[B:.*]] = dtensor.redistribute %arg1 from <@tp, [S(0)]> to <@tp, [R]> : tensor<8192x64xf32>
// CHECK-NEXT: %[[M:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} ins(%arg0, %[[B]] :
// CHECK-NEXT: return %[[M]]
func.func @cost_small_weight(%a: tensor<4096x8192xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, %b: tensor<8192x64xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<4096x64xf32> {
  %z = arith.constant dense<0.0> : tensor<4096x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4096x8192xf32>, tensor<8192x64xf32>) outs(%z : tensor<4096x64xf32>) -> tensor<4096x64xf32>
  return %m : tensor<4096x64xf32>
}

// CHECK-LABEL: func.func @cost_large_weight
// CHECK-SAME: -> (tensor<64x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [P(sum)]>})
// CHECK-NEXT: arith.constant
// CHECK-NEXT: %[[A:.*]] = dtensor.redistribute %arg0 from <@tp, [S(0)]> to <@tp, [S(1)]> : tensor<64x8192xf32>
// CHECK-NEXT: %[[M:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@tp, [P(sum)]>]} ins(%[[A]], %arg1 :
// CHECK-NEXT: return %[[M]]
func.func @cost_large_weight(%a: tensor<64x8192xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, %b: tensor<8192x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<64x4096xf32> {
  %z = arith.constant dense<0.0> : tensor<64x4096xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x8192xf32>, tensor<8192x4096xf32>) outs(%z : tensor<64x4096xf32>) -> tensor<64x4096xf32>
  return %m : tensor<64x4096xf32>
}

// The first operand (a small bias sharded on its only dim) does not win
// over the large second one: the bias is gathered, the rows stay.
// CHECK-LABEL: func.func @cost_not_operand_order
// CHECK-SAME: -> (tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>})
// CHECK-NEXT: %[[E:.*]] = tensor.empty() {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK-NEXT: %[[V:.*]] = dtensor.redistribute %arg0 from <@tp, [S(0)]> to <@tp, [R]> : tensor<4096xf32>
// CHECK-NEXT: %[[G:.*]] = linalg.generic {{.*}} ins(%[[V]], %arg1 : {{.*}}) outs(%[[E]] : {{.*}}) attrs = {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// CHECK: return %[[G]]
func.func @cost_not_operand_order(%v: tensor<4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}, %x: tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<1024x4096xf32> {
  %e = tensor.empty() : tensor<1024x4096xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
    ins(%v, %x : tensor<4096xf32>, tensor<1024x4096xf32>) outs(%e : tensor<1024x4096xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<1024x4096xf32>
  return %y : tensor<1024x4096xf32>
}

// -----

dtensor.mesh @m24 shape = [2, 4] names = ["dp", "tp"]

// A 2-D mesh: data parallel on mesh axis 0, a column- then row-parallel
// MLP on mesh axis 1; the row-parallel Partial is reduced on mesh axis 1
// only.
// CHECK-LABEL: func.func @mesh_2d
// CHECK-NEXT: %[[Z:.*]] = arith.constant {dtensor.layouts = [#dtensor.layout<@m24, [S(0), S(1)]>]} dense<0.000000e+00> : tensor<64x4096xf32>
// CHECK-NEXT: %[[H:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@m24, [S(0), S(1)]>]} ins(%arg0, %arg1 : {{.*}}) outs(%[[Z]] :
// CHECK-NEXT: %[[G:.*]] = math.tanh %[[H]] {dtensor.layouts = [#dtensor.layout<@m24, [S(0), S(1)]>]}
// CHECK-NEXT: %[[Z2:.*]] = arith.constant {dtensor.layouts = [#dtensor.layout<@m24, [S(0), P(sum)]>]} dense<0.000000e+00> : tensor<64x1024xf32>
// CHECK-NEXT: %[[O:.*]] = linalg.matmul {dtensor.layouts = [#dtensor.layout<@m24, [S(0), P(sum)]>]} ins(%[[G]], %arg2 : {{.*}}) outs(%[[Z2]] :
// CHECK-NEXT: %[[R:.*]] = dtensor.redistribute %[[O]] from <@m24, [S(0), P(sum)]> to <@m24, [S(0), R]> : tensor<64x1024xf32>
// CHECK-NEXT: return %[[R]]
// SPMD-LABEL: func.func @mesh_2d
// SPMD-SAME: (%{{[^:]*}}: tensor<32x1024xf32> {{.*}}, %{{[^:]*}}: tensor<1024x1024xf32> {{.*}}, %{{[^:]*}}: tensor<1024x1024xf32> {{.*}}) -> (tensor<32x1024xf32>
// SPMD-NOT: = dtensor.
// SPMD: dtensor.all_reduce %{{.*}} on @m24 axes = [1] reduce = sum : tensor<32x1024xf32>
// SPMD-NOT: = dtensor.
// SPMD: return
func.func @mesh_2d(%x: tensor<64x1024xf32> {dtensor.layout = #dtensor.layout<@m24, [S(0), R]>}, %w: tensor<1024x4096xf32> {dtensor.layout = #dtensor.layout<@m24, [R, S(1)]>}, %w2: tensor<4096x1024xf32> {dtensor.layout = #dtensor.layout<@m24, [R, S(0)]>})
    -> (tensor<64x1024xf32> {dtensor.layout = #dtensor.layout<@m24, [S(0), R]>}) {
  %z = arith.constant dense<0.0> : tensor<64x4096xf32>
  %h = linalg.matmul ins(%x, %w : tensor<64x1024xf32>, tensor<1024x4096xf32>) outs(%z : tensor<64x4096xf32>) -> tensor<64x4096xf32>
  %g = math.tanh %h : tensor<64x4096xf32>
  %z2 = arith.constant dense<0.0> : tensor<64x1024xf32>
  %o = linalg.matmul ins(%g, %w2 : tensor<64x4096xf32>, tensor<4096x1024xf32>) outs(%z2 : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  return %o : tensor<64x1024xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A non-splat constant is replicated (its whole value on every rank); a
// consumer that wants a shard takes a local chunk of it.
// CHECK-LABEL: func.func @non_splat_constant(
// CHECK: %[[C:.*]] = arith.constant {dtensor.layouts = [#dtensor.layout<@tp, [R]>]} dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]>
// CHECK: %[[S:.*]] = dtensor.redistribute %[[C]] from <@tp, [R]> to <@tp, [S(0)]>
// CHECK: arith.addf %{{.*}}, %[[S]] {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]}
// SPMD-LABEL: func.func @non_splat_constant(
// SPMD-NOT: dtensor.all_
// SPMD: tensor.extract_slice
// SPMD-NOT: dtensor.all_
// SPMD: return
func.func @non_splat_constant(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8xf32>
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %r = arith.addf %a, %c : tensor<8xf32>
  return %r : tensor<8xf32>
}

//--- errors.mlir

dtensor.mesh @tp shape = [4]

func.func @unsupported_op(%x: tensor<8x8xf32>, %y: tensor<2x8xf32>) -> tensor<8x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  // expected-error @below {{cannot propagate layouts through this op: no sharding rule for 'tensor.insert_slice'}}
  %r = tensor.insert_slice %y into %a[0, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}


// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @pair shape = [2]

// expected-error @below {{layouts on several meshes (@tp, @pair) in one function are not supported}}
func.func @two_meshes(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  %b = dtensor.annotate %y layout <@pair, [S(0)]> : tensor<8x8xf32>
  %r = arith.addf %a, %b : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// expected-error @below {{only single-block functions can be propagated}}
func.func @multi_block(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  return %a : tensor<8x8xf32>
^unreachable:
  return %x : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A sharded from_local of a value that is not an argument: its global
// meaning (the locals of a computed value put together) has no global-view
// form.
func.func @from_local_inside(%x: tensor<2x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<2x8xf32>
  %c = linalg.copy ins(%x : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
  // expected-error @below {{from_local of a sharded or partial layout is supported on function arguments only (an argument read by from_local ops of one layout)}}
  %g = dtensor.from_local %c layout <@tp, [S(0)]> : tensor<2x8xf32> -> tensor<8x8xf32>
  %a = dtensor.annotate %g layout <@tp, [R]> : tensor<8x8xf32>
  return %a : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// An argument read as two different layouts.
func.func @from_local_twice(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @below {{from_local of a sharded or partial layout is supported on function arguments only}}
  %g = dtensor.from_local %x layout <@tp, [P(sum)]> : tensor<8x8xf32> -> tensor<8x8xf32>
  %h = dtensor.from_local %x layout <@tp, [P(max)]> : tensor<8x8xf32> -> tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %s = linalg.add ins(%g, %h : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// An argument laid out otherwise than its from_local says.
func.func @from_local_laid_out(%x: tensor<2x8xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>}) -> tensor<8x8xf32> {
  // expected-error @below {{from_local of argument #0 as #dtensor.layout<@tp, [S(0)]>, but the argument is laid out #dtensor.layout<@tp, [R]>}}
  %g = dtensor.from_local %x layout <@tp, [S(0)]> : tensor<2x8xf32> -> tensor<8x8xf32>
  return %g : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A sharded local value used inside the function.
func.func @to_local_inside(%x: tensor<8x8xf32>) -> tensor<2x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  // expected-error @below {{to_local of a sharded or partial layout is supported on function results only (its one use returned)}}
  %l = dtensor.to_local %a layout <@tp, [S(0)]> : tensor<8x8xf32> -> tensor<2x8xf32>
  %e = tensor.empty() : tensor<2x8xf32>
  %c = linalg.copy ins(%l : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @contradicting_from(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  // expected-error @below {{'from' layout #dtensor.layout<@tp, [S(1)]> contradicts the propagated layout #dtensor.layout<@tp, [S(0)]> of the operand}}
  %r = dtensor.redistribute %a from <@tp, [S(1)]> to <@tp, [R]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A request no redistribution can meet.
func.func @shard_to_partial_request(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  // expected-error @below {{cannot redistribute operand from #dtensor.layout<@tp, [S(0)]> to #dtensor.layout<@tp, [P(sum)]>: S(0) -> P(sum): a shard cannot become a pending reduction}}
  %p = dtensor.annotate %a layout <@tp, [P]> : tensor<8x8xf32>
  return %p : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @unranked(%x: tensor<8x8xf32>, %u: tensor<*xf32>) -> tensor<8x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  // expected-error @below {{unranked tensors cannot be sharded}}
  %c = tensor.cast %u : tensor<*xf32> to tensor<8x8xf32>
  %r = arith.addf %a, %c : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @dynamic_empty(%x: tensor<8x8xf32>, %n: index) -> tensor<?x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  // expected-error @below {{cannot propagate layouts through this op: tensor.empty with dynamic sizes in a global-view program}}
  %e = tensor.empty(%n) : tensor<?x8xf32>
  return %e : tensor<?x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @gather_not_embedding(%t: tensor<8x8x8xf32>, %ids: tensor<4x1xi32>) -> tensor<4x8x8xf32> {
  %a = dtensor.annotate %t layout <@tp, [S(0)]> : tensor<8x8x8xf32>
  // expected-error @below {{cannot propagate layouts through this op: tensor.gather other than a rank-reduced embedding lookup (2-D table, gather_dims([0]), indices ...x1)}}
  %g = tensor.gather %a[%ids] gather_dims([0]) : (tensor<8x8x8xf32>, tensor<4x1xi32>) -> tensor<4x8x8xf32>
  return %g : tensor<4x8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

// Argument and result layouts are checked against the mesh and the tensor.
// expected-error @below {{'func.func' op [LAYOUT2] expected 2 placements for mesh @m22, got 3}}
func.func @arg_layout_arity(%x: tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(0), R, S(1)]>}) -> tensor<8x8xf32> {
  %y = math.exp %x : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

dtensor.mesh @m22 shape = [2, 2]

// expected-error @below {{'func.func' op [LAYOUT3] placement S(9) is out of range for a rank-2 tensor}}
func.func @result_layout_dim(%x: tensor<8x8xf32>) -> (tensor<8x8xf32> {dtensor.layout = #dtensor.layout<@m22, [S(9), R]>}) {
  %y = math.exp %x : tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// A user's redistribution to a layout its propagated source cannot reach is
// diagnosed by the pass (RD3-RD5), not left to the verifier (issue 26).
func.func @unreachable_shard_to_partial(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  // expected-error @below {{cannot redistribute the operand's propagated layout #dtensor.layout<@tp, [S(0)]> to #dtensor.layout<@tp, [P(product)]>: [RD3] mesh dimension 0: S(0) cannot become a Partial placement}}
  %r = dtensor.redistribute %a to <@tp, [P(product)]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @unreachable_replicate_to_product(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @below {{[RD4] mesh dimension 0: R cannot become P(product)}}
  %r = dtensor.redistribute %x to <@tp, [P(product)]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [2, 2]

func.func @unreachable_sum_to_min(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [R, P(sum)]> : tensor<8x8xf32>
  // expected-error @below {{[RD5] mesh dimension 1: P(sum) cannot become P(min)}}
  %r = dtensor.redistribute %a to <@tp, [R, P(min)]> : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

func.func @unreachable_annotation(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x8xf32>
  // expected-error @below {{cannot redistribute operand from #dtensor.layout<@tp, [S(0)]> to #dtensor.layout<@tp, [P(max)]>: S(0) -> P(max): a shard cannot become a pending reduction}}
  %b = dtensor.annotate %a layout <@tp, [P(max)]> : tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}
