// RUN: split-file %s %t
// RUN: dtensor-opt %t/rewrites.mlir --dtensor-hoist-broadcast-dims --verify-each -split-input-file | FileCheck %t/rewrites.mlir
//
// Numerics: the same reductions, run on the CPU before and after the
// rewrite, print the same values (but for the f32 accumulation of a bf16
// sum, which is exact where the program as written is not).
// RUN: dtensor-opt %t/run.mlir --dtensor-hoist-broadcast-dims --verify-each -o %t/hoisted.mlir
// RUN: FileCheck %t/run.mlir --check-prefix=HOISTED --input-file=%t/hoisted.mlir
// DEFINE: %{lower} = mlir-opt --one-shot-bufferize=bufferize-function-boundaries --convert-linalg-to-loops --convert-scf-to-cf --expand-strided-metadata --finalize-memref-to-llvm --convert-arith-to-llvm --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts
// DEFINE: %{run} = mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_lib_dir/libmlir_runner_utils.so,%mlir_lib_dir/libmlir_c_runner_utils.so
// RUN: %{lower} %t/run.mlir | %{run} | FileCheck %t/run.mlir --check-prefixes=VALUES,BF16-WRITTEN
// RUN: %{lower} %t/hoisted.mlir | %{run} | FileCheck %t/run.mlir --check-prefixes=VALUES,BF16-HOISTED

//--- rewrites.mlir
// `ones @ w^T` after elementwise fusion folded the ones: out[i, j] =
// sum_k w[j, k] reads no input along i. The bf16 sum is accumulated in f32
// and rounded once, in the op that broadcasts it.
// CHECK: #[[$IN:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK: #[[$OUT:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK: #[[$ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @folded_ones_matmul
// CHECK-SAME: (%[[W:.*]]: tensor<6x8xbf16>)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<6xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<6xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME: ins(%[[W]] : tensor<6x8xbf16>) outs(%[[F]] : tensor<6xf32>)
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[ACC:.*]]: f32):
// CHECK: %[[AW:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[AW]] : f32
// CHECK: linalg.yield %[[S]] : f32
// CHECK: %[[FULL:.*]] = tensor.empty() : tensor<4x6xbf16>
// CHECK: %[[B:.*]] = linalg.generic {indexing_maps = [#[[$OUT]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[R]] : tensor<6xf32>) outs(%[[FULL]] : tensor<4x6xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: return %[[B]]
func.func @folded_ones_matmul(%w: tensor<6x8xbf16>) -> tensor<4x6xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x6xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<4x6xbf16>) -> tensor<4x6xbf16>
  %r = linalg.generic {
      indexing_maps = [affine_map<(i, k, j) -> (j, k)>, affine_map<(i, k, j) -> (i, j)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%w : tensor<6x8xbf16>) outs(%f : tensor<4x6xbf16>) {
  ^bb0(%a: bf16, %acc: bf16):
    %s = arith.addf %acc, %a : bf16
    linalg.yield %s : bf16
  } -> tensor<4x6xbf16>
  return %r : tensor<4x6xbf16>
}

// -----

// Two hoisted dims, one of them dynamic, and an output whose map permutes
// them; the body's other inputs are kept.
// CHECK: #[[$IN2:.+]] = affine_map<(d0) -> (d0)>
// CHECK: #[[$OUT2:.+]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @two_dims
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>, %[[N:.*]]: index)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[$IN2]], #[[$OUT2]]], iterator_types = ["reduction"]}
// CHECK-SAME: ins(%[[X]] : tensor<8xf32>) outs(%{{.*}} : tensor<f32>)
// CHECK: %[[FULL:.*]] = tensor.empty(%[[N]]) : tensor<3x?xf32>
// CHECK: linalg.broadcast ins(%[[R]] : tensor<f32>) outs(%[[FULL]] : tensor<3x?xf32>) dimensions = [0, 1]
func.func @two_dims(%x: tensor<8xf32>, %n: index) -> tensor<3x?xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<3x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x?xf32>) -> tensor<3x?xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(i, k, j) -> (k)>, affine_map<(i, k, j) -> (j, i)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : tensor<8xf32>) outs(%f : tensor<3x?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<3x?xf32>
  return %r : tensor<3x?xf32>
}

// -----

// A real matmul reads every parallel dim: left alone.
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: linalg.broadcast
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-NOT: linalg.broadcast
func.func @matmul(%a: tensor<4x8xf32>, %w: tensor<6x8xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(i, k, j) -> (i, k)>, affine_map<(i, k, j) -> (j, k)>,
                       affine_map<(i, k, j) -> (i, j)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %w : tensor<4x8xf32>, tensor<6x8xf32>) outs(%f : tensor<4x6xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// The accumulator is an argument, different along i: left alone.
// CHECK-LABEL: func.func @accumulate_into_argument
// CHECK-NOT: linalg.broadcast
func.func @accumulate_into_argument(%w: tensor<6x8xf32>, %c: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %r = linalg.generic {
      indexing_maps = [affine_map<(i, k, j) -> (j, k)>, affine_map<(i, k, j) -> (i, j)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%w : tensor<6x8xf32>) outs(%c : tensor<4x6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// The body reads the loop index: left alone.
// CHECK-LABEL: func.func @reads_index
// CHECK-NOT: linalg.broadcast
func.func @reads_index(%w: tensor<6x8xf32>) -> tensor<4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(i, k, j) -> (j, k)>, affine_map<(i, k, j) -> (i, j)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%w : tensor<6x8xf32>) outs(%f : tensor<4x6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %m = arith.mulf %a, %fi : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// No reduction: a broadcast itself, nothing is repeated.
// CHECK-LABEL: func.func @plain_broadcast
// CHECK-NOT: linalg.broadcast
func.func @plain_broadcast(%b: tensor<6xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

//--- run.mlir
// out[i, j] = 0.5 + sum_k w[j, k] * w[j, k] for a 3x4 w, over 2 rows i;
// then the sum of 300 bf16 ones over 2 rows: accumulated in bf16 (the
// program as written) it stops at 256, where 257 is not a bf16; the
// hoisted reduction accumulates in f32 and rounds 300 once.
// HOISTED: linalg.broadcast
// VALUES: rank = 2 offset = 0 sizes = [2, 3]
// VALUES-NEXT: [15.5, 102.5, 294.5]
// VALUES-NEXT: [15.5, 102.5, 294.5]
// BF16-WRITTEN: rank = 2 offset = 0 sizes = [2, 1]
// BF16-WRITTEN-NEXT: [256]
// BF16-WRITTEN-NEXT: [256]
// BF16-HOISTED: rank = 2 offset = 0 sizes = [2, 1]
// BF16-HOISTED-NEXT: [300]
// BF16-HOISTED-NEXT: [300]
func.func private @printMemrefF32(tensor<*xf32>)
func.func @main() {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 1.0], [4.0, 5.0, 6.0, 5.0], [7.0, 8.0, 9.0, 10.0]]> : tensor<3x4xf32>
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %f = linalg.fill ins(%half : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(i, k, j) -> (j, k)>, affine_map<(i, k, j) -> (i, j)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%w : tensor<3x4xf32>) outs(%f : tensor<2x3xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  %u = tensor.cast %r : tensor<2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()

  %ones = arith.constant dense<1.0> : tensor<1x300xbf16>
  %zero = arith.constant 0.0 : bf16
  %e16 = tensor.empty() : tensor<2x1xbf16>
  %f16 = linalg.fill ins(%zero : bf16) outs(%e16 : tensor<2x1xbf16>) -> tensor<2x1xbf16>
  %n = linalg.generic {
      indexing_maps = [affine_map<(i, k, j) -> (j, k)>, affine_map<(i, k, j) -> (i, j)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%ones : tensor<1x300xbf16>) outs(%f16 : tensor<2x1xbf16>) {
  ^bb0(%a: bf16, %acc: bf16):
    %s = arith.addf %acc, %a : bf16
    linalg.yield %s : bf16
  } -> tensor<2x1xbf16>
  %e32 = tensor.empty() : tensor<2x1xf32>
  %n32 = linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%n : tensor<2x1xbf16>) outs(%e32 : tensor<2x1xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %x = arith.extf %a : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<2x1xf32>
  %v = tensor.cast %n32 : tensor<2x1xf32> to tensor<*xf32>
  call @printMemrefF32(%v) : (tensor<*xf32>) -> ()
  return
}
