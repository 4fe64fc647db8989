// REQUIRES: cpu-target
// A 6-layer transformer (bench/compile_time/gen_transformer.py at toy
// sizes) under the sequence-parallel plan, fused and scheduled for overlap,
// compiled with its repeated layers outlined into one function
// (dtensor-outline-repeated in the CPU lowering), run on 4 CPU ranks and
// checked against the unsharded program.
// RUN: python3 %dtensor_src_root/bench/compile_time/gen_transformer.py --layers 6 --dtype f32 --tokens 16 --hidden 32 --ffn 64 --heads 4 -o %t.mlir --plan %t.plan.json
// RUN: dtensor-opt %t.mlir --dtensor-apply-tp-plan=plan=%t.plan.json -o %t.planned.mlir
// RUN: rm -rf %t.work %t.plain
// RUN: timeout 300 dtensor-run %t.planned.mlir -n 4 --seed 41 --fuse --overlap=default --work-dir %t.work 2>/dev/null | FileCheck %s
// RUN: FileCheck %s --check-prefix=LLVM < %t.work/sharded.mlir
// RUN: timeout 300 dtensor-run %t.planned.mlir -n 4 --seed 42 --overlap=default --work-dir %t.plain 2>/dev/null | FileCheck %s
// RUN: FileCheck %s --check-prefix=LLVM < %t.plain/sharded.mlir
// CHECK: PASS
// The layers are one function, called once per layer (the first layer,
// scheduled differently, may stay in the body).
// LLVM: llvm.func @transformer_repeated(
// LLVM-COUNT-4: llvm.call @transformer_repeated(
