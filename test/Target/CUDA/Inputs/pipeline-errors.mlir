// What the whole CUDA pipeline refuses, each with an error naming the op;
// and what it no longer refuses.

// An integer matmul is not a cuBLASLt matmul: a generated kernel, with a
// remark (it used to be an error).

func.func @int_matmul(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4x4xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<4x4xi32>) -> tensor<4x4xi32>
  // expected-remark @below {{not a cuBLASLt matmul: element types 'i32', 'i32' -> 'i32' (cuBLASLt: bf16, f16 or f32, the same for A, B and C); lowered as a generated reduction kernel}}
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
