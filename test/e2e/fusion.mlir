// REQUIRES: cpu-target
// Comm-compute fusion executed on CPU ranks: dtensor-run --fuse fuses every
// legal all_gather + matmul and matmul + reduce_scatter of the per-rank
// program, lowers the fused ops to their ring pipelines (permutes and chunk
// matmuls) and checks every output against the unsharded program. Each
// case runs on 4 and on 2 ranks; the fused line proves the fusion happened.
// RUN: sed 's/NRANKS/4/g' %s > %t.4.mlir
// RUN: sed 's/NRANKS/2/g' %s > %t.2.mlir
//
// The per-rank programs after fusion keep no plain all_gather or
// reduce_scatter; q/k/v share one all_gather_matmul with three Bs. The comm
// report counts the fused ops, and after decomposition the ring permutes
// (n - 1 per fused op, all asynchronous).
// RUN: dtensor-opt %t.4.mlir --dtensor-spmd --dtensor-fuse-collective-matmul=force=true 2>/dev/null \
// RUN:   | FileCheck %s --check-prefix=IR --implicit-check-not="dtensor.all_gather " --implicit-check-not="dtensor.reduce_scatter "
// RUN: dtensor-opt %t.4.mlir --dtensor-spmd --dtensor-fuse-collective-matmul=force=true --dtensor-comm-report -o /dev/null 2>/dev/null \
// RUN:   | FileCheck %s --check-prefix=REPORT
// RUN: dtensor-opt %t.4.mlir --dtensor-spmd --dtensor-fuse-collective-matmul=force=true --dtensor-decompose-fused --dtensor-comm-report -o /dev/null 2>/dev/null \
// RUN:   | FileCheck %s --check-prefix=DECOMP
//
// Numerics:
// RUN: for n in 4 2; do \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --fuse --entry seqpar_mlp_dim0 --seed 21 | FileCheck %s --check-prefix=MLP || exit 1; \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --fuse --entry seqpar_mlp_uneven --seed 27 | FileCheck %s --check-prefix=MLP || exit 1; \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --fuse --entry seqpar_mlp_dim1 --seed 22 | FileCheck %s --check-prefix=MLP || exit 1; \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --fuse --entry seqpar_mlp_views --seed 23 | FileCheck %s --check-prefix=MLP || exit 1; \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --fuse --entry seqpar_mlp_batch --seed 28 | FileCheck %s --check-prefix=MLP || exit 1; \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --fuse --entry qkv --seed 24 | FileCheck %s --check-prefix=QKV || exit 1; \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --fuse --entry scatter_last_dim --seed 25 | FileCheck %s --check-prefix=RS || exit 1; \
// RUN:   timeout 120 dtensor-run %t.$n.mlir -n $n --fuse --entry gathered_a_returned --seed 26 | FileCheck %s --check-prefix=AG || exit 1; \
// RUN: done
// IR-LABEL: func.func private @seqpar_mlp_dim0(
// IR: dtensor.all_gather_matmul %arg0, %arg1 on @tp axes = [0] gather_dim = 0 : tensor<4x12xf32>, tensor<12x8xf32> -> tensor<16x12xf32>, tensor<16x8xf32>
// IR: dtensor.matmul_reduce_scatter %{{.*}}, %arg2 on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<16x8xf32>, tensor<8x12xf32> -> tensor<4x12xf32>
// IR-LABEL: func.func private @seqpar_mlp_uneven(
// IR: dtensor.all_gather_matmul %{{.*}}, %arg1 on @tp axes = [0] gather_dim = 0 : tensor<2x12xf32>, tensor<12x8xf32> -> tensor<8x12xf32>, tensor<8x8xf32>
// IR: dtensor.matmul_reduce_scatter %{{.*}}, %arg2 on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x8xf32>, tensor<8x12xf32> -> tensor<2x12xf32>
// IR-LABEL: func.func private @seqpar_mlp_dim1(
// IR: dtensor.all_gather_matmul %arg0, %{{.*}} on @tp axes = [0] gather_dim = 1 : tensor<2x2x12xf32>, tensor<12x8xf32> -> tensor<2x8x12xf32>, tensor<2x8x8xf32>
// IR: dtensor.matmul_reduce_scatter %{{.*}}, %{{.*}} on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<2x8x8xf32>, tensor<8x12xf32> -> tensor<2x2x12xf32>
// IR-LABEL: func.func private @seqpar_mlp_batch(
// IR: dtensor.all_gather_matmul %arg0, %{{.*}} on @tp axes = [0] gather_dim = 0 : tensor<1x3x12xf32>, tensor<12x8xf32> -> tensor<4x3x12xf32>, tensor<4x3x8xf32>
// IR: dtensor.matmul_reduce_scatter %{{.*}}, %{{.*}} on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<4x3x8xf32>, tensor<8x12xf32> -> tensor<1x3x12xf32>
// IR-LABEL: func.func private @seqpar_mlp_views(
// IR: dtensor.all_gather_matmul %arg0, %arg1 on @tp axes = [0] gather_dim = 1 : tensor<2x2x12xf32>, tensor<12x8xf32> -> tensor<2x8x12xf32>, tensor<2x8x8xf32>
// IR: dtensor.matmul_reduce_scatter %{{.*}}, %arg2 on @tp axes = [0] scatter_dim = 1 reduce = sum : tensor<2x8x8xf32>, tensor<8x12xf32> -> tensor<2x2x12xf32>
// IR-LABEL: func.func private @qkv(
// IR: %{{.*}}, %[[PROJ:.*]]:3 = dtensor.all_gather_matmul %arg0, %arg1, %arg2, %arg3 on @tp axes = [0] gather_dim = 0 : tensor<2x12xf32>, tensor<12x4xf32>, tensor<12x4xf32>, tensor<12x4xf32> -> tensor<8x12xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
// IR-NOT: dtensor.all_gather_matmul
// IR: return %[[PROJ]]#0, %[[PROJ]]#1, %[[PROJ]]#2
// IR-LABEL: func.func private @scatter_last_dim(
// IR: dtensor.matmul_reduce_scatter %arg0, %arg1 on @tp axes = [0] scatter_dim = 2 reduce = sum : tensor<2x4x4xf32>, tensor<4x8xf32> -> tensor<2x4x2xf32>
// IR-LABEL: func.func private @gathered_a_returned(
// IR: %[[G:.*]], %[[C:.*]] = dtensor.all_gather_matmul %arg0, %arg1
// IR: return %[[C]], %[[G]]

// REPORT-LABEL: comm report for @seqpar_mlp_dim0
// REPORT-NEXT: collective count async bytes/rank modelled us
// REPORT-NEXT: all_gather_matmul 1 0 192 {{[0-9.]+}}
// REPORT-NEXT: matmul_reduce_scatter 1 0 768 {{[0-9.]+}}
// REPORT-NEXT: total 2 0 960
// REPORT-LABEL: comm report for @qkv
// REPORT-NEXT: collective
// REPORT-NEXT: all_gather_matmul 1 0 96 {{[0-9.]+}}
// REPORT-NEXT: total 1 0 96

// DECOMP-LABEL: comm report for @seqpar_mlp_dim0
// DECOMP-NEXT: collective
// DECOMP-NEXT: permute 6 6 1152 {{[0-9.]+}}
// DECOMP-NEXT: total 6 6 1152
// DECOMP-LABEL: comm report for @qkv
// DECOMP-NEXT: collective
// DECOMP-NEXT: permute 3 3 {{[0-9]+}} {{[0-9.]+}}
// DECOMP-NEXT: total 3 3

// MLP: fused 1 all_gather_matmul, 1 matmul_reduce_scatter
// MLP: PASS
// QKV: fused 1 all_gather_matmul, 0 matmul_reduce_scatter
// QKV: PASS
// RS: fused 0 all_gather_matmul, 1 matmul_reduce_scatter
// RS: PASS
// AG: fused 1 all_gather_matmul, 0 matmul_reduce_scatter
// AG: PASS

dtensor.mesh @tp shape = [NRANKS]

#relu2 = {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
          iterator_types = ["parallel", "parallel"]}
#relu3 = {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s, h)>],
          iterator_types = ["parallel", "parallel", "parallel"]}
// nn.Linear on [batch, seq, in] with its [out, in] weight.
#in = affine_map<(b, s, o, k) -> (b, s, k)>
#w = affine_map<(b, s, o, k) -> (o, k)>
#out = affine_map<(b, s, o, k) -> (b, s, o)>

// Sequence parallelism over dim 0 (PyTorch: net1 ColwiseParallel with input
// Shard(0), net2 RowwiseParallel with output Shard(0)).
func.func private @seqpar_mlp_dim0(%x: tensor<16x12xf32>, %w1: tensor<12x32xf32>, %w2: tensor<32x12xf32>)
    -> tensor<16x12xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<16x12xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<12x32xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<32x12xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<16x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %h = linalg.matmul ins(%xs, %w1c : tensor<16x12xf32>, tensor<12x32xf32>)
                     outs(%f1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %a = linalg.generic #relu2 ins(%h : tensor<16x32xf32>) outs(%e1 : tensor<16x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  %e2 = tensor.empty() : tensor<16x12xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %y = linalg.matmul ins(%a, %w2r : tensor<16x32xf32>, tensor<32x12xf32>)
                     outs(%f2 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %ys = dtensor.annotate %y layout <@tp, [S(0)]> : tensor<16x12xf32>
  return %ys : tensor<16x12xf32>
}

// The same with 7 rows, uneven on 2 and 4 ranks: the partitioner pads the
// shard before the all_gather and trims the gathered rows after it (an
// extract_slice that moves to the product), pads the product before the
// reduce_scatter (a zero pad that moves to A) and trims after it.
func.func private @seqpar_mlp_uneven(%x: tensor<7x12xf32>, %w1: tensor<12x32xf32>, %w2: tensor<32x12xf32>)
    -> tensor<7x12xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<7x12xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<12x32xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<32x12xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<7x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<7x32xf32>) -> tensor<7x32xf32>
  %h = linalg.matmul ins(%xs, %w1c : tensor<7x12xf32>, tensor<12x32xf32>)
                     outs(%f1 : tensor<7x32xf32>) -> tensor<7x32xf32>
  %a = linalg.generic #relu2 ins(%h : tensor<7x32xf32>) outs(%e1 : tensor<7x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<7x32xf32>
  %e2 = tensor.empty() : tensor<7x12xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<7x12xf32>) -> tensor<7x12xf32>
  %y = linalg.matmul ins(%a, %w2r : tensor<7x32xf32>, tensor<32x12xf32>)
                     outs(%f2 : tensor<7x12xf32>) -> tensor<7x12xf32>
  %ys = dtensor.annotate %y layout <@tp, [S(0)]> : tensor<7x12xf32>
  return %ys : tensor<7x12xf32>
}

// Sequence parallelism over dim 1 of [batch, seq, hidden], nn.Linear
// weights [out, in] (net1 Colwise: w1 Shard(0); net2 Rowwise: w2 Shard(1)).
func.func private @seqpar_mlp_dim1(%x: tensor<2x8x12xf32>, %w1: tensor<32x12xf32>, %w2: tensor<12x32xf32>)
    -> tensor<2x8x12xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<2x8x12xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(0)]> : tensor<32x12xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(1)]> : tensor<12x32xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x8x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %h = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xs, %w1c : tensor<2x8x12xf32>, tensor<32x12xf32>) outs(%f1 : tensor<2x8x32xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32xf32>
  %a = linalg.generic #relu3 ins(%h : tensor<2x8x32xf32>) outs(%e1 : tensor<2x8x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x8x32xf32>
  %e2 = tensor.empty() : tensor<2x8x12xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x8x12xf32>) -> tensor<2x8x12xf32>
  %y = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %w2r : tensor<2x8x32xf32>, tensor<12x32xf32>) outs(%f2 : tensor<2x8x12xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x12xf32>
  %ys = dtensor.annotate %y layout <@tp, [S(1)]> : tensor<2x8x12xf32>
  return %ys : tensor<2x8x12xf32>
}

// Rank-3 activations sharded on dim 0 (gather_dim and scatter_dim 0 of a
// rank-3 A).
func.func private @seqpar_mlp_batch(%x: tensor<4x3x12xf32>, %w1: tensor<32x12xf32>, %w2: tensor<12x32xf32>)
    -> tensor<4x3x12xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<4x3x12xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(0)]> : tensor<32x12xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(1)]> : tensor<12x32xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x3x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x3x32xf32>) -> tensor<4x3x32xf32>
  %h = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xs, %w1c : tensor<4x3x12xf32>, tensor<32x12xf32>) outs(%f1 : tensor<4x3x32xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x3x32xf32>
  %a = linalg.generic #relu3 ins(%h : tensor<4x3x32xf32>) outs(%e1 : tensor<4x3x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3x32xf32>
  %e2 = tensor.empty() : tensor<4x3x12xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x3x12xf32>) -> tensor<4x3x12xf32>
  %y = linalg.generic {indexing_maps = [#in, #w, #out],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %w2r : tensor<4x3x32xf32>, tensor<12x32xf32>) outs(%f2 : tensor<4x3x12xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x3x12xf32>
  %ys = dtensor.annotate %y layout <@tp, [S(0)]> : tensor<4x3x12xf32>
  return %ys : tensor<4x3x12xf32>
}

// The same over dim 1, with the linears as 2-D matmuls on the flattened
// tokens: the gathered input and the product pass through views.
func.func private @seqpar_mlp_views(%x: tensor<2x8x12xf32>, %w1: tensor<12x32xf32>, %w2: tensor<32x12xf32>)
    -> tensor<2x8x12xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(1)]> : tensor<2x8x12xf32>
  %w1c = dtensor.annotate %w1 layout <@tp, [S(1)]> : tensor<12x32xf32>
  %w2r = dtensor.annotate %w2 layout <@tp, [S(0)]> : tensor<32x12xf32>
  %zero = arith.constant 0.0 : f32
  %xf = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<2x8x12xf32> into tensor<16x12xf32>
  %e1 = tensor.empty() : tensor<16x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %h = linalg.matmul ins(%xf, %w1c : tensor<16x12xf32>, tensor<12x32xf32>)
                     outs(%f1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %a = linalg.generic #relu2 ins(%h : tensor<16x32xf32>) outs(%e1 : tensor<16x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  %e2 = tensor.empty() : tensor<16x12xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %y = linalg.matmul ins(%a, %w2r : tensor<16x32xf32>, tensor<32x12xf32>)
                     outs(%f2 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %ye = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, 8, 12] : tensor<16x12xf32> into tensor<2x8x12xf32>
  %ys = dtensor.annotate %ye layout <@tp, [S(1)]> : tensor<2x8x12xf32>
  return %ys : tensor<2x8x12xf32>
}

// q/k/v projections of one sequence-sharded input (each a ColwiseParallel
// linear): one all_gather_matmul with three Bs.
func.func private @qkv(%x: tensor<8x12xf32>, %wq: tensor<12x16xf32>, %wk: tensor<12x16xf32>, %wv: tensor<12x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x12xf32>
  %wqc = dtensor.annotate %wq layout <@tp, [S(1)]> : tensor<12x16xf32>
  %wkc = dtensor.annotate %wk layout <@tp, [S(1)]> : tensor<12x16xf32>
  %wvc = dtensor.annotate %wv layout <@tp, [S(1)]> : tensor<12x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %q = linalg.matmul ins(%xs, %wqc : tensor<8x12xf32>, tensor<12x16xf32>)
                     outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %k = linalg.matmul ins(%xs, %wkc : tensor<8x12xf32>, tensor<12x16xf32>)
                     outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %v = linalg.matmul ins(%xs, %wvc : tensor<8x12xf32>, tensor<12x16xf32>)
                     outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  %qs = dtensor.annotate %q layout <@tp, [S(1)]> : tensor<8x16xf32>
  %ks = dtensor.annotate %k layout <@tp, [S(1)]> : tensor<8x16xf32>
  %vs = dtensor.annotate %v layout <@tp, [S(1)]> : tensor<8x16xf32>
  return %qs, %ks, %vs : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// A K-sharded matmul whose Partial product is requested as Shard on its
// last dim: matmul_reduce_scatter along the columns of B.
func.func private @scatter_last_dim(%x: tensor<2x4x16xf32>, %w: tensor<16x8xf32>) -> tensor<2x4x8xf32> {
  %xs = dtensor.annotate %x layout <@tp, [S(2)]> : tensor<2x4x16xf32>
  %ws = dtensor.annotate %w layout <@tp, [S(0)]> : tensor<16x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>,
                                        affine_map<(b, s, n, k) -> (k, n)>,
                                        affine_map<(b, s, n, k) -> (b, s, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xs, %ws : tensor<2x4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<2x4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x4x8xf32>
  %ys = dtensor.annotate %y layout <@tp, [S(2)]> : tensor<2x4x8xf32>
  return %ys : tensor<2x4x8xf32>
}

// The gathered input is also returned (replicated): the fused op's gathered
// result serves it.
func.func private @gathered_a_returned(%x: tensor<8x12xf32>, %w: tensor<12x16xf32>)
    -> (tensor<8x16xf32>, tensor<8x12xf32>) {
  %xs = dtensor.annotate %x layout <@tp, [S(0)]> : tensor<8x12xf32>
  %xr = dtensor.annotate %xs layout <@tp, [R]> : tensor<8x12xf32>
  %wc = dtensor.annotate %w layout <@tp, [S(1)]> : tensor<12x16xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%xr, %wc : tensor<8x12xf32>, tensor<12x16xf32>)
                     outs(%f : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y, %xr : tensor<8x16xf32>, tensor<8x12xf32>
}
