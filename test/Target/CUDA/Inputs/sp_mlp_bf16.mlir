// The sequence-parallel MLP block in bf16, one rank's program: RMSNorm of
// the rank's rows x, the SwiGLU MLP on the gathered input xg, the residual
// add of the reduce-scattered rs (bench/gpu_rank/gen_rank.py --block sp_mlp
// --tokens 512 --hidden 64 --ffn 128 --tp 1). CUDAPipeline.mlir compiles
// its backward.
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>

dtensor.mesh @rank shape = [1] names = ["tp"]

func.func @sp_mlp(%x_arg: tensor<512x64xbf16>, %g_arg: tensor<64xbf16>, %xg_arg: tensor<512x64xbf16>, %w1_arg: tensor<64x128xbf16>, %w3_arg: tensor<64x128xbf16>, %w2_arg: tensor<128x64xbf16>, %rs_arg: tensor<512x64xbf16>) -> (tensor<512x64xbf16>, tensor<512x64xbf16>, tensor<512x64xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %zf = arith.constant 0.0 : f32
  %x = dtensor.annotate %x_arg layout <@rank, [R]> : tensor<512x64xbf16>
  %g = dtensor.annotate %g_arg layout <@rank, [R]> : tensor<64xbf16>
  %xg = dtensor.annotate %xg_arg layout <@rank, [R]> : tensor<512x64xbf16>
  %w1 = dtensor.annotate %w1_arg layout <@rank, [R]> : tensor<64x128xbf16>
  %w3 = dtensor.annotate %w3_arg layout <@rank, [R]> : tensor<64x128xbf16>
  %w2 = dtensor.annotate %w2_arg layout <@rank, [R]> : tensor<128x64xbf16>
  %rs = dtensor.annotate %rs_arg layout <@rank, [R]> : tensor<512x64xbf16>
  %e1 = tensor.empty() : tensor<512xf32>
  %f2 = linalg.fill ins(%zf : f32) outs(%e1 : tensor<512xf32>) -> tensor<512xf32>
  %ss3 = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<512x64xbf16>) outs(%f2 : tensor<512xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %sq = arith.mulf %af, %af : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<512xf32>
  %e4 = tensor.empty() : tensor<512x64xbf16>
  %norm5 = linalg.generic {indexing_maps = [#id2, #row, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss3, %g : tensor<512x64xbf16>, tensor<512xf32>, tensor<64xbf16>) outs(%e4 : tensor<512x64xbf16>) {
  ^bb0(%a: bf16, %s: f32, %gn: bf16, %out: bf16):
    %inv = arith.constant 0.015625 : f32
    %eps = arith.constant 1.0e-5 : f32
    %mean = arith.mulf %s, %inv : f32
    %var = arith.addf %mean, %eps : f32
    %rinv = math.rsqrt %var : f32
    %af = arith.extf %a : bf16 to f32
    %gf = arith.extf %gn : bf16 to f32
    %y = arith.mulf %af, %rinv : f32
    %z = arith.mulf %y, %gf : f32
    %zt = arith.truncf %z : f32 to bf16
    linalg.yield %zt : bf16
  } -> tensor<512x64xbf16>
  %e6 = tensor.empty() : tensor<512x128xbf16>
  %f7 = linalg.fill ins(%zero : bf16) outs(%e6 : tensor<512x128xbf16>) -> tensor<512x128xbf16>
  %mm8 = linalg.matmul ins(%xg, %w1 : tensor<512x64xbf16>, tensor<64x128xbf16>) outs(%f7 : tensor<512x128xbf16>) -> tensor<512x128xbf16>
  %e9 = tensor.empty() : tensor<512x128xbf16>
  %f10 = linalg.fill ins(%zero : bf16) outs(%e9 : tensor<512x128xbf16>) -> tensor<512x128xbf16>
  %mm11 = linalg.matmul ins(%xg, %w3 : tensor<512x64xbf16>, tensor<64x128xbf16>) outs(%f10 : tensor<512x128xbf16>) -> tensor<512x128xbf16>
  %e12 = tensor.empty() : tensor<512x128xbf16>
  %ew13 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm8, %mm11 : tensor<512x128xbf16>, tensor<512x128xbf16>) outs(%e12 : tensor<512x128xbf16>) {
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
  } -> tensor<512x128xbf16>
  %e14 = tensor.empty() : tensor<512x64xbf16>
  %f15 = linalg.fill ins(%zero : bf16) outs(%e14 : tensor<512x64xbf16>) -> tensor<512x64xbf16>
  %mm16 = linalg.matmul ins(%ew13, %w2 : tensor<512x128xbf16>, tensor<128x64xbf16>) outs(%f15 : tensor<512x64xbf16>) -> tensor<512x64xbf16>
  %e17 = tensor.empty() : tensor<512x64xbf16>
  %ew18 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %rs : tensor<512x64xbf16>, tensor<512x64xbf16>) outs(%e17 : tensor<512x64xbf16>) {
  ^bb0(%a0: bf16, %a1: bf16, %out: bf16):
    %a0f = arith.extf %a0 : bf16 to f32
    %a1f = arith.extf %a1 : bf16 to f32
    %r = arith.addf %a0f, %a1f : f32
    %rt = arith.truncf %r : f32 to bf16
    linalg.yield %rt : bf16
  } -> tensor<512x64xbf16>
  %norm5_out = dtensor.annotate %norm5 layout <@rank, [R]> : tensor<512x64xbf16>
  %mm16_out = dtensor.annotate %mm16 layout <@rank, [R]> : tensor<512x64xbf16>
  %ew18_out = dtensor.annotate %ew18 layout <@rank, [R]> : tensor<512x64xbf16>
  return %norm5_out, %mm16_out, %ew18_out : tensor<512x64xbf16>, tensor<512x64xbf16>, tensor<512x64xbf16>
}
