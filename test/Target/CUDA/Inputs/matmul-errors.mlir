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
  // expected-error @below {{'linalg.matvec' op cannot lower this contraction to dtensor_rt_matmul: the contraction has 0 batch, 1 m, 0 n and 1 k dimensions (supported: any batch, 1 or more m, exactly 1 n and 1 k)}}
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

func.func @on_tensors(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @below {{'linalg.matmul' op cannot lower a matmul on tensors to dtensor_rt_matmul; bufferize first}}
  %r = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @strided_m(%x: memref<2x16x32xf32, strided<[2048, 64, 1]>>, %w: memref<32x64xf32>, %y: memref<2x16x64xf32>) {
  // expected-error @below {{'linalg.generic' op cannot lower this contraction to dtensor_rt_matmul: its batch or m dimensions of A are not contiguous ('memref<2x16x32xf32, strided<[2048, 64, 1]>>')}}
  linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (k, n)>, affine_map<(b, s, n, k) -> (b, s, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<2x16x32xf32, strided<[2048, 64, 1]>>, memref<32x64xf32>) outs(%y : memref<2x16x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

func.func @m_order(%x: memref<16x2x32xf32>, %w: memref<32x64xf32>, %y: memref<2x16x64xf32>) {
  // expected-error @below {{'linalg.generic' op cannot lower this contraction to dtensor_rt_matmul: A has several m dimensions and is not indexed (batch, m..., k) in the order of the output}}
  linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (s, b, k)>, affine_map<(b, s, n, k) -> (k, n)>, affine_map<(b, s, n, k) -> (b, s, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<16x2x32xf32>, memref<32x64xf32>) outs(%y : memref<2x16x64xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
