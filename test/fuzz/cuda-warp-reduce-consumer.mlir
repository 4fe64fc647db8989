// REQUIRES: cuda-runtime
// Found by scripts/fuzz.sh --mode cuda (seed 2602): dtensor-cuda-map-to-gpu
// fused a row reduction with its elementwise consumer (warpReduce) and
// erased the reduction before emitting the consumer, whose resident chunks
// then read the erased op's inputs (a use after free: a crash in
// dtensor-fuzz-check, silent luck in dtensor-opt).
// RUN: %dtensor_tools_dir/dtensor-fuzz-check %s "builtin.module(dtensor-pipeline{to=scheduled target=cuda:h100},dtensor-cuda-lowering{format=isa})" | FileCheck %s
// CHECK: PIPELINE
// CHECK-NEXT: ACCEPTED

func.func @rms_resident(%x: memref<8x512xbf16>, %g: memref<512xbf16>,
                        %ss: memref<8xf32>, %y: memref<8x512xbf16>) {
  linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x512xbf16>) outs(%ss : memref<8xf32>) {
  ^bb0(%in: bf16, %acc: f32):
    %e = arith.extf %in : bf16 to f32
    %sq = arith.mulf %e, %e : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  }
  %inv = arith.constant 1.953125e-03 : f32
  linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                       affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss, %g : memref<8x512xbf16>, memref<8xf32>, memref<512xbf16>)
      outs(%y : memref<8x512xbf16>) {
  ^bb0(%in: bf16, %s: f32, %gain: bf16, %out: bf16):
    %m = arith.mulf %s, %inv : f32
    %r = math.rsqrt %m : f32
    %e = arith.extf %in : bf16 to f32
    %ge = arith.extf %gain : bf16 to f32
    %n = arith.mulf %e, %r : f32
    %o = arith.mulf %n, %ge : f32
    %t = arith.truncf %o : f32 to bf16
    linalg.yield %t : bf16
  }
  return
}
