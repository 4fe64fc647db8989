// examples/fsdp_tp_mlp.mlir at Llama-3-8B MLP sizes
// (8192 tokens, hidden 4096, ffn 14336, bf16) on a 2x2 mesh: the
// input of docs/images/fsdp_tp_backward_*.svg, made by
// scripts/make-timelines.sh (docs/autodiff.md, "Scheduling the backward").
dtensor.mesh @m shape = [2, 2] names = ["dp", "tp"]

func.func @fsdp_tp_mlp(
    %x: tensor<8192x4096xbf16> {dtensor.layout = #dtensor.layout<@m, [S(0), R]>},
    %w0a: tensor<4096x14336xbf16> {dtensor.param = "l0.up", dtensor.layout = #dtensor.layout<@m, [S(0), S(1)]>},
    %w0b: tensor<14336x4096xbf16> {dtensor.param = "l0.down", dtensor.layout = #dtensor.layout<@m, [S(1), S(0)]>})
    -> (tensor<8192x4096xbf16> {dtensor.layout = #dtensor.layout<@m, [S(0), R]>}) {
  %zero = arith.constant 0.0 : bf16
  %u0a = dtensor.annotate %w0a layout <@m, [R, S(1)]> {dtensor.boundary} : tensor<4096x14336xbf16>
  %u0b = dtensor.annotate %w0b layout <@m, [R, S(0)]> {dtensor.boundary} : tensor<14336x4096xbf16>
  %e01 = tensor.empty() : tensor<8192x14336xbf16>
  %f01 = linalg.fill ins(%zero : bf16) outs(%e01 : tensor<8192x14336xbf16>) -> tensor<8192x14336xbf16>
  %h0 = linalg.matmul ins(%x, %u0a : tensor<8192x4096xbf16>, tensor<4096x14336xbf16>) outs(%f01 : tensor<8192x14336xbf16>) -> tensor<8192x14336xbf16>
  %e02 = tensor.empty() : tensor<8192x14336xbf16>
  %a0 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h0 : tensor<8192x14336xbf16>) outs(%e02 : tensor<8192x14336xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %r = arith.maximumf %in, %zero : bf16
    linalg.yield %r : bf16
  } -> tensor<8192x14336xbf16>
  %e03 = tensor.empty() : tensor<8192x4096xbf16>
  %f03 = linalg.fill ins(%zero : bf16) outs(%e03 : tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
  %y0 = linalg.matmul ins(%a0, %u0b : tensor<8192x14336xbf16>, tensor<14336x4096xbf16>) outs(%f03 : tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
  return %y0 : tensor<8192x4096xbf16>
}
