// A bf16 SwiGLU MLP, one rank's program: (silu(x w1) * (x w3)) w2
// (bench/gpu_rank/gen_rank.py --block mlp --tokens 64 --hidden 64 --ffn 128
// --tp 1). CUDAPipeline.mlir compiles its backward.
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>

dtensor.mesh @rank shape = [1] names = ["tp"]

func.func @mlp(%x_arg: tensor<64x64xbf16>, %w1_arg: tensor<64x128xbf16>, %w3_arg: tensor<64x128xbf16>, %w2_arg: tensor<128x64xbf16>) -> (tensor<64x64xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %zf = arith.constant 0.0 : f32
  %x = dtensor.annotate %x_arg layout <@rank, [R]> : tensor<64x64xbf16>
  %w1 = dtensor.annotate %w1_arg layout <@rank, [R]> : tensor<64x128xbf16>
  %w3 = dtensor.annotate %w3_arg layout <@rank, [R]> : tensor<64x128xbf16>
  %w2 = dtensor.annotate %w2_arg layout <@rank, [R]> : tensor<128x64xbf16>
  %e1 = tensor.empty() : tensor<64x128xbf16>
  %f2 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<64x128xbf16>) -> tensor<64x128xbf16>
  %mm3 = linalg.matmul ins(%x, %w1 : tensor<64x64xbf16>, tensor<64x128xbf16>) outs(%f2 : tensor<64x128xbf16>) -> tensor<64x128xbf16>
  %e4 = tensor.empty() : tensor<64x128xbf16>
  %f5 = linalg.fill ins(%zero : bf16) outs(%e4 : tensor<64x128xbf16>) -> tensor<64x128xbf16>
  %mm6 = linalg.matmul ins(%x, %w3 : tensor<64x64xbf16>, tensor<64x128xbf16>) outs(%f5 : tensor<64x128xbf16>) -> tensor<64x128xbf16>
  %e7 = tensor.empty() : tensor<64x128xbf16>
  %ew8 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm3, %mm6 : tensor<64x128xbf16>, tensor<64x128xbf16>) outs(%e7 : tensor<64x128xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
    %a0f = arith.extf %a0 : bf16 to f32
    %a1f = arith.extf %a1 : bf16 to f32
    %one = arith.constant 1.0 : f32
    %neg = arith.negf %a0f : f32
    %ex = math.exp %neg : f32
    %den = arith.addf %ex, %one : f32
    %silu = arith.divf %a0f, %den : f32
    %r = arith.mulf %silu, %a1f : f32
    %rt = arith.truncf %r : f32 to bf16
    linalg.yield %rt : bf16
  } -> tensor<64x128xbf16>
  %e9 = tensor.empty() : tensor<64x64xbf16>
  %f10 = linalg.fill ins(%zero : bf16) outs(%e9 : tensor<64x64xbf16>) -> tensor<64x64xbf16>
  %mm11 = linalg.matmul ins(%ew8, %w2 : tensor<64x128xbf16>, tensor<128x64xbf16>) outs(%f10 : tensor<64x64xbf16>) -> tensor<64x64xbf16>
  %mm11_out = dtensor.annotate %mm11 layout <@rank, [R]> : tensor<64x64xbf16>
  return %mm11_out : tensor<64x64xbf16>
}
