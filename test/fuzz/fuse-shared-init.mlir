// Found by the fuzzer (test/fuzz/smoke.test, seed 11): three column-parallel
// matmuls sharing one zero fill, on 3 ranks, after forced split and fusion.
// dtensor-fuse-collective-matmul erased each replaced matmul and then the
// dead producers of its operands one value at a time; a producer erased
// through an earlier value was looked at again (a use after free: a crash in
// about half the runs, clean under valgrind since eraseIfDead takes every
// value's producer before it erases any). Three runs make a regression
// likely to show.
// RUN: %dtensor_tools_dir/dtensor-fuzz-check %s "builtin.module(dtensor-spmd,dtensor-split-matmul-all-reduce{force=true chunks=2},dtensor-fuse-collective-matmul{force=true},dtensor-decompose-fused)" | FileCheck %s
// RUN: %dtensor_tools_dir/dtensor-fuzz-check %s "builtin.module(dtensor-spmd,dtensor-split-matmul-all-reduce{force=true chunks=2},dtensor-fuse-collective-matmul{force=true},dtensor-decompose-fused)" | FileCheck %s
// RUN: %dtensor_tools_dir/dtensor-fuzz-check %s "builtin.module(dtensor-spmd,dtensor-split-matmul-all-reduce{force=true chunks=2},dtensor-fuse-collective-matmul{force=true},dtensor-decompose-fused)" | FileCheck %s
// CHECK: PIPELINE
// CHECK-NEXT: ACCEPTED

dtensor.mesh @tp shape = [3]

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

