#!/usr/bin/env python3
"""Generates the layout-transition matrix of one mesh for dtensor-run.

Every source layout (each placement combination of R, S(0), S(1) and P(sum)
over the mesh axes) is materialized by a K-split matmul of a 2-D value whose
sizes the mesh axes do not divide (7x5 by default), pinned by a
`dtensor.annotate ... {dtensor.boundary}`, and returned in every layout it can
reach: per mesh axis, a Partial target needs a replicated or Partial source
(a shard cannot become a pending reduction). Each source layout becomes one
function (@src_<placements>) with one result per target, so that one
dtensor-run checks a whole row of the matrix; with --sources-per-func N, N
source layouts share a function (fewer runs, larger programs).

    gen-transitions.py --mesh 2x2 [--rows 7 --cols 5] [--sources-per-func N]
                       [--min-partial-axes N]

prints the program; --list prints the entry names, one per line (for a RUN
line's loop). Python 3 standard library only. The fuzzer's transitions mode
(scripts/fuzz/dtensor_fuzz.py --mode transitions) imports this file and
writes its programs with emit_mesh and emit_function, over ALL_PLACEMENTS
(every Partial reduction).
"""

import argparse
import itertools
import sys

PLACEMENTS = ["R", "S(0)", "S(1)", "P"]
# Every placement of a 2-D f32 value, each Partial reduction spelled out
# (scripts/fuzz/dtensor_fuzz.py --mode transitions draws from these).
ALL_PLACEMENTS = ["R", "S(0)", "S(1)", "P(sum)", "P(avg)", "P(max)", "P(min)"]


def reduce_kind(placement):
    """The reduction of a Partial placement (`P` is P(sum)); None otherwise."""
    if placement == "P":
        return "sum"
    if placement.startswith("P("):
        return placement[2:-1]
    return None


def tag(placement):
    kind = reduce_kind(placement)
    if kind is None:
        return {"R": "R", "S(0)": "S0", "S(1)": "S1"}[placement]
    return "P" if placement == "P" else "P" + kind


def layout_name(layout):
    return "_".join(tag(p) for p in layout)


def is_valid(layout):
    """A layout holds one Partial reduction (LAYOUT4)."""
    return len({reduce_kind(p) for p in layout} - {None}) <= 1


def reachable(source, target):
    """Whether every mesh axis may go from its source to its target placement:
    a shard cannot become a pending reduction, and one Partial reduction
    becomes another only between sum and avg (a local rescale)."""
    if not is_valid(target):
        return False
    for s, t in zip(source, target):
        s_kind, t_kind = reduce_kind(s), reduce_kind(t)
        if t_kind is None:
            continue
        if s.startswith("S"):
            return False
        if s_kind not in (None, t_kind) and {s_kind, t_kind} != {"sum", "avg"}:
            return False
    return True


def reachable_targets(source, placements=PLACEMENTS):
    """Every layout over `placements` that `source` can reach, in order."""
    return [t for t in itertools.product(placements, repeat=len(source))
            if reachable(source, t)]


def operand_layouts(source):
    """The layouts of x (MxK) and w (KxN) whose matmul is `source` on each axis
    (a Partial axis contracts a K split; the annotation then asks for the
    source's reduction)."""
    x = {"R": "R", "S(0)": "S(0)", "S(1)": "R"}
    w = {"R": "R", "S(0)": "R", "S(1)": "S(1)"}
    return ([x.get(p, "S(1)") for p in source],
            [w.get(p, "S(0)") for p in source])


def layout_attr(layout):
    return "#dtensor.layout<@g, [%s]>" % ", ".join(layout)


def emit_mesh(shape):
    return "dtensor.mesh @g shape = [%s]" % ",".join(str(s) for s in shape)


def emit_function(name, transitions, m, n, k):
    """One function @name of the mesh @g: for each (source, targets) pair of
    `transitions`, an MxK by KxN matmul laid out as `source`, pinned by a
    boundary annotation and returned once in each target layout."""
    params, results, body, returned = [], [], [], []
    for i, (source, targets) in enumerate(transitions):
        x, w = operand_layouts(source)
        params.append("%%x%d: tensor<%dx%dxf32> {dtensor.layout = %s}" % (i, m, k, layout_attr(x)))
        params.append("%%w%d: tensor<%dx%dxf32> {dtensor.layout = %s}" % (i, k, n, layout_attr(w)))
        body.append(
            "  %%y%d = linalg.matmul ins(%%x%d, %%w%d : tensor<%dx%dxf32>, tensor<%dx%dxf32>) "
            "outs(%%f : tensor<%dx%dxf32>) -> tensor<%dx%dxf32>" % (i, i, i, m, k, k, n, m, n, m, n))
        body.append(
            "  %%s%d = dtensor.annotate %%y%d layout <@g, [%s]> {dtensor.boundary} : tensor<%dx%dxf32>"
            % (i, i, ", ".join(source), m, n))
        for target in targets:
            results.append("tensor<%dx%dxf32> {dtensor.layout = %s}" % (m, n, layout_attr(target)))
            returned.append("%%s%d" % i)
    lines = ["// %s: %d transitions" % (name, len(returned)),
             "func.func private @%s(%s)" % (name, ",\n    ".join(params)),
             "    -> (%s) {" % ",\n        ".join(results),
             "  %zero = arith.constant 0.0 : f32",
             "  %%e = tensor.empty() : tensor<%dx%dxf32>" % (m, n),
             "  %%f = linalg.fill ins(%%zero : f32) outs(%%e : tensor<%dx%dxf32>) -> tensor<%dx%dxf32>"
             % (m, n, m, n)]
    lines += body
    lines.append("  return %s : %s" % (", ".join(returned),
                                        ", ".join(["tensor<%dx%dxf32>" % (m, n)] * len(returned))))
    lines.append("}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", required=True, help="mesh shape, e.g. 2x2 or 2x2x2")
    parser.add_argument("--rows", type=int, default=7, help="rows of the value (default 7)")
    parser.add_argument("--cols", type=int, default=5, help="columns of the value (default 5)")
    parser.add_argument("--k", type=int, default=0,
                        help="contraction size (default: twice the mesh size)")
    parser.add_argument("--sources-per-func", type=int, default=1,
                        help="source layouts per function (default 1)")
    parser.add_argument("--min-partial-axes", type=int, default=0,
                        help="only the source layouts Partial on at least this many "
                             "mesh axes (default 0: all)")
    parser.add_argument("--part", default="1/1",
                        help="K/N: only every N-th source layout from the K-th on "
                             "(to split a matrix into test files lit runs in parallel)")
    parser.add_argument("--list", action="store_true", help="print the entry names only")
    args = parser.parse_args()
    try:
        shape = [int(s) for s in args.mesh.split("x")]
    except ValueError:
        parser.error("--mesh expects sizes separated by x, e.g. 2x2")
    if not shape or any(s < 1 for s in shape) or args.sources_per_func < 1:
        parser.error("mesh sizes and --sources-per-func must be positive")
    try:
        part, parts = (int(s) for s in args.part.split("/"))
    except ValueError:
        parser.error("--part expects K/N, e.g. 1/2")
    if not 1 <= part <= parts:
        parser.error("--part K/N needs 1 <= K <= N")
    if args.k == 0:
        args.k = 2
        for s in shape:
            args.k *= s
    sources = [s for s in itertools.product(PLACEMENTS, repeat=len(shape))
               if s.count("P") >= args.min_partial_axes][part - 1::parts]
    groups = [sources[i:i + args.sources_per_func]
              for i in range(0, len(sources), args.sources_per_func)]
    names = ["src_" + layout_name(g[0]) + ("" if len(g) == 1 else "_%d" % len(g))
             for g in groups]
    if args.list:
        print("\n".join(names))
        return 0
    out = ["// Generated by test/e2e/gen-transitions.py --mesh %s: %d source layouts,"
           % (args.mesh, len(sources)),
           "// %dx%d values, K = %d." % (args.rows, args.cols, args.k),
           emit_mesh(shape), ""]
    for name, group in zip(names, groups):
        transitions = [(source, reachable_targets(source)) for source in group]
        out.append(emit_function(name, transitions, args.rows, args.cols, args.k))
        out.append("")
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
