// The cost gate of dtensor-fuse-collective-matmul: the chunked ring pipeline
// pays for large matmuls and loses for small M, where n - 1 permute
// latencies exceed one collective. The remarks give the modelled times and
// the break-even row count (numbers depend on the cost model's constants).
// RUN: dtensor-opt %s --dtensor-fuse-collective-matmul -verify-diagnostics | FileCheck %s
// RUN: dtensor-opt %s --target=cpu:h100 --dtensor-fuse-collective-matmul -o /dev/null 2>&1 | FileCheck %s --check-prefix=H100
// min-rows replaces the model by a row count.
// RUN: dtensor-opt %s --dtensor-fuse-collective-matmul=min-rows=64 -o /dev/null 2>&1 | FileCheck %s --check-prefix=ROWS
// threshold demands a modelled speedup.
// RUN: dtensor-opt %s --dtensor-fuse-collective-matmul=threshold=100 -o /dev/null 2>&1 | FileCheck %s --check-prefix=SPEEDUP
// force fuses every legal candidate.
// RUN: dtensor-opt %s --dtensor-fuse-collective-matmul=force=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORCE

// H100: remark: not fused: modelled pipeline
// H100: remark: fused with 1 matmul
// H100: remark: fused with its matmul
// H100: remark: not fused: modelled pipeline

// ROWS: remark: not fused: M = 8 rows < min-rows 64
// ROWS: remark: fused with 1 matmul into dtensor.all_gather_matmul: M = 8192 rows >= min-rows 64
// ROWS: remark: fused with its matmul into dtensor.matmul_reduce_scatter: M = 8192 rows >= min-rows 64
// ROWS: remark: not fused: M = 8 rows < min-rows 64

// SPEEDUP-COUNT-4: remark: not fused: modelled pipeline {{.*}} over 4 ranks, required speedup 100; M =

// FORCE-COUNT-2: remark: fused {{.*}}: force=true
// FORCE: remark: fused {{.*}}: force=true
// FORCE: remark: fused {{.*}}: force=true


dtensor.mesh @tp shape = [4]
// CHECK-LABEL: func @small
// CHECK: dtensor.all_gather %
// CHECK: linalg.matmul
func.func @small(%a: tensor<2x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  // expected-remark-re @below {{not fused: modelled pipeline {{[0-9.]+}} us does not beat unfused {{[0-9.]+}} us (all_gather {{[0-9.]+}} + matmul {{[0-9.]+}}; per step permute {{[0-9.]+}}, compute {{[0-9.]+}}) over 4 ranks; M = 8 rows, break-even M >= {{[0-9]+}}}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %c = linalg.matmul ins(%g, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %c : tensor<8x32xf32>
}
// CHECK-LABEL: func @large
// CHECK: dtensor.all_gather_matmul
// CHECK-NOT: linalg.matmul
func.func @large(%a: tensor<2048x8192xf32>, %b: tensor<8192x8192xf32>) -> tensor<8192x8192xf32> {
  %zero = arith.constant 0.0 : f32
  // expected-remark-re @below {{fused with 1 matmul into dtensor.all_gather_matmul: modelled pipeline {{[0-9.]+}} us beats unfused {{[0-9.]+}} us (all_gather {{[0-9.]+}} + matmul {{[0-9.]+}}; per step permute {{[0-9.]+}}, compute {{[0-9.]+}}) over 4 ranks; M = 8192 rows, break-even M >= {{[0-9]+}}}}
  %g = dtensor.all_gather %a on @tp axes = [0] gather_dim = 0 : tensor<2048x8192xf32> -> tensor<8192x8192xf32>
  %e = tensor.empty() : tensor<8192x8192xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
  %c = linalg.matmul ins(%g, %b : tensor<8192x8192xf32>, tensor<8192x8192xf32>) outs(%f : tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
  return %c : tensor<8192x8192xf32>
}
// CHECK-LABEL: func @large_rs
// CHECK: dtensor.matmul_reduce_scatter
func.func @large_rs(%a: tensor<8192x2048xf32>, %b: tensor<2048x8192xf32>) -> tensor<2048x8192xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8192x8192xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
  %c = linalg.matmul ins(%a, %b : tensor<8192x2048xf32>, tensor<2048x8192xf32>) outs(%f : tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
  // expected-remark-re @below {{fused with its matmul into dtensor.matmul_reduce_scatter: modelled pipeline {{[0-9.]+}} us beats unfused {{[0-9.]+}} us (reduce_scatter {{[0-9.]+}} + matmul {{[0-9.]+}}; per step permute {{[0-9.]+}}, compute {{[0-9.]+}}) over 4 ranks; M = 8192 rows}}
  %r = dtensor.reduce_scatter %c on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8192x8192xf32> -> tensor<2048x8192xf32>
  return %r : tensor<2048x8192xf32>
}
// CHECK-LABEL: func @small_rs
// CHECK: dtensor.reduce_scatter %
func.func @small_rs(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<2x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %c = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f : tensor<8x32xf32>) -> tensor<8x32xf32>
  // expected-remark-re @below {{not fused: modelled pipeline {{[0-9.]+}} us does not beat unfused {{[0-9.]+}} us (reduce_scatter {{.*}}) over 4 ranks; M = 8 rows}}
  %r = dtensor.reduce_scatter %c on @tp axes = [0] scatter_dim = 0 reduce = sum : tensor<8x32xf32> -> tensor<2x32xf32>
  return %r : tensor<2x32xf32>
}
