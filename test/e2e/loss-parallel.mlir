// REQUIRES: cpu-target
// Loss parallel on CPU ranks: cross-entropy over logits sharded on the
// vocabulary (8202 classes: 2051, 2051, 2050, 2050 per rank on 4, 4101 on
// 2), its joint forward + backward function from dtensor-autodiff (under
// the verifier), run on 2 and 4 ranks against the unsharded joint
// function: the loss and the logits' gradient. The backward has no
// collective: the row max is a stabilising shift with no gradient and the
// sum over the vocabulary of the target pick's one-hot cotangent is taken
// in closed form on replicated values (docs/autodiff.md,
// "Normalisations"; PyTorch's counts at its shapes in
// test/Compiler/loss-parallel.mlir, finite differences in
// test/unit/AutodiffTest.cpp). The sizes are large enough that the cost
// model keeps the logits vocabulary-sharded, as loss_parallel does (at a
// few KiB it gathers them instead); the COMM check makes sure the sharded
// path is the one run. Targets are spread over every shard, some outside
// the vocabulary (picking nothing, as an ignored index). The gradient's
// elements are small (softmax / 256, about 5e-7), below the default
// absolute tolerance of f32: it is checked elementwise relative (atol
// 1e-12). Three forms:
// log_softmax + nll (mean), logsumexp - pick, and bf16 logits with f32
// statistics.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: for n in 2 4; do \
// RUN:   sed "s/NRANKS/$n/g" %s > %t/loss-$n.mlir && \
// RUN:   dtensor-opt %t/loss-$n.mlir --dtensor-autodiff --verify-each -o %t/grad-$n.mlir && \
// RUN:   dtensor-opt %t/grad-$n.mlir --dtensor-spmd --dtensor-comm-report -o /dev/null > %t/comm-$n.out && \
// RUN:   FileCheck %s --check-prefix=COMM < %t/comm-$n.out && \
// RUN:   for f in nll lse nll_bf16; do \
// RUN:     timeout 120 dtensor-run %t/grad-$n.mlir -n $n --entry ${f}_grad --seed 6$n --atol 1:1e-12 > %t/$f-$n.out && \
// RUN:     FileCheck %s < %t/$f-$n.out || exit 1; \
// RUN:   done || exit 1; \
// RUN: done
// CHECK-NOT: MISMATCH
// CHECK: on {{[0-9]+}} ranks (mesh @tp)
// CHECK: output #0 {{.*}} ok
// CHECK: output #1 {{.*}} ok
// CHECK: {{^}}PASS{{$}}
// COMM-LABEL: comm report for @nll_grad
// COMM: forward:
// COMM-NEXT: all_reduce 3 0
// COMM-NEXT: total 3 0
// COMM-NEXT: backward:
// COMM-NEXT: total 0 0 0
// COMM-LABEL: comm report for @lse_grad
// COMM: forward:
// COMM-NEXT: all_reduce 3 0
// COMM-NEXT: total 3 0
// COMM-NEXT: backward:
// COMM-NEXT: total 0 0 0
// COMM-LABEL: comm report for @nll_bf16_grad
// COMM: forward:
// COMM-NEXT: all_reduce 3 0
// COMM-NEXT: total 3 0
// COMM-NEXT: backward:
// COMM-NEXT: total 0 0 0

#x = affine_map<(n, v) -> (n, v)>
#r = affine_map<(n, v) -> (n)>
#k = affine_map<(n, v) -> (n, 0)>
#n = affine_map<(n) -> (n)>
#s = affine_map<(n) -> ()>

dtensor.mesh @tp shape = [NRANKS] names = ["tp"]

// log_softmax (a keepdim max, exp, sum, log) and nll_loss with the mean.
func.func @nll(
    %logits: tensor<256x8202xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>,
                                dtensor.requires_grad},
    %t: tensor<256xi64>)
    -> (tensor<f32> {dtensor.layout = #dtensor.layout<@tp, [R]>}) {
  // The target of row n: (t[n] + 101 n) mod 8458, on every shard;
  // 8202..8457 are outside the vocabulary.
  %et = tensor.empty() : tensor<256xi64>
  %c101 = arith.constant 101 : i64
  %cmod = arith.constant 8458 : i64
  %target = linalg.generic {indexing_maps = [#n, #n], iterator_types = ["parallel"]}
      ins(%t : tensor<256xi64>) outs(%et : tensor<256xi64>) {
  ^bb0(%a: i64, %o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.muli %ii, %c101 : i64
    %p = arith.addi %a, %m : i64
    %r = arith.remui %p, %cmod : i64
    linalg.yield %r : i64
  } -> tensor<256xi64>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %minus_inv = arith.constant -0.00390625 : f32
  %e = tensor.empty() : tensor<256xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %amax = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<256x8202xf32>) outs(%fm : tensor<256xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %acc, %a : f32
    linalg.yield %m : f32
  } -> tensor<256xf32>
  %amax1 = tensor.expand_shape %amax [[0, 1]] output_shape [256, 1]
      : tensor<256xf32> into tensor<256x1xf32>
  %ex = tensor.empty() : tensor<256x8202xf32>
  %shifted = linalg.generic {indexing_maps = [#x, #k, #x], iterator_types = ["parallel", "parallel"]}
      ins(%logits, %amax1 : tensor<256x8202xf32>, tensor<256x1xf32>) outs(%ex : tensor<256x8202xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    linalg.yield %d : f32
  } -> tensor<256x8202xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %sumexp = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%shifted : tensor<256x8202xf32>) outs(%fs : tensor<256xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %p = math.exp %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  %logp = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%shifted, %sumexp : tensor<256x8202xf32>, tensor<256xf32>) outs(%ex : tensor<256x8202xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %l = math.log %s : f32
    %d = arith.subf %a, %l : f32
    linalg.yield %d : f32
  } -> tensor<256x8202xf32>
  %picked = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%logp, %target : tensor<256x8202xf32>, tensor<256xi64>) outs(%fs : tensor<256xf32>) {
  ^bb0(%a: f32, %ti: i64, %acc: f32):
    %v = linalg.index 1 : index
    %tx = arith.index_cast %ti : i64 to index
    %hit = arith.cmpi eq, %v, %tx : index
    %p = arith.select %hit, %a, %zero : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#n, #s], iterator_types = ["reduction"]}
      ins(%picked : tensor<256xf32>) outs(%f0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %w = arith.mulf %a, %minus_inv : f32
    %s = arith.addf %acc, %w : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}

// mean(logsumexp(x) - x[target]), logsumexp = m + log(sum exp(x - m)).
func.func @lse(
    %logits: tensor<256x8202xf32> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>,
                                dtensor.requires_grad},
    %t: tensor<256xi64>)
    -> (tensor<f32> {dtensor.layout = #dtensor.layout<@tp, [R]>}) {
  // The target of row n: (t[n] + 101 n) mod 8458, on every shard;
  // 8202..8457 are outside the vocabulary.
  %et = tensor.empty() : tensor<256xi64>
  %c101 = arith.constant 101 : i64
  %cmod = arith.constant 8458 : i64
  %target = linalg.generic {indexing_maps = [#n, #n], iterator_types = ["parallel"]}
      ins(%t : tensor<256xi64>) outs(%et : tensor<256xi64>) {
  ^bb0(%a: i64, %o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.muli %ii, %c101 : i64
    %p = arith.addi %a, %m : i64
    %r = arith.remui %p, %cmod : i64
    linalg.yield %r : i64
  } -> tensor<256xi64>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 0.00390625 : f32
  %e = tensor.empty() : tensor<256xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<256x8202xf32>) outs(%fm : tensor<256xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<256xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %sumexp = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%logits, %m : tensor<256x8202xf32>, tensor<256xf32>) outs(%fs : tensor<256xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %p = math.exp %d : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  %lse = linalg.generic {indexing_maps = [#n, #n, #n], iterator_types = ["parallel"]}
      ins(%m, %sumexp : tensor<256xf32>, tensor<256xf32>) outs(%e : tensor<256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %l = math.log %b : f32
    %r = arith.addf %a, %l : f32
    linalg.yield %r : f32
  } -> tensor<256xf32>
  %picked = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%logits, %target : tensor<256x8202xf32>, tensor<256xi64>) outs(%fs : tensor<256xf32>) {
  ^bb0(%a: f32, %ti: i64, %acc: f32):
    %v = linalg.index 1 : index
    %tx = arith.index_cast %ti : i64 to index
    %hit = arith.cmpi eq, %v, %tx : index
    %p = arith.select %hit, %a, %zero : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#n, #n, #s], iterator_types = ["reduction"]}
      ins(%lse, %picked : tensor<256xf32>, tensor<256xf32>) outs(%f0 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %w = arith.mulf %d, %inv : f32
    %s = arith.addf %acc, %w : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}

// bf16 logits, the max in bf16, the statistics in f32.
func.func @nll_bf16(
    %logits: tensor<256x8202xbf16> {dtensor.layout = #dtensor.layout<@tp, [S(1)]>,
                                 dtensor.requires_grad},
    %t: tensor<256xi64>)
    -> (tensor<f32> {dtensor.layout = #dtensor.layout<@tp, [R]>}) {
  // The target of row n: (t[n] + 101 n) mod 8458, on every shard;
  // 8202..8457 are outside the vocabulary.
  %et = tensor.empty() : tensor<256xi64>
  %c101 = arith.constant 101 : i64
  %cmod = arith.constant 8458 : i64
  %target = linalg.generic {indexing_maps = [#n, #n], iterator_types = ["parallel"]}
      ins(%t : tensor<256xi64>) outs(%et : tensor<256xi64>) {
  ^bb0(%a: i64, %o: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.muli %ii, %c101 : i64
    %p = arith.addi %a, %m : i64
    %r = arith.remui %p, %cmod : i64
    linalg.yield %r : i64
  } -> tensor<256xi64>
  %ninf = arith.constant 0xFF80 : bf16
  %zero = arith.constant 0.0 : f32
  %minus_inv = arith.constant -0.00390625 : f32
  %e16 = tensor.empty() : tensor<256xbf16>
  %fm = linalg.fill ins(%ninf : bf16) outs(%e16 : tensor<256xbf16>) -> tensor<256xbf16>
  %m = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<256x8202xbf16>) outs(%fm : tensor<256xbf16>) {
  ^bb0(%a: bf16, %acc: bf16):
    %r = arith.maximumf %acc, %a : bf16
    linalg.yield %r : bf16
  } -> tensor<256xbf16>
  %ex = tensor.empty() : tensor<256x8202xf32>
  %shifted = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%logits, %m : tensor<256x8202xbf16>, tensor<256xbf16>) outs(%ex : tensor<256x8202xf32>) {
  ^bb0(%a: bf16, %b: bf16, %o: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %d = arith.subf %a32, %b32 : f32
    linalg.yield %d : f32
  } -> tensor<256x8202xf32>
  %e = tensor.empty() : tensor<256xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e : tensor<256xf32>) -> tensor<256xf32>
  %sumexp = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%shifted : tensor<256x8202xf32>) outs(%fs : tensor<256xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %p = math.exp %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  %logp = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]}
      ins(%shifted, %sumexp : tensor<256x8202xf32>, tensor<256xf32>) outs(%ex : tensor<256x8202xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %l = math.log %s : f32
    %d = arith.subf %a, %l : f32
    linalg.yield %d : f32
  } -> tensor<256x8202xf32>
  %picked = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%logp, %target : tensor<256x8202xf32>, tensor<256xi64>) outs(%fs : tensor<256xf32>) {
  ^bb0(%a: f32, %ti: i64, %acc: f32):
    %v = linalg.index 1 : index
    %tx = arith.index_cast %ti : i64 to index
    %hit = arith.cmpi eq, %v, %tx : index
    %p = arith.select %hit, %a, %zero : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<256xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [#n, #s], iterator_types = ["reduction"]}
      ins(%picked : tensor<256xf32>) outs(%f0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %w = arith.mulf %a, %minus_inv : f32
    %s = arith.addf %acc, %w : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}
