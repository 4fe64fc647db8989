// Row-wise ops of a transformer block on one rank: softmax over the last
// dimension (linalg.softmax, decomposed by the runtime lowering) and an
// RMSNorm (mean of squares per row, rsqrt, scale), in f32.
func.func @softmax_rows(%x: tensor<4x128xf32>) -> tensor<4x128xf32> {
  %e = tensor.empty() : tensor<4x128xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<4x128xf32>) outs(%e : tensor<4x128xf32>) -> tensor<4x128xf32>
  return %s : tensor<4x128xf32>
}

func.func @rmsnorm_rows(%x: tensor<4x128xf32>, %g: tensor<128xf32>) -> tensor<4x128xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 128.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %er = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%er : tensor<4xf32>) -> tensor<4xf32>
  %ss = linalg.reduce ins(%x : tensor<4x128xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%v: f32, %a: f32) {
      %sq = arith.mulf %v, %v : f32
      %s = arith.addf %sq, %a : f32
      linalg.yield %s : f32
    }
  %e = tensor.empty() : tensor<4x128xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss, %g : tensor<4x128xf32>, tensor<4xf32>, tensor<128xf32>) outs(%e : tensor<4x128xf32>) {
  ^bb0(%v: f32, %s: f32, %gain: f32, %o: f32):
    %mean = arith.divf %s, %n : f32
    %me = arith.addf %mean, %eps : f32
    %r = math.rsqrt %me : f32
    %nv = arith.mulf %v, %r : f32
    %out = arith.mulf %nv, %gain : f32
    linalg.yield %out : f32
  } -> tensor<4x128xf32>
  return %y : tensor<4x128xf32>
}
