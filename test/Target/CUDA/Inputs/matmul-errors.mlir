// The one error of dtensor-cuda-matmul-to-runtime: a matmul still on
// tensors (the pass runs after bufferization). Contractions it cannot map
// to cuBLASLt are not errors: they stay for the kernel path with a remark
// (CUDAMatmulToRuntime.mlir).

func.func @on_tensors(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @below {{'linalg.matmul' op cannot lower a matmul on tensors to dtensor_rt_matmul; bufferize first}}
  %r = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
