// Input of docs/images/tp_mlp_timeline.svg (see docs/timeline.md):
//
//   dtensor-opt docs/images/tp_mlp_timeline.mlir -o /dev/null \
//     --dtensor-export-timeline="svg=docs/images/tp_mlp_timeline.svg"
//
// @mlp is what `--dtensor-spmd` makes of examples/tp_mlp.mlir with
// realistic sizes (x: 8192x4096, w1: 4096x14336, w2: 14336x4096, bf16, over
// 4 ranks; per-rank shards of 3584 ffn columns/rows). @mlp_overlapped is the
// same computation scheduled by hand: the tokens are split into two
// micro-batches, and the all_reduce of the first runs while the second
// computes.

#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  dtensor.mesh @tp shape = [4] names = ["tp"]

  func.func @mlp(%arg0: tensor<8192x4096xbf16>, %arg1: tensor<4096x3584xbf16>,
                 %arg2: tensor<3584x4096xbf16>) -> tensor<8192x4096xbf16> {
    %cst = arith.constant 0.000000e+00 : bf16
    %0 = tensor.empty() : tensor<8192x3584xbf16>
    %1 = linalg.fill ins(%cst : bf16) outs(%0 : tensor<8192x3584xbf16>) -> tensor<8192x3584xbf16>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<8192x4096xbf16>, tensor<4096x3584xbf16>) outs(%1 : tensor<8192x3584xbf16>) -> tensor<8192x3584xbf16>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<8192x3584xbf16>) outs(%0 : tensor<8192x3584xbf16>) {
    ^bb0(%in: bf16, %out: bf16):
      %8 = arith.maximumf %in, %cst : bf16
      linalg.yield %8 : bf16
    } -> tensor<8192x3584xbf16>
    %4 = tensor.empty() : tensor<8192x4096xbf16>
    %5 = linalg.fill ins(%cst : bf16) outs(%4 : tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
    %6 = linalg.matmul ins(%3, %arg2 : tensor<8192x3584xbf16>, tensor<3584x4096xbf16>) outs(%5 : tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
    %7 = dtensor.all_reduce %6 on @tp axes = [0] reduce = sum : tensor<8192x4096xbf16>
    return %7 : tensor<8192x4096xbf16>
  }

  func.func @mlp_overlapped(%arg0: tensor<8192x4096xbf16>, %arg1: tensor<4096x3584xbf16>,
                            %arg2: tensor<3584x4096xbf16>) -> tensor<8192x4096xbf16> {
    %cst = arith.constant 0.000000e+00 : bf16
    %x0 = tensor.extract_slice %arg0[0, 0] [4096, 4096] [1, 1] : tensor<8192x4096xbf16> to tensor<4096x4096xbf16>
    %x1 = tensor.extract_slice %arg0[4096, 0] [4096, 4096] [1, 1] : tensor<8192x4096xbf16> to tensor<4096x4096xbf16>
    %e0 = tensor.empty() : tensor<4096x3584xbf16>
    %h0 = linalg.fill ins(%cst : bf16) outs(%e0 : tensor<4096x3584xbf16>) -> tensor<4096x3584xbf16>
    %e1 = tensor.empty() : tensor<4096x4096xbf16>
    %y0 = linalg.fill ins(%cst : bf16) outs(%e1 : tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>

    // Micro-batch 0.
    %m0 = linalg.matmul ins(%x0, %arg1 : tensor<4096x4096xbf16>, tensor<4096x3584xbf16>) outs(%h0 : tensor<4096x3584xbf16>) -> tensor<4096x3584xbf16>
    %a0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%m0 : tensor<4096x3584xbf16>) outs(%e0 : tensor<4096x3584xbf16>) {
    ^bb0(%in: bf16, %out: bf16):
      %r = arith.maximumf %in, %cst : bf16
      linalg.yield %r : bf16
    } -> tensor<4096x3584xbf16>
    %p0 = linalg.matmul ins(%a0, %arg2 : tensor<4096x3584xbf16>, tensor<3584x4096xbf16>) outs(%y0 : tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
    %f0 = dtensor.async_start {
      %s = dtensor.all_reduce %p0 on @tp axes = [0] reduce = sum : tensor<4096x4096xbf16>
      dtensor.yield %s : tensor<4096x4096xbf16>
    } : !dtensor.future<tensor<4096x4096xbf16>>

    // Micro-batch 1, while micro-batch 0 is reduced.
    %m1 = linalg.matmul ins(%x1, %arg1 : tensor<4096x4096xbf16>, tensor<4096x3584xbf16>) outs(%h0 : tensor<4096x3584xbf16>) -> tensor<4096x3584xbf16>
    %a1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%m1 : tensor<4096x3584xbf16>) outs(%e0 : tensor<4096x3584xbf16>) {
    ^bb0(%in: bf16, %out: bf16):
      %r = arith.maximumf %in, %cst : bf16
      linalg.yield %r : bf16
    } -> tensor<4096x3584xbf16>
    %p1 = linalg.matmul ins(%a1, %arg2 : tensor<4096x3584xbf16>, tensor<3584x4096xbf16>) outs(%y0 : tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
    %f1 = dtensor.async_start {
      %s = dtensor.all_reduce %p1 on @tp axes = [0] reduce = sum : tensor<4096x4096xbf16>
      dtensor.yield %s : tensor<4096x4096xbf16>
    } : !dtensor.future<tensor<4096x4096xbf16>>

    %r0 = dtensor.wait %f0 : !dtensor.future<tensor<4096x4096xbf16>>
    %r1 = dtensor.wait %f1 : !dtensor.future<tensor<4096x4096xbf16>>
    %y = tensor.concat dim(0) %r0, %r1 : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8192x4096xbf16>
    return %y : tensor<8192x4096xbf16>
  }
}
