#!/usr/bin/env python3
"""Structure-aware fuzzer for the dtensor compiler (issues 11 and 26).

Three modes (--mode):

mutants (default): takes the programs of the test corpus (test/**/*.mlir,
examples/*.mlir, split at `// -----` and `//--- name` markers), mutates what
the compiler reasons about -- placements, mesh shapes, tensor dims, element
types, annotations, dimension attributes, extreme sizes -- and runs each
mutant through `dtensor-fuzz-check` (tools/dtensor-fuzz), which parses,
screens, verifies and runs every registered dtensor pipeline with a
verifier after each pass. With --differential, mutants the SPMD pipeline
accepts on a mesh of 2 or 4 processes are also run by `dtensor-run -n N`
against the unsharded program.

transitions: generates layout transitions instead (the program text of
test/e2e/gen-transitions.py): a random mesh (1-3 axes of 1-4 processes, at
most 8 in all), a random 2-D f32 value (rows and columns from
TRANSITION_SIZES: uneven and empty included), a random source layout (R,
S(0), S(1) or one Partial reduction -- sum, avg, max, min -- per mesh axis)
materialized by a K-split matmul and pinned by a boundary annotation, and
a random target layout the source can reach. Each program goes through the
checker's pipelines and through `dtensor-run -n <mesh size>` against the
unsharded program.

cuda: the corpus mutants through CUDA_PIPELINES, which lower for the CUDA
target down to LLVM dialect host code with the kernels embedded as PTX
(format=isa: no ptxas, no GPU); with --artifact, mutants the first of them
accepts are also compiled by `dtensor-compile --target cuda` into a shared
library. Skipped, with a message, where the checker was built without the
CUDA target.

Outcomes per program and pipeline:

  accepted     the pipeline succeeded, IR valid
  diagnostic   an error diagnostic (fine: the program was refused)
  invalid-ir   a pass succeeded but left IR the verifier rejects (bug)
  crash        the checker died of a signal (bug)
  hang         the checker ran past the timeout twice, the second time
               with RETRY_FACTOR times as long (bug)

and of the runs under dtensor-run: diff-ok / diff-error (dtensor-run
refused: exit 2) / wrong-result (exit 1, a bug) / diff-crash / diff-hang;
of dtensor-compile: artifact-ok / artifact-error (refused: exit 1) /
artifact-crash / artifact-hang. The messages of the refusals of generated
transitions (all valid) and of dtensor-compile are summed up at the end.

Bugs are written to --out (program + what happened). The exit code is 1 if
any bug was found. The run is deterministic for a seed and --iterations.
"""

import argparse
import glob
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

# Pipelines over a global-view program ...
GLOBAL_PIPELINES = [
    "builtin.module(dtensor-spmd)",
    "builtin.module(dtensor-spmd,dtensor-overlap)",
    "builtin.module(dtensor-spmd,dtensor-split-matmul-all-reduce{force=true chunks=2},"
    "dtensor-fuse-collective-matmul{force=true},dtensor-decompose-fused)",
    "builtin.module(dtensor-pipeline{to=llvm fuse=true fuse-force=true "
    "split-all-reduce=2})",
    "builtin.module(dtensor-spmd,dtensor-specialize-rank{rank=1},canonicalize,"
    "dtensor-cpu-lowering)",
]
# ... and over the per-rank inputs of the corpus, which go straight to the
# later stages.
PER_RANK_PIPELINES = [
    "builtin.module(dtensor-overlap{passes=split-matmul-all-reduce,"
    "async-collectives,bucket-collectives,reorder-compute-for-overlap,"
    "sink-waits,raise-comms})",
    "builtin.module(dtensor-decompose-fused,dtensor-cpu-lowering)",
    "builtin.module(dtensor-split-matmul-all-reduce{force=true chunks=4},"
    "dtensor-fuse-collective-matmul{force=true},dtensor-decompose-fused,"
    "dtensor-specialize-rank{rank=3},canonicalize,dtensor-cpu-lowering)",
]
PIPELINES = GLOBAL_PIPELINES + PER_RANK_PIPELINES

# The CUDA target's lowering of global-view and per-rank programs, kernels
# as PTX (format=isa): neither ptxas nor a GPU is needed. The first pipeline
# is `dtensor-pipeline{to=llvm target=cuda:h100}` with PTX kernels.
CUDA_PIPELINES = [
    "builtin.module(dtensor-pipeline{to=scheduled target=cuda:h100},"
    "dtensor-cuda-lowering{format=isa})",
    "builtin.module(dtensor-pipeline{to=scheduled target=cuda:h200 fuse=true "
    "fuse-force=true split-all-reduce=2},"
    "dtensor-cuda-lowering{format=isa vector-bytes=0 O=0})",
    "builtin.module(dtensor-pipeline{to=scheduled target=cuda "
    "passes=async-collectives,bucket-collectives,"
    "reorder-compute-for-overlap,sink-waits,raise-comms},"
    "dtensor-cuda-lowering{format=isa block-size=64 vector-bytes=4})",
    "builtin.module(dtensor-spmd,dtensor-specialize-rank{rank=1},canonicalize,"
    "dtensor-cuda-lowering{format=isa matmul-context=false})",
    # Per-rank inputs of the corpus go straight to the lowering.
    "builtin.module(dtensor-decompose-fused,dtensor-cuda-lowering{format=isa})",
]

BUG_CLASSES = ("invalid-ir", "crash", "hang", "wrong-result", "diff-crash",
               "diff-hang", "artifact-crash", "artifact-hang")

# Rows, columns and contraction sizes of the transitions mode: uneven over
# every mesh axis size, and empty.
TRANSITION_SIZES = [0, 1, 2, 3, 5, 7, 8, 13]
TRANSITION_REDUCTIONS = ["sum", "avg", "max", "min"]

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
    and expected-* comments dropped (the mutants are not lit tests). Files
    of known open bugs (XFAIL) are left out: they would be found again."""
    programs = []
    for path in paths:
        try:
            text = open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        if re.search(r"^// XFAIL:", text, flags=re.M):
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


# A program that runs past its timeout is run once more with this many
# times the time before it counts as a hang: a loaded machine (other jobs,
# this run at nice 19) slows a program down, a hang never ends.
RETRY_FACTOR = 5


def run_bounded(cmd, timeout):
    """subprocess.run of `cmd` with its output captured; raises
    TimeoutExpired only if a second run with RETRY_FACTOR times the
    timeout runs past it too."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=timeout * RETRY_FACTOR)


def run_checker(checker, path, timeout, pipelines=None):
    try:
        proc = run_bounded([checker, path] + (pipelines or PIPELINES),
                           timeout)
    except OSError as e:
        sys.exit("cannot run %s: %s" % (checker, e))
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (
            e.stdout or "")
        return [("hang", last_pipeline(out),
                 "timeout %ss, then %ss" % (timeout, timeout * RETRY_FACTOR))]
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
    if proc.returncode == 2 and "bad pipeline" in proc.stderr:
        sys.exit("%s: %s" % (checker, proc.stderr.strip()))
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


def run_differential(runner, path, n, timeout, entry=None, seed=1):
    """Runs the program on n ranks under dtensor-run against the unsharded
    program."""
    what = "dtensor-run -n %d" % n
    cmd = [runner, path, "-n", str(n), "--seed", str(seed),
           "--timeout", str(int(timeout))]
    if entry:
        cmd += ["--entry", entry]
    try:
        proc = run_bounded(cmd, timeout + 30)
    except subprocess.TimeoutExpired:
        return ("diff-hang", what, "")
    except OSError as e:
        # The runner is being rebuilt: not the program's fault.
        return ("diff-error", what, str(e))
    tail = (proc.stdout + proc.stderr)[-2000:]
    if proc.returncode == 0:
        return ("diff-ok", what, "")
    if proc.returncode == 1:
        return ("wrong-result", what, tail)
    if proc.returncode == 2:
        return ("diff-error", what, tail)
    return ("diff-crash", what, tail)


def run_artifact(compiler, path, out_path, timeout):
    """Compiles the program for the CUDA target into a shared library over
    the CUDA runtime (where the toolkit has no ptxas, the kernels are
    embedded as PTX)."""
    what = "dtensor-compile --target cuda:h100"
    try:
        proc = run_bounded([compiler, path, "-o", out_path, "--target",
                            "cuda:h100"], timeout)
    except subprocess.TimeoutExpired:
        return ("artifact-hang", what,
                "timeout %ss, then %ss" % (timeout, timeout * RETRY_FACTOR))
    except OSError as e:
        return ("artifact-error", what, str(e))
    tail = proc.stderr[-2000:]
    if proc.returncode == 0:
        return ("artifact-ok", what, "")
    if proc.returncode == 1:
        return ("artifact-error", what, tail)
    return ("artifact-crash", what, "exit %d: %s" % (proc.returncode, tail))


def load_transition_generator(root):
    """test/e2e/gen-transitions.py as a module: the one place that writes
    the transition programs."""
    path = os.path.join(root, "test", "e2e", "gen-transitions.py")
    spec = importlib.util.spec_from_file_location("gen_transitions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate_transition(rng, gen):
    """A random layout transition of a 2-D value on a random mesh: (program
    text, mesh size, description)."""
    while True:
        shape = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
        n = 1
        for size in shape:
            n *= size
        if n <= 8:
            break
    rows, cols, k = (rng.choice(TRANSITION_SIZES) for _ in range(3))
    # One Partial reduction per layout (LAYOUT4).
    partial = "P(%s)" % rng.choice(TRANSITION_REDUCTIONS)
    source = tuple(rng.choice(["R", "S(0)", "S(1)", partial]) for _ in shape)
    target = rng.choice(gen.reachable_targets(source, gen.ALL_PLACEMENTS))
    what = "mesh %s, %dx%d (K %d), [%s] -> [%s]" % (
        "x".join(map(str, shape)), rows, cols, k, ", ".join(source),
        ", ".join(target))
    text = "\n".join([
        "// dtensor_fuzz.py --mode transitions: " + what,
        gen.emit_mesh(shape),
        gen.emit_function("f", [(source, [target])], rows, cols, k), ""])
    return text, n, what


def refusal_key(detail):
    """A refusal's message without locations and numbers (to count alike
    ones together)."""
    lines = detail.strip().splitlines() or [""]
    errors = [l for l in lines if "error: " in l]
    message = errors[0].rsplit("error: ", 1)[1] if errors else lines[0]
    return re.sub(r"\d+", "N", message)[:160]


PROBE = "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n" \
        "  return %x : tensor<2xf32>\n}\n"


def checker_has_cuda(checker, tmp):
    """Whether the checker knows the CUDA target's pipelines."""
    path = os.path.join(tmp, "probe.mlir")
    with open(path, "w") as f:
        f.write(PROBE)
    try:
        proc = subprocess.run([checker, path, CUDA_PIPELINES[0]],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        sys.exit("cannot run %s: %s" % (checker, e))
    return not (proc.returncode == 2 and "bad pipeline" in proc.stderr)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("mutants", "transitions", "cuda"),
                    default="mutants",
                    help="mutants of the corpus through the dtensor "
                         "pipelines (default), generated layout "
                         "transitions through the pipelines and "
                         "dtensor-run, or mutants through the CUDA "
                         "target's lowering")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=0,
                    help="programs to run (0: until --seconds)")
    ap.add_argument("--seconds", type=float, default=0,
                    help="stop after this long (0: only --iterations)")
    ap.add_argument("--timeout", type=float, default=20,
                    help="seconds per program before it counts as a hang")
    ap.add_argument("--checker", default=os.path.join(
        root, "build", "bin", "dtensor-fuzz-check"))
    ap.add_argument("--runner", default=os.path.join(
        root, "build", "bin", "dtensor-run"))
    ap.add_argument("--compiler", default=os.path.join(
        root, "build", "bin", "dtensor-compile"))
    ap.add_argument("--differential", action="store_true",
                    help="mutants: also run accepted mutants on 2 or 4 "
                         "ranks (the transitions mode always runs them)")
    ap.add_argument("--artifact", action="store_true",
                    help="cuda: also compile accepted mutants to a shared "
                         "library with dtensor-compile --target cuda")
    ap.add_argument("--corpus", nargs="*", default=None,
                    help="files (default: test/**/*.mlir, examples/*.mlir)")
    ap.add_argument("--out", default="fuzz-out",
                    help="folder for the bugs found")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if not args.iterations and not args.seconds:
        args.iterations = 100

    programs, weights, gen = [], [], None
    if args.mode == "transitions":
        gen = load_transition_generator(root)
    else:
        paths = args.corpus
        if paths is None:
            paths = sorted(
                glob.glob(os.path.join(root, "test", "**", "*.mlir"),
                          recursive=True) +
                glob.glob(os.path.join(root, "examples", "*.mlir")))
        programs = split_corpus(paths)
        if not programs:
            print("no programs in the corpus", file=sys.stderr)
            return 2
        # Programs written to be rejected (diagnostic tests) mostly stay
        # rejected after a mutation: they get a small share of the mutants.
        weights = [1 if re.search(r"invalid|malformed|errors", src) else 8
                   for src, _ in programs]
    pipelines = {"mutants": PIPELINES, "transitions": GLOBAL_PIPELINES,
                 "cuda": CUDA_PIPELINES}[args.mode]
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    counts = {}
    refusals = {}
    done = bugs = 0
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        if args.mode == "cuda" and not checker_has_cuda(args.checker, tmp):
            print("fuzz: --mode cuda skipped: %s was built without the CUDA "
                  "target (configure with -DDTENSOR_ENABLE_CUDA=ON)"
                  % args.checker)
            return 0
        while True:
            if args.iterations and done >= args.iterations:
                break
            if args.seconds and time.time() - start >= args.seconds:
                break
            if gen:
                program, n, source = generate_transition(rng, gen)
            else:
                source, text = rng.choices(programs, weights)[0]
                program = mutate(rng, text)
                source = os.path.relpath(source, root)
            path = os.path.join(tmp, "program.mlir")
            with open(path, "w") as f:
                f.write(program)
            done += 1
            results = run_checker(args.checker, path, args.timeout,
                                  pipelines)
            first_accepted = any(kind == "accepted" and pipeline ==
                                 pipelines[0]
                                 for kind, pipeline, _ in results)
            if gen:
                results.append(run_differential(
                    args.runner, path, n, args.timeout, entry="f",
                    seed=rng.randrange(1 << 30)))
            elif args.mode == "mutants" and args.differential and \
                    first_accepted and mesh_processes(program) in (2, 4):
                results.append(run_differential(
                    args.runner, path, mesh_processes(program),
                    args.timeout))
            elif args.mode == "cuda" and args.artifact and first_accepted:
                results.append(run_artifact(
                    args.compiler, path, os.path.join(tmp, "artifact.so"),
                    args.timeout))
            for kind, pipeline, detail in results:
                counts[kind] = counts.get(kind, 0) + 1
                if (gen and kind in ("diagnostic", "diff-error")) or \
                        kind == "artifact-error":
                    key = refusal_key(detail)
                    refusals.setdefault(key, [0, source])[0] += 1
                if kind not in BUG_CLASSES:
                    continue
                bugs += 1
                name = "%s-%d-%d" % (kind, args.seed, done)
                if args.mode != "mutants":
                    name = "%s-%s" % (args.mode, name)
                with open(os.path.join(args.out, name + ".mlir"), "w") as f:
                    f.write("// %s in %s (from %s)\n" % (
                        kind, pipeline, source))
                    f.write(program)
                with open(os.path.join(args.out, name + ".json"), "w") as f:
                    json.dump({"kind": kind, "mode": args.mode,
                               "pipeline": pipeline, "source": source,
                               "seed": args.seed, "iteration": done,
                               "detail": detail}, f, indent=1)
                print("BUG %s in %s: %s (%s)" % (
                    kind, pipeline, name, detail.strip()[:200]))
            if args.verbose:
                print(done, *([source] if gen else []),
                      [r[0] for r in results])
    elapsed = time.time() - start
    if gen:
        print("fuzz: seed %d, %d transitions in %.0f s" % (
            args.seed, done, elapsed))
    else:
        print("fuzz: seed %d, %d %smutants of %d programs in %.0f s" % (
            args.seed, done, "cuda " if args.mode == "cuda" else "",
            len(programs), elapsed))
    kinds = ("accepted", "diagnostic") + BUG_CLASSES[:6]
    if args.mode == "cuda":
        kinds = kinds[:5]
        if args.artifact:
            kinds += ("artifact-ok", "artifact-error") + BUG_CLASSES[6:]
    else:
        kinds += ("diff-ok", "diff-error")
    for kind in kinds:
        print("  %-12s %d" % (kind, counts.get(kind, 0)))
    # A generated transition is valid: a refusal is no crash, but worth a
    # look.
    for key, (count, example) in sorted(refusals.items(),
                                        key=lambda kv: -kv[1][0]):
        print("  refused %dx: %s (e.g. %s)" % (count, key, example))
    print("fuzz: %d bugs" % bugs)
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
