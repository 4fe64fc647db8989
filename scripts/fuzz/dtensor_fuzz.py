#!/usr/bin/env python3
"""Structure-aware fuzzer for the dtensor compiler (issue 11).

Takes the programs of the test corpus (test/**/*.mlir, examples/*.mlir,
split at `// -----` and `//--- name` markers), mutates what the compiler
reasons about -- placements, mesh shapes, tensor dims, element types,
annotations, dimension attributes, extreme sizes -- and runs each mutant
through `dtensor-fuzz-check` (tools/dtensor-fuzz), which parses, screens,
verifies and runs every registered dtensor pipeline with a verifier after
each pass. Outcomes per mutant and pipeline:

  accepted     the pipeline succeeded, IR valid
  diagnostic   an error diagnostic (fine: the program was refused)
  invalid-ir   a pass succeeded but left IR the verifier rejects (bug)
  crash        the checker died of a signal (bug)
  hang         the checker ran past the timeout (bug)

With --differential, mutants the SPMD pipeline accepts on a mesh of 2 or 4
processes are also run by `dtensor-run -n N` against the unsharded program:
  diff-ok / diff-error (dtensor-run refused: exit 2) / wrong-result (exit 1,
  a bug) / diff-crash / diff-hang.

Bugs are written to --out (mutant + what happened). The exit code is 1 if
any bug was found. The run is deterministic for a seed and --iterations.
"""

import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

PIPELINES = [
    "builtin.module(dtensor-spmd)",
    "builtin.module(dtensor-spmd,dtensor-overlap)",
    "builtin.module(dtensor-spmd,dtensor-split-matmul-all-reduce{force=true chunks=2},"
    "dtensor-fuse-collective-matmul{force=true},dtensor-decompose-fused)",
    "builtin.module(dtensor-pipeline{to=llvm fuse=true fuse-force=true "
    "split-all-reduce=2})",
    "builtin.module(dtensor-spmd,dtensor-specialize-rank{rank=1},canonicalize,"
    "dtensor-cpu-lowering)",
    # Per-rank inputs of the corpus go straight to the later stages.
    "builtin.module(dtensor-overlap{passes=split-matmul-all-reduce,"
    "async-collectives,bucket-collectives,reorder-compute-for-overlap,"
    "sink-waits,raise-comms})",
    "builtin.module(dtensor-decompose-fused,dtensor-cpu-lowering)",
    "builtin.module(dtensor-split-matmul-all-reduce{force=true chunks=4},"
    "dtensor-fuse-collective-matmul{force=true},dtensor-decompose-fused,"
    "dtensor-specialize-rank{rank=3},canonicalize,dtensor-cpu-lowering)",
]

BUG_CLASSES = ("invalid-ir", "crash", "hang", "wrong-result", "diff-crash",
               "diff-hang")

PLACEMENTS = ["R", "S(0)", "S(1)", "S(2)", "P(sum)", "P(avg)", "P(max)",
              "P(min)", "P(product)", "P"]
DIMS = ["1", "2", "3", "5", "6", "7", "8", "30", "0", "?", "257",
        "1099511627777", "4611686018427387904", "9223372036854775807"]
MESH_SIZES = [1, 1, 2, 2, 3, 4, 4, 8]
ELEMENT_TYPES = ["f16", "bf16", "f64", "i32", "i64", "i1", "complex<f32>",
                 "i8", "index"]

LAYOUT_RE = re.compile(r"<@(\w+),\s*\[([^\]]*)\]>")
MESH_RE = re.compile(r"(dtensor\.mesh\s+@\w+\s+shape\s*=\s*)\[([^\]]*)\]")
TENSOR_RE = re.compile(r"tensor<((?:[0-9?]+x)+)")
INT_ATTR_RE = re.compile(
    r"((?:gather_dim|scatter_dim|split_dim|concat_dim|dimension|dim|root)"
    r"\s*[=(]\s*)(-?\d+)")
AXES_RE = re.compile(r"(axes\s*=\s*)\[([^\]]*)\]")


def split_corpus(paths):
    """Programs of the corpus: each file cut at split markers, RUN/CHECK
    and expected-* comments dropped (the mutants are not lit tests)."""
    programs = []
    for path in paths:
        try:
            text = open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        parts = re.split(r"^//(?: -----|---.*)$", text, flags=re.M)
        for part in parts:
            lines = [l for l in part.splitlines()
                     if not re.match(r"\s*//", l)]
            body = "\n".join(lines).strip()
            if "func.func" in body or "dtensor.mesh" in body:
                programs.append((path, body + "\n"))
    return programs


def mutate_placement(rng, text):
    matches = list(LAYOUT_RE.finditer(text))
    if not matches:
        return None
    m = rng.choice(matches)
    placements = [p.strip() for p in m.group(2).split(",") if p.strip()]
    if not placements:
        return None
    i = rng.randrange(len(placements))
    placements[i] = rng.choice(PLACEMENTS)
    new = "<@%s, [%s]>" % (m.group(1), ", ".join(placements))
    # The same layout written elsewhere (function attributes, from/to)
    # changes with it half of the time.
    if rng.random() < 0.5:
        return text.replace(m.group(0), new)
    return text[:m.start()] + new + text[m.end():]


def mutate_mesh(rng, text):
    matches = list(MESH_RE.finditer(text))
    if not matches:
        return None
    m = rng.choice(matches)
    sizes = [s.strip() for s in m.group(2).split(",") if s.strip()]
    roll = rng.random()
    if roll < 0.05:
        sizes = [rng.choice(["1000000000", "4611686018427387904",
                             "1048577", "0", "-1"])]
    elif roll < 0.15 and sizes:
        # Another rank: layouts then disagree (diagnostics), or a size-1
        # axis is added.
        if rng.random() < 0.5:
            sizes.append("1")
        else:
            sizes.insert(0, "1")
    else:
        sizes = [str(rng.choice(MESH_SIZES)) for _ in sizes]
    new = m.group(1) + "[" + ", ".join(sizes) + "]"
    return text[:m.start()] + new + text[m.end():]


def mutate_dim(rng, text):
    """Replaces one static dim value by another in every tensor type (so the
    program stays mostly consistent)."""
    values = set()
    for m in TENSOR_RE.finditer(text):
        values.update(d for d in m.group(1).split("x") if d and d != "?")
    if not values:
        return None
    old = rng.choice(sorted(values))
    new = rng.choice(DIMS)

    def fix(m):
        dims = m.group(1).split("x")[:-1]
        dims = [new if d == old else d for d in dims]
        return "tensor<" + "x".join(dims) + "x"

    if rng.random() < 0.1:
        # One occurrence only: a shape mismatch somewhere.
        matches = [m for m in TENSOR_RE.finditer(text)
                   if old in m.group(1).split("x")]
        m = rng.choice(matches)
        return text[:m.start()] + fix(m) + text[m.end():]
    return TENSOR_RE.sub(fix, text)


def mutate_element_type(rng, text):
    if "f32" not in text:
        return None
    return re.sub(r"\bf32\b", rng.choice(ELEMENT_TYPES), text)


def mutate_int_attr(rng, text):
    matches = list(INT_ATTR_RE.finditer(text)) + list(AXES_RE.finditer(text))
    if not matches:
        return None
    m = rng.choice(matches)
    if m.re is AXES_RE:
        new = m.group(1) + "[" + ", ".join(
            str(rng.choice([0, 0, 1, 1, 2, -1]))
            for _ in range(rng.choice([1, 1, 2]))) + "]"
    else:
        new = m.group(1) + str(rng.choice([0, 1, 2, 3, -1]))
    return text[:m.start()] + new + text[m.end():]


def mutate_annotation(rng, text):
    """Drops a parameter or boundary marker, or turns an annotation into a
    redistribution (or back)."""
    choices = []
    if "dtensor.param" in text:
        choices.append(lambda t: t.replace("dtensor.param", "dtensor.unused",
                                           1))
    if "dtensor.annotate" in text:
        choices.append(lambda t: re.sub(
            r"dtensor\.annotate (%\w+) layout <",
            r"dtensor.redistribute \1 to <", t, count=1))
    if "dtensor.redistribute" in text:
        choices.append(lambda t: re.sub(
            r"dtensor\.redistribute (%\w+) (?:from <[^>]*> )?to <",
            r"dtensor.annotate \1 layout <", t, count=1))
    if not choices:
        return None
    return rng.choice(choices)(text)


MUTATORS = [(mutate_placement, 5), (mutate_mesh, 3), (mutate_dim, 4),
            (mutate_element_type, 1), (mutate_int_attr, 2),
            (mutate_annotation, 2)]


def mutate(rng, text):
    ops = [f for f, w in MUTATORS for _ in range(w)]
    out = text
    for _ in range(rng.choice([1, 1, 2, 3])):
        for _attempt in range(4):
            new = rng.choice(ops)(rng, out)
            if new is not None and new != out:
                out = new
                break
    return out


def run_checker(checker, path, timeout):
    try:
        proc = subprocess.run([checker, path] + PIPELINES,
                              capture_output=True, text=True,
                              timeout=timeout)
    except OSError as e:
        sys.exit("cannot run %s: %s" % (checker, e))
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (
            e.stdout or "")
        return [("hang", last_pipeline(out), "timeout %ss" % timeout)]
    results = []
    pipeline = None
    for line in proc.stdout.splitlines():
        if line.startswith("PIPELINE "):
            pipeline = line[len("PIPELINE "):]
        elif line == "ACCEPTED":
            results.append(("accepted", pipeline, ""))
        elif line.startswith("DIAGNOSTIC"):
            results.append(("diagnostic", pipeline, line[11:]))
        elif line.startswith("INVALID"):
            results.append(("invalid-ir", pipeline, line[8:]))
    if proc.returncode < 0 or proc.returncode in (134, 136, 139):
        results.append(("crash", pipeline,
                        "signal %d: %s" % (-proc.returncode,
                                           proc.stderr[-2000:])))
    elif proc.returncode not in (0, 3):
        results.append(("crash", pipeline,
                        "exit %d: %s" % (proc.returncode,
                                         proc.stderr[-2000:])))
    return results


def last_pipeline(out):
    pipeline = None
    for line in out.splitlines():
        if line.startswith("PIPELINE "):
            pipeline = line[len("PIPELINE "):]
    return pipeline


def mesh_processes(text):
    m = MESH_RE.findall(text)
    if len(m) != 1:
        return None
    n = 1
    for s in m[0][1].split(","):
        try:
            n *= int(s)
        except ValueError:
            return None
    return n


def run_differential(runner, path, text, timeout):
    n = mesh_processes(text)
    if n not in (2, 4):
        return None
    try:
        proc = subprocess.run([runner, path, "-n", str(n), "--seed", "1",
                               "--timeout", str(int(timeout))],
                              capture_output=True, text=True,
                              timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        return ("diff-hang", "dtensor-run -n %d" % n, "")
    except OSError as e:
        # The runner is being rebuilt: not the mutant's fault.
        return ("diff-error", "dtensor-run -n %d" % n, str(e))
    tail = (proc.stdout + proc.stderr)[-2000:]
    if proc.returncode == 0:
        return ("diff-ok", "dtensor-run -n %d" % n, "")
    if proc.returncode == 1:
        return ("wrong-result", "dtensor-run -n %d" % n, tail)
    if proc.returncode == 2:
        return ("diff-error", "dtensor-run -n %d" % n, tail)
    return ("diff-crash", "dtensor-run -n %d" % n, tail)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=0,
                    help="mutants to run (0: until --seconds)")
    ap.add_argument("--seconds", type=float, default=0,
                    help="stop after this long (0: only --iterations)")
    ap.add_argument("--timeout", type=float, default=20,
                    help="seconds per mutant before it counts as a hang")
    ap.add_argument("--checker", default=os.path.join(
        root, "build", "bin", "dtensor-fuzz-check"))
    ap.add_argument("--runner", default=os.path.join(
        root, "build", "bin", "dtensor-run"))
    ap.add_argument("--differential", action="store_true",
                    help="also run accepted mutants on 2 or 4 ranks")
    ap.add_argument("--corpus", nargs="*", default=None,
                    help="files (default: test/**/*.mlir, examples/*.mlir)")
    ap.add_argument("--out", default="fuzz-out",
                    help="folder for the bugs found")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if not args.iterations and not args.seconds:
        args.iterations = 100

    paths = args.corpus
    if paths is None:
        paths = sorted(glob.glob(os.path.join(root, "test", "**", "*.mlir"),
                                 recursive=True) +
                       glob.glob(os.path.join(root, "examples", "*.mlir")))
        # Fuzzer findings live in test/fuzz; they are already minimal.
    programs = split_corpus(paths)
    if not programs:
        print("no programs in the corpus", file=sys.stderr)
        return 2
    # Programs written to be rejected (diagnostic tests) mostly stay
    # rejected after a mutation: they get a small share of the mutants.
    weights = [1 if re.search(r"invalid|malformed|errors", src) else 8
               for src, _ in programs]
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    counts = {}
    mutants = bugs = 0
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        while True:
            if args.iterations and mutants >= args.iterations:
                break
            if args.seconds and time.time() - start >= args.seconds:
                break
            source, text = rng.choices(programs, weights)[0]
            mutant = mutate(rng, text)
            path = os.path.join(tmp, "mutant.mlir")
            with open(path, "w") as f:
                f.write(mutant)
            mutants += 1
            results = run_checker(args.checker, path, args.timeout)
            if args.differential and any(
                    kind == "accepted" and pipeline == PIPELINES[0]
                    for kind, pipeline, _ in results):
                diff = run_differential(args.runner, path, mutant,
                                        args.timeout)
                if diff:
                    results.append(diff)
            for kind, pipeline, detail in results:
                counts[kind] = counts.get(kind, 0) + 1
                if kind not in BUG_CLASSES:
                    continue
                bugs += 1
                name = "%s-%d-%d" % (kind, args.seed, mutants)
                with open(os.path.join(args.out, name + ".mlir"), "w") as f:
                    f.write("// %s in %s (from %s)\n" % (
                        kind, pipeline, os.path.relpath(source, root)))
                    f.write(mutant)
                with open(os.path.join(args.out, name + ".json"), "w") as f:
                    json.dump({"kind": kind, "pipeline": pipeline,
                               "source": os.path.relpath(source, root),
                               "seed": args.seed, "mutant": mutants,
                               "detail": detail}, f, indent=1)
                print("BUG %s in %s: %s (%s)" % (
                    kind, pipeline, name, detail.strip()[:200]))
            if args.verbose:
                print(mutants, [r[0] for r in results])
    elapsed = time.time() - start
    print("fuzz: seed %d, %d mutants of %d programs in %.0f s" % (
        args.seed, mutants, len(programs), elapsed))
    for kind in ("accepted", "diagnostic") + BUG_CLASSES + (
            "diff-ok", "diff-error"):
        print("  %-12s %d" % (kind, counts.get(kind, 0)))
    print("fuzz: %d bugs" % bugs)
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
