// A matmul with a dimension of size 0 (here B has no columns) is neither
// fused with its all_gather nor split with its all_reduce: both would slice
// a size-0 dim, which MLIR rejects ("offset 0 is out-of-bounds: 0 >= 0")
// after the pass, as invalid IR. Found while checking issue 11's 0-size
// cases; the old fusion emitted such an insert_slice.
// RUN: dtensor-opt %s -split-input-file --verify-each --dtensor-fuse-collective-matmul=force=true --dtensor-decompose-fused 2>&1 | FileCheck %s --check-prefix=FUSE
// RUN: dtensor-opt %s -split-input-file --verify-each --dtensor-split-matmul-all-reduce="force=true chunks=2" 2>&1 | FileCheck %s --check-prefix=SPLIT

// FUSE: remark: not fused: no matmul can take the gathered A: an operand has a dimension of size 0
// FUSE-NOT: error
dtensor.mesh @tp shape = [4]
func.func @gather(%a: tensor<2x16xf32>, %b: tensor<16x0xf32>) -> tensor<8x0xf32> {
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x0xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x0xf32>) -> tensor<8x0xf32>
  %c = linalg.matmul ins(%g, %b : tensor<8x16xf32>, tensor<16x0xf32>) outs(%f : tensor<8x0xf32>) -> tensor<8x0xf32>
  return %c : tensor<8x0xf32>
}

// -----

// SPLIT: remark: not split: {{.*}}an operand has a dimension of size 0
// SPLIT-NOT: error
dtensor.mesh @tp shape = [4]
func.func @reduce(%a: tensor<8x4xf32>, %b: tensor<4x0xf32>) -> tensor<8x0xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x0xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x0xf32>) -> tensor<8x0xf32>
  %c = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x0xf32>) outs(%f : tensor<8x0xf32>) -> tensor<8x0xf32>
  %r = dtensor.all_reduce %c on @tp axes = [0] reduce = sum : tensor<8x0xf32>
  return %r : tensor<8x0xf32>
}
