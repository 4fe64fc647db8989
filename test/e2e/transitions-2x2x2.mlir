// REQUIRES: cpu-target
// The layout-transition matrix of a 2x2x2 mesh with uneven sizes (7x5
// values, which no mesh axis divides), on 8 CPU ranks: each source layout
// Partial on at least 2 axes (10 of 64, 544 of the 2744 transitions: the
// reduce_scatter chains of issue 26, two mesh axes on one dim; all 64 take
// about 6 minutes on 2 cores, run them with the generator without
// --min-partial-axes) is made by a K-split matmul, pinned by a boundary
// annotation and returned in every layout it can reach
// (test/e2e/gen-transitions.py). One dtensor-run per source layout:
// batching sources into one function compiles more slowly.
// RUN: %python %S/gen-transitions.py --mesh 2x2x2 --min-partial-axes 2 > %t.mlir
// RUN: for f in $(%python %S/gen-transitions.py --mesh 2x2x2 --min-partial-axes 2 --list); do \
// RUN:   timeout 300 dtensor-run %t.mlir -n 8 --entry $f --seed 7 | FileCheck %s || exit 1; \
// RUN: done
// CHECK-NOT: MISMATCH
// CHECK: max relative error {{.*}} ok
// CHECK: {{^}}PASS{{$}}
