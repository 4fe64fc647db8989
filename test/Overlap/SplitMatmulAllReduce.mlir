// RUN: split-file %s %t
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/force.mlir --dtensor-split-matmul-all-reduce="force=true chunks=2" 2>%t/force.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=FORCE-REMARKS < %t/force.err
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/gate.mlir --dtensor-split-matmul-all-reduce 2>&1 >/dev/null | FileCheck %s --check-prefix=GATE
// RUN: dtensor-opt %t/gate.mlir --dtensor-split-matmul-all-reduce 2>/dev/null | FileCheck %s --check-prefix=GATE-IR
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/gate.mlir --dtensor-split-matmul-all-reduce=threshold=10 2>&1 >/dev/null | FileCheck %s --check-prefix=THRESHOLD
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/gate.mlir --dtensor-split-matmul-all-reduce="memory-budget=0 report-memory=true" 2>&1 >/dev/null | FileCheck %s --check-prefix=BUDGET
// RUN: dtensor-opt %t/gate.mlir --dtensor-split-matmul-all-reduce=memory-budget=0 2>/dev/null | FileCheck %s --check-prefix=BUDGET-IR
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/negative.mlir --dtensor-split-matmul-all-reduce="force=true chunks=2" 2>&1 >/dev/null | FileCheck %s --check-prefix=NEG
// RUN: dtensor-opt %t/negative.mlir --dtensor-split-matmul-all-reduce="force=true chunks=2" 2>/dev/null | FileCheck %s --check-prefix=NEG-IR --implicit-check-not=tensor.concat --implicit-check-not=extract_slice
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/uneven.mlir --verify-each --dtensor-split-matmul-all-reduce="force=true chunks=2" 2>%t/uneven.err | FileCheck %s --check-prefix=UNEVEN
// RUN: FileCheck %s --check-prefix=UNEVEN-REMARKS --implicit-check-not=error < %t/uneven.err
// The cost model's candidates (2, 4, 8 chunks) model the dynamic chunks
// and leave no op behind when they do not split:
// RUN: dtensor-opt %t/uneven.mlir --verify-each --dtensor-split-matmul-all-reduce 2>/dev/null | FileCheck %s --check-prefix=UNEVEN-GATE
// RUN: not dtensor-opt %t/force.mlir --dtensor-split-matmul-all-reduce=chunks=1 2>&1 | FileCheck %s --check-prefix=ERR
//
// Followed by the scheduling passes, chunk 0's all_reduce runs while chunk
// 1 multiplies:
// RUN: dtensor-opt %t/force.mlir --pass-pipeline="builtin.module(dtensor-split-matmul-all-reduce{force=true chunks=2},dtensor-overlap{passes=async-collectives,reorder-compute-for-overlap,sink-waits,raise-comms})" 2>/dev/null | FileCheck %s --check-prefix=SCHED
// SCHED-LABEL: func.func @rows
// SCHED:         linalg.matmul {{.*}} -> tensor<4x32xf32>
// SCHED-NEXT:    %[[F0:.*]] = dtensor.async_start
// SCHED-NEXT:      dtensor.all_reduce
// SCHED:         linalg.matmul {{.*}} -> tensor<4x32xf32>
// SCHED-NEXT:    %[[F1:.*]] = dtensor.async_start
// SCHED-NEXT:      dtensor.all_reduce
// SCHED:         %[[R0:.*]] = dtensor.wait %[[F0]]
// SCHED-NEXT:    %[[R1:.*]] = dtensor.wait %[[F1]]
// SCHED-NEXT:    tensor.concat dim(0) %[[R0]], %[[R1]]
//
// Deterministic, and the same per-rank program whatever the rank (nothing
// depends on a coordinate):
// RUN: dtensor-opt %t/gate.mlir --dtensor-split-matmul-all-reduce 2>/dev/null > %t/once.mlir
// RUN: dtensor-opt %t/gate.mlir --dtensor-split-matmul-all-reduce 2>/dev/null | diff %t/once.mlir -

//--- force.mlir
dtensor.mesh @tp shape = [4]

// The row-parallel output of the TP MLP: chunk i multiplies rows
// [4i, 4i + 4) of A into the same rows of the zero init and all-reduces
// them; the concat puts the chunks back in order.
// CHECK-LABEL: func.func @rows
// CHECK-SAME:    (%[[A:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16x32xf32>)
// CHECK:         %[[Z:.*]] = linalg.fill
// CHECK-NEXT:    %[[A0:.*]] = tensor.extract_slice %[[A]][0, 0] [4, 16] [1, 1]
// CHECK-NEXT:    %[[Z0:.*]] = tensor.extract_slice %[[Z]][0, 0] [4, 32] [1, 1]
// CHECK-NEXT:    %[[P0:.*]] = linalg.matmul ins(%[[A0]], %[[B]] : tensor<4x16xf32>, tensor<16x32xf32>) outs(%[[Z0]] : tensor<4x32xf32>)
// CHECK-NEXT:    %[[R0:.*]] = dtensor.all_reduce %[[P0]] on @tp axes = [0] reduce = sum : tensor<4x32xf32>
// CHECK-NEXT:    %[[A1:.*]] = tensor.extract_slice %[[A]][4, 0] [4, 16] [1, 1]
// CHECK-NEXT:    %[[Z1:.*]] = tensor.extract_slice %[[Z]][4, 0] [4, 32] [1, 1]
// CHECK-NEXT:    %[[P1:.*]] = linalg.matmul ins(%[[A1]], %[[B]] : tensor<4x16xf32>, tensor<16x32xf32>) outs(%[[Z1]] : tensor<4x32xf32>)
// CHECK-NEXT:    %[[R1:.*]] = dtensor.all_reduce %[[P1]] on @tp axes = [0] reduce = sum : tensor<4x32xf32>
// CHECK-NEXT:    %[[C:.*]] = tensor.concat dim(0) %[[R0]], %[[R1]] : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    return %[[C]]
// FORCE-REMARKS: remark: split into 2 row chunks along dim 0: force=true
func.func @rows(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %p = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// Rank 3 with one batch row: the chunks run along the sequence (dim 1).
// A generic contraction with B transposed ([n, k]) is cloned as it is; any
// reduce kind splits (an all_reduce is elementwise across ranks).
// CHECK-LABEL: func.func @sequence
// CHECK:         tensor.extract_slice %arg0[0, 0, 0] [1, 3, 16] [1, 1, 1] : tensor<1x6x16xf32> to tensor<1x3x16xf32>
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<1x3x16xf32>, tensor<32x16xf32>)
// CHECK:         dtensor.all_reduce %{{.*}} reduce = max : tensor<1x3x32xf32>
// CHECK:         tensor.extract_slice %arg0[0, 3, 0] [1, 3, 16] [1, 1, 1]
// CHECK:         dtensor.all_reduce %{{.*}} reduce = max : tensor<1x3x32xf32>
// CHECK:         tensor.concat dim(1)
// CHECK-NOT:     dtensor.all_reduce
// FORCE-REMARKS: remark: split into 2 row chunks along dim 1: force=true
func.func @sequence(%a: tensor<1x6x16xf32>, %bt: tensor<32x16xf32>) -> tensor<1x6x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x32xf32>) -> tensor<1x6x32xf32>
  %p = linalg.generic {
      indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>,
                       affine_map<(b, s, n, k) -> (n, k)>,
                       affine_map<(b, s, n, k) -> (b, s, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %bt : tensor<1x6x16xf32>, tensor<32x16xf32>) outs(%z : tensor<1x6x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x6x32xf32>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = max : tensor<1x6x32xf32>
  return %r : tensor<1x6x32xf32>
}

//--- uneven.mlir
dtensor.mesh @tp shape = [4]

// A row-parallel matmul whose contraction dim is an uneven shard (K = 30
// over 4 ranks: 8, 8, 8 or 6 columns of A per rank, issue 26): the chunks
// take rows of A and every column, however many this rank holds.
// UNEVEN-LABEL: func.func @uneven_k
// UNEVEN-SAME:    (%[[A:.*]]: tensor<8x?xf32>, %[[B:.*]]: tensor<?x16xf32>)
// UNEVEN:         %[[Z:.*]] = linalg.fill
// UNEVEN-NEXT:    %[[C0:.*]] = arith.constant 1 : index
// UNEVEN-NEXT:    %[[K0:.*]] = tensor.dim %[[A]], %[[C0]] : tensor<8x?xf32>
// UNEVEN-NEXT:    %[[A0:.*]] = tensor.extract_slice %[[A]][0, 0] [4, %[[K0]]] [1, 1] : tensor<8x?xf32> to tensor<4x?xf32>
// UNEVEN-NEXT:    %[[Z0:.*]] = tensor.extract_slice %[[Z]][0, 0] [4, 16] [1, 1]
// UNEVEN-NEXT:    %[[P0:.*]] = linalg.matmul ins(%[[A0]], %[[B]] : tensor<4x?xf32>, tensor<?x16xf32>) outs(%[[Z0]] : tensor<4x16xf32>)
// UNEVEN-NEXT:    %[[R0:.*]] = dtensor.all_reduce %[[P0]]
// UNEVEN-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// UNEVEN-NEXT:    %[[K1:.*]] = tensor.dim %[[A]], %[[C1]] : tensor<8x?xf32>
// UNEVEN-NEXT:    %[[A1:.*]] = tensor.extract_slice %[[A]][4, 0] [4, %[[K1]]] [1, 1] : tensor<8x?xf32> to tensor<4x?xf32>
// UNEVEN-NEXT:    %[[Z1:.*]] = tensor.extract_slice %[[Z]][4, 0] [4, 16] [1, 1]
// UNEVEN-NEXT:    %[[P1:.*]] = linalg.matmul ins(%[[A1]], %[[B]] : tensor<4x?xf32>, tensor<?x16xf32>) outs(%[[Z1]] : tensor<4x16xf32>)
// UNEVEN-NEXT:    %[[R1:.*]] = dtensor.all_reduce %[[P1]]
// UNEVEN-NEXT:    tensor.concat dim(0) %[[R0]], %[[R1]] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
// UNEVEN-REMARKS: remark: split into 2 row chunks along dim 0: force=true
// UNEVEN-GATE-LABEL: func.func @uneven_k
// UNEVEN-GATE-NEXT:    arith.constant
// UNEVEN-GATE-NEXT:    tensor.empty
// UNEVEN-GATE-NEXT:    linalg.fill
// UNEVEN-GATE-NEXT:    linalg.matmul
// UNEVEN-GATE-NEXT:    dtensor.all_reduce
// UNEVEN-GATE-NEXT:    return
func.func @uneven_k(%a: tensor<8x?xf32>, %b: tensor<?x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %p = linalg.matmul ins(%a, %b : tensor<8x?xf32>, tensor<?x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// The rank-3 form (batch 1, sequence 6, an uneven hidden dim): chunks
// along the sequence, A's hidden dim taken whole.
// UNEVEN-LABEL: func.func @uneven_k_rank3
// UNEVEN:         tensor.extract_slice %arg0[0, 0, 0] [1, 3, %{{.*}}] [1, 1, 1] : tensor<1x6x?xf32> to tensor<1x3x?xf32>
// UNEVEN:         tensor.extract_slice %arg0[0, 3, 0] [1, 3, %{{.*}}] [1, 1, 1] : tensor<1x6x?xf32> to tensor<1x3x?xf32>
// UNEVEN:         tensor.concat dim(1)
// UNEVEN-REMARKS: remark: split into 2 row chunks along dim 1: force=true
func.func @uneven_k_rank3(%a: tensor<1x6x?xf32>, %b: tensor<?x16xf32>) -> tensor<1x6x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x16xf32>) -> tensor<1x6x16xf32>
  %p = linalg.generic {
      indexing_maps = [affine_map<(b, s, n, k) -> (b, s, k)>,
                       affine_map<(b, s, n, k) -> (k, n)>,
                       affine_map<(b, s, n, k) -> (b, s, n)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<1x6x?xf32>, tensor<?x16xf32>) outs(%z : tensor<1x6x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x6x16xf32>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<1x6x16xf32>
  return %r : tensor<1x6x16xf32>
}

//--- gate.mlir
dtensor.mesh @tp shape = [4]

// The TP MLP's down projection at Llama-3-8B sizes (8192 tokens, ffn 14336
// over 4 ranks, hidden 4096, bf16): the all_reduce (about as long as the
// matmul) hides behind the chunk matmuls.
// GATE: remark: split into {{[248]}} row chunks along dim 0: modelled pipeline {{[0-9.]+}} us beats unsplit {{[0-9.]+}} us (matmul {{[0-9.]+}} + all_reduce {{[0-9.]+}}; per chunk matmul {{[0-9.]+}}, all_reduce {{[0-9.]+}}; concat {{[0-9.]+}})
// GATE-IR-LABEL: func.func @down_proj
// GATE-IR-COUNT-2: dtensor.all_reduce
// GATE-IR:         tensor.concat dim(0)
// THRESHOLD: remark: not split: {{[248]}} row chunks along dim 0: modelled pipeline {{[0-9.]+}} us does not beat unsplit {{.*}}, required speedup 10
// BUDGET: remark: not split: {{.*}} beats unsplit {{.*}}; but the peak live memory would be {{[0-9]+}} bytes, over the budget of {{[0-9]+}}
// The refused split is undone: the program is as it was.
// BUDGET-IR-LABEL: func.func @down_proj
// BUDGET-IR:         linalg.fill
// BUDGET-IR-NEXT:    linalg.matmul
// BUDGET-IR-NEXT:    dtensor.all_reduce
// BUDGET-IR-NEXT:    return
// BUDGET: remark: dtensor-split-matmul-all-reduce: peak live memory [[PEAK:[0-9]+]] -> [[PEAK]] bytes (budget [[PEAK]] bytes), 1 move(s) refused
func.func @down_proj(%h: tensor<8192x3584xbf16>, %w: tensor<3584x4096xbf16>) -> tensor<8192x4096xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8192x4096xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
  %p = linalg.matmul ins(%h, %w : tensor<8192x3584xbf16>, tensor<3584x4096xbf16>) outs(%z : tensor<8192x4096xbf16>) -> tensor<8192x4096xbf16>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<8192x4096xbf16>
  return %r : tensor<8192x4096xbf16>
}

// A small product: launch latency makes chunks slower.
// GATE: remark: not split: {{[248]}} row chunks along dim 0: modelled pipeline {{[0-9.]+}} us does not beat unsplit
func.func @small(%h: tensor<8x16xbf16>, %w: tensor<16x8xbf16>) -> tensor<8x8xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8x8xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %p = linalg.matmul ins(%h, %w : tensor<8x16xbf16>, tensor<16x8xbf16>) outs(%z : tensor<8x8xbf16>) -> tensor<8x8xbf16>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<8x8xbf16>
  return %r : tensor<8x8xbf16>
}

//--- negative.mlir
dtensor.mesh @tp shape = [4]

// NEG-IR-LABEL: func.func @not_a_matmul
// NEG: remark: not split: its operand is not produced by a matmul
func.func @not_a_matmul(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = dtensor.all_reduce %a on @tp axes = [0] reduce = sum : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// NEG-IR-LABEL: func.func @other_users
// NEG: remark: not split: the matmul's product has other users
func.func @other_users(%a: tensor<8x16xf32>, %b: tensor<16x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<8x8xf32>
  return %r, %p : tensor<8x8xf32>, tensor<8x8xf32>
}

// NEG-IR-LABEL: func.func @accumulates
// NEG: remark: not split: its operand is not produced by a matmul: the matmul accumulates into a tensor that is not zero
func.func @accumulates(%a: tensor<8x16xf32>, %b: tensor<16x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %p = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// NEG-IR-LABEL: func.func @odd_rows
// NEG: remark: not split: no row dim of the product divides into 2 chunks
func.func @odd_rows(%a: tensor<3x16xf32>, %b: tensor<16x8xf32>) -> tensor<3x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<3x8xf32>) -> tensor<3x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<3x16xf32>, tensor<16x8xf32>) outs(%z : tensor<3x8xf32>) -> tensor<3x8xf32>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<3x8xf32>
  return %r : tensor<3x8xf32>
}

// NEG-IR-LABEL: func.func @dynamic
// NEG: remark: not split: the product has dynamic sizes
func.func @dynamic(%a: tensor<?x16xf32>, %b: tensor<16x8xf32>, %z: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%z : tensor<?x8xf32>) -> tensor<?x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<?x16xf32>, tensor<16x8xf32>) outs(%f : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// NEG-IR-LABEL: func.func @already_async
// NEG: remark: not split: it is asynchronous already (run the split before async-collectives)
func.func @already_async(%a: tensor<8x16xf32>, %b: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %f = dtensor.async_start {
    %r = dtensor.all_reduce %p on @tp axes = [0] reduce = sum : tensor<8x8xf32>
    dtensor.yield %r : tensor<8x8xf32>
  } : !dtensor.future<tensor<8x8xf32>>
  %w = dtensor.wait %f : !dtensor.future<tensor<8x8xf32>>
  return %w : tensor<8x8xf32>
}

// ERR: chunks must be 0 or at least 2, and threshold positive
