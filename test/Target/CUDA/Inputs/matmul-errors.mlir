// Contractions that dtensor-cuda-matmul-to-runtime cannot map: each an error
// naming the op (matmuls are never generated as kernels).

func.func @integer(%a: memref<4x4xi32>, %b: memref<4x4xi32>, %c: memref<4x4xi32>) {
  // expected-error @below {{'linalg.matmul' op cannot lower this contraction to dtensor_rt_matmul: element types 'i32', 'i32' -> 'i32' (supported: bf16, f16 or f32, the same for A, B and C)}}
  linalg.matmul ins(%a, %b : memref<4x4xi32>, memref<4x4xi32>) outs(%c : memref<4x4xi32>)
  return
}

// -----

func.func @mixed(%a: memref<4x4xbf16>, %b: memref<4x4xbf16>, %c: memref<4x4xf32>) {
  // expected-error @below {{'linalg.matmul' op cannot lower this contraction to dtensor_rt_matmul: element types 'bf16', 'bf16' -> 'f32'}}
  linalg.matmul ins(%a, %b : memref<4x4xbf16>, memref<4x4xbf16>) outs(%c : memref<4x4xf32>)
  return
}

// -----

func.func @matvec(%a: memref<4x4xf32>, %x: memref<4xf32>, %y: memref<4xf32>) {
  // expected-error @below {{'linalg.matvec' op cannot lower this contraction to dtensor_rt_matmul: the contraction has 0 batch, 1 m, 0 n and 1 k dimensions (supported: at most 1 batch, exactly 1 m, n and k)}}
  linalg.matvec ins(%a, %x : memref<4x4xf32>, memref<4xf32>) outs(%y : memref<4xf32>)
  return
}

// -----

func.func @batch_reduce(%a: memref<2x4x4xf32>, %b: memref<2x4x4xf32>, %c: memref<4x4xf32>) {
  // expected-error @below {{'linalg.batch_reduce_matmul' op cannot lower this contraction to dtensor_rt_matmul: the contraction has 0 batch, 1 m, 1 n and 2 k dimensions}}
  linalg.batch_reduce_matmul ins(%a, %b : memref<2x4x4xf32>, memref<2x4x4xf32>) outs(%c : memref<4x4xf32>)
  return
}

// -----

func.func @transposed_output(%a: memref<4x8xf32>, %b: memref<8x6xf32>, %c: memref<6x4xf32>) {
  // expected-error @below {{'linalg.matmul' op cannot lower this contraction to dtensor_rt_matmul: the output is not indexed (batch, m, n) in this order}}
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (n, m)>]
    ins(%a, %b : memref<4x8xf32>, memref<8x6xf32>) outs(%c : memref<6x4xf32>)
  return
}

// -----

func.func @broadcast_b(%a: memref<2x4x8xf32>, %b: memref<8x6xf32>, %c: memref<2x4x6xf32>) {
  // expected-error @below {{'linalg.batch_matmul' op cannot lower this contraction to dtensor_rt_matmul: the contraction has 0 batch, 2 m, 1 n and 1 k dimensions}}
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
    ins(%a, %b : memref<2x4x8xf32>, memref<8x6xf32>) outs(%c : memref<2x4x6xf32>)
  return
}

// -----

func.func @on_tensors(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @below {{'linalg.matmul' op cannot lower a matmul on tensors to dtensor_rt_matmul; bufferize first}}
  %r = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
