// REQUIRES: cpu-target
// dtensor-run's options and the launcher's checks (issue 11).
//
// Option errors exit 2 (1 is reserved for a mismatch) and say what is wrong.
// RUN: dtensor-run %s -n 4 --tolerance -1 > %t.o 2>&1; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=TOLNEG < %t.o
// TOLNEG: error: --tolerance must be a finite number >= 0, got -1{{$}}
// TOLNEG: exit 2
// RUN: dtensor-run %s -n 4 --tolerance nan > %t.o 2>&1; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=TOLNAN < %t.o
// TOLNAN: error: --tolerance must be a finite number >= 0, got nan{{$}}
// TOLNAN: exit 2
// RUN: dtensor-run %s -n 4 --repeat -5 > %t.o 2>&1; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=REPEAT < %t.o
// REPEAT: error: --repeat must be >= 0, got -5
// REPEAT: exit 2
// RUN: dtensor-run %s -n 4 --input 7=%t.npy > %t.o 2>&1; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=INPUT < %t.o
// INPUT: error: --input 7={{.*}}.npy: @f has 2 arguments
// INPUT: exit 2
// RUN: for t in 0 -5 9300000000; do \
// RUN:   dtensor-run %s -n 4 --timeout $t > %t.o 2>&1; echo "exit $?" >> %t.o; \
// RUN:   FileCheck %s --check-prefix=TIMEOUT < %t.o || exit 1; \
// RUN: done
// TIMEOUT: error: --timeout must be between 1 and 1000000000 seconds, got
// TIMEOUT: exit 2
// RUN: dtensor-run %s -n 4 --timeout 9.3e9 > %t.o 2>&1; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=BADINT < %t.o
// BADINT: for the --timeout option: '9.3e9' value invalid
// BADINT: exit 2
// RUN: dtensor-run %s -n 4 --no-such-option > %t.o 2>&1; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=UNKNOWN < %t.o
// UNKNOWN: Unknown command line argument '--no-such-option'
// UNKNOWN: exit 2
// RUN: dtensor-run %s -n 0 > %t.o 2>&1; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=RANKS < %t.o
// RANKS: error: -n must be at least 1
// RANKS: exit 2

// An i32 output placed P(min) reduces from the ranks' values (it started
// from (int)+inf, INT_MIN, and correct ranks were a MISMATCH).
// RUN: timeout 120 dtensor-run %S/Inputs/partial-min-int.mlir -n 2 --seed 3 | FileCheck %s --check-prefix=PMIN
// PMIN: output #0 tensor<4xi32> on @m [P(min)]: max relative error 0.000e+00 {{.*}} ok
// PMIN: PASS

// An entry without arguments whose result lives on the second mesh runs on
// that mesh's ranks; its result is a constant (whose buffer is not freed).
// RUN: timeout 120 dtensor-run %S/Inputs/result-mesh.mlir -n 2 --seed 3 | FileCheck %s --check-prefix=RMESH
// RMESH: @make on 2 ranks (mesh @two)
// RMESH: PASS

// --entry compiles the entry and what it calls, nothing else.
// RUN: timeout 120 dtensor-run %S/Inputs/entry-only.mlir -n 2 --entry main --seed 3 | FileCheck %s --check-prefix=ENTRY
// ENTRY: PASS

// Every copy of a replicated output is checked: a fake mpirun that runs the
// ranks and then corrupts rank 1's copy gives a MISMATCH naming rank 1.
// RUN: env REAL_MPIRUN=mpirun CORRUPT_RANK=1 dtensor-run %s -n 4 --seed 3 --mpirun=%S/Inputs/corrupt-mpirun.sh > %t.o 2>&1; echo "exit $?" >> %t.o
// RUN: FileCheck %s --check-prefix=REPLICA < %t.o
// REPLICA: output #0 tensor<8x4xf32> on @m [R]: max relative error {{.*}} MISMATCH in 1 of 4 copies: ranks 1
// REPLICA: FAIL
// REPLICA: exit 1

dtensor.mesh @m shape = [4]

func.func @f(%x: tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@m, [S(0)]>},
             %y: tensor<8x8xf32>)
    -> (tensor<8x4xf32> {dtensor.layout = #dtensor.layout<@m, [R]>}) {
  return %x : tensor<8x4xf32>
}

// A returned tensor.empty has undefined contents on every rank and in the
// reference: reported, not compared (no false MISMATCH).
// RUN: timeout 120 dtensor-run %S/Inputs/undefined-output.mlir -n 4 --seed 1 | FileCheck %s --check-prefix=UNDEF
// UNDEF: output #0 tensor<6x8xf32> on @tp [S(0)]: undefined (a tensor.empty), not compared
// UNDEF: output #1 tensor<8x8xi32> on @tp [S(1)]: max relative error 0.000e+00 {{.*}} ok
// UNDEF: output #3 tensor<6x8xf32> on @tp [P(max)]: max relative error 0.000e+00 {{.*}} ok
// UNDEF: PASS
