// RUN: split-file %s %t
// RUN: dtensor-opt %t/errors.mlir -split-input-file --dtensor-spmd -verify-diagnostics -o /dev/null
// RUN: dtensor-opt %t/reshape.mlir --verify-each --dtensor-spmd | FileCheck %t/reshape.mlir

// Issue 11, dynamic global dims. The policy: a dynamic dimension is never
// sharded. A layout that shards one is rejected where it is written
// (LAYOUT5, at annotation), and propagation never picks a strategy that
// would shard one; dynamic dims stay replicated. Before, dtensor-partition
// did chunk arithmetic on the dynamic-size sentinel (negative static sizes,
// missing dynamic sizes, a canonicalizer segfault).

//--- errors.mlir

dtensor.mesh @tp shape = [4]

func.func @annotate(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{LAYOUT5] placement S(0) shards a dynamic dimension of 'tensor<?x8xf32>'; only static dimensions can be sharded}}
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<?x8xf32>
  %b = dtensor.redistribute %a to <@tp, [R]> : tensor<?x8xf32>
  return %b : tensor<?x8xf32>
}

// -----

dtensor.mesh @tp shape = [4]

// expected-error @+1 {{LAYOUT5] placement S(0) shards a dynamic dimension of 'tensor<?x8xf32>'}}
func.func @argument(%x: tensor<?x8xf32> {dtensor.layout = #dtensor.layout<@tp, [S(0)]>}) -> tensor<?x8xf32> {
  return %x : tensor<?x8xf32>
}

//--- reshape.mlir

dtensor.mesh @tp shape = [4]

// The collapse would carry S(0) of 4x? onto the dynamic collapsed dim:
// propagation gathers before it instead.
// CHECK-LABEL: func.func @collapse_into_dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<1x?xf32> {{.*}}) -> (tensor<?xf32> {{.*}}#dtensor.layout<@tp, [R]>})
// CHECK: %[[G:.*]] = dtensor.all_gather %[[X]] on @tp axes = [0] gather_dim = 0 : tensor<1x?xf32> -> tensor<4x?xf32>
// CHECK: tensor.collapse_shape %[[G]] {{\[}}[0, 1]] : tensor<4x?xf32> into tensor<?xf32>
func.func @collapse_into_dynamic(%x: tensor<4x?xf32>) -> tensor<?xf32> {
  %a = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<4x?xf32>
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<4x?xf32> into tensor<?xf32>
  return %c : tensor<?xf32>
}
