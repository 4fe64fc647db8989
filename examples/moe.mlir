// A mixture-of-experts layer with top-2 routing, expert-parallel over 4
// ranks: 4 experts, one per rank, and 16 tokens, 4 per rank.
//
//   logits = x @ w_router                      x: 16x8, w_router: 8x4
//   p = softmax(logits)
//   e1(t) = argmax p[t];  e2(t) = argmax of p[t] without e1(t)
//   y[t] = sum_k p[t, ek(t)] * (x[t] @ w[ek(t)])   w: 4x8x8 (expert, in, out)
//
// The expert layer is one dtensor.routed_matmul (docs/design.md, "Routed
// matmul"), one row per (token, choice). With tokens sharded by rows and
// experts by the expert dim, each rank counts its (token, choice) items per
// expert, sends the tokens to the ranks that hold their experts
// (dtensor.all_to_all_v, split sizes computed at run time: the token counts
// per expert are uneven and data-dependent), runs its expert on what it
// received and sends the results back. The router
// and the gating are local (tokens sharded, router weight replicated).
//
//   dtensor-opt examples/moe.mlir --dtensor-spmd --dtensor-comm-report
//   dtensor-run examples/moe.mlir -n 4

#tok = affine_map<(t, e) -> (t, e)>
#row = affine_map<(t, e) -> (t)>
#choice = affine_map<(t, k) -> (t, k)>
#token = affine_map<(t, k) -> (t)>

dtensor.mesh @ep shape = [4] names = ["ep"]

func.func @moe(%x: tensor<16x8xf32>,
               %w_router: tensor<8x4xf32> {dtensor.param = "router.weight"},
               %w: tensor<4x8x8xf32> {dtensor.param = "experts.weight"})
    -> tensor<16x8xf32> {
  %xs = dtensor.annotate %x layout <@ep, [S(0)]> : tensor<16x8xf32>
  %wr = dtensor.annotate %w_router layout <@ep, [R]> : tensor<8x4xf32>
  %we = dtensor.annotate %w layout <@ep, [S(0)]> : tensor<4x8x8xf32>

  // Router: probabilities over the experts.
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x4xf32>)
      -> tensor<16x4xf32>
  %logits = linalg.matmul ins(%xs, %wr : tensor<16x8xf32>, tensor<8x4xf32>)
                          outs(%f0 : tensor<16x4xf32>) -> tensor<16x4xf32>
  %e1 = tensor.empty() : tensor<16x4xf32>
  %probs = linalg.softmax dimension(1) ins(%logits : tensor<16x4xf32>)
                          outs(%e1 : tensor<16x4xf32>) -> tensor<16x4xf32>

  // Top-2: the largest probability and its expert, then the largest of
  // the others.
  %neg = arith.constant -1.0 : f32
  %e2 = tensor.empty() : tensor<16xf32>
  %f2 = linalg.fill ins(%neg : f32) outs(%e2 : tensor<16xf32>)
      -> tensor<16xf32>
  %c0 = arith.constant 0 : i64
  %e3 = tensor.empty() : tensor<16xi64>
  %f3 = linalg.fill ins(%c0 : i64) outs(%e3 : tensor<16xi64>)
      -> tensor<16xi64>
  %g1, %x1 = linalg.generic {indexing_maps = [#tok, #row, #row],
                             iterator_types = ["parallel", "reduction"]}
      ins(%probs : tensor<16x4xf32>)
      outs(%f2, %f3 : tensor<16xf32>, tensor<16xi64>) {
  ^bb0(%p: f32, %best: f32, %arg: i64):
    %e = linalg.index 1 : index
    %ei = arith.index_cast %e : index to i64
    %better = arith.cmpf ogt, %p, %best : f32
    %nb = arith.select %better, %p, %best : f32
    %na = arith.select %better, %ei, %arg : i64
    linalg.yield %nb, %na : f32, i64
  } -> (tensor<16xf32>, tensor<16xi64>)
  %g2, %x2 = linalg.generic {indexing_maps = [#tok, #row, #row, #row],
                             iterator_types = ["parallel", "reduction"]}
      ins(%probs, %x1 : tensor<16x4xf32>, tensor<16xi64>)
      outs(%f2, %f3 : tensor<16xf32>, tensor<16xi64>) {
  ^bb0(%p: f32, %first: i64, %best: f32, %arg: i64):
    %e = linalg.index 1 : index
    %ei = arith.index_cast %e : index to i64
    %other = arith.cmpi ne, %ei, %first : i64
    %higher = arith.cmpf ogt, %p, %best : f32
    %better = arith.andi %other, %higher : i1
    %nb = arith.select %better, %p, %best : f32
    %na = arith.select %better, %ei, %arg : i64
    linalg.yield %nb, %na : f32, i64
  } -> (tensor<16xf32>, tensor<16xi64>)
  // ids[t] = [e1(t), e2(t)].
  %e4 = tensor.empty() : tensor<16x2xi64>
  %ids = linalg.generic {indexing_maps = [#token, #token, #choice],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x1, %x2 : tensor<16xi64>, tensor<16xi64>)
      outs(%e4 : tensor<16x2xi64>) {
  ^bb0(%a1: i64, %a2: i64, %o: i64):
    %k = linalg.index 1 : index
    %c0i = arith.constant 0 : index
    %firstk = arith.cmpi eq, %k, %c0i : index
    %id = arith.select %firstk, %a1, %a2 : i64
    linalg.yield %id : i64
  } -> tensor<16x2xi64>

  // Experts: dispatch, expert matmul, combine.
  %y2 = dtensor.routed_matmul %xs, %ids, %we
      : tensor<16x8xf32>, tensor<16x2xi64>, tensor<4x8x8xf32>
        -> tensor<16x2x8xf32>

  // Gating: y[t] = p(e1) * y2[t, 0] + p(e2) * y2[t, 1].
  %y20 = tensor.extract_slice %y2[0, 0, 0] [16, 1, 8] [1, 1, 1]
      : tensor<16x2x8xf32> to tensor<16x8xf32>
  %y21 = tensor.extract_slice %y2[0, 1, 0] [16, 1, 8] [1, 1, 1]
      : tensor<16x2x8xf32> to tensor<16x8xf32>
  %e6 = tensor.empty() : tensor<16x8xf32>
  %y = linalg.generic {indexing_maps = [#choice, #choice, #token, #token,
                                        #choice],
                       iterator_types = ["parallel", "parallel"]}
      ins(%y20, %y21, %g1, %g2
          : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<16xf32>)
      outs(%e6 : tensor<16x8xf32>) {
  ^bb0(%v1: f32, %v2: f32, %p1: f32, %p2: f32, %o: f32):
    %a = arith.mulf %v1, %p1 : f32
    %b = arith.mulf %v2, %p2 : f32
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %ys = dtensor.annotate %y layout <@ep, [S(0)]> : tensor<16x8xf32>
  return %ys : tensor<16x8xf32>
}
