#!/usr/bin/env python3
"""Compile-time benchmark: N-layer transformers (gen_transformer.py, Llama-3-8B
sizes by default) through the whole CPU pipeline, stage by stage.

Stages, each one dtensor-opt process reading the previous stage's output as
bytecode (so a stage's time includes starting the tool, reading its input
and writing its output):
  plan      --dtensor-apply-tp-plan (sequence-parallel plan over TP=4)
  spmd      --dtensor-spmd
  fuse      --dtensor-fuse-collective-matmul
  overlap   --dtensor-overlap
  lowering  --dtensor-cpu-lowering
  total     all of the above in one process, global-view text in, LLVM
            dialect out (bytecode, to a file)
For each: wall time (s) and peak resident memory (MiB, the process's
ru_maxrss); for `total` also the CPU time (user + system, s), which other
load on the machine disturbs less than the wall time. Then the time per
added layer of `total` between consecutive N.

  bench/compile_time/compile_time.py [--layers 1,4,16,64,128] [--dtype bf16,f32]
                                     [--opt build/bin/dtensor-opt] [--repeat 3]
A stage that fails prints FAIL and the first error line; later stages of
that model are skipped.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

STAGES = [
    ("plan", ["--dtensor-apply-tp-plan=plan={plan}"]),
    ("spmd", ["--dtensor-spmd"]),
    ("fuse", ["--dtensor-fuse-collective-matmul"]),
    ("overlap", ["--dtensor-overlap"]),
    ("lowering", ["--dtensor-cpu-lowering"]),
]


def run(cmd, stderr_path):
    """Runs cmd; returns (wall seconds, peak RSS MiB, exit code, CPU
    seconds)."""
    with open(stderr_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss / 1024.0, code, usage.ru_utime + usage.ru_stime


def first_error(path):
    with open(path, errors="replace") as f:
        for line in f:
            if "error" in line:
                return line.strip()[:160]
    return "(no error line)"


def measure(cmd, err, repeat):
    """(wall s, peak RSS MiB, CPU s) of the fastest of `repeat` runs."""
    best = None
    for _ in range(repeat):
        t, rss, code, cpu = run(cmd, err)
        if code != 0:
            return None
        if best is None or t < best[0]:
            best = (t, rss, cpu)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", default="1,4,16,64,128")
    ap.add_argument("--dtype", default="bf16,f32")
    ap.add_argument("--opt", default=os.path.join(ROOT, "build/bin/dtensor-opt"))
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per measurement; the fastest is reported")
    ap.add_argument("--work-dir", help="keep the generated and staged files here")
    ap.add_argument("--stages", action=argparse.BooleanOptionalAction, default=True,
                    help="measure each stage in its own process too")
    ap.add_argument("gen_args", nargs="*",
                    help="extra gen_transformer.py arguments after --")
    a = ap.parse_args()
    work = a.work_dir or tempfile.mkdtemp(prefix="dtensor-compile-time-")
    os.makedirs(work, exist_ok=True)
    layers = [int(n) for n in a.layers.split(",")]
    names = [s for s, _ in STAGES] + ["total"]
    print(f"# dtensor-opt: {a.opt}")
    print(f"# time: wall seconds (best of {a.repeat}); rss: peak MiB")
    for dtype in a.dtype.split(","):
        print(f"\n## {dtype}\n")
        header = "| layers | " + " | ".join(
            f"{s} s | {s} MiB" for s in (names if a.stages else ["total"])) + " | total cpu s |"
        print(header)
        print("|" + "---|" * (2 + 2 * (len(names) if a.stages else 1)))
        totals, cpus = {}, {}
        for n in layers:
            model = os.path.join(work, f"{dtype}-{n}.mlir")
            plan = os.path.join(work, "plan.json")
            subprocess.check_call([sys.executable, os.path.join(HERE, "gen_transformer.py"),
                                   "--layers", str(n), "--dtype", dtype,
                                   "-o", model, "--plan", plan, *a.gen_args])
            cells = []
            err = os.path.join(work, f"{dtype}-{n}.err")
            failed = None
            if a.stages:
                src = model
                for name, flags in STAGES:
                    if failed:
                        cells.append("- | -")
                        continue
                    out = os.path.join(work, f"{dtype}-{n}.{name}.mlirbc")
                    cmd = [a.opt, src, *[f.format(plan=plan) for f in flags],
                           "--emit-bytecode", "-o", out]
                    m = measure(cmd, err, a.repeat)
                    if m is None:
                        failed = f"{name}: {first_error(err)}"
                        cells.append("FAIL | -")
                        continue
                    cells.append(f"{m[0]:.3f} | {m[1]:.0f}")
                    src = out
            flags = [f.format(plan=plan) for _, fl in STAGES for f in fl]
            cmd = [a.opt, model, *flags, "--emit-bytecode",
                   "-o", os.path.join(work, f"{dtype}-{n}.ll.mlirbc")]
            m = measure(cmd, err, a.repeat)
            if m is None:
                cells.append("FAIL | - | -")
                failed = failed or f"total: {first_error(err)}"
            else:
                cells.append(f"{m[0]:.3f} | {m[1]:.0f} | {m[2]:.3f}")
                totals[n] = m[0]
                cpus[n] = m[2]
            print(f"| {n} | " + " | ".join(cells) + " |", flush=True)
            if failed:
                print(f"\n{dtype} {n} layers: {failed}\n", flush=True)
        for label, times in (("wall", totals), ("cpu", cpus)):
            ns = sorted(times)
            if len(ns) < 2:
                continue
            print(f"\ntime per added layer ({dtype}, total, {label}):")
            per = {}
            for lo, hi in zip(ns, ns[1:]):
                per[(lo, hi)] = (times[hi] - times[lo]) / (hi - lo)
                print(f"  {lo:>3} -> {hi:<3}: {per[(lo, hi)] * 1000:.2f} ms/layer")
            if (16, 64) in per and (64, 128) in per and per[(16, 64)] > 0:
                print(f"  ratio (64->128) / (16->64): {per[(64, 128)] / per[(16, 64)]:.2f}")


if __name__ == "__main__":
    main()
