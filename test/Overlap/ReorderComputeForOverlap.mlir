// RUN: split-file %s %t
// The seed, with the default cost model and with PyTorch's custom estimate
// (collective 100, wait 0, matmul 5, every other kernel 1).
// RUN: dtensor-opt %t/seed.mlir --dtensor-reorder-compute-for-overlap | FileCheck %s --check-prefix=SEED
// RUN: dtensor-opt %t/seed.mlir --dtensor-set-target=cost-table=%t/seed-costs.json --dtensor-reorder-compute-for-overlap | FileCheck %s --check-prefix=SEED
// RUN: dtensor-opt %t/seed.mlir --target=cpu:cpu --dtensor-reorder-compute-for-overlap | FileCheck %s --check-prefix=SEED
// The half-overlap rule.
// RUN: dtensor-opt %t/skip.mlir --dtensor-set-target=cost-table=%t/fits.json --dtensor-reorder-compute-for-overlap | FileCheck %s --check-prefix=FITS
// RUN: dtensor-opt %t/skip.mlir --dtensor-set-target=cost-table=%t/too-big.json --dtensor-reorder-compute-for-overlap | FileCheck %s --check-prefix=SKIP
// Synchronous collectives and barriers.
// RUN: dtensor-opt %t/sync.mlir --dtensor-set-target=cost-table=%t/seed-costs.json --dtensor-reorder-compute-for-overlap | FileCheck %s --check-prefix=SYNC
// The memory budget.
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/budget.mlir --dtensor-set-target="cost-table=%t/seed-costs.json" --dtensor-reorder-compute-for-overlap="report-memory=true" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/budget.mlir --dtensor-set-target="cost-table=%t/seed-costs.json" --dtensor-reorder-compute-for-overlap="memory-budget=-1 report-memory=true" 2>&1 | FileCheck %s --check-prefix=NOBUDGET
// Errors.
// RUN: not dtensor-opt %t/seed.mlir --dtensor-set-target=cost-table=%t/missing.json --dtensor-reorder-compute-for-overlap 2>&1 | FileCheck %s --check-prefix=ERR-FILE
// RUN: not dtensor-opt %t/seed.mlir --dtensor-set-target=cost-table=%t/bad.json --dtensor-reorder-compute-for-overlap 2>&1 | FileCheck %s --check-prefix=ERR-TABLE

// ERR-FILE: error: {{.*}}missing.json
// ERR-TABLE: error: {{.*}}bad.json: 'linalg.matmul': expected microseconds

//--- seed-costs.json
{"dtensor.all_reduce": 100, "dtensor.wait": 0, "linalg.matmul": 5, "default": 1}

//--- fits.json
{"dtensor.all_reduce": 10, "linalg.matmul": 15, "default": 1}

//--- too-big.json
{"dtensor.all_reduce": 10, "linalg.matmul": 30, "default": 1}

//--- bad.json
{"linalg.matmul": "fast"}

//--- seed.mlir

// PyTorch's test_reorder_compute_for_overlap (and its variant with a
// custom runtime estimate) on the per-rank program
//   ar = all_reduce(a); g = a @ a; c = relu(a); d = c @ c; f = d * c * ar
//   fr = all_reduce(f); e = (d + ar + fr) @ g
// with each collective waited for right where it is issued. After the
// first all_reduce come the compute the second one needs and that does not
// depend on the first (relu, d), then independent compute (g), then the
// compute that depends on the first (its wait, f), the second all_reduce,
// and the rest (its wait, the add, the last matmul): the seed's order
// all_reduce, relu, mm, mm, wait, mul, all_reduce, wait, add, mm.

dtensor.mesh @m shape = [4]

#id = affine_map<(i, j) -> (i, j)>

// SEED-LABEL: func.func @reorder_compute_for_overlap
// SEED:       dtensor.async_start
// SEED-NEXT:    dtensor.all_reduce %arg0
// SEED:       arith.maximumf
// SEED:       %[[D:.*]] = linalg.matmul ins(%[[C:.*]], %[[C]] :
// SEED:       %[[G:.*]] = linalg.matmul ins(%arg0, %arg0 :
// SEED:       dtensor.wait
// SEED:       arith.mulf
// SEED:       dtensor.async_start
// SEED-NEXT:    dtensor.all_reduce
// SEED:       dtensor.wait
// SEED:       arith.addf
// SEED:       linalg.matmul ins(%{{.*}}, %[[G]] :
// SEED-NEXT:  return
func.func @reorder_compute_for_overlap(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %f1 = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<4x4xf32>
    dtensor.yield %r : tensor<4x4xf32>
  } : !dtensor.future<tensor<4x4xf32>>
  %ar = dtensor.wait %f1 : !dtensor.future<tensor<4x4xf32>>
  %g = linalg.matmul ins(%a, %a : tensor<4x4xf32>, tensor<4x4xf32>)
                     outs(%fill : tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %d = linalg.matmul ins(%c, %c : tensor<4x4xf32>, tensor<4x4xf32>)
                     outs(%fill : tensor<4x4xf32>) -> tensor<4x4xf32>
  %f = linalg.generic {indexing_maps = [#id, #id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%d, %c, %ar : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
      outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %q = arith.mulf %p, %z : f32
    linalg.yield %q : f32
  } -> tensor<4x4xf32>
  %f2 = dtensor.async_start {
    %r = dtensor.all_reduce %f on @m axes = [0] reduce = sum : tensor<4x4xf32>
    dtensor.yield %r : tensor<4x4xf32>
  } : !dtensor.future<tensor<4x4xf32>>
  %fr = dtensor.wait %f2 : !dtensor.future<tensor<4x4xf32>>
  %s = linalg.generic {indexing_maps = [#id, #id, #id, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%d, %ar, %fr : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
      outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %p = arith.addf %x, %y : f32
    %q = arith.addf %p, %z : f32
    linalg.yield %q : f32
  } -> tensor<4x4xf32>
  %out = linalg.matmul ins(%s, %g : tensor<4x4xf32>, tensor<4x4xf32>)
                       outs(%fill : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %out : tensor<4x4xf32>
}

//--- skip.mlir

// The all_reduce of %a costs 10. The second all_reduce needs relu(%b)
// (cost 1), which leaves 9 to overlap: the independent matmul is scheduled
// before the second all_reduce when more than half of it overlaps (cost
// 15: 10 - 1 > 7.5), which fills the overlap, and left for the end
// otherwise (cost 30: 10 - 1 <= 15), where the multiplication (cost 1)
// takes its place.

dtensor.mesh @m shape = [4]

#id = affine_map<(i) -> (i)>

// FITS-LABEL: func.func @skip
// FITS:       dtensor.async_start
// FITS-NEXT:    dtensor.all_reduce %arg0
// FITS:       arith.maximumf
// FITS:       linalg.matmul
// FITS:       dtensor.async_start
// FITS:       dtensor.wait
// FITS:       arith.mulf

// SKIP-LABEL: func.func @skip
// SKIP:       dtensor.async_start
// SKIP-NEXT:    dtensor.all_reduce %arg0
// SKIP:       arith.maximumf
// SKIP:       arith.mulf
// SKIP:       dtensor.async_start
// SKIP:       linalg.matmul
func.func @skip(%a: tensor<16xf32>, %b: tensor<16xf32>, %m: tensor<4x4xf32>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %f1 = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<16xf32>
    dtensor.yield %r : tensor<16xf32>
  } : !dtensor.future<tensor<16xf32>>
  %w1 = dtensor.wait %f1 : !dtensor.future<tensor<16xf32>>
  %mm = linalg.matmul ins(%m, %m : tensor<4x4xf32>, tensor<4x4xf32>)
                      outs(%m : tensor<4x4xf32>) -> tensor<4x4xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<16xf32>) outs(%a : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %p = arith.mulf %x, %x : f32
    linalg.yield %p : f32
  } -> tensor<16xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : tensor<16xf32>) outs(%b : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %f2 = dtensor.async_start {
    %r = dtensor.all_reduce %relu on @m axes = [0] reduce = sum : tensor<16xf32>
    dtensor.yield %r : tensor<16xf32>
  } : !dtensor.future<tensor<16xf32>>
  %w2 = dtensor.wait %f2 : !dtensor.future<tensor<16xf32>>
  return %w1, %w2, %mm, %sq : tensor<16xf32>, tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>
}

//--- sync.mlir

// A synchronous collective cannot be overlapped: nothing independent is
// pulled in after it. Collectives keep their order, and nothing crosses the
// call (a barrier): each side is scheduled on its own.

dtensor.mesh @m shape = [4]

func.func private @opaque(tensor<16xf32>) -> tensor<16xf32>

// SYNC-LABEL: func.func @sync
// SYNC:       dtensor.all_reduce %arg0 on @m axes = [0] reduce = sum
// SYNC-NEXT:  %[[X:.*]] = arith.mulf %arg1, %arg1
// SYNC-NEXT:  dtensor.all_reduce %[[X]] on @m axes = [0] reduce = max
// SYNC-NEXT:  arith.addf %arg1, %arg1
// SYNC-NEXT:  call @opaque
// SYNC-NEXT:  %[[F:.*]] = dtensor.async_start
// SYNC-NEXT:    dtensor.all_reduce %arg0 on @m axes = [0] reduce = min
// SYNC:       arith.divf
// SYNC-NEXT:  dtensor.wait %[[F]]
func.func @sync(%a: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %r1 = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<16xf32>
  %y = arith.addf %b, %b : tensor<16xf32>
  %x = arith.mulf %b, %b : tensor<16xf32>
  %r2 = dtensor.all_reduce %x on @m axes = [0] reduce = max : tensor<16xf32>
  %o = func.call @opaque(%y) : (tensor<16xf32>) -> tensor<16xf32>
  %q = arith.divf %o, %o : tensor<16xf32>
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = min : tensor<16xf32>
    dtensor.yield %r : tensor<16xf32>
  } : !dtensor.future<tensor<16xf32>>
  %w = dtensor.wait %f : !dtensor.future<tensor<16xf32>>
  return %r1, %r2, %q, %w, %o : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

//--- budget.mlir

// Pulling %big (64 B in, 4 KiB out, returned at the end) under the first
// all_reduce keeps it alive next to the 8 KiB all_gather: the peak grows
// from 12352 to 16384 bytes (33%), over the default budget of 20%. The move
// is refused and %big stays last. Without a budget it is made.

dtensor.mesh @m shape = [4]

// BUDGET:       remark: dtensor-reorder-compute-for-overlap: peak live memory 12352 -> 12352 bytes (budget 14822 bytes), 1 move(s) refused
// BUDGET-LABEL: func.func @budget(%arg0
// BUDGET:       dtensor.async_start
// BUDGET:       dtensor.async_start
// BUDGET:       linalg.generic
// BUDGET-NEXT:  ^bb0
// BUDGET-NEXT:    arith.mulf

// NOBUDGET:       remark: dtensor-reorder-compute-for-overlap: peak live memory 12352 -> 16384 bytes (no budget), 0 move(s) refused
// NOBUDGET-LABEL: func.func @budget(%arg0
// NOBUDGET:       dtensor.async_start
// NOBUDGET:       linalg.generic
// NOBUDGET-NEXT:  ^bb0
// NOBUDGET-NEXT:    arith.mulf
// NOBUDGET:       dtensor.async_start
func.func @budget(%a: tensor<512xf32>, %v: tensor<16xf32>)
    -> (tensor<512xf32>, tensor<512xf32>, tensor<32x32xf32>) {
  %f1 = dtensor.async_start {
    %r = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<512xf32>
    dtensor.yield %r : tensor<512xf32>
  } : !dtensor.future<tensor<512xf32>>
  %w1 = dtensor.wait %f1 : !dtensor.future<tensor<512xf32>>
  %f2 = dtensor.async_start {
    %r = dtensor.all_gather %w1 on @m axes = [0] gather_dim = 0 : tensor<512xf32> -> tensor<2048xf32>
    dtensor.yield %r : tensor<2048xf32>
  } : !dtensor.future<tensor<2048xf32>>
  %w2 = dtensor.wait %f2 : !dtensor.future<tensor<2048xf32>>
  %s = tensor.extract_slice %w2[0] [512] [1] : tensor<2048xf32> to tensor<512xf32>
  %e = tensor.empty() : tensor<32x32xf32>
  %big = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j floordiv 2)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%v : tensor<16xf32>) outs(%e : tensor<32x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %p = arith.mulf %x, %x : f32
    linalg.yield %p : f32
  } -> tensor<32x32xf32>
  return %w1, %s, %big : tensor<512xf32>, tensor<512xf32>, tensor<32x32xf32>
}
