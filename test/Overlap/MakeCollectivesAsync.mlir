// RUN: dtensor-opt %s --dtensor-async-collectives --split-input-file | FileCheck %s

// A collective becomes an async_start where it was, its wait goes right
// before the first use of its result.

dtensor.mesh @m shape = [4]

// CHECK-LABEL: func.func @simple
// CHECK-NEXT:  %[[F:.*]] = dtensor.async_start {
// CHECK-NEXT:    %[[R:.*]] = dtensor.all_reduce %arg0 on @m axes = [0] reduce = sum : tensor<8xf32>
// CHECK-NEXT:    dtensor.yield %[[R]] : tensor<8xf32>
// CHECK-NEXT:  } : !dtensor.future<tensor<8xf32>>
// CHECK-NEXT:  %[[X:.*]] = arith.mulf %arg1, %arg1
// CHECK-NEXT:  %[[W:.*]] = dtensor.wait %[[F]] : !dtensor.future<tensor<8xf32>>
// CHECK-NEXT:  %[[Y:.*]] = arith.addf %[[W]], %[[X]]
// CHECK-NEXT:  return %[[Y]]
func.func @simple(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %r = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<8xf32>
  %x = arith.mulf %b, %b : tensor<8xf32>
  %y = arith.addf %r, %x : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Every collective is wrapped, in place: the issue order does not change.
// Each result of a coalesced op gets its own wait before its own first use.

dtensor.mesh @m shape = [4]

// CHECK-LABEL: func.func @coalesced_and_order
// CHECK-NEXT:  %[[F0:.*]]:2 = dtensor.async_start {
// CHECK-NEXT:    dtensor.all_reduce_coalesced %arg0, %arg1
// CHECK:       } : !dtensor.future<tensor<8xf32>>, !dtensor.future<tensor<4xf32>>
// CHECK-NEXT:  %[[F1:.*]] = dtensor.async_start {
// CHECK-NEXT:    dtensor.all_gather %arg1 on @m axes = [0] gather_dim = 0
// CHECK:       %[[W01:.*]] = dtensor.wait %[[F0]]#1
// CHECK-NEXT:  %[[X:.*]] = arith.mulf %[[W01]], %[[W01]] : tensor<4xf32>
// CHECK-NEXT:  %[[F2:.*]] = dtensor.async_start {
// CHECK-NEXT:    dtensor.reduce_scatter %arg0 on @m axes = [0] scatter_dim = 0
// CHECK:       %[[W00:.*]] = dtensor.wait %[[F0]]#0
// CHECK-NEXT:  %[[Y:.*]] = arith.addf %[[W00]], %[[W00]] : tensor<8xf32>
// CHECK-NEXT:  %[[W1:.*]] = dtensor.wait %[[F1]]
// CHECK-NEXT:  %[[W2:.*]] = dtensor.wait %[[F2]]
// CHECK-NEXT:  return %[[Y]], %[[X]], %[[W1]], %[[W2]]
func.func @coalesced_and_order(%a: tensor<8xf32>, %b: tensor<4xf32>)
    -> (tensor<8xf32>, tensor<4xf32>, tensor<16xf32>, tensor<2xf32>) {
  %r:2 = dtensor.all_reduce_coalesced %a, %b on @m axes = [0] reduce = sum
      : tensor<8xf32>, tensor<4xf32>
  %g = dtensor.all_gather %b on @m axes = [0] gather_dim = 0
      : tensor<4xf32> -> tensor<16xf32>
  %x = arith.mulf %r#1, %r#1 : tensor<4xf32>
  %s = dtensor.reduce_scatter %a on @m axes = [0] scatter_dim = 0 reduce = sum
      : tensor<8xf32> -> tensor<2xf32>
  %y = arith.addf %r#0, %r#0 : tensor<8xf32>
  return %y, %x, %g, %s : tensor<8xf32>, tensor<4xf32>, tensor<16xf32>, tensor<2xf32>
}

// -----

// Fused collectives are wrapped like the others; a result without uses is
// waited for at the end of the segment.

dtensor.mesh @m shape = [4]

// CHECK-LABEL: func.func @fused
// CHECK-NEXT:  %[[F:.*]]:2 = dtensor.async_start {
// CHECK-NEXT:    %[[G:.*]], %[[C:.*]] = dtensor.all_gather_matmul %arg0, %arg1
// CHECK-NEXT:    dtensor.yield %[[G]], %[[C]]
// CHECK-NEXT:  } : !dtensor.future<tensor<8x16xf32>>, !dtensor.future<tensor<8x32xf32>>
// CHECK-NEXT:  %[[X:.*]] = arith.mulf %arg2, %arg2
// CHECK-NEXT:  %[[C:.*]] = dtensor.wait %[[F]]#1
// CHECK-NEXT:  %[[Y:.*]] = arith.addf %[[C]], %[[X]]
// CHECK-NEXT:  dtensor.wait %[[F]]#0
// CHECK-NEXT:  return %[[Y]]
func.func @fused(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>, %z: tensor<8x32xf32>)
    -> tensor<8x32xf32> {
  %ag, %c = dtensor.all_gather_matmul %a, %b on @m axes = [0] gather_dim = 0
      : tensor<2x16xf32>, tensor<16x32xf32> -> tensor<8x16xf32>, tensor<8x32xf32>
  %x = arith.mulf %z, %z : tensor<8x32xf32>
  %y = arith.addf %c, %x : tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Waits do not cross barriers: a call (unknown effects) or an op with
// regions. A use nested in a region counts as a use by the op holding it.
// Collectives inside regions are not top-level and stay synchronous.

dtensor.mesh @m shape = [4]

func.func private @opaque(tensor<8xf32>) -> tensor<8xf32>

// CHECK-LABEL: func.func @barriers
// CHECK:       %[[F0:.*]] = dtensor.async_start
// CHECK-NEXT:    dtensor.all_reduce %arg0
// CHECK:       %[[F1:.*]] = dtensor.async_start
// CHECK-NEXT:    dtensor.all_reduce %arg1
// CHECK:       arith.mulf
// CHECK-NEXT:  %[[W1:.*]] = dtensor.wait %[[F1]]
// CHECK-NEXT:  linalg.generic
// CHECK:         tensor.extract %[[W1]]
// CHECK:       %[[W0:.*]] = dtensor.wait %[[F0]]
// CHECK-NEXT:  call @opaque
// CHECK-NEXT:  scf.for
// CHECK-NEXT:    dtensor.all_reduce
// CHECK-NOT:   dtensor.async_start
// CHECK:       arith.addf %{{.*}}, %[[W0]]
func.func @barriers(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r0 = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<8xf32>
  %r1 = dtensor.all_reduce %b on @m axes = [0] reduce = sum : tensor<8xf32>
  %x = arith.mulf %b, %b : tensor<8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%x : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = tensor.extract %r1[%c0] : tensor<8xf32>
    %s = arith.addf %in, %e : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %o = func.call @opaque(%g) : (tensor<8xf32>) -> tensor<8xf32>
  %l = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %o) -> tensor<8xf32> {
    %s = dtensor.all_reduce %acc on @m axes = [0] reduce = sum : tensor<8xf32>
    scf.yield %s : tensor<8xf32>
  }
  %y = arith.addf %l, %r0 : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Bodies of several blocks are left alone.

dtensor.mesh @m shape = [4]

// CHECK-LABEL: func.func @blocks
// CHECK-NOT:   dtensor.async_start
// CHECK:       dtensor.all_reduce
func.func @blocks(%a: tensor<8xf32>) -> tensor<8xf32> {
  %r = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<8xf32>
  cf.br ^next
^next:
  return %r : tensor<8xf32>
}
