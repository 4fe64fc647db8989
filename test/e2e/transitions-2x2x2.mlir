// REQUIRES: cpu-target
// The layout-transition matrix of a 2x2x2 mesh with uneven sizes (7x5
// values, which no mesh axis divides), on 8 CPU ranks: each source layout
// (R, S(0), S(1) or P(sum) on each axis: 64, 2744 transitions, the
// reduce_scatter chains of issue 26 with two mesh axes on one dim among
// them) is made by a K-split matmul, pinned by a boundary annotation and
// returned in every layout it can reach (test/e2e/gen-transitions.py).
// The matrix is split in two files (--part 1/2 here, 2/2 in
// transitions-2x2x2-part2.mlir) that lit runs in parallel: about 3 minutes
// each on 2 cores. One dtensor-run per source layout: batching sources into
// one function compiles more slowly.
// RUN: %python %S/gen-transitions.py --mesh 2x2x2 --part 1/2 > %t.mlir
// RUN: for f in $(%python %S/gen-transitions.py --mesh 2x2x2 --part 1/2 --list); do \
// RUN:   timeout 300 dtensor-run %t.mlir -n 8 --entry $f --seed 7 | FileCheck %s || exit 1; \
// RUN: done
// CHECK-NOT: MISMATCH
// CHECK: max relative error {{.*}} ok
// CHECK: {{^}}PASS{{$}}
