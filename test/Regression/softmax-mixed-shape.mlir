// RUN: dtensor-opt %s --verify-each --dtensor-lower-to-runtime | FileCheck %s

// Issue 11: upstream's softmax decomposition builds its reductions on the
// output type and combines them with the input, invalid IR where one is
// static and the other dynamic in some dim (what canonicalize makes of a
// per-rank softmax after dtensor-specialize-rank). The lowering runs it on
// the input type and casts the result back.

// CHECK-LABEL: func.func @static_in_dynamic_out
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[O:.*]]: tensor<?x8xf32>)
// CHECK: %[[INIT:.*]] = tensor.cast %[[O]] : tensor<?x8xf32> to tensor<2x8xf32>
// CHECK: linalg.generic {{.*}} outs(%[[INIT]] : tensor<2x8xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%[[INIT]] : tensor<2x8xf32>)
// CHECK: %[[BACK:.*]] = tensor.cast %[[R]] : tensor<2x8xf32> to tensor<?x8xf32>
// CHECK: return %[[BACK]] : tensor<?x8xf32>
func.func @static_in_dynamic_out(%x: tensor<2x8xf32>, %o: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %s = linalg.softmax dimension(1) ins(%x : tensor<2x8xf32>) outs(%o : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @dynamic_in_static_out
// CHECK: tensor.cast %{{.*}} : tensor<2x8xf32> to tensor<?x8xf32>
// CHECK: tensor.cast %{{.*}} : tensor<?x8xf32> to tensor<2x8xf32>
func.func @dynamic_in_static_out(%x: tensor<?x8xf32>, %o: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = linalg.softmax dimension(1) ins(%x : tensor<?x8xf32>) outs(%o : tensor<2x8xf32>) -> tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}
