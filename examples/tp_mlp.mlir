// A two-layer MLP in the global view, tensor-parallel over 4 ranks in the
// Megatron style: the first weight is split by columns, the second by rows.
//
//   y = relu(x @ w1) @ w2,   x: 8x16, w1: 16x32, w2: 32x16
//
// The annotations are the user's placement requests; everything else is
// plain linalg on global shapes.

dtensor.mesh @tp shape = [4] names = ["tp"]

func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>,
               %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %xr = dtensor.annotate %x layout <@tp, [R]> : tensor<8x16xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<16x32xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<32x16xf32>

  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%xr, %w1c : tensor<8x16xf32>, tensor<16x32xf32>)
                     outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x32xf32>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x32xf32>) outs(%e2 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x32xf32>

  %e3 = tensor.empty() : tensor<8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%a, %w2r : tensor<8x32xf32>, tensor<32x16xf32>)
                     outs(%f3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %yr = dtensor.annotate %y layout <@tp, [R]> : tensor<8x16xf32>
  return %yr : tensor<8x16xf32>
}
