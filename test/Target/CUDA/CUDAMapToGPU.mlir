// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-map-to-gpu --verify-each | FileCheck %s
// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-map-to-gpu=vector-bytes=0 | FileCheck %s --check-prefix=SCALAR
// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-map-to-gpu --convert-parallel-loops-to-gpu | FileCheck %s --check-prefix=LAUNCH
// RUN: dtensor-opt %s -split-input-file --dtensor-cuda-map-to-gpu=block-size=48 | FileCheck %s --check-prefix=BLOCK48
// RUN: dtensor-opt %S/Inputs/map-to-gpu-errors.mlir -split-input-file --dtensor-cuda-map-to-gpu -verify-diagnostics -o /dev/null

// A 2-D elementwise op on dense f32 buffers: viewed as 1-D, one thread per
// 16 bytes (4 lanes, 32 threads for 128 elements), tiled by 256 threads,
// tiles on block x, threads on thread x.
// CHECK-LABEL: func.func @elementwise_2d(
// CHECK-DAG:     %[[X:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0, 1]] : memref<8x16xf32> into memref<128xf32>
// CHECK-DAG:     %[[Y:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0, 1]] : memref<8x16xf32> into memref<128xf32>
// CHECK-DAG:     %[[N:.*]] = arith.constant 32 : index
// CHECK:         scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[N]]) step (%{{.*}}) {
// CHECK:           scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK:             scf.if
// CHECK:               %[[I:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK:               %[[V:.*]] = vector.load %[[X]][%[[I]]] {alignment = 16 : i64} : memref<128xf32>, vector<4xf32>
// CHECK:               %[[E:.*]] = math.exp %[[V]] : vector<4xf32>
// CHECK:               vector.store %[[E]], %[[Y]][%[[I]]] {alignment = 16 : i64} : memref<128xf32>, vector<4xf32>
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK-NOT:     linalg.
// With vector-bytes=0: one thread per element of the flattened nest.
// SCALAR-LABEL: func.func @elementwise_2d(
// SCALAR:         scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// SCALAR:           scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// SCALAR:             scf.if
// SCALAR:               arith.remsi
// SCALAR:               arith.divsi
// SCALAR:               memref.load
// SCALAR:               math.exp
// SCALAR:           } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// SCALAR:         } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// SCALAR-NOT:     vector.
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

// Mixed widths: the widest type (f32) sets 4 lanes, the bf16 input moves 8
// bytes; scalars and constants are broadcast.
// CHECK-LABEL: func.func @widen(
// CHECK-SAME:      %[[X:.*]]: memref<64xbf16>, %[[S:.*]]: f32, %[[Y:.*]]: memref<64xf32>)
// CHECK:         vector.load %[[X]][%{{.*}}] {alignment = 8 : i64} : memref<64xbf16>, vector<4xbf16>
// CHECK:         vector.broadcast %[[S]] : f32 to vector<4xf32>
// CHECK:         arith.extf %{{.*}} : vector<4xbf16> to vector<4xf32>
// CHECK:         arith.mulf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:         vector.broadcast %{{.*}} : f32 to vector<4xf32>
// CHECK:         arith.addf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:         vector.store %{{.*}}, %[[Y]][%{{.*}}] {alignment = 16 : i64} : memref<64xf32>, vector<4xf32>
func.func @widen(%x: memref<64xbf16>, %s: f32, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x, %s : memref<64xbf16>, f32) outs(%y : memref<64xf32>) {
  ^bb0(%a: bf16, %c: f32, %b: f32):
    %e = arith.extf %a : bf16 to f32
    %one = arith.constant 1.0 : f32
    %m = arith.mulf %e, %c : f32
    %r = arith.addf %m, %one : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Operands over the trailing loop dims (a bias) are read as vectors at
// flat % row, over the leading dims (a per-row scale) as one scalar at
// flat / row, broadcast.
// CHECK-LABEL: func.func @bias_scale_relu(
// CHECK-SAME:      %{{.*}}: memref<8x16xf32>, %[[B:.*]]: memref<16xf32>, %[[R:.*]]: memref<8xf32>, %{{.*}}: memref<8x16xf32>)
// CHECK:         scf.if
// CHECK:         %[[I:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK:         %[[X:.*]] = vector.load %{{.*}}[%[[I]]] {alignment = 16 : i64} : memref<128xf32>, vector<4xf32>
// CHECK:         %[[C16:.*]] = arith.constant 16 : index
// CHECK:         %[[J:.*]] = arith.remui %[[I]], %[[C16]] : index
// CHECK:         %[[BV:.*]] = vector.load %[[B]][%[[J]]] {alignment = 16 : i64} : memref<16xf32>, vector<4xf32>
// CHECK:         %[[ROW:.*]] = arith.divui %[[I]], %{{.*}} : index
// CHECK:         %[[S:.*]] = memref.load %[[R]][%[[ROW]]] : memref<8xf32>
// CHECK:         %[[SV:.*]] = vector.broadcast %[[S]] : f32 to vector<4xf32>
// CHECK:         %[[T:.*]] = arith.addf %[[X]], %[[BV]] : vector<4xf32>
// CHECK:         arith.mulf %[[T]], %[[SV]] : vector<4xf32>
// CHECK:         arith.maximumf
// CHECK:         vector.store
func.func @bias_scale_relu(%x: memref<8x16xf32>, %b: memref<16xf32>, %r: memref<8xf32>, %y: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %b, %r : memref<8x16xf32>, memref<16xf32>, memref<8xf32>) outs(%y : memref<8x16xf32>) {
  ^bb0(%a: f32, %c: f32, %s: f32, %o: f32):
    %t = arith.addf %a, %c : f32
    %u = arith.mulf %t, %s : f32
    %v = arith.maximumf %u, %zero : f32
    linalg.yield %v : f32
  }
  return
}

// -----

// Scalar accesses where vectors do not fit: rows (6) that a chunk of 4
// lanes would cross, a size that is not a multiple of the lanes, a strided
// view, a transposed read.
// CHECK-LABEL: func.func @not_vectorized(
// CHECK-NOT:     vector.
// CHECK:         return
func.func @not_vectorized(%x: memref<8x6xf32>, %b: memref<6xf32>, %y: memref<8x6xf32>,
                          %odd: memref<7xf32>, %v: memref<4x4xf32, strided<[8, 1]>>,
                          %t: memref<4x4xf32>, %u: memref<4x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<8x6xf32>, memref<6xf32>) outs(%y : memref<8x6xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%odd : memref<7xf32>)
  linalg.fill ins(%one : f32) outs(%v : memref<4x4xf32, strided<[8, 1]>>)
  linalg.transpose ins(%t : memref<4x4xf32>) outs(%u : memref<4x4xf32>) permutation = [1, 0]
  return
}

// -----

// A row reduction: a thread per row, the reduction a loop in the thread.
// The number of rows is dynamic (an uneven shard may have none): the kernel
// is guarded, a launch of zero blocks is a CUDA error.
// CHECK-LABEL: func.func @row_sum(
// CHECK:         %[[NONEMPTY:.*]] = arith.cmpi sgt, %{{.*}}, %{{.*}} : index
// CHECK:         scf.if %[[NONEMPTY]] {
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

// An elementwise op reading its loop indices (a causal mask): vectorized,
// the chunk's outer index the same for its 4 lanes, the inner one its
// start + [0, 1, 2, 3].
// CHECK-LABEL: func.func @causal_mask(
// CHECK:         %[[X:.*]] = vector.load %{{.*}}[%[[I:.*]]] {alignment = 16 : i64} : memref<64xf32>, vector<4xf32>
// CHECK:         %[[C16:.*]] = arith.constant 16 : index
// CHECK:         %[[COL:.*]] = arith.remui %[[I]], %[[C16]] : index
// CHECK:         %[[ROW0:.*]] = arith.divui %[[I]], %[[C16]] : index
// CHECK:         %[[ROW:.*]] = arith.remui %[[ROW0]], %{{.*}} : index
// CHECK-DAG:     %[[ROWS:.*]] = vector.broadcast %[[ROW]] : index to vector<4xindex>
// CHECK-DAG:     %[[COLS0:.*]] = vector.broadcast %[[COL]] : index to vector<4xindex>
// CHECK:         %[[STEP:.*]] = arith.constant dense<[0, 1, 2, 3]> : vector<4xindex>
// CHECK:         %[[COLS:.*]] = arith.addi %[[COLS0]], %[[STEP]] : vector<4xindex>
// CHECK:         %[[FUTURE:.*]] = arith.cmpi ugt, %[[COLS]], %[[ROWS]] : vector<4xindex>
// CHECK:         arith.select %[[FUTURE]], %{{.*}}, %[[X]] : vector<4xi1>, vector<4xf32>
// Rows of 6 would split a chunk of 4 between rows: one thread per element.
// CHECK-LABEL: func.func @causal_mask_short_rows(
// CHECK-NOT:     vector.load
// CHECK:         memref.load
#ij = affine_map<(i, j) -> (i, j)>
func.func @causal_mask(%x: memref<4x16xf32>, %y: memref<4x16xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.generic {indexing_maps = [#ij, #ij],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x16xf32>) outs(%y : memref<4x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %ninf, %a : f32
    linalg.yield %r : f32
  }
  return
}
func.func @causal_mask_short_rows(%x: memref<4x6xf32>, %y: memref<4x6xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.generic {indexing_maps = [#ij, #ij],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x6xf32>) outs(%y : memref<4x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %future = arith.cmpi ugt, %j, %i : index
    %r = arith.select %future, %ninf, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A static row reduction of 256 bf16 elements into an f32 accumulator (an
// RMSNorm's sum of squares): a warp per row, 8 rows x 32 lanes. Lane l
// loads 16-byte chunks (8 bf16) at l * 8, l * 8 + 256, ... and folds their
// elements in order from the identity; five xor shuffles combine the
// lanes; lane 0 folds the sum into the output element.
// CHECK-LABEL: func.func @warp_sum_of_squares(
// CHECK:         %[[WARP:.*]] = arith.constant 32 : index
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK:           scf.parallel
// CHECK:             %[[ROW:.*]] = arith.divui %[[FLAT:.*]], %[[WARP]] : index
// CHECK:             %[[LANE:.*]] = arith.remui %[[FLAT]], %[[WARP]] : index
// CHECK:             %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:             %[[CHUNK:.*]] = arith.constant 8 : index
// CHECK:             %[[START:.*]] = arith.muli %[[LANE]], %[[CHUNK]] : index
// CHECK:             %[[LANES:.*]] = arith.constant 256 : index
// CHECK:             %[[STRIDE:.*]] = arith.constant 256 : index
// CHECK:             %[[PART:.*]] = scf.for %{{.*}} = %[[START]] to %[[LANES]] step %[[STRIDE]] iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK:               %[[V:.*]] = vector.load %{{.*}}[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<8x256xbf16>, vector<8xbf16>
// CHECK:               %[[X0:.*]] = vector.extract %[[V]][0] : bf16 from vector<8xbf16>
// CHECK:               %[[XF:.*]] = arith.extf %[[X0]] : bf16 to f32
// CHECK:               %[[SQ:.*]] = arith.mulf %[[XF]], %[[XF]] : f32
// CHECK:               %[[NEW:.*]] = arith.addf %[[ACC]], %[[SQ]] : f32
// CHECK-COUNT-7:       vector.extract %[[V]]
// CHECK:               scf.yield %{{.*}} : f32
// CHECK:             %[[S16:.*]], %{{.*}} = gpu.shuffle  xor %[[PART]], %{{.*}}, %{{.*}} : f32
// CHECK:             %[[P16:.*]] = arith.addf %[[PART]], %[[S16]] : f32
// CHECK-COUNT-4:     gpu.shuffle  xor
// CHECK:             %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK:             scf.if %[[FIRST]] {
// CHECK:               %[[OLD:.*]] = memref.load %[[OUT:.*]][%{{.*}}] : memref<8xf32>
// CHECK:               %[[SUM:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// CHECK:               memref.store %[[SUM]], %[[OUT]][%{{.*}}] : memref<8xf32>
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// Without vector accesses: one element per step, 32 apart.
// SCALAR-LABEL: func.func @warp_sum_of_squares(
// SCALAR:         %[[WARP:.*]] = arith.constant 32 : index
// SCALAR:         %[[LANE:.*]] = arith.remui %{{.*}}, %[[WARP]] : index
// SCALAR:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// SCALAR-NOT:       vector.load
// SCALAR:           memref.load %{{.*}} : memref<8x256xbf16>
// SCALAR-NOT:       vector.extract
// SCALAR:           scf.yield
// SCALAR-COUNT-5: gpu.shuffle  xor
// With a block size that is not a multiple of a warp: a thread per row.
// BLOCK48-LABEL: func.func @warp_sum_of_squares(
// BLOCK48-NOT:     gpu.shuffle
// BLOCK48:         scf.for
// BLOCK48-NOT:     gpu.shuffle
#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @warp_sum_of_squares(%x: memref<8x256xbf16>, %r: memref<8xf32>) {
  linalg.generic {indexing_maps = [#rows, #row],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x256xbf16>) outs(%r : memref<8xf32>) {
  ^bb0(%a: bf16, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %sq = arith.mulf %af, %af : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A softmax's row maximum over the last of three dims ([2, 4] rows of 128):
// a warp per row from -inf with maxnumf; the rows delinearized.
// CHECK-LABEL: func.func @warp_row_max(
// CHECK:             %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:             scf.for {{.*}} iter_args(%{{.*}} = %[[NINF]]) -> (f32)
// CHECK:               arith.maxnumf
// CHECK-COUNT-5:     gpu.shuffle  xor
// CHECK:             scf.if
// CHECK:               memref.store %{{.*}} : memref<2x4xf32>
// A row too short for a warp (32 elements) keeps a thread per row.
// CHECK-LABEL: func.func @short_rows(
// CHECK-NOT:     gpu.shuffle
#x3 = affine_map<(a, b, c) -> (a, b, c)>
#r3 = affine_map<(a, b, c) -> (a, b)>
func.func @warp_row_max(%x: memref<2x4x128xf32>, %r: memref<2x4xf32>) {
  linalg.generic {indexing_maps = [#x3, #r3],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<2x4x128xf32>) outs(%r : memref<2x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maxnumf %acc, %a : f32
    linalg.yield %m : f32
  }
  return
}
func.func @short_rows(%x: memref<64x32xf32>, %r: memref<64xf32>) {
  linalg.reduce ins(%x : memref<64x32xf32>) outs(%r : memref<64xf32>) dimensions = [1]
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
// CHECK-NOT:     scf.if
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             scf.for
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// LAUNCH-LABEL: func.func @row_sum(
// LAUNCH:        scf.if
// LAUNCH-NOT:      }
// LAUNCH:          gpu.launch
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

// -----

// A reduction over a middle dim ([parallel, reduction, parallel]; the
// backward of a contraction whose other operand folded to ones, as in the
// FSDP + TP training step): the reduction loop is moved inside the
// parallel ones, so the parallel dims (8 x 32) are one flat loop of threads,
// each folding its 16 elements in an scf.for: one kernel of 256 threads
// (not 8 threads each running the trailing dim as a loop, nor a nested
// scf.parallel under the scf.for, which the conversion leaves on the host).
// CHECK-LABEL: func.func @middle_reduction(
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK-NOT:         scf.parallel
// CHECK:             scf.for %{{.*}} = %{{.*}} to %c16
// CHECK-NOT:           scf.for
// CHECK:                 arith.addf
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// LAUNCH-LABEL: func.func @middle_reduction(
// LAUNCH-NOT:    scf.parallel
// LAUNCH:        gpu.launch
// LAUNCH:          scf.for
// LAUNCH-NOT:      scf.for
// LAUNCH:            memref.load
// LAUNCH-NOT:    scf.parallel
// LAUNCH:        return
func.func @middle_reduction(%w: memref<32x16xf32>, %g: memref<8x32xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(i, k, j) -> (j, k)>,
                       affine_map<(i, k, j) -> (i, j)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%w : memref<32x16xf32>) outs(%g : memref<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A column sum ([reduction, parallel]: the weight gradient of a
// contraction with ones, after dtensor-hoist-broadcast-dims): one kernel
// with a thread per column, not a host loop launching one kernel per row.
// CHECK-LABEL: func.func @outer_reduction(
// CHECK-NOT:     scf.for
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             scf.for %{{.*}} = %{{.*}} to %c64
// CHECK:               memref.load %{{.*}} : memref<64x48xbf16>
// LAUNCH-LABEL: func.func @outer_reduction(
// LAUNCH-NOT:    scf.for
// LAUNCH:        gpu.launch
// LAUNCH:          scf.for
// LAUNCH:        return
func.func @outer_reduction(%h: memref<64x48xbf16>, %g: memref<48xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(k, j) -> (k, j)>, affine_map<(k, j) -> (j)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%h : memref<64x48xbf16>) outs(%g : memref<48xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    %s = arith.addf %out, %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A column sum ([reduction, parallel]: the gradient of a norm's gain, summed
// over the tokens): one kernel, a thread per column folding the rows in an
// scf.for, neighbouring threads reading neighbouring columns, the sum in a
// register (iter_args) from the fill's value (folded in: no fill kernel)
// and stored once. Before, the reduction loop was outermost: a host loop
// launching a kernel per row.
// LAUNCH-LABEL: func.func @column_sum(
// LAUNCH-NOT:    scf.for
// LAUNCH-NOT:    linalg.fill
// LAUNCH:        %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// LAUNCH-NOT:    linalg.fill
// LAUNCH:        gpu.launch
// LAUNCH-NOT:      gpu.terminator
// LAUNCH:          %[[COL:.*]] = arith.addi
// LAUNCH-NOT:      gpu.terminator
// LAUNCH:          %[[SUM:.*]] = scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32)
// LAUNCH:            %[[R:.*]] = affine.apply #{{.*}}(%{{.*}}, %[[ROW]])
// LAUNCH:            %[[V:.*]] = memref.load %{{.*}}[%[[R]], %{{.*}}] : memref<64x32xbf16>
// LAUNCH:            %[[E:.*]] = arith.extf %[[V]]
// LAUNCH:            %[[S:.*]] = arith.addf %[[ACC]], %[[E]]
// LAUNCH-NOT:        memref.store
// LAUNCH:            scf.yield %[[S]]
// LAUNCH:          }
// LAUNCH:          memref.store %[[SUM]], %{{.*}} : memref<32xf32>
// LAUNCH:          gpu.terminator
// LAUNCH-NOT:    gpu.launch
// LAUNCH:        return
func.func @column_sum(%x: memref<64x32xbf16>, %g: memref<32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%g : memref<32xf32>)
  linalg.generic {
      indexing_maps = [affine_map<(r, c) -> (r, c)>,
                       affine_map<(r, c) -> (c)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<64x32xbf16>) outs(%g : memref<32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    %s = arith.addf %out, %e : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A column sum whose output buffer is also read as an input (each step
// adds the old value again: no register can hold the sum): the parallel
// loop still outermost (the reduction loop inside it), one kernel with the
// row loop in the thread, not a host loop of launches.
// LAUNCH-LABEL: func.func @column_sum_aliased(
// LAUNCH-NOT:    scf.for
// LAUNCH:        gpu.launch
// LAUNCH:          scf.for
// LAUNCH:            memref.load %{{.*}} : memref<64x32xbf16>
// LAUNCH:            memref.store
// LAUNCH:          }
// LAUNCH:          gpu.terminator
// LAUNCH-NOT:    gpu.launch
// LAUNCH:        return
func.func @column_sum_aliased(%x: memref<64x32xbf16>, %g: memref<32xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(r, c) -> (r, c)>,
                       affine_map<(r, c) -> (c)>,
                       affine_map<(r, c) -> (c)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%x, %g : memref<64x32xbf16>, memref<32xf32>) outs(%g : memref<32xf32>) {
  ^bb0(%in: bf16, %old: f32, %out: f32):
    %e = arith.extf %in : bf16 to f32
    %s = arith.addf %out, %e : f32
    %t = arith.addf %s, %old : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// RMSNorm: the scaling consumer runs in the reduction's kernel. Each warp
// sums its row's squares, every lane takes the row's total from the
// shuffles (the old value loaded before them), lane 0 stores it, and the
// lanes then scale the row in 16-byte chunks: one kernel, no second
// parallel loop, the total never re-read from memory.
// CHECK-LABEL: func.func @rms_fused(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: memref<8x128xbf16>, %[[G:[a-z0-9]+]]: memref<128xbf16>, %[[SS:[a-z0-9]+]]: memref<8xf32>, %[[Y:[a-z0-9]+]]: memref<8x128xbf16>)
// CHECK-DAG:     %[[XF:.*]] = memref.collapse_shape %[[X]]
// CHECK-DAG:     %[[YF:.*]] = memref.collapse_shape %[[Y]]
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             %[[PART:.*]] = scf.for
// CHECK:             %[[OLD:.*]] = memref.load %[[SS]]
// CHECK:             gpu.shuffle  xor
// CHECK:             %[[TOTAL:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// CHECK:             scf.if
// CHECK-NEXT:          memref.store %[[TOTAL]], %[[SS]]
// CHECK:             scf.for
// CHECK-NOT:           memref.load %[[SS]]
// CHECK:               vector.load %[[XF]]
// CHECK:               vector.broadcast %[[TOTAL]] : f32 to vector<8xf32>
// CHECK:               math.rsqrt
// CHECK:               vector.store %{{.*}}, %[[YF]]
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @rms_fused(%x: memref<8x128xbf16>, %g: memref<128xbf16>,
                     %ss: memref<8xf32>, %y: memref<8x128xbf16>) {
  linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x128xbf16>) outs(%ss : memref<8xf32>) {
  ^bb0(%in: bf16, %acc: f32):
    %e = arith.extf %in : bf16 to f32
    %sq = arith.mulf %e, %e : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  }
  %inv = arith.constant 7.8125e-03 : f32
  %eps = arith.constant 1.0e-05 : f32
  linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                       affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss, %g : memref<8x128xbf16>, memref<8xf32>, memref<128xbf16>)
      outs(%y : memref<8x128xbf16>) {
  ^bb0(%in: bf16, %s: f32, %gain: bf16, %out: bf16):
    %m = arith.mulf %s, %inv : f32
    %me = arith.addf %m, %eps : f32
    %r = math.rsqrt %me : f32
    %e = arith.extf %in : bf16 to f32
    %ge = arith.extf %gain : bf16 to f32
    %n = arith.mulf %e, %r : f32
    %o = arith.mulf %n, %ge : f32
    %t = arith.truncf %o : f32 to bf16
    linalg.yield %t : bf16
  }
  return
}

// -----

// Not fused: the consumer writes %g, which every row reads (a warp could
// overwrite it while another still reads it); and an op writing memory
// between the two.
// CHECK-LABEL: func.func @rms_not_fused(
// CHECK-COUNT-2: } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-LABEL: func.func @rms_not_fused_between(
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK:         call @write_rows
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x
func.func @rms_not_fused(%x: memref<8x128xf32>, %g: memref<8x128xf32>,
                         %ss: memref<8xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (0, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%g : memref<8x128xf32>) outs(%ss : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss : memref<8x128xf32>, memref<8xf32>)
      outs(%g : memref<8x128xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %o = arith.mulf %in, %s : f32
    linalg.yield %o : f32
  }
  return
}
func.func private @write_rows(memref<8x128xf32>)
func.func @rms_not_fused_between(%x: memref<8x128xf32>, %y: memref<8x128xf32>,
                                 %z: memref<8x128xf32>, %ss: memref<8xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x128xf32>) outs(%ss : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  func.call @write_rows(%z) : (memref<8x128xf32>) -> ()
  linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%z, %ss : memref<8x128xf32>, memref<8xf32>)
      outs(%y : memref<8x128xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %o = arith.mulf %in, %s : f32
    linalg.yield %o : f32
  }
  return
}

// -----

// A row of two chunks per lane (512 bf16 = 2 x 32 lanes x 8): the chunks
// stay in registers between the reduction and its consumer, which reads
// only the gain from memory: the row is loaded once.
// Such a kernel needs many registers: blocks of 64 threads (not the
// pass's 256) let several blocks share an SM. The consumer widens the
// resident bf16 chunks by their bits, not with the reduction's extf (which
// LLVM would merge with it, keeping the row as f32: 197 registers a thread
// instead of 116 for a 4096-wide row).
// CHECK-LABEL: func.func @rms_resident(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: memref<8x512xbf16>, %[[G:[a-z0-9]+]]: memref<512xbf16>, %[[SS:[a-z0-9]+]]: memref<8xf32>, %[[Y:[a-z0-9]+]]: memref<8x512xbf16>)
// CHECK:         %[[BS:.*]] = arith.constant 64 : index
// CHECK:         %[[STEP:.*]] = arith.muli %{{.*}}, %[[BS]] : index
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%[[STEP]])
// CHECK:           scf.parallel
// CHECK-NOT:         scf.for
// CHECK:             %[[V0:.*]] = vector.load %[[X]]
// CHECK-NOT:         scf.for
// CHECK:             %[[V1:.*]] = vector.load %[[X]]
// CHECK:             gpu.shuffle  xor
// CHECK:             memref.store %{{.*}}, %[[SS]]
// CHECK-NOT:         vector.load %{{.*}}collapse
// CHECK:             vector.load %[[G]]
// CHECK:             %[[B0:.*]] = vector.bitcast %[[V0]] : vector<8xbf16> to vector<8xi16>
// CHECK:             %[[W0:.*]] = arith.extui %[[B0]] : vector<8xi16> to vector<8xi32>
// CHECK:             %[[S0:.*]] = arith.shli %[[W0]], %{{.*}} : vector<8xi32>
// CHECK:             vector.bitcast %[[S0]] : vector<8xi32> to vector<8xf32>
// CHECK:             vector.store
// CHECK-NOT:         vector.load %{{.*}}collapse
// CHECK:             vector.load %[[G]]
// CHECK:             vector.bitcast %[[V1]] : vector<8xbf16> to vector<8xi16>
// CHECK:             vector.store
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x
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

// -----

// The fill of a warp reduction's output right before it is folded into
// the reduction's kernel: lane 0 combines the row's total with the fill's
// value (no fill kernel, no load of the old value). A fill whose buffer is
// read in between stays, and that reduction loads the old value.
// CHECK-LABEL: func.func @fill_folded(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: memref<8x256xf32>, %[[R:[a-z0-9]+]]: memref<8xf32>, %[[R2:[a-z0-9]+]]: memref<8xf32>, %[[C:[a-z0-9]+]]: memref<8xf32>
// CHECK:         %[[INIT:.*]] = arith.constant 1.500000e+00 : f32
// CHECK:         scf.parallel
// CHECK:           scf.parallel
// CHECK:             gpu.shuffle  xor
// CHECK:             scf.if
// CHECK-NOT:           memref.load %[[R]]
// CHECK:               %[[T:.*]] = arith.addf %[[INIT]], %{{.*}} : f32
// CHECK:               memref.store %[[T]], %[[R]]
// The kept fill (a kernel of its own), the copy reading it, the reduction.
// CHECK:         scf.parallel
// CHECK:               vector.store %{{.*}}, %[[R2]]
// CHECK:         scf.parallel
// CHECK:               vector.store %{{.*}}, %[[C]]
// CHECK:         scf.parallel
// CHECK:             scf.if
// CHECK:               memref.load %[[R2]]
// CHECK:               memref.store %{{.*}}, %[[R2]]
#x2 = affine_map<(i, j) -> (i, j)>
#r2 = affine_map<(i, j) -> (i)>
#v1 = affine_map<(i) -> (i)>
func.func @fill_folded(%x: memref<8x256xf32>, %r: memref<8xf32>, %r2: memref<8xf32>, %c: memref<8xf32>) {
  %init = arith.constant 1.5 : f32
  linalg.fill ins(%init : f32) outs(%r : memref<8xf32>)
  linalg.generic {indexing_maps = [#x2, #r2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x256xf32>) outs(%r : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%init : f32) outs(%r2 : memref<8xf32>)
  linalg.generic {indexing_maps = [#v1, #v1], iterator_types = ["parallel"]}
      ins(%r2 : memref<8xf32>) outs(%c : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#x2, #r2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x256xf32>) outs(%r2 : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}
