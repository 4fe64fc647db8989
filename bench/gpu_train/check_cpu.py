#!/usr/bin/env python3
"""Checks gpu_train.py's harness without a GPU: the same Case code (inputs,
seed arguments, the order of the artifact's results, PyTorch's autograd
and AdamW references, the result views) on CPU artifacts of small
programs, compiled by build.sh with TARGET=cpu, against PyTorch on the CPU.
What it cannot check: timing, CUDA graphs, peak memory.

  TARGET=cpu DTYPE=f32 EPS=1e-3 CASES="32:2 16:1" TRAIN_BLOCKS="mlp sp_mlp attn layer" \\
    GEN_FLAGS="--hidden 256 --ffn 512 --heads 2" \\
    bash bench/gpu_train/build.sh /tmp/train-cpu
  python3 bench/gpu_train/check_cpu.py /tmp/train-cpu [--compile] [--json r.json]

(heads of 128 as gpu_rank.py's attention assumes.) Every error must be
under --tolerance (default 1e-4 in f32; 8e-2 in bf16, as
test/e2e/train-bf16.mlir: the CPU's bf16 matmuls accumulate in bf16; a
training step's weights and updates 10 times that: in bf16 the step's
check is loose, the f32 build checks its numerics); --negative also checks that swapping two
same-shaped results (w1 and w3 or their gradients) is caught. --compile
also runs the torch.compile'd block (forward and backward; slow on the
CPU). Exit status 1 on any failure.

  python3 bench/gpu_train/check_cpu.py /tmp/train-cpu --simulate [gpu_train options]

runs gpu_train.py's main itself on the CPU artifacts instead, with the CUDA
pieces stood in for on the CPU (events read the host clock, memory
statistics are 0, the runtime's graph, peak and attention entry points do
nothing): every path of the GPU run but the device's, its output and its
JSON; its times and peaks mean nothing.
"""
import argparse
import contextlib
import ctypes
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

import gpu_train  # noqa: E402
from common.artifact import Artifact  # noqa: E402


class HostEvent:
    """torch.cuda.Event on the host clock."""

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


class HostRuntime:
    """The CPU runtime with the CUDA runtime's benchmark entry points
    standing in: no graphs (a launch does nothing, the captured call's
    results stay), no peak, no attention path; results are not freed."""

    def __init__(self, lib):
        self.lib = lib

    def __getattr__(self, name):
        return getattr(self.lib, name)

    def dtensor_rt_context(self):
        return 0

    def dtensor_rt_cuda_stream(self, ctx):
        return 0

    def dtensor_rt_cuda_peak_bytes(self, ctx, reset):
        return 0

    def dtensor_rt_attention_last(self, ctx, note, capacity):
        return -1

    def dtensor_rt_graph_begin(self, ctx):
        pass

    def dtensor_rt_graph_end(self, ctx):
        return 1

    def dtensor_rt_graph_launch(self, ctx, graph):
        pass

    def dtensor_rt_graph_destroy(self, ctx, graph):
        pass

    def dtensor_rt_graph_describe(self, ctx, graph, text, capacity):
        return 0

    def dtensor_rt_buffer_free(self, buffer):
        pass


def simulate(directory, argv):
    """gpu_train.main() on CPU artifacts, the CUDA calls stood in for."""
    build = gpu_train.load_build(directory)
    lib = ctypes.CDLL(os.path.join(directory, build["runtime"]),
                      mode=ctypes.RTLD_GLOBAL)
    runtime = HostRuntime(lib)
    cuda = torch.cuda
    for name, value in {
            "Event": HostEvent, "synchronize": lambda *a: None,
            "reset_peak_memory_stats": lambda *a: None,
            "memory_allocated": lambda *a: 0,
            "max_memory_allocated": lambda *a: 0,
            "stream": lambda s: contextlib.nullcontext(),
            "current_stream": lambda *a: None,
            "get_device_name": lambda *a: "cpu (check_cpu.py --simulate)",
            "init": lambda: None,
            "empty_cache": lambda: None}.items():
        setattr(cuda, name, value)
    gpu_train.DEVICE = "cpu"
    gpu_train.load_runtime = lambda d: runtime

    def start_runtime(self, who):
        argc = ctypes.c_int(0)
        if self.lib.dtensor_artifact_init(ctypes.byref(argc), None) != 0:
            sys.exit(f"{who}: dtensor_artifact_init failed")
        return 0, None
    gpu_train.Artifact.start_runtime = start_runtime
    sys.argv = ["gpu_train.py", directory] + argv
    gpu_train.main()


def main():
    if "--simulate" in sys.argv[1:]:
        args = [x for x in sys.argv[1:] if x != "--simulate"]
        return simulate(args[0], args[1:])
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--tolerance", type=float, default=0.0)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--negative", action="store_true")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    build = gpu_train.load_build(a.dir)
    if not build.get("target", "").startswith("cpu"):
        sys.exit(f"check_cpu: {a.dir} was built for {build.get('target')} "
                 "(TARGET=cpu)")
    tol = a.tolerance or (1e-4 if build.get("dtype") == "f32" else 8e-2)
    runtime = ctypes.CDLL(os.path.join(a.dir, build["runtime"]),
                          mode=ctypes.RTLD_GLOBAL)
    opt = build["optimizer"]
    started = False
    failures, rows = [], []
    cases = sorted(build["artifacts"].items(),
                   key=lambda ne: (ne[1]["kind"], ne[0]))
    for name, entry in cases:
        if entry["status"] != "ok":
            failures.append(f"{name}: not built: {entry.get('error')}")
            print(f"{name}: NOT BUILT: {entry.get('stage')}: {entry.get('error')}")
            continue
        art = Artifact(os.path.join(a.dir, entry["file"]), runtime)
        if not started:
            argc = ctypes.c_int(0)
            if art.lib.dtensor_artifact_init(ctypes.byref(argc), None) != 0:
                sys.exit("check_cpu: dtensor_artifact_init failed")
            started = True
        case = gpu_train.Case(name, entry, "cpu")
        problems = case.validate(art.manifest)
        if problems:
            failures.append(f"{name}: {problems}")
            print(f"{name}: INVALID: {problems}")
            continue
        call = art.prepare(case.ours_inputs(), case.result_shapes())
        call()
        got = {k: v.clone() for k, v in case.named(
            gpu_train.outputs_of(case, call.outputs())).items()}
        if case.kind == "grad":
            ref = case.reference_grad()
            errs = case.errors(got, ref)
        else:
            base = {case.names[i]: case.args[i] for i in case.wrt}
            ref = case.reference_train(opt)
            errs = case.errors(got, ref, base)
            # The step must move every weight (not a no-op update).
            for k in base:
                if torch.equal(got[k], base[k]):
                    failures.append(f"{name}: {k} unchanged by the step")
        # Every reference value must be non-trivial for its error to mean
        # something (a zero gradient compares as 0 / 1e-30).
        for k, v in ref.items():
            if v.abs().max().item() == 0:
                failures.append(f"{name}: PyTorch's {k} is all zeros")
        row = dict(case=case.case, artifact=name,
                   kind=gpu_train.KIND_LABEL[case.kind], block=case.block,
                   tokens=entry["tokens"], tp=entry["tp"], status="ok",
                   errors={k: {"ours": v} for k, v in errs.items()},
                   max_err_ours=gpu_train.worst(errs.values()))
        if case.kind == "train":
            row["optimizer"] = dict(opt, torch_weight_decay=0.0)
        if a.compile:
            cfn = torch.compile(case.fn, dynamic=False)
            cref = (case.reference_grad(fn=cfn) if case.kind == "grad"
                    else case.reference_train(opt, fn=cfn))
            cerrs = case.errors(cref, ref)
            for k, v in cerrs.items():
                row["errors"][k]["compile"] = v
            row["max_err_compile"] = gpu_train.worst(cerrs.values())
            torch._dynamo.reset()
        # A step's weights compare loosely: Adam's first update is
        # lr * g / (|g| + eps), ill-conditioned where |g| is near eps
        # (PyTorch in f32 is as far from PyTorch in f64: build the check
        # with EPS=1e-3 to bound it); a swapped or missing update is O(1).
        limit = tol if case.kind == "grad" else 10 * tol
        bad = {k: v for k, v in errs.items() if not (v <= limit)}
        if a.negative:
            pairs = [("dw1", "dw3"), ("w1", "w3")]
            for p, q in pairs:
                if p in got and q in got:
                    swapped = dict(got, **{p: got[q], q: got[p]})
                    e = case.errors(swapped, ref)
                    if max(e[p], e[q]) <= tol:
                        failures.append(f"{name}: swapping {p} and {q} "
                                        "went unnoticed")
        status = "ok" if not bad else f"FAIL {bad}"
        if bad:
            failures.append(f"{name}: {bad}")
        print(f"{name:24s} {status}: max err "
              f"{gpu_train.worst(errs.values()):.1e} "
              f"({', '.join(f'{k} {v:.1e}' for k, v in errs.items())})")
        rows.append(row)
    data = {"device": "cpu (check_cpu.py)", "torch": torch.__version__,
            "cuda": None, "run_date": "check", "build":
            {k: v for k, v in build.items() if k != "artifacts"},
            "options": {"rounds": 0, "iters": 0}, "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(data, f, indent=1)
    print()
    gpu_train.load_table().render(data)
    print()
    if failures:
        print(f"check_cpu: {len(failures)} FAILURES")
        for line in failures:
            print("  " + line)
        sys.exit(1)
    print(f"check_cpu: {len(rows)} artifacts match PyTorch (tolerance {tol:g})")


if __name__ == "__main__":
    main()
