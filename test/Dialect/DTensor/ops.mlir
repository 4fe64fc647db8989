// RUN: dtensor-opt %s -split-input-file | dtensor-opt -split-input-file | FileCheck %s
// RUN: dtensor-opt %s -split-input-file -mlir-print-op-generic | dtensor-opt -split-input-file | FileCheck %s

// Round-trip tests for every op, attribute and type of the dtensor dialect.

// Meshes: 1-D, n-D, with names, with devices, with both.

// CHECK: dtensor.mesh @tp shape = [4]{{$}}
// CHECK-NEXT: dtensor.mesh @single shape = [1]{{$}}
// CHECK-NEXT: dtensor.mesh @mesh2d shape = [2, 4] names = ["dp", "tp"]{{$}}
// CHECK-NEXT: dtensor.mesh @pair shape = [2] devices = [3, 1]{{$}}
// CHECK-NEXT: dtensor.mesh @mesh3d shape = [2, 2, 2] names = ["pp", "dp", "tp"] devices = [7, 6, 5, 4, 3, 2, 1, 0]{{$}}
// CHECK-NEXT: dtensor.mesh @attrs shape = [8] {tag = "x"}{{$}}
dtensor.mesh @tp shape = [4]
dtensor.mesh @single shape = [1]
dtensor.mesh @mesh2d shape = [2, 4] names = ["dp", "tp"]
dtensor.mesh @pair shape = [2] devices = [3, 1]
dtensor.mesh @mesh3d shape = [2, 2, 2] names = ["pp", "dp", "tp"] devices = [7, 6, 5, 4, 3, 2, 1, 0]
dtensor.mesh @attrs shape = [8] {tag = "x"}

// CHECK-LABEL: func.func @meshes
func.func @meshes() {
  return
}

// -----

// Standalone placement attributes, every form, and the reduction enum.

// CHECK-LABEL: func.func @placements
// Attributes print sorted by name.
// CHECK-SAME: attributes {p = #dtensor.placement<P(sum)>,
// CHECK-SAME: pavg = #dtensor.placement<P(avg)>,
// CHECK-SAME: pmax = #dtensor.placement<P(max)>,
// CHECK-SAME: pmin = #dtensor.placement<P(min)>,
// CHECK-SAME: pprod = #dtensor.placement<P(product)>,
// CHECK-SAME: psum = #dtensor.placement<P(sum)>,
// CHECK-SAME: r = #dtensor.placement<R>,
// CHECK-SAME: red = #dtensor<reduce product>,
// CHECK-SAME: s0 = #dtensor.placement<S(0)>,
// CHECK-SAME: s7 = #dtensor.placement<S(7)>}
func.func @placements() attributes {
    s0 = #dtensor.placement<S(0)>, s7 = #dtensor.placement<S(7)>,
    r = #dtensor.placement<R>, p = #dtensor.placement<P>,
    psum = #dtensor.placement<P(sum)>, pavg = #dtensor.placement<P(avg)>,
    pprod = #dtensor.placement<P(product)>, pmin = #dtensor.placement<P(min)>,
    pmax = #dtensor.placement<P(max)>,
    // The reduction kind on its own.
    red = #dtensor<reduce product>} {
  return
}

// -----

// Standalone layout attributes as discardable attributes on function
// arguments and results, and on ops (`dtensor.layouts`).

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @layout_attrs
// CHECK-SAME: (%[[A:.*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
// CHECK-SAME: %[[B:.*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>},
// CHECK-SAME: %[[C:.*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@mesh2d, [S(0), S(1)]>},
// CHECK-SAME: %[[D:.*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@mesh2d, [P(sum), S(0)]>},
// CHECK-SAME: %[[E:.*]]: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@mesh2d, [P(max), P(max)]>})
// CHECK-SAME: -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@mesh2d, [R, P(avg)]>})
func.func @layout_attrs(
    %a: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>},
    %b: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [R]>},
    %c: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@mesh2d, [S(0), S(1)]>},
    %d: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@mesh2d, [P, S(0)]>},
    %e: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@mesh2d, [P(max), P(max)]>})
    -> (tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@mesh2d, [R, P(avg)]>}) {
  // CHECK: %[[R:.*]] = arith.addf %[[A]], %[[B]]
  // CHECK-SAME: dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]
  %r = arith.addf %a, %b {dtensor.layouts = [#dtensor.layout<@tp, [S(0)]>]} : tensor<8x16xf32>
  // CHECK: return %[[R]]
  return %r : tensor<8x16xf32>
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @annotate
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[D:.*]]: tensor<?x16xf32>)
func.func @annotate(%x: tensor<8x16xf32>, %d: tensor<?x16xf32>) {
  // CHECK: dtensor.annotate %[[X]] layout <@tp, [S(0)]> : tensor<8x16xf32>{{$}}
  %0 = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x16xf32>
  // CHECK: dtensor.annotate %[[X]] layout <@tp, [S(1)]> : tensor<8x16xf32>{{$}}
  %1 = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x16xf32>
  // CHECK: dtensor.annotate %[[X]] layout <@mesh2d, [S(0), R]> : tensor<8x16xf32>{{$}}
  %2 = dtensor.annotate %x layout <@mesh2d, [S(0), R]> : tensor<8x16xf32>
  // CHECK: dtensor.annotate %[[X]] layout <@mesh2d, [S(0), S(0)]> : tensor<8x16xf32>{{$}}
  %3 = dtensor.annotate %x layout <@mesh2d, [S(0), S(0)]> : tensor<8x16xf32>
  // The short form `P` prints as `P(sum)`.
  // CHECK: dtensor.annotate %[[X]] layout <@mesh2d, [P(sum), R]> : tensor<8x16xf32>{{$}}
  %4 = dtensor.annotate %x layout <@mesh2d, [P, R]> : tensor<8x16xf32>
  // CHECK: dtensor.annotate %[[X]] layout <@mesh2d, [P(min), P(min)]> : tensor<8x16xf32>{{$}}
  %5 = dtensor.annotate %x layout <@mesh2d, [P(min), P(min)]> : tensor<8x16xf32>
  // An explicit result type equal to the operand type is elided.
  // CHECK: dtensor.annotate %[[X]] layout <@tp, [R]> : tensor<8x16xf32>{{$}}
  %6 = dtensor.annotate %x layout <@tp, [R]> : tensor<8x16xf32> -> tensor<8x16xf32>
  // Dynamic dims and discardable attributes.
  // CHECK: dtensor.annotate %[[D]] layout <@tp, [S(1)]> {tag} : tensor<?x16xf32>{{$}}
  %7 = dtensor.annotate %d layout <@tp, [S(1)]> {tag} : tensor<?x16xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @redistribute
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[D:.*]]: tensor<?x?xf32>)
func.func @redistribute(%x: tensor<8x16xf32>, %d: tensor<?x?xf32>) {
  // Without `from`.
  // CHECK: dtensor.redistribute %[[X]] to <@tp, [S(0)]> : tensor<8x16xf32>{{$}}
  %0 = dtensor.redistribute %x to <@tp, [S(0)]> : tensor<8x16xf32>
  // With `from`.
  // CHECK: dtensor.redistribute %[[X]] from <@tp, [P(sum)]> to <@tp, [S(0)]> : tensor<8x16xf32>{{$}}
  %1 = dtensor.redistribute %x from <@tp, [P]> to <@tp, [S(0)]> : tensor<8x16xf32>
  // CHECK: dtensor.redistribute %[[X]] from <@tp, [S(0)]> to <@tp, [S(1)]> : tensor<8x16xf32>{{$}}
  %2 = dtensor.redistribute %x from <@tp, [S(0)]> to <@tp, [S(1)]> : tensor<8x16xf32>
  // R may become P(sum), P(avg), P(min) and P(max).
  // CHECK: dtensor.redistribute %[[X]] from <@mesh2d, [R, R]> to <@mesh2d, [P(avg), P(avg)]> : tensor<8x16xf32>{{$}}
  %3 = dtensor.redistribute %x from <@mesh2d, [R, R]> to <@mesh2d, [P(avg), P(avg)]> : tensor<8x16xf32>
  // CHECK: dtensor.redistribute %[[X]] from <@mesh2d, [P(max), S(1)]> to <@mesh2d, [P(max), R]> : tensor<8x16xf32>{{$}}
  %4 = dtensor.redistribute %x from <@mesh2d, [P(max), S(1)]> to <@mesh2d, [P(max), R]> : tensor<8x16xf32>
  // P(sum) and P(avg) turn into each other (a local rescale).
  // CHECK: dtensor.redistribute %[[X]] from <@tp, [P(sum)]> to <@tp, [P(avg)]> : tensor<8x16xf32>{{$}}
  %sa = dtensor.redistribute %x from <@tp, [P]> to <@tp, [P(avg)]> : tensor<8x16xf32>
  // CHECK: dtensor.redistribute %[[X]] from <@tp, [P(avg)]> to <@tp, [P(sum)]> : tensor<8x16xf32>{{$}}
  %as = dtensor.redistribute %x from <@tp, [P(avg)]> to <@tp, [P]> : tensor<8x16xf32>
  // P(product) survives when it stays P(product).
  // CHECK: dtensor.redistribute %[[X]] from <@tp, [P(product)]> to <@tp, [P(product)]> : tensor<8x16xf32>{{$}}
  %5 = dtensor.redistribute %x from <@tp, [P(product)]> to <@tp, [P(product)]> : tensor<8x16xf32>
  // Explicit equal result type is elided; dynamic dims (which cannot be
  // sharded, LAYOUT5).
  // CHECK: dtensor.redistribute %[[D]] to <@mesh2d, [R, P(sum)]> : tensor<?x?xf32>{{$}}
  %6 = dtensor.redistribute %d to <@mesh2d, [R, P(sum)]> : tensor<?x?xf32> -> tensor<?x?xf32>
  // CHECK: dtensor.redistribute %[[D]] from <@tp, [R]> to <@tp, [P(min)]> {tag = 1 : i64} : tensor<?x?xf32>{{$}}
  %7 = dtensor.redistribute %d from <@tp, [R]> to <@tp, [P(min)]> {tag = 1} : tensor<?x?xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @from_to_local
// CHECK-SAME: (%[[L:.*]]: tensor<2x16xf32>, %[[G:.*]]: tensor<8x16xf32>, %[[U:.*]]: tensor<?x16xf32>, %[[LR:.*]]: tensor<2x16xf32>)
func.func @from_to_local(%l: tensor<2x16xf32>, %g: tensor<8x16xf32>,
                         %u: tensor<?x16xf32>, %lr: tensor<2x16xf32>) {
  // Even shards: static local sizes.
  // CHECK: dtensor.from_local %[[L]] layout <@tp, [S(0)]> : tensor<2x16xf32> -> tensor<8x16xf32>{{$}}
  %0 = dtensor.from_local %l layout <@tp, [S(0)]> : tensor<2x16xf32> -> tensor<8x16xf32>
  // CHECK: dtensor.to_local %[[G]] layout <@tp, [S(0)]> : tensor<8x16xf32> -> tensor<2x16xf32>{{$}}
  %1 = dtensor.to_local %g layout <@tp, [S(0)]> : tensor<8x16xf32> -> tensor<2x16xf32>
  // Uneven shards (6 over 4 ranks: 2, 2, 2, 0): dynamic local size.
  // CHECK: dtensor.from_local %[[U]] layout <@tp, [S(0)]> : tensor<?x16xf32> -> tensor<6x16xf32>{{$}}
  %2 = dtensor.from_local %u layout <@tp, [S(0)]> : tensor<?x16xf32> -> tensor<6x16xf32>
  // CHECK: dtensor.to_local %{{.*}} layout <@tp, [S(0)]> : tensor<6x16xf32> -> tensor<?x16xf32>{{$}}
  %3 = dtensor.to_local %2 layout <@tp, [S(0)]> : tensor<6x16xf32> -> tensor<?x16xf32>
  // A dynamic local size is also allowed where shards are even.
  // CHECK: dtensor.from_local %[[U]] layout <@tp, [S(0)]> : tensor<?x16xf32> -> tensor<8x16xf32>{{$}}
  %4 = dtensor.from_local %u layout <@tp, [S(0)]> : tensor<?x16xf32> -> tensor<8x16xf32>
  // Nested split of one dim by two mesh dims: 8 / 2 / 4 = 1.
  // CHECK: dtensor.to_local %[[G]] layout <@mesh2d, [S(0), S(0)]> : tensor<8x16xf32> -> tensor<1x16xf32>{{$}}
  %5 = dtensor.to_local %g layout <@mesh2d, [S(0), S(0)]> : tensor<8x16xf32> -> tensor<1x16xf32>
  // Two dims sharded, replicated and partial placements keep the size.
  // CHECK: dtensor.to_local %[[G]] layout <@mesh2d, [S(1), S(0)]> : tensor<8x16xf32> -> tensor<2x8xf32>{{$}}
  %6 = dtensor.to_local %g layout <@mesh2d, [S(1), S(0)]> : tensor<8x16xf32> -> tensor<2x8xf32>
  // CHECK: dtensor.from_local %[[LR]] layout <@mesh2d, [P(sum), S(0)]> : tensor<2x16xf32> -> tensor<8x16xf32>{{$}}
  %7 = dtensor.from_local %lr layout <@mesh2d, [P, S(0)]> : tensor<2x16xf32> -> tensor<8x16xf32>
  // CHECK: dtensor.to_local %[[G]] layout <@tp, [R]> : tensor<8x16xf32> -> tensor<8x16xf32>{{$}}
  %8 = dtensor.to_local %g layout <@tp, [R]> : tensor<8x16xf32> -> tensor<8x16xf32>
  // Uneven along one dim only (257 over 2: 129 + 128).
  // CHECK: dtensor.to_local %{{.*}} layout <@mesh2d, [S(0), S(1)]> : tensor<257x16xf32> -> tensor<?x4xf32>{{$}}
  %big = tensor.empty() : tensor<257x16xf32>
  %9 = dtensor.to_local %big layout <@mesh2d, [S(0), S(1)]> : tensor<257x16xf32> -> tensor<?x4xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4] names = ["dp", "tp"]

// CHECK-LABEL: func.func @coord
func.func @coord() -> (index, index, index) {
  // CHECK: %[[A:.*]] = dtensor.coord @tp axes = [0] : index
  %a = dtensor.coord @tp axes = [0] : index
  // CHECK: %[[B:.*]] = dtensor.coord @mesh2d axes = [1] : index
  %b = dtensor.coord @mesh2d axes = [1] : index
  // CHECK: %[[C:.*]] = dtensor.coord @mesh2d axes = [0, 1] : index
  %c = dtensor.coord @mesh2d axes = [0, 1] : index
  // CHECK: return %[[A]], %[[B]], %[[C]]
  return %a, %b, %c : index, index, index
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[D:.*]]: tensor<?x16xbf16>)
func.func @all_reduce(%x: tensor<4x16xf32>, %d: tensor<?x16xbf16>) {
  // CHECK: dtensor.all_reduce %[[X]] on @tp axes = [0] reduce = sum : tensor<4x16xf32>{{$}}
  %0 = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4x16xf32>
  // CHECK: dtensor.all_reduce %[[X]] on @tp axes = [0] reduce = avg : tensor<4x16xf32>{{$}}
  %1 = dtensor.all_reduce %x on @tp axes = [0] reduce = avg : tensor<4x16xf32>
  // CHECK: dtensor.all_reduce %[[X]] on @mesh2d axes = [0] reduce = product : tensor<4x16xf32>{{$}}
  %2 = dtensor.all_reduce %x on @mesh2d axes = [0] reduce = product : tensor<4x16xf32>
  // CHECK: dtensor.all_reduce %[[X]] on @mesh2d axes = [1] reduce = min : tensor<4x16xf32>{{$}}
  %3 = dtensor.all_reduce %x on @mesh2d axes = [1] reduce = min : tensor<4x16xf32>
  // CHECK: dtensor.all_reduce %[[X]] on @mesh2d axes = [0, 1] reduce = max : tensor<4x16xf32>{{$}}
  %4 = dtensor.all_reduce %x on @mesh2d axes = [0, 1] reduce = max : tensor<4x16xf32>
  // CHECK: dtensor.all_reduce %[[D]] on @tp axes = [0] reduce = sum : tensor<?x16xbf16>{{$}}
  %5 = dtensor.all_reduce %d on @tp axes = [0] reduce = sum : tensor<?x16xbf16> -> tensor<?x16xbf16>
  return
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @all_gather
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>, %[[D:.*]]: tensor<?x4xf32>)
func.func @all_gather(%x: tensor<4x4xf32>, %d: tensor<?x4xf32>) {
  // CHECK: dtensor.all_gather %[[X]] on @tp axes = [0] gather_dim = 1 : tensor<4x4xf32> -> tensor<4x16xf32>{{$}}
  %0 = dtensor.all_gather %x on @tp axes = [0] gather_dim = 1 : tensor<4x4xf32> -> tensor<4x16xf32>
  // CHECK: dtensor.all_gather %[[X]] on @mesh2d axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>{{$}}
  %1 = dtensor.all_gather %x on @mesh2d axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
  // Group of both axes: 8 ranks.
  // CHECK: dtensor.all_gather %[[X]] on @mesh2d axes = [0, 1] gather_dim = 0 : tensor<4x4xf32> -> tensor<32x4xf32>{{$}}
  %2 = dtensor.all_gather %x on @mesh2d axes = [0, 1] gather_dim = 0 : tensor<4x4xf32> -> tensor<32x4xf32>
  // Dynamic sizes.
  // CHECK: dtensor.all_gather %[[D]] on @tp axes = [0] gather_dim = 0 : tensor<?x4xf32> -> tensor<?x4xf32>{{$}}
  %3 = dtensor.all_gather %d on @tp axes = [0] gather_dim = 0 : tensor<?x4xf32> -> tensor<?x4xf32>
  // CHECK: dtensor.all_gather %[[D]] on @tp axes = [0] gather_dim = 1 : tensor<?x4xf32> -> tensor<?x16xf32>{{$}}
  %4 = dtensor.all_gather %d on @tp axes = [0] gather_dim = 1 : tensor<?x4xf32> -> tensor<?x16xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @reduce_scatter
// CHECK-SAME: (%[[X:.*]]: tensor<16x8xf32>, %[[D:.*]]: tensor<16x?xf16>)
func.func @reduce_scatter(%x: tensor<16x8xf32>, %d: tensor<16x?xf16>) {
  // CHECK: dtensor.reduce_scatter %[[X]] on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<16x8xf32> -> tensor<4x8xf32>{{$}}
  %0 = dtensor.reduce_scatter %x on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<16x8xf32> -> tensor<4x8xf32>
  // CHECK: dtensor.reduce_scatter %[[X]] on @mesh2d axes = [0] scatter_dim = 1 reduce = max : tensor<16x8xf32> -> tensor<16x4xf32>{{$}}
  %1 = dtensor.reduce_scatter %x on @mesh2d axes = [0] scatter_dim = 1 reduce = max : tensor<16x8xf32> -> tensor<16x4xf32>
  // CHECK: dtensor.reduce_scatter %[[X]] on @mesh2d axes = [0, 1] scatter_dim = 0 reduce = avg : tensor<16x8xf32> -> tensor<2x8xf32>{{$}}
  %2 = dtensor.reduce_scatter %x on @mesh2d axes = [0, 1] scatter_dim = 0 reduce = avg : tensor<16x8xf32> -> tensor<2x8xf32>
  // CHECK: dtensor.reduce_scatter %[[D]] on @tp axes = [0] scatter_dim = 0 reduce = min : tensor<16x?xf16> -> tensor<4x?xf16>{{$}}
  %3 = dtensor.reduce_scatter %d on @tp axes = [0] scatter_dim = 0 reduce = min : tensor<16x?xf16> -> tensor<4x?xf16>
  // CHECK: dtensor.reduce_scatter %[[D]] on @tp axes = [0] scatter_dim = 1 reduce = product : tensor<16x?xf16> -> tensor<16x?xf16>{{$}}
  %4 = dtensor.reduce_scatter %d on @tp axes = [0] scatter_dim = 1 reduce = product : tensor<16x?xf16> -> tensor<16x?xf16>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// CHECK-LABEL: func.func @all_to_all
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32>, %[[D:.*]]: tensor<?x16x3xf32>)
func.func @all_to_all(%x: tensor<2x16xf32>, %d: tensor<?x16x3xf32>) {
  // CHECK: dtensor.all_to_all %[[X]] on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>{{$}}
  %0 = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x16xf32> -> tensor<8x4xf32>
  // split_dim == concat_dim leaves the shape unchanged.
  // CHECK: dtensor.all_to_all %[[X]] on @tp axes = [0] split_dim = 1 concat_dim = 1 : tensor<2x16xf32> -> tensor<2x16xf32>{{$}}
  %1 = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 1 : tensor<2x16xf32> -> tensor<2x16xf32>
  // Dynamic sizes, rank 3.
  // CHECK: dtensor.all_to_all %[[D]] on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<?x16x3xf32> -> tensor<?x4x3xf32>{{$}}
  %2 = dtensor.all_to_all %d on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<?x16x3xf32> -> tensor<?x4x3xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// CHECK-LABEL: func.func @all_to_all_v
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[S:.*]]: tensor<4xi64>, %[[R:.*]]: tensor<4xi64>)
func.func @all_to_all_v(%x: tensor<?x8xf32>, %s: tensor<4xi64>, %r: tensor<4xi64>) {
  // CHECK: dtensor.all_to_all_v %[[X]], %[[S]], %[[R]] on @tp axes = [0] : tensor<?x8xf32>, tensor<4xi64>, tensor<4xi64> -> tensor<?x8xf32>{{$}}
  %0 = dtensor.all_to_all_v %x, %s, %r on @tp axes = [0] : tensor<?x8xf32>, tensor<4xi64>, tensor<4xi64> -> tensor<?x8xf32>
  return
}

// CHECK-LABEL: func.func @routed_matmul
func.func @routed_matmul(%x: tensor<16x8xf32>, %ids: tensor<16x2xi32>, %w: tensor<4x8x6xf32>, %d: tensor<?x8xbf16>, %di: tensor<?x1xi64>, %dw: tensor<2x8x6xbf16>) {
  // CHECK: dtensor.routed_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<16x2xi32>, tensor<4x8x6xf32> -> tensor<16x2x6xf32>{{$}}
  %0 = dtensor.routed_matmul %x, %ids, %w : tensor<16x8xf32>, tensor<16x2xi32>, tensor<4x8x6xf32> -> tensor<16x2x6xf32>
  // CHECK: dtensor.routed_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8xbf16>, tensor<?x1xi64>, tensor<2x8x6xbf16> -> tensor<?x1x6xbf16>{{$}}
  %1 = dtensor.routed_matmul %d, %di, %dw : tensor<?x8xbf16>, tensor<?x1xi64>, tensor<2x8x6xbf16> -> tensor<?x1x6xbf16>
  return
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @permute_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[D:.*]]: tensor<?xi32>)
func.func @permute_broadcast(%x: tensor<4x16xf32>, %d: tensor<?xi32>) {
  // CHECK: dtensor.permute %[[X]] on @tp axes = [0] perm = [1, 2, 3, 0] : tensor<4x16xf32>{{$}}
  %0 = dtensor.permute %x on @tp axes = [0] perm = [1, 2, 3, 0] : tensor<4x16xf32>
  // CHECK: dtensor.permute %[[D]] on @mesh2d axes = [0, 1] perm = [7, 6, 5, 4, 3, 2, 1, 0] : tensor<?xi32>{{$}}
  %1 = dtensor.permute %d on @mesh2d axes = [0, 1] perm = [7, 6, 5, 4, 3, 2, 1, 0] : tensor<?xi32> -> tensor<?xi32>
  // CHECK: dtensor.broadcast %[[X]] on @tp axes = [0] root = 0 : tensor<4x16xf32>{{$}}
  %2 = dtensor.broadcast %x on @tp axes = [0] root = 0 : tensor<4x16xf32>
  // CHECK: dtensor.broadcast %[[D]] on @mesh2d axes = [0] root = 1 : tensor<?xi32>{{$}}
  %3 = dtensor.broadcast %d on @mesh2d axes = [0] root = 1 : tensor<?xi32> -> tensor<?xi32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// CHECK-LABEL: func.func @coalesced
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<8x8xf32>, %[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<4x2xf32>, %[[C:.*]]: tensor<8xf32>, %[[E:.*]]: tensor<4x2xf32>)
func.func @coalesced(%x: tensor<4xf32>, %y: tensor<8x8xf32>,
                     %a: tensor<2x4xf32>, %b: tensor<4x2xf32>,
                     %c: tensor<8xf32>, %e: tensor<4x2xf32>) {
  // CHECK: %{{.*}}:2 = dtensor.all_reduce_coalesced %[[X]], %[[Y]] on @tp axes = [0] reduce = sum : tensor<4xf32>, tensor<8x8xf32>{{$}}
  %0:2 = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0] reduce = sum : tensor<4xf32>, tensor<8x8xf32>
  // One operand; explicit equal result types are elided.
  // CHECK: %{{.*}} = dtensor.all_reduce_coalesced %[[X]] on @tp axes = [0] reduce = max : tensor<4xf32>{{$}}
  %1 = dtensor.all_reduce_coalesced %x on @tp axes = [0] reduce = max : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %{{.*}}:2 = dtensor.all_gather_coalesced %[[A]], %[[B]] on @tp axes = [0] gather_dims = [0, 1] : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<8x4xf32>, tensor<4x8xf32>{{$}}
  %2:2 = dtensor.all_gather_coalesced %a, %b on @tp axes = [0] gather_dims = [0, 1]
      : tensor<2x4xf32>, tensor<4x2xf32> -> tensor<8x4xf32>, tensor<4x8xf32>
  // CHECK: %{{.*}}:2 = dtensor.reduce_scatter_coalesced %[[C]], %[[E]] on @tp axes = [0] scatter_dims = [0, 0] reduce = sum : tensor<8xf32>, tensor<4x2xf32> -> tensor<2xf32>, tensor<1x2xf32>{{$}}
  %3:2 = dtensor.reduce_scatter_coalesced %c, %e on @tp axes = [0] scatter_dims = [0, 0] reduce = sum
      : tensor<8xf32>, tensor<4x2xf32> -> tensor<2xf32>, tensor<1x2xf32>
  // CHECK: %{{.*}}:3 = dtensor.reduce_scatter_coalesced %[[C]], %[[E]], %[[Y]] on @tp axes = [0] scatter_dims = [0, 0, 1] reduce = avg : tensor<8xf32>, tensor<4x2xf32>, tensor<8x8xf32> -> tensor<2xf32>, tensor<1x2xf32>, tensor<8x2xf32>{{$}}
  %4:3 = dtensor.reduce_scatter_coalesced %c, %e, %y on @tp axes = [0] scatter_dims = [0, 0, 1] reduce = avg
      : tensor<8xf32>, tensor<4x2xf32>, tensor<8x8xf32> -> tensor<2xf32>, tensor<1x2xf32>, tensor<8x2xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @all_gather_matmul
// CHECK-SAME: (%[[A:.*]]: tensor<2x16xf32>, %[[B:.*]]: tensor<16x32xf32>, %[[B2:.*]]: tensor<16x8xf32>, %[[A3:.*]]: tensor<3x2x16xf32>, %[[AD:.*]]: tensor<?x16xf32>)
func.func @all_gather_matmul(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>,
                             %b2: tensor<16x8xf32>, %a3: tensor<3x2x16xf32>,
                             %ad: tensor<?x16xf32>) {
  // Rank-2 A, one B.
  // CHECK: %{{.*}}, %{{.*}} = dtensor.all_gather_matmul %[[A]], %[[B]] on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>{{$}}
  %0:2 = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  // Rank-2 A, several Bs.
  // CHECK: %{{.*}}, %{{.*}}:3 = dtensor.all_gather_matmul %[[A]], %[[B]], %[[B2]], %[[B]] on @mesh2d axes = [0] gather_dim = 0 : tensor<2x16xf32>, tensor<16x32xf32>, tensor<16x8xf32>, tensor<16x32xf32> -> tensor<4x16xf32>, tensor<4x32xf32>, tensor<4x8xf32>, tensor<4x32xf32>{{$}}
  %1:4 = dtensor.all_gather_matmul %a, %b, %b2, %b on @mesh2d axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32>, tensor<16x8xf32>, tensor<16x32xf32>
      -> tensor<4x16xf32>, tensor<4x32xf32>, tensor<4x8xf32>, tensor<4x32xf32>
  // Rank-3 A gathered along its batch or its row dimension.
  // CHECK: %{{.*}}, %{{.*}}:2 = dtensor.all_gather_matmul %[[A3]], %[[B]], %[[B2]] on @tp axes = [0] gather_dim = 1 : tensor<3x2x16xf32>, tensor<16x32xf32>, tensor<16x8xf32> -> tensor<3x8x16xf32>, tensor<3x8x32xf32>, tensor<3x8x8xf32>{{$}}
  %2:3 = dtensor.all_gather_matmul %a3, %b, %b2 on @tp axes = [0] gather_dim = 1
      : tensor<3x2x16xf32>, tensor<16x32xf32>, tensor<16x8xf32>
      -> tensor<3x8x16xf32>, tensor<3x8x32xf32>, tensor<3x8x8xf32>
  // CHECK: %{{.*}}, %{{.*}} = dtensor.all_gather_matmul %[[A3]], %[[B]] on @mesh2d axes = [0, 1] gather_dim = 0 : tensor<3x2x16xf32>, tensor<16x32xf32> -> tensor<24x2x16xf32>, tensor<24x2x32xf32>{{$}}
  %3:2 = dtensor.all_gather_matmul %a3, %b on @mesh2d axes = [0, 1] gather_dim = 0
      : tensor<3x2x16xf32>, tensor<16x32xf32> -> tensor<24x2x16xf32>, tensor<24x2x32xf32>
  // Dynamic sizes.
  // CHECK: %{{.*}}, %{{.*}} = dtensor.all_gather_matmul %[[AD]], %[[B]] on @tp axes = [0] gather_dim = 0 : tensor<?x16xf32>, tensor<16x32xf32> -> tensor<?x16xf32>, tensor<?x32xf32>{{$}}
  %4:2 = dtensor.all_gather_matmul %ad, %b on @tp axes = [0] gather_dim = 0
      : tensor<?x16xf32>, tensor<16x32xf32> -> tensor<?x16xf32>, tensor<?x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]
dtensor.mesh @mesh2d shape = [2, 4]

// CHECK-LABEL: func.func @matmul_reduce_scatter
// CHECK-SAME: (%[[A:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<4x32xf32>, %[[A3:.*]]: tensor<2x8x4xf32>, %[[AD:.*]]: tensor<?x4xf32>)
func.func @matmul_reduce_scatter(%a: tensor<8x4xf32>, %b: tensor<4x32xf32>,
                                 %a3: tensor<2x8x4xf32>, %ad: tensor<?x4xf32>) {
  // CHECK: dtensor.matmul_reduce_scatter %[[A]], %[[B]] on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<2x32xf32>{{$}}
  %0 = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = sum
      : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<2x32xf32>
  // CHECK: dtensor.matmul_reduce_scatter %[[A]], %[[B]] on @mesh2d axes = [1] scatter_dim = 1 reduce = avg : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<8x8xf32>{{$}}
  %1 = dtensor.matmul_reduce_scatter %a, %b on @mesh2d axes = [1] scatter_dim = 1 reduce = avg
      : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<8x8xf32>
  // Rank-3 A.
  // CHECK: dtensor.matmul_reduce_scatter %[[A3]], %[[B]] on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<2x8x4xf32>, tensor<4x32xf32> -> tensor<2x2x32xf32>{{$}}
  %2 = dtensor.matmul_reduce_scatter %a3, %b on @tp axes = [0] scatter_dim = 1 reduce = sum
      : tensor<2x8x4xf32>, tensor<4x32xf32> -> tensor<2x2x32xf32>
  // CHECK: dtensor.matmul_reduce_scatter %[[A3]], %[[B]] on @mesh2d axes = [0] scatter_dim = 0 reduce = sum : tensor<2x8x4xf32>, tensor<4x32xf32> -> tensor<1x8x32xf32>{{$}}
  %3 = dtensor.matmul_reduce_scatter %a3, %b on @mesh2d axes = [0] scatter_dim = 0 reduce = sum
      : tensor<2x8x4xf32>, tensor<4x32xf32> -> tensor<1x8x32xf32>
  // Dynamic sizes.
  // CHECK: dtensor.matmul_reduce_scatter %[[AD]], %[[B]] on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<?x4xf32>, tensor<4x32xf32> -> tensor<?x32xf32>{{$}}
  %4 = dtensor.matmul_reduce_scatter %ad, %b on @tp axes = [0] scatter_dim = 0 reduce = sum
      : tensor<?x4xf32>, tensor<4x32xf32> -> tensor<?x32xf32>
  return
}

// -----

dtensor.mesh @tp shape = [4]

// CHECK-LABEL: func.func @async
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4x4xf32>, %[[Z:.*]]: tensor<16x8xf32>, %[[A:.*]]: tensor<2x16xf32>, %[[B:.*]]: tensor<16x32xf32>)
func.func @async(%x: tensor<4xf32>, %y: tensor<4x4xf32>, %z: tensor<16x8xf32>,
                 %a: tensor<2x16xf32>, %b: tensor<16x32xf32>)
    -> (tensor<4xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<8x32xf32>, tensor<4xf32>, tensor<4x4xf32>) {
  // CHECK: %[[F0:.*]] = dtensor.async_start {
  // CHECK-NEXT: %[[R0:.*]] = dtensor.all_reduce %[[X]] on @tp axes = [0] reduce = sum : tensor<4xf32>{{$}}
  // CHECK-NEXT: dtensor.yield %[[R0]] : tensor<4xf32>{{$}}
  // CHECK-NEXT: } : !dtensor.future<tensor<4xf32>>{{$}}
  %f0 = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  // CHECK: %[[F1:.*]] = dtensor.async_start {
  // CHECK-NEXT: %[[R1:.*]] = dtensor.all_gather %[[Y]] on @tp axes = [0] gather_dim = 1 : tensor<4x4xf32> -> tensor<4x16xf32>{{$}}
  // CHECK-NEXT: dtensor.yield %[[R1]] : tensor<4x16xf32>{{$}}
  // CHECK-NEXT: } : !dtensor.future<tensor<4x16xf32>>{{$}}
  %f1 = dtensor.async_start {
    %g = dtensor.all_gather %y on @tp axes = [0] gather_dim = 1 : tensor<4x4xf32> -> tensor<4x16xf32>
    dtensor.yield %g : tensor<4x16xf32>
  } : !dtensor.future<tensor<4x16xf32>>
  // CHECK: %[[F2:.*]] = dtensor.async_start {
  // CHECK-NEXT: %[[R2:.*]] = dtensor.reduce_scatter %[[Z]] on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<16x8xf32> -> tensor<4x8xf32>{{$}}
  // CHECK-NEXT: dtensor.yield %[[R2]] : tensor<4x8xf32>{{$}}
  // CHECK-NEXT: } {tag} : !dtensor.future<tensor<4x8xf32>>{{$}}
  %f2 = dtensor.async_start {
    %s = dtensor.reduce_scatter %z on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<16x8xf32> -> tensor<4x8xf32>
    dtensor.yield %s : tensor<4x8xf32>
  } {tag} : !dtensor.future<tensor<4x8xf32>>
  // A fused collective with two results.
  // CHECK: %[[F3:.*]]:2 = dtensor.async_start {
  // The fused op names its results after the ODS result names.
  // CHECK-NEXT: %[[G3:.*]], %[[R3:.*]] = dtensor.all_gather_matmul %[[A]], %[[B]] on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>{{$}}
  // CHECK-NEXT: dtensor.yield %[[G3]], %[[R3]] : tensor<8x16xf32>, tensor<8x32xf32>{{$}}
  // CHECK-NEXT: } : !dtensor.future<tensor<8x16xf32>>, !dtensor.future<tensor<8x32xf32>>{{$}}
  %f3:2 = dtensor.async_start {
    %ag:2 = dtensor.all_gather_matmul %a, %b on @tp axes = [0] gather_dim = 0
        : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
    dtensor.yield %ag#0, %ag#1 : tensor<8x16xf32>, tensor<8x32xf32>
  } : !dtensor.future<tensor<8x16xf32>>, !dtensor.future<tensor<8x32xf32>>
  // A coalesced collective.
  // CHECK: %[[F4:.*]]:2 = dtensor.async_start {
  // CHECK-NEXT: %[[R4:.*]]:2 = dtensor.all_reduce_coalesced %[[X]], %[[Y]] on @tp axes = [0] reduce = avg : tensor<4xf32>, tensor<4x4xf32>{{$}}
  // CHECK-NEXT: dtensor.yield %[[R4]]#0, %[[R4]]#1 : tensor<4xf32>, tensor<4x4xf32>{{$}}
  // CHECK-NEXT: } : !dtensor.future<tensor<4xf32>>, !dtensor.future<tensor<4x4xf32>>{{$}}
  %f4:2 = dtensor.async_start {
    %c:2 = dtensor.all_reduce_coalesced %x, %y on @tp axes = [0] reduce = avg : tensor<4xf32>, tensor<4x4xf32>
    dtensor.yield %c#0, %c#1 : tensor<4xf32>, tensor<4x4xf32>
  } : !dtensor.future<tensor<4xf32>>, !dtensor.future<tensor<4x4xf32>>
  // CHECK: %[[W0:.*]] = dtensor.wait %[[F0]] : !dtensor.future<tensor<4xf32>>{{$}}
  %w0 = dtensor.wait %f0 : !dtensor.future<tensor<4xf32>>
  // CHECK: %[[W1:.*]] = dtensor.wait %[[F1]] : !dtensor.future<tensor<4x16xf32>>{{$}}
  // The short future type `<T>` parses too.
  %w1 = dtensor.wait %f1 : <tensor<4x16xf32>>
  // CHECK: %[[W2:.*]] = dtensor.wait %[[F2]] {tag} : !dtensor.future<tensor<4x8xf32>>{{$}}
  %w2 = dtensor.wait %f2 {tag} : !dtensor.future<tensor<4x8xf32>> -> tensor<4x8xf32>
  // CHECK: %[[W3:.*]] = dtensor.wait %[[F3]]#1 : !dtensor.future<tensor<8x32xf32>>{{$}}
  %w3 = dtensor.wait %f3#1 : !dtensor.future<tensor<8x32xf32>>
  // CHECK: %[[W4:.*]] = dtensor.wait %[[F3]]#0 : !dtensor.future<tensor<8x16xf32>>{{$}}
  %w4 = dtensor.wait %f3#0 : !dtensor.future<tensor<8x16xf32>>
  // CHECK: %[[W5:.*]] = dtensor.wait %[[F4]]#0 : !dtensor.future<tensor<4xf32>>{{$}}
  %w5 = dtensor.wait %f4#0 : !dtensor.future<tensor<4xf32>>
  // CHECK: %[[W6:.*]] = dtensor.wait %[[F4]]#1 : !dtensor.future<tensor<4x4xf32>>{{$}}
  %w6 = dtensor.wait %f4#1 : !dtensor.future<tensor<4x4xf32>>
  // CHECK: return %[[W0]], %[[W1]], %[[W2]], %[[W3]], %[[W5]], %[[W6]]
  return %w0, %w1, %w2, %w3, %w5, %w6
      : tensor<4xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<8x32xf32>, tensor<4xf32>, tensor<4x4xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// Remaining collectives asynchronously, with dynamic dims.

// CHECK-LABEL: func.func @async_more
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32>, %[[A:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<4x32xf32>)
func.func @async_more(%x: tensor<?x16xf32>, %a: tensor<8x4xf32>, %b: tensor<4x32xf32>) {
  // CHECK: dtensor.async_start {
  // CHECK-NEXT: dtensor.all_to_all %[[X]] on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<?x16xf32> -> tensor<?x4xf32>{{$}}
  // CHECK: } : !dtensor.future<tensor<?x4xf32>>{{$}}
  %f0 = dtensor.async_start {
    %t = dtensor.all_to_all %x on @tp axes = [0] split_dim = 1 concat_dim = 0 : tensor<?x16xf32> -> tensor<?x4xf32>
    dtensor.yield %t : tensor<?x4xf32>
  } : !dtensor.future<tensor<?x4xf32>>
  // CHECK: dtensor.async_start {
  // CHECK-NEXT: dtensor.permute %[[X]] on @tp axes = [0] perm = [3, 0, 1, 2] : tensor<?x16xf32>{{$}}
  // CHECK: } : !dtensor.future<tensor<?x16xf32>>{{$}}
  %f1 = dtensor.async_start {
    %p = dtensor.permute %x on @tp axes = [0] perm = [3, 0, 1, 2] : tensor<?x16xf32>
    dtensor.yield %p : tensor<?x16xf32>
  } : !dtensor.future<tensor<?x16xf32>>
  // CHECK: dtensor.async_start {
  // CHECK-NEXT: dtensor.broadcast %[[X]] on @tp axes = [0] root = 3 : tensor<?x16xf32>{{$}}
  // CHECK: } : !dtensor.future<tensor<?x16xf32>>{{$}}
  %f2 = dtensor.async_start {
    %c = dtensor.broadcast %x on @tp axes = [0] root = 3 : tensor<?x16xf32>
    dtensor.yield %c : tensor<?x16xf32>
  } : !dtensor.future<tensor<?x16xf32>>
  // CHECK: dtensor.async_start {
  // CHECK-NEXT: dtensor.matmul_reduce_scatter %[[A]], %[[B]] on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<2x32xf32>{{$}}
  // CHECK: } : !dtensor.future<tensor<2x32xf32>>{{$}}
  %f3 = dtensor.async_start {
    %m = dtensor.matmul_reduce_scatter %a, %b on @tp axes = [0] scatter_dim = 0 reduce = sum
        : tensor<8x4xf32>, tensor<4x32xf32> -> tensor<2x32xf32>
    dtensor.yield %m : tensor<2x32xf32>
  } : !dtensor.future<tensor<2x32xf32>>
  // CHECK: dtensor.async_start {
  // CHECK-NEXT: dtensor.all_gather_coalesced %[[X]], %[[A]] on @tp axes = [0] gather_dims = [1, 0] : tensor<?x16xf32>, tensor<8x4xf32> -> tensor<?x64xf32>, tensor<32x4xf32>{{$}}
  // CHECK: } : !dtensor.future<tensor<?x64xf32>>, !dtensor.future<tensor<32x4xf32>>{{$}}
  %f4:2 = dtensor.async_start {
    %g:2 = dtensor.all_gather_coalesced %x, %a on @tp axes = [0] gather_dims = [1, 0]
        : tensor<?x16xf32>, tensor<8x4xf32> -> tensor<?x64xf32>, tensor<32x4xf32>
    dtensor.yield %g#0, %g#1 : tensor<?x64xf32>, tensor<32x4xf32>
  } : !dtensor.future<tensor<?x64xf32>>, !dtensor.future<tensor<32x4xf32>>
  // CHECK: dtensor.wait %{{.*}} : !dtensor.future<tensor<?x4xf32>>{{$}}
  // CHECK: dtensor.wait %{{.*}} : !dtensor.future<tensor<?x16xf32>>{{$}}
  // CHECK: dtensor.wait %{{.*}} : !dtensor.future<tensor<?x16xf32>>{{$}}
  // CHECK: dtensor.wait %{{.*}} : !dtensor.future<tensor<2x32xf32>>{{$}}
  // CHECK: dtensor.wait %{{.*}}#0 : !dtensor.future<tensor<?x64xf32>>{{$}}
  // CHECK: dtensor.wait %{{.*}}#1 : !dtensor.future<tensor<32x4xf32>>{{$}}
  %w0 = dtensor.wait %f0 : !dtensor.future<tensor<?x4xf32>>
  %w1 = dtensor.wait %f1 : !dtensor.future<tensor<?x16xf32>>
  %w2 = dtensor.wait %f2 : !dtensor.future<tensor<?x16xf32>>
  %w3 = dtensor.wait %f3 : !dtensor.future<tensor<2x32xf32>>
  %w4 = dtensor.wait %f4#0 : !dtensor.future<tensor<?x64xf32>>
  %w5 = dtensor.wait %f4#1 : !dtensor.future<tensor<32x4xf32>>
  return
}

// -----

// The future type on its own: function arguments and results.

// CHECK-LABEL: func.func private @future_type
// CHECK-SAME: (!dtensor.future<tensor<4xf32>>, !dtensor.future<tensor<?x8xbf16>>) -> !dtensor.future<tensor<2x3x4xi8>>
func.func private @future_type(!dtensor.future<tensor<4xf32>>, !dtensor.future<tensor<?x8xbf16>>) -> !dtensor.future<tensor<2x3x4xi8>>

// -----

// Targets: backend and hardware, with the optional fields.

// CHECK: module attributes {dtensor.target = #dtensor.target<cpu, "h200">}
module attributes {dtensor.target = #dtensor.target<cpu, "h200">} {}

// -----

// CHECK: module attributes {dtensor.target = #dtensor.target<cuda, "h100", chip = "sm_90", hardware_file = "hw.json", cost_table = "costs.json">}
module attributes {dtensor.target = #dtensor.target<cuda, "h100", cost_table = "costs.json", chip = "sm_90", hardware_file = "hw.json">} {}

// -----

dtensor.mesh @tp shape = [4]

// Loop-carried futures (ASYNC4): started before the loop and in each
// iteration, waited in the next one and after the loop; through scf.while
// and scf.if too.
// CHECK-LABEL: func.func @carried_futures
func.func @carried_futures(%x: tensor<4xf32>, %n: index, %c: i1) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %x on @tp axes = [0] reduce = sum : tensor<4xf32>
    dtensor.yield %r : tensor<4xf32>
  } : !dtensor.future<tensor<4xf32>>
  // CHECK: scf.for {{.*}} -> (tensor<4xf32>, !dtensor.future<tensor<4xf32>>)
  %l:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x, %g = %f)
      -> (tensor<4xf32>, !dtensor.future<tensor<4xf32>>) {
    // CHECK: dtensor.wait
    %y = dtensor.wait %g : !dtensor.future<tensor<4xf32>>
    %g2 = dtensor.async_start {
      %r = dtensor.all_reduce %y on @tp axes = [0] reduce = sum : tensor<4xf32>
      dtensor.yield %r : tensor<4xf32>
    } : !dtensor.future<tensor<4xf32>>
    scf.yield %y, %g2 : tensor<4xf32>, !dtensor.future<tensor<4xf32>>
  }
  // CHECK: scf.while
  %w = scf.while (%g = %l#1) : (!dtensor.future<tensor<4xf32>>)
      -> !dtensor.future<tensor<4xf32>> {
    scf.condition(%c) %g : !dtensor.future<tensor<4xf32>>
  } do {
  ^bb0(%h: !dtensor.future<tensor<4xf32>>):
    %y = dtensor.wait %h : !dtensor.future<tensor<4xf32>>
    %h2 = dtensor.async_start {
      %r = dtensor.all_reduce %y on @tp axes = [0] reduce = sum : tensor<4xf32>
      dtensor.yield %r : tensor<4xf32>
    } : !dtensor.future<tensor<4xf32>>
    scf.yield %h2 : !dtensor.future<tensor<4xf32>>
  }
  %z = dtensor.wait %w : !dtensor.future<tensor<4xf32>>
  // CHECK: scf.if
  %b = scf.if %c -> !dtensor.future<tensor<4xf32>> {
    %t = dtensor.async_start {
      %r = dtensor.all_reduce %z on @tp axes = [0] reduce = max : tensor<4xf32>
      dtensor.yield %r : tensor<4xf32>
    } : !dtensor.future<tensor<4xf32>>
    scf.yield %t : !dtensor.future<tensor<4xf32>>
  } else {
    %e = dtensor.async_start {
      %r = dtensor.all_reduce %z on @tp axes = [0] reduce = min : tensor<4xf32>
      dtensor.yield %r : tensor<4xf32>
    } : !dtensor.future<tensor<4xf32>>
    scf.yield %e : !dtensor.future<tensor<4xf32>>
  }
  %v = dtensor.wait %b : !dtensor.future<tensor<4xf32>>
  return %v : tensor<4xf32>
}
