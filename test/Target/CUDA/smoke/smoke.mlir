// RUN: dtensor-opt %s --dtensor-cuda-lowering=format=isa | FileCheck %s
// CHECK-LABEL: llvm.func @smoke_mlp(
// CHECK:         llvm.call @dtensor_rt_matmul_f32(
// CHECK:       llvm.func @_mlir_ciface_smoke_mlp(
// CHECK:       gpu.binary @smoke_mlp_kernel
// CHECK-LABEL: llvm.func @smoke_linear(
// CHECK:         llvm.call @dtensor_rt_matmul_f32(
// CHECK-NOT:     gpu.launch_func
// CHECK:       llvm.func @_mlir_ciface_smoke_linear(
// CHECK-NOT:   gpu.binary
// CHECK-LABEL: llvm.func @smoke_softmax(
// CHECK:       llvm.func @_mlir_ciface_smoke_softmax(
// CHECK:       gpu.binary @smoke_softmax_kernel
// CHECK-LABEL: llvm.func @smoke_bf16(
// CHECK:       gpu.binary @smoke_bf16_kernel {{.*}}ld.global.v4.b32

// The CUDA smoke module (scripts/cuda-smoke-build.sh): per-rank programs
// with no collectives, one per kind of code the CUDA target emits.
//   smoke_mlp:     y = relu(x @ w + b)        matmul call + fused kernel
//   smoke_linear:  y = x @ w^T, x [2, 64, 256]  nn.Linear form: 2 m dims, B transposed
//   smoke_softmax: softmax over rows           reduction kernels
//   smoke_bf16:    x * y + x in bf16           8 lanes per 16-byte access
func.func @smoke_mlp(%x: tensor<256x512xf32>, %w: tensor<512x384xf32>, %b: tensor<384xf32>) -> tensor<256x384xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x384xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x384xf32>) -> tensor<256x384xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<256x512xf32>, tensor<512x384xf32>) outs(%f : tensor<256x384xf32>) -> tensor<256x384xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<256x384xf32>, tensor<384xf32>) outs(%e : tensor<256x384xf32>) {
  ^bb0(%m: f32, %v: f32, %o: f32):
    %s = arith.addf %m, %v : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<256x384xf32>
  return %y : tensor<256x384xf32>
}

func.func @smoke_linear(%x: tensor<2x64x256xf32>, %w: tensor<128x256xf32>) -> tensor<2x64x128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x64x128xf32>) -> tensor<2x64x128xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (n, k)>, affine_map<(b, s, n, k) -> (b, s, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x64x256xf32>, tensor<128x256xf32>) outs(%f : tensor<2x64x128xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x64x128xf32>
  return %y : tensor<2x64x128xf32>
}

func.func @smoke_softmax(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %e = tensor.empty() : tensor<64x1000xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<64x1000xf32>) outs(%e : tensor<64x1000xf32>) -> tensor<64x1000xf32>
  return %s : tensor<64x1000xf32>
}

func.func @smoke_bf16(%x: tensor<64x512xbf16>, %y: tensor<64x512xbf16>) -> tensor<64x512xbf16> {
  %p = arith.mulf %x, %y : tensor<64x512xbf16>
  %s = arith.addf %p, %x : tensor<64x512xbf16>
  return %s : tensor<64x512xbf16>
}
