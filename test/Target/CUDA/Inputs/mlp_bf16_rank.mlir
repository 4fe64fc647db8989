// A per-rank Megatron MLP in bf16 (what dtensor-spmd makes of a bf16
// tp_mlp): bf16 matmuls, the partial sums widened to f32 for the all_reduce
// (the runtime's collectives are f32 until its _bf16 entry points land).
dtensor.mesh @tp shape = [4] names = ["tp"]
func.func @mlp_bf16(%x: tensor<8x16xbf16>, %w1: tensor<16x8xbf16>, %w2: tensor<8x16xbf16>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : bf16
  %e1 = tensor.empty() : tensor<8x8xbf16>
  %f1 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %h = linalg.matmul ins(%x, %w1 : tensor<8x16xbf16>, tensor<16x8xbf16>) outs(%f1 : tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %a = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x8xbf16>) outs(%e1 : tensor<8x8xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %r = arith.maximumf %in, %zero : bf16
    linalg.yield %r : bf16
  } -> tensor<8x8xbf16>
  %e2 = tensor.empty() : tensor<8x16xbf16>
  %f2 = linalg.fill ins(%zero : bf16) outs(%e2 : tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %y = linalg.matmul ins(%a, %w2 : tensor<8x8xbf16>, tensor<8x16xbf16>) outs(%f2 : tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %yf = arith.extf %y : tensor<8x16xbf16> to tensor<8x16xf32>
  %r = dtensor.all_reduce %yf on @tp axes = [0] reduce = sum : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
