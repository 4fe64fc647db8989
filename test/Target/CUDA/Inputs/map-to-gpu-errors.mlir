// Host code may not read device memory.

func.func @host_read(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'memref.load' op cannot lower this host access to a buffer for the CUDA target: every buffer is device memory (a scalar read of a tensor, e.g. tensor.extract outside a linalg op?)}}
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

// -----

func.func @on_tensors(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'linalg.generic' op cannot map this op to GPU loops: it is not on buffers (bufferize first)}}
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
