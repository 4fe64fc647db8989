// What the whole CUDA pipeline refuses, each with an error naming the op.

func.func @int_matmul(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4x4xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<4x4xi32>) -> tensor<4x4xi32>
  // expected-error @below {{'linalg.matmul' op cannot lower this contraction to dtensor_rt_matmul: element types 'i32', 'i32' -> 'i32'}}
  %r = linalg.matmul ins(%a, %b : tensor<4x4xi32>, tensor<4x4xi32>) outs(%f : tensor<4x4xi32>) -> tensor<4x4xi32>
  return %r : tensor<4x4xi32>
}

// -----

func.func @scalar_read(%x: tensor<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'memref.load' op cannot lower this host access to a buffer for the CUDA target}}
  %v = tensor.extract %x[%c0] : tensor<4xf32>
  return %v : f32
}
