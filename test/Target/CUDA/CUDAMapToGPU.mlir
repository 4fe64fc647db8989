// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-map-to-gpu | FileCheck %s
// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-map-to-gpu --convert-parallel-loops-to-gpu | FileCheck %s --check-prefix=LAUNCH
// RUN: dtensor-opt %S/Inputs/map-to-gpu-errors.mlir -split-input-file --dtensor-cuda-map-to-gpu -verify-diagnostics -o /dev/null

// A 2-D elementwise op: one flat loop over 8*16 elements, tiled by 256,
// tiles on block x, elements on thread x.
// CHECK-LABEL: func.func @elementwise_2d(
// CHECK:         scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK:           scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK:             scf.if
// CHECK:               arith.remsi
// CHECK:               arith.divsi
// CHECK:               math.exp
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK-NOT:     linalg.
// LAUNCH-LABEL: func.func @elementwise_2d(
// LAUNCH:        gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %[[C1:.*]], {{.*}} = %[[C1]]) threads({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %[[C1]], {{.*}} = %[[C1]])
func.func @elementwise_2d(%x: memref<8x16xf32>, %y: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x16xf32>) outs(%y : memref<8x16xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A row reduction: a thread per row, the reduction a loop in the thread.
// CHECK-LABEL: func.func @row_sum(
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             scf.if
// CHECK:               scf.for
// CHECK:                 arith.addf
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
func.func @row_sum(%x: memref<?x64xf32>, %r: memref<?xf32>) {
  linalg.reduce ins(%x : memref<?x64xf32>) outs(%r : memref<?xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  return
}

// -----

// No parallel dimension (a full reduction, a 0-d op): still a kernel, a
// one-iteration parallel loop around it.
// CHECK-LABEL: func.func @full_sum(
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             scf.for
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// LAUNCH-LABEL: func.func @full_sum(
// LAUNCH:        gpu.launch
// LAUNCH-NOT:    memref.load
// LAUNCH:        scf.for
// LAUNCH:          memref.load
func.func @full_sum(%x: memref<64xf32>, %r: memref<f32>) {
  linalg.reduce ins(%x : memref<64xf32>) outs(%r : memref<f32>) dimensions = [0]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  return
}

// -----

// CHECK-LABEL: func.func @block_size(
// CHECK:         %[[BS:.*]] = arith.constant 256 : index
// CHECK:         %[[STEP:.*]] = arith.muli %{{.*}}, %[[BS]] : index
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%[[STEP]])
func.func @block_size(%y: memref<1000xbf16>) {
  %one = arith.constant 1.0 : bf16
  linalg.fill ins(%one : bf16) outs(%y : memref<1000xbf16>)
  return
}
