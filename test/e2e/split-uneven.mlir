// REQUIRES: cpu-target
// Matmul + all_reduce split into row chunks when the contraction dim is an
// uneven shard (issue 26: K = 30 over 4 ranks once gave an extract_slice
// with a dynamic size but no operand for it, invalid IR). Each chunk
// multiplies its rows of A by every column this rank holds; compared with
// the unsharded program on 4 CPU ranks, with 2 and 4 chunks.
// RUN: for c in 2 4; do \
// RUN:   timeout 120 dtensor-run %s -n 4 --entry uneven_k --seed 41 --split-all-reduce=$c | FileCheck %s --check-prefixes=CHECK,SPLIT || exit 1; \
// RUN:   timeout 120 dtensor-run %s -n 4 --entry uneven_k --seed 42 --split-all-reduce=$c --overlap=default | FileCheck %s --check-prefixes=CHECK,SPLIT || exit 1; \
// RUN: done
// RUN: timeout 120 dtensor-run %s -n 4 --entry uneven_k_rank3 --seed 43 --split-all-reduce=2 --overlap=default | FileCheck %s --check-prefixes=CHECK,SPLIT
// Rows of the product uneven too: 6 rows split into 2 chunks, not into 4
// (the split declines, see SplitMatmulAllReduce.mlir for the remark, and
// the program still runs).
// RUN: timeout 120 dtensor-run %s -n 4 --entry uneven_k_m6 --seed 44 --split-all-reduce=2 | FileCheck %s --check-prefixes=CHECK,SPLIT
// RUN: timeout 120 dtensor-run %s -n 4 --entry uneven_k_m6 --seed 45 --split-all-reduce=4 2>&1 | FileCheck %s --check-prefixes=CHECK,NO-SPLIT
// On a 2x2 mesh with M = 7 sharded over the other axis, each rank's product
// has a dynamic row count: not split.
// RUN: timeout 120 dtensor-run %s -n 4 --entry uneven_mk_2d --seed 46 --split-all-reduce=2 2>&1 | FileCheck %s --check-prefixes=CHECK,NO-SPLIT
// SPLIT: split 1 matmul + all_reduce into {{[24]}} row chunks
// NO-SPLIT: split 0 matmul + all_reduce into {{[24]}} row chunks
// CHECK: PASS

dtensor.mesh @tp shape = [4]
dtensor.mesh @g shape = [2, 2]

func.func @uneven_k(%x: tensor<8x30xf32>, %w: tensor<30x16xf32>) -> tensor<8x16xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<8x30xf32>
  %ws = dtensor.annotate %w layout <@tp, [S(0)]> : tensor<30x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %c = linalg.matmul ins(%xs, %ws : tensor<8x30xf32>, tensor<30x16xf32>) outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = dtensor.annotate %c layout <@tp, [R]> : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

func.func @uneven_k_m6(%x: tensor<6x30xf32>, %w: tensor<30x5xf32>) -> tensor<6x5xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<6x30xf32>
  %ws = dtensor.annotate %w layout <@tp, [S(0)]> : tensor<30x5xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<6x5xf32>) -> tensor<6x5xf32>
  %c = linalg.matmul ins(%xs, %ws : tensor<6x30xf32>, tensor<30x5xf32>) outs(%f : tensor<6x5xf32>) -> tensor<6x5xf32>
  %r = dtensor.annotate %c layout <@tp, [R]> : tensor<6x5xf32>
  return %r : tensor<6x5xf32>
}

// Batch 1, sequence 4, hidden 30 sharded: chunks along the sequence.
func.func @uneven_k_rank3(%x: tensor<1x4x30xf32>, %w: tensor<30x16xf32>) -> tensor<1x4x16xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(2)]> : tensor<1x4x30xf32>
  %ws = dtensor.annotate %w layout <@tp, [S(0)]> : tensor<30x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %c = linalg.generic {
      indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>,
                       affine_map<(b, s, n, k) -> (k, n)>,
                       affine_map<(b, s, n, k) -> (b, s, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xs, %ws : tensor<1x4x30xf32>, tensor<30x16xf32>) outs(%f : tensor<1x4x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x16xf32>
  %r = dtensor.annotate %c layout <@tp, [R]> : tensor<1x4x16xf32>
  return %r : tensor<1x4x16xf32>
}

func.func @uneven_mk_2d(%x: tensor<7x30xf32>, %w: tensor<30x16xf32>) -> tensor<7x16xf32> {
  %xs = dtensor.annotate %x layout <@g, [S(0), S(1)]> : tensor<7x30xf32>
  %ws = dtensor.annotate %w layout <@g, [R, S(0)]> : tensor<30x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7x16xf32>) -> tensor<7x16xf32>
  %c = linalg.matmul ins(%xs, %ws : tensor<7x30xf32>, tensor<30x16xf32>) outs(%f : tensor<7x16xf32>) -> tensor<7x16xf32>
  %r = dtensor.annotate %c layout <@g, [S(0), R]> : tensor<7x16xf32>
  return %r : tensor<7x16xf32>
}
