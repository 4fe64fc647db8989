// Max and product reductions over a sharded dim, differentiated (test/e2e/autodiff.mlir).
#x = affine_map<(i, j) -> (i, j)>
#r = affine_map<(i, j) -> (i)>
dtensor.mesh @tp shape = [4]
func.func @f(%x: tensor<8x16xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>, dtensor.requires_grad})
    -> (tensor<8xf32>, tensor<8xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %fp = linalg.fill ins(%one : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %mx = linalg.reduce ins(%x : tensor<8x16xf32>) outs(%fm : tensor<8xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %m = arith.maximumf %a, %acc : f32
      linalg.yield %m : f32
    }
  %pr = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x16xf32>) outs(%fp : tensor<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = math.tanh %a : f32
    %s = arith.addf %t, %one : f32
    %m = arith.mulf %acc, %s : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  return %mx, %pr : tensor<8xf32>, tensor<8xf32>
}
