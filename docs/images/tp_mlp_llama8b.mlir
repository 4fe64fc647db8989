// examples/tp_mlp.mlir at Llama-3-8B sizes (8192 tokens, hidden 4096, ffn
// 14336, bf16) on 4 ranks: the input of docs/images/tp_mlp_*.svg, made by
// scripts/make-timelines.sh (see docs/timeline.md).
dtensor.mesh @tp shape = [4] names = ["tp"]

func.func @mlp(%x: tensor<8192x4096xbf16>, %w1: tensor<4096x14336xbf16>,
               %w2: tensor<14336x4096xbf16>) -> tensor<8192x4096xbf16> {
  %xr = dtensor.annotate %x layout <@tp, [R]> : tensor<8192x4096xbf16>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<4096x14336xbf16>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<14336x4096xbf16>

  %zero = arith.constant 0.0 : bf16
  %e1 = tensor.empty() : tensor<8192x14336xbf16>
  %f1 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<8192x14336xbf16>) -> tensor<8192x14336xbf16>
  %h = linalg.matmul ins(%xr, %w1c : tensor<8192x4096xbf16>, tensor<4096x14336xbf16>)
                     outs(%f1 : tensor<8192x14336xbf16>) -> tensor<8192x14336xbf16>
  %e2 = tensor.empty() : tensor<8192x14336xbf16>
  %a = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8192x14336xbf16>) outs(%e2 : tensor<8192x14336xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %r = arith.maximumf %in, %zero : bf16
    linalg.yield %r : bf16
  } -> tensor<8192x14336xbf16>

  %e3 = tensor.empty() : tensor<8192x4096xbf16>
  %f3 = linalg.fill ins(%zero : bf16) outs(%e3 : tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
  %y = linalg.matmul ins(%a, %w2r : tensor<8192x14336xbf16>, tensor<14336x4096xbf16>)
                     outs(%f3 : tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
  %yr = dtensor.annotate %y layout <@tp, [R]> : tensor<8192x4096xbf16>
  return %yr : tensor<8192x4096xbf16>
}
