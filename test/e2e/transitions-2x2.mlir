// REQUIRES: cpu-target
// The layout-transition matrix of a 2x2 mesh with uneven sizes (7x5 values,
// which no mesh axis divides): each source layout is made by
// a K-split matmul, pinned by a boundary annotation and returned in every
// layout it can reach (test/e2e/gen-transitions.py), on 4 CPU ranks. One
// dtensor-run per source layout: batching sources into one function
// compiles more slowly than running them apart.
// RUN: %python %S/gen-transitions.py --mesh 2x2 > %t.mlir
// RUN: for f in $(%python %S/gen-transitions.py --mesh 2x2 --list); do \
// RUN:   timeout 300 dtensor-run %t.mlir -n 4 --entry $f --seed 7 | FileCheck %s || exit 1; \
// RUN: done
// CHECK-NOT: MISMATCH
// CHECK: max relative error {{.*}} ok
// CHECK: {{^}}PASS{{$}}
