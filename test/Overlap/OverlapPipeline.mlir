// The dtensor-overlap pipeline and the invariants of the scheduling passes.
// RUN: split-file %s %t

// The default pass list is split-matmul-all-reduce, async-collectives,
// reorder-compute-for-overlap, sink-waits, raise-comms; "default" names it
// inside a list.
// RUN: dtensor-opt %t/order.mlir --pass-pipeline="builtin.module(dtensor-overlap)" > %t/default.mlir
// RUN: dtensor-opt %t/order.mlir --pass-pipeline="builtin.module(dtensor-overlap{passes=split-matmul-all-reduce,async-collectives,reorder-compute-for-overlap,sink-waits,raise-comms})" | diff %t/default.mlir -
// RUN: dtensor-opt %t/order.mlir --pass-pipeline="builtin.module(dtensor-overlap{passes=default})" | diff %t/default.mlir -
// RUN: FileCheck %s --check-prefix=DEFAULT < %t/default.mlir
// RUN: not dtensor-opt %t/order.mlir --pass-pipeline="builtin.module(dtensor-overlap{passes=sink-waits,sink-comms})" 2>&1 | FileCheck %s --check-prefix=ERR

// ERR: unknown overlap pass 'sink-comms' (expected split-matmul-all-reduce, async-collectives, bucket-collectives, reorder-compute-for-overlap, sink-waits, raise-comms, or default)

// DEFAULT-LABEL: func.func @order
// DEFAULT:       dtensor.async_start
// DEFAULT-NEXT:    dtensor.all_reduce {{.*}}tag = 1

// Invariant 1: the collectives of every communicator (here: of all of them)
// are issued in the same order after any pass or pipeline. The program
// tempts every pass: later collectives have operands ready before earlier
// ones.
// RUN: grep -o 'tag = [0-9]*' %t/order.mlir > %t/order.txt
// RUN: FileCheck %s --check-prefix=TAGS < %t/order.txt
// RUN: grep -o 'tag = [0-9]*' %t/default.mlir | diff %t/order.txt -
// RUN: dtensor-opt %t/order.mlir --dtensor-async-collectives | grep -o 'tag = [0-9]*' | diff %t/order.txt -
// RUN: dtensor-opt %t/order.mlir --dtensor-async-collectives --dtensor-raise-comms | grep -o 'tag = [0-9]*' | diff %t/order.txt -
// RUN: dtensor-opt %t/order.mlir --dtensor-async-collectives --dtensor-sink-waits | grep -o 'tag = [0-9]*' | diff %t/order.txt -
// RUN: dtensor-opt %t/order.mlir --dtensor-async-collectives --dtensor-reorder-compute-for-overlap | grep -o 'tag = [0-9]*' | diff %t/order.txt -
// RUN: dtensor-opt %t/order.mlir --dtensor-async-collectives --dtensor-set-target=cost-table=%t/costs.json --dtensor-reorder-compute-for-overlap | grep -o 'tag = [0-9]*' | diff %t/order.txt -
// RUN: dtensor-opt %t/order.mlir --dtensor-set-target=cost-table=%t/costs.json --dtensor-reorder-compute-for-overlap | grep -o 'tag = [0-9]*' | diff %t/order.txt -
// RUN: dtensor-opt %t/order.mlir --pass-pipeline="builtin.module(dtensor-overlap{passes=bucket-collectives,async-collectives,raise-comms,reorder-compute-for-overlap,sink-waits,raise-comms memory-budget=-1})" | grep -o 'tag = [0-9]*' | diff %t/order.txt -

// TAGS: tag = 1
// TAGS-NEXT: tag = 2
// TAGS-NEXT: tag = 3
// TAGS-NEXT: tag = 4
// TAGS-NEXT: tag = 5
// TAGS-NEXT: tag = 6

// The raise did move starts (the invariant is not vacuous): the all_gather
// of %arg1 stays after the all_reduce of %x although its operand is ready
// first, and the last all_reduce comes up to right after the all_gather.
// RUN: dtensor-opt %t/order.mlir --dtensor-async-collectives --dtensor-raise-comms | FileCheck %s --check-prefix=RAISED
// RAISED-LABEL: func.func @order
// RAISED-NEXT:  arith.mulf %arg0, %arg0
// RAISED-NEXT:  dtensor.async_start
// RAISED-NEXT:    dtensor.all_reduce {{.*}}tag = 1
// RAISED:       dtensor.async_start
// RAISED-NEXT:    dtensor.all_gather %arg1 {{.*}}tag = 2
// RAISED:         dtensor.all_gather {{.*}}tag = 5
// RAISED-NEXT:    dtensor.yield
// RAISED-NEXT:  } : !dtensor.future
// RAISED-NEXT:  dtensor.async_start
// RAISED-NEXT:    dtensor.all_reduce %arg1 {{.*}}tag = 6
// RAISED:       arith.subf

// Invariant 2: the same program compiles to the same text, every time and
// with or without threading, here and on the partitioned examples.
// RUN: dtensor-opt %t/order.mlir --pass-pipeline="builtin.module(dtensor-overlap{passes=bucket-collectives,default})" > %t/run1.mlir
// RUN: dtensor-opt %t/order.mlir --pass-pipeline="builtin.module(dtensor-overlap{passes=bucket-collectives,default})" > %t/run2.mlir
// RUN: dtensor-opt %t/order.mlir --mlir-disable-threading --pass-pipeline="builtin.module(dtensor-overlap{passes=bucket-collectives,default})" > %t/run3.mlir
// RUN: diff %t/run1.mlir %t/run2.mlir
// RUN: diff %t/run1.mlir %t/run3.mlir
// RUN: dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --dtensor-spmd --dtensor-overlap > %t/mlp1.mlir
// RUN: dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --dtensor-spmd --dtensor-overlap > %t/mlp2.mlir
// RUN: diff %t/mlp1.mlir %t/mlp2.mlir
// RUN: FileCheck %s --check-prefix=MLP < %t/mlp1.mlir
// RUN: dtensor-opt %dtensor_src_root/test/e2e/mlp.mlir --dtensor-spmd --dtensor-overlap > %t/e2e1.mlir
// RUN: dtensor-opt %dtensor_src_root/test/e2e/mlp.mlir --dtensor-spmd --mlir-disable-threading --dtensor-overlap > %t/e2e2.mlir
// RUN: diff %t/e2e1.mlir %t/e2e2.mlir

// MLP-LABEL: func.func @mlp
// MLP:       dtensor.async_start
// MLP:       dtensor.all_reduce
// MLP:       dtensor.wait

// Invariant 3: the peak live memory stays within the budget, taken from
// the program before the pipeline's first pass: every pass of the pipeline
// reports the same budget (20% over the unscheduled peak), even after an
// earlier pass changed the peak.
// RUN: dtensor-opt -mlir-print-op-on-diagnostic=false %t/memory.mlir --pass-pipeline="builtin.module(dtensor-overlap{report-memory=true cost-table=%t/costs.json})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEMORY
// MEMORY: remark: dtensor-reorder-compute-for-overlap: peak live memory 7168 -> 6144 bytes (budget 8601 bytes), 0 move(s) refused
// MEMORY: remark: dtensor-sink-waits: peak live memory 6144 -> 6144 bytes (budget 8601 bytes)
// MEMORY: remark: dtensor-raise-comms: peak live memory 6144 -> 6144 bytes (budget 8601 bytes)
// Run one by one, each in its own process, the passes decide as inside the
// pipeline: the budget's baseline travels in the IR (the first pass writes
// each function's dtensor.memory_baseline), and so does the cost table (the
// module's #dtensor.target).
// RUN: dtensor-opt %t/memory.mlir --dtensor-set-target=cost-table=%t/costs.json -o %t/memory-target.mlir
// RUN: dtensor-opt %t/memory-target.mlir --pass-pipeline="builtin.module(dtensor-overlap)" -o %t/memory-pipeline.mlir
// RUN: dtensor-opt %t/memory-target.mlir --dtensor-split-matmul-all-reduce 2>/dev/null \
// RUN:   | dtensor-opt --dtensor-async-collectives | dtensor-opt --dtensor-reorder-compute-for-overlap \
// RUN:   | dtensor-opt -mlir-print-op-on-diagnostic=false --dtensor-sink-waits=report-memory=true 2>%t/alone.txt \
// RUN:   | dtensor-opt --dtensor-raise-comms | diff %t/memory-pipeline.mlir -
// RUN: FileCheck %s --check-prefix=ALONE < %t/alone.txt
// ALONE: remark: dtensor-sink-waits: peak live memory 6144 -> 6144 bytes (budget 8601 bytes)
// RUN: FileCheck %s --check-prefix=BASELINE < %t/memory-pipeline.mlir
// BASELINE: func.func @memory({{.*}} attributes {dtensor.memory_baseline = 7168 : i64}

//--- costs.json
{"dtensor.all_reduce": 100, "dtensor.all_gather": 100, "dtensor.reduce_scatter": 100, "linalg.matmul": 5, "default": 1}

//--- order.mlir

dtensor.mesh @m shape = [4]
dtensor.mesh @m2 shape = [2, 2]

func.func @order(%a: tensor<16xf32>, %b: tensor<16xf32>)
    -> (tensor<32xf32>, tensor<8xf32>, tensor<64xf32>, tensor<16xf32>) {
  %x = arith.mulf %a, %a : tensor<16xf32>
  %r1 = dtensor.all_reduce %x on @m axes = [0] reduce = sum {tag = 1} : tensor<16xf32>
  %r2 = dtensor.all_gather %b on @m2 axes = [1] gather_dim = 0 {tag = 2}
      : tensor<16xf32> -> tensor<32xf32>
  %y = arith.addf %r1, %b : tensor<16xf32>
  %r3 = dtensor.reduce_scatter %y on @m2 axes = [0] scatter_dim = 0 reduce = sum {tag = 3}
      : tensor<16xf32> -> tensor<8xf32>
  %r4 = dtensor.all_reduce %a on @m2 axes = [1] reduce = max {tag = 4} : tensor<16xf32>
  %z = arith.mulf %r4, %r4 : tensor<16xf32>
  %r5 = dtensor.all_gather %z on @m axes = [0] gather_dim = 0 {tag = 5}
      : tensor<16xf32> -> tensor<64xf32>
  %u = arith.subf %b, %a : tensor<16xf32>
  %r6 = dtensor.all_reduce %b on @m axes = [0] reduce = sum {tag = 6} : tensor<16xf32>
  %v = arith.addf %r6, %u : tensor<16xf32>
  return %r2, %r3, %r5, %v : tensor<32xf32>, tensor<8xf32>, tensor<64xf32>, tensor<16xf32>
}

//--- memory.mlir

// The reorder pulls the reduction of %big under the first all_reduce: %big
// dies early and the peak drops. The later passes still get the budget of
// the program before the pipeline, not of their input.

dtensor.mesh @m shape = [4]

func.func @memory(%a: tensor<256xf32>, %big: tensor<16x64xf32>) -> (tensor<256xf32>, tensor<16xf32>) {
  %r1 = dtensor.all_reduce %a on @m axes = [0] reduce = sum : tensor<256xf32>
  %x = arith.mulf %r1, %r1 : tensor<256xf32>
  %r2 = dtensor.all_reduce %x on @m axes = [0] reduce = sum : tensor<256xf32>
  %y = arith.addf %r2, %x : tensor<256xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %k = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%big : tensor<16x64xf32>) outs(%init : tensor<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %y, %k : tensor<256xf32>, tensor<16xf32>
}
