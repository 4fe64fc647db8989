// REQUIRES: cpu-target
// One pipeline, the same output wherever it runs: the text below through
// dtensor-opt, and the same options through dtensor-run (which compiles with
// Session::lower and the launcher's PipelineOptions), give the same per-rank
// LLVM module. dtensor-run's copy also records the entry's tensor signature
// (dtensor.signatures) for Executable::invoke: that attribute line is the
// only difference allowed.
// RUN: rm -rf %t.work
// RUN: timeout 120 dtensor-run %dtensor_src_root/examples/tp_mlp.mlir -n 4 --seed 3 --fuse --overlap=default --target=cpu:h100 --work-dir %t.work | FileCheck %s --check-prefix=RESULT
// RUN: dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --pass-pipeline="builtin.module(dtensor-pipeline{target=cpu:h100 fuse=true fuse-force=true passes=default})" -o %t.opt.mlir
// RUN: grep -v '^module\|^$' %t.opt.mlir > %t.opt.body
// RUN: grep -v '^module\|^$' %t.work/sharded.mlir > %t.run.body
// RUN: diff %t.opt.body %t.run.body
// The same range split in two (global -> per-rank, then per-rank -> llvm)
// gives the same module as well.
// RUN: dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --pass-pipeline="builtin.module(dtensor-spmd{target=cpu:h100})" \
// RUN:   | dtensor-opt --pass-pipeline="builtin.module(dtensor-pipeline{from=per-rank fuse=true fuse-force=true})" | grep -v '^module\|^$' | diff %t.opt.body -
// The lowering ran, with the async all_reduce and the target.
// RUN: FileCheck %s --check-prefix=LLVM < %t.opt.mlir
// RUN: FileCheck %s --check-prefix=SIG < %t.work/sharded.mlir
// RUN: not dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --pass-pipeline="builtin.module(dtensor-pipeline{from=llvm to=global})" 2>&1 | FileCheck %s --check-prefix=ERR-RANGE
// RUN: not dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --pass-pipeline="builtin.module(dtensor-pipeline{to=linked})" 2>&1 | FileCheck %s --check-prefix=ERR-STAGE
// RUN: not dtensor-opt %dtensor_src_root/examples/tp_mlp.mlir --pass-pipeline="builtin.module(dtensor-pipeline{split-all-reduce=1})" 2>&1 | FileCheck %s --check-prefix=ERR-SPLIT

// RESULT: PASS
// LLVM: module attributes {dtensor.target = #dtensor.target<cpu, "h100">}
// LLVM: llvm.call @dtensor_rt_start_all_reduce_f32(
// LLVM-NOT: dtensor.all_reduce
// SIG: module attributes {dtensor.signatures = {mlp =
// ERR-RANGE: cannot compile from stage 'llvm' back to 'global'
// ERR-STAGE: unknown stage 'linked' (expected global, propagated, planned, per-rank, scheduled or llvm)
// ERR-SPLIT: split-all-reduce must be 0 (no split) or at least 2, got 1
