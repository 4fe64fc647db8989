// REQUIRES: cpu-target
// dtensor-run's errors: each names the cause, none hangs.
// RUN: not dtensor-run %s -n 2 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: error: mesh @m has 4 processes; run with -n 4

// RUN: not dtensor-run %s -n 4 --input 0=%t.missing.npy 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: input #0: {{.*}}missing.npy: cannot read

// RUN: dtensor-run %s -n 4 --seed 1 --work-dir %t.dir > /dev/null
// RUN: not dtensor-run %s -n 4 --input 0=%t.dir/in1.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: error: input #0 ({{.*}}in1.npy) holds tensor<8x8xf32>, the argument is tensor<8x4xf32>
// RUN: dtensor-run %s -n 4 --input 0=%t.dir/in0.npy --input 1=%t.dir/in1.npy --seed 5 | FileCheck %s --check-prefix=FILES
// FILES: PASS

// RUN: not dtensor-run %s -n 4 --input zero=%t.npy 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: error: --input expects INDEX=FILE.npy, got 'zero={{.*}}'

// RUN: not dtensor-run %s -n 4 --mpirun=/nonexistent/mpirun 2>&1 | FileCheck %s --check-prefix=NOMPI
// NOMPI: error: '/nonexistent/mpirun' not found: install OpenMPI

// RUN: not dtensor-run %s -n 4 --timeout 1 --mpirun=%S/Inputs/fake-mpirun.sh 2>&1 | FileCheck %s --check-prefix=TIMEOUT
// TIMEOUT: error: the rank job did not finish within 1 s and was killed

// RUN: not dtensor-run %s -n 4 --entry nope 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: error: no function @nope

// RUN: echo "func.func @f(" > %t.bad.mlir
// RUN: not dtensor-run %t.bad.mlir -n 4 2>&1 | FileCheck %s --check-prefix=PARSE
// PARSE: bad.mlir:1:14: error: expected non-function type

dtensor.mesh @m shape = [4]

func.func @f(%x: tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>},
             %y: tensor<8x8xf32>)
    -> (tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  return %x : tensor<8x4xf32>
}

// A rank that fails: the runtime names the rank and the cause, the driver
// reports the failed job.
// RUN: env DTENSOR_RT_FAULT=bogus not timeout 120 dtensor-run %s -n 4 2>&1 | FileCheck %s --check-prefix=RANKFAIL
// RANKFAIL-DAG: dtensor runtime: rank {{[0-3]}}: init: unknown DTENSOR_RT_FAULT value 'bogus'
// RANKFAIL-DAG: dtensor-run: error: the rank job failed with exit code

// Input that crashes MLIR 22's own verifier is screened when dtensor-run
// (Session::parse) reads it: a diagnostic and exit 2, not a segfault.
// RUN: dtensor-run %S/Inputs/concat-negative-dim.mlir -n 2 > %t.concat.txt 2>&1; test $? -eq 2
// RUN: FileCheck %s --check-prefix=SCREEN < %t.concat.txt
// SCREEN: error: concatenation dim -1 is out of range for the rank-2 result 'tensor<4x8xf32>'

// Inputs and outputs the host cannot hold are refused before any of them is
// allocated (issue 11: sizes checked against memory).
// RUN: dtensor-run %S/Inputs/huge-input.mlir -n 2 > %t.huge.txt 2>&1; test $? -eq 2
// RUN: FileCheck %s --check-prefix=HUGE < %t.huge.txt
// HUGE: error: the inputs and outputs of @huge take 74505.8 GiB on the host, more than half of its {{.*}} GiB of memory
