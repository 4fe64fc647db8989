#!/usr/bin/env python3
"""Per-rank GPU benchmark: the compiled per-rank program of each TP block
beside PyTorch, on one GPU, in one process.

For every artifact DIR/<block>_T<tokens>_TP<tp>.so (bench/gpu_rank/build.sh
compiles them from gen_rank.py's programs) and the same weights:
  compiled  the artifact called directly (its C interface), per call
  graph     the artifact captured once as a CUDA graph (dtensor_rt_graph_*)
            and replayed
  floor     sum of the best cuBLASLt algorithm time of each matmul
            (dtensor_rt_matmul_best_ms: every heuristic candidate timed) +
            every other op's bytes at the measured device copy bandwidth;
            the attention core counts as PyTorch's causal
            scaled_dot_product_attention time; measured once per round,
            in turn with the variants, the median over rounds reported
  eager     PyTorch eager of the same per-rank computation
  compile   torch.compile of it
Times are medians of CUDA-event timings of --rounds x --iters calls, the
variants (ours, graph, eager, compile) taking turns call by call (the
clocks drift by up to 10% between 40 ms windows: each variant then sees the
same clocks); speed-ups are medians of the per-call ratios; on
the program's own stream (wrapped by torch.cuda.ExternalStream, so PyTorch
runs on it too). Also: host time per graph launch (the median of 10
batches of 5 launches, each after an untimed one that keeps the GPU busy),
peak device memory of the
compiled program (stream-ordered pool high-water mark) and of eager
(torch.cuda.max_memory_allocated), and the relative error of the compiled
outputs against eager (max |a-b| / max |b|).

  python3 gpu_rank.py DIR [--only mlp_T8192_TP2,...] [--json out.json]
"""
import argparse
import ctypes
import json
import os
import re
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common.artifact import (Artifact, as_tensor,  # noqa: E402
                             capture_graph, launch_batch_us, load_runtime,
                             median_ms, profile)

H, FFN, HEADS = 4096, 14336, 32
D = H // HEADS


# --- timing -------------------------------------------------------------------

def interleaved_ms(fns, rounds, iters, measured=None):
    """Each variant's median over `rounds` x `iters` timed calls, taken in
    turns call by call: the clocks of the lent H100s move by up to 10%
    from one 40 ms window to the next, so variants timed in blocks of calls
    one after the other differ by the clocks they happened to get; taking
    turns at every call gives each the same clocks. The order rotates from
    round to round (no variant always follows the same one). `fns` maps a
    name to (fn, after); `measured` maps a name to a function that takes its
    own measurement in ms (the floor), called once per round. Returns the
    medians and every call's time per variant (per round for `measured`)."""
    measured = measured or {}
    names = list(fns)
    per = {name: [] for name in names + list(measured)}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:  # warm-up
            fn, after = fns[name]
            fn()
            if after:
                after()
        torch.cuda.synchronize()
        events = {name: [] for name in names}
        for _ in range(iters):
            for name in order:
                fn, after = fns[name]
                a, b = (torch.cuda.Event(enable_timing=True),
                        torch.cuda.Event(enable_timing=True))
                a.record()
                fn()
                b.record()
                if after:
                    after()
                events[name].append((a, b))
        torch.cuda.synchronize()
        for name in names:
            per[name] += [a.elapsed_time(b) for a, b in events[name]]
        for name, fn in measured.items():
            per[name].append(fn())
            torch.cuda.synchronize()
    return {name: sorted(xs)[len(xs) // 2] for name, xs in per.items()}, per


# --- the blocks in PyTorch ----------------------------------------------------

def rmsnorm(x, g):
    return F.rms_norm(x.float(), (x.shape[-1],), g.float(), eps=1e-5).to(x.dtype)


def mlp(x, w1, w3, w2):
    return (F.silu(x @ w1) * (x @ w3)) @ w2


def sp_mlp(x, g, xg, w1, w3, w2, rs):
    return rmsnorm(x, g), mlp(xg, w1, w3, w2), x + rs


def attn(x, wqkv, wo):
    T = x.shape[0]
    hh = wo.shape[0] // D
    qkv = (x @ wqkv).view(T, 3, hh, D).permute(1, 2, 0, 3)
    o = F.scaled_dot_product_attention(qkv[0][None], qkv[1][None], qkv[2][None],
                                       is_causal=True)
    return o[0].permute(1, 0, 2).reshape(T, hh * D) @ wo


def layer(x, g1, wqkv, wo, g2, w1, w3, w2):
    h = x + attn(rmsnorm(x, g1), wqkv, wo)
    return h + mlp(rmsnorm(h, g2), w1, w3, w2)


BLOCKS = {"mlp": mlp, "sp_mlp": sp_mlp, "attn": attn, "layer": layer}


def inputs(block, T, tp, dt):
    f, hh = FFN // tp, HEADS // tp
    r = lambda *s, scale=1.0: (torch.randn(*s, device="cuda") * scale).to(dt)
    gain = lambda: (1 + 0.1 * torch.randn(H, device="cuda")).to(dt)
    mlpw = lambda: [r(H, f, scale=0.02), r(H, f, scale=0.02), r(f, H, scale=0.02)]
    if block == "mlp":
        return [r(T, H)] + mlpw()
    if block == "sp_mlp":
        w1, w3, w2 = mlpw()
        return [r(T // tp, H), gain(), r(T, H), w1, w3, w2, r(T // tp, H)]
    if block == "attn":
        return [r(T, H), r(H, 3 * hh * D, scale=0.02), r(hh * D, H, scale=0.02)]
    w1, w3, w2 = mlpw()
    return [r(T, H), gain(), r(H, 3 * hh * D, scale=0.02),
            r(hh * D, H, scale=0.02), gain(), w1, w3, w2]


# --- the floor ------------------------------------------------------------------

def floor_parts(block, T, tp, rt, ctx, bandwidth, iters):
    """One measurement of the floor, ms: (matmuls, attention core, other
    bytes). Matmuls: each shape's best cuBLASLt algorithm (every heuristic
    candidate timed, L2 evicted before each run); the attention core:
    PyTorch's causal scaled_dot_product_attention; every other op's bytes
    at the copy bandwidth. Taken once per round, in turn with the variants
    (clocks drift: a floor measured once, apart, moved by up to 25% between
    runs of one build)."""
    f, hh = FFN // tp, HEADS // tp
    mlp_mm = [(T, H, f), (T, H, f), (T, f, H)]
    attn_mm = [(T, H, 3 * hh * D), (T, hh * D, H)]
    e = 2  # bf16 bytes
    if block == "mlp":
        mms, nbytes = mlp_mm, 3 * T * f * e
    elif block == "sp_mlp":
        R = T // tp
        mms, nbytes = mlp_mm, 3 * T * f * e + 2 * R * H * e + 3 * R * H * e
    elif block == "attn":
        mms, nbytes = attn_mm, 0
    else:
        mms = attn_mm + mlp_mm
        nbytes = 3 * T * f * e + 2 * (2 * T * H * e) + 2 * (3 * T * H * e)
    matmul = 0.0
    for m, k, n in mms:
        a = torch.randn(m, k, device="cuda").bfloat16()
        b = torch.randn(k, n, device="cuda").bfloat16()
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        matmul += rt.dtensor_rt_matmul_best_ms(
            ctx, 2, 1, m, n, k, ctypes.c_void_p(a.data_ptr()),
            ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(c.data_ptr()),
            32, 5)
        del a, b, c
    sdpa = 0.0
    if block in ("attn", "layer"):
        q = torch.randn(1, HEADS // tp, T, D, device="cuda", dtype=torch.bfloat16)
        sdpa = median_ms(lambda: F.scaled_dot_product_attention(
            q, q, q, is_causal=True), iters)
        del q
    return matmul, sdpa, nbytes / bandwidth * 1e3


def copy_bandwidth():
    """Device copy bandwidth, bytes/s (read + write) of a 1 GiB bf16 copy."""
    src = torch.empty(512 << 20, device="cuda", dtype=torch.bfloat16).normal_()
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src), 20)
    return 2 * src.numel() * 2 / (ms * 1e-3)


# --- main -----------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--only", default="")
    ap.add_argument("--iters", type=int, default=20,
                    help="timed calls per variant and round")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds of --iters calls per variant, the variants "
                         "taking turns call by call (order rotated per "
                         "round); the floor is measured once per round")
    ap.add_argument("--json", default="")
    ap.add_argument("--no-compile", action="store_true",
                    help="skip torch.compile (faster)")
    ap.add_argument("--trace", default="",
                    help="also profile 3 calls of each compiled program "
                         "(CUPTI, through torch.profiler): a Chrome trace "
                         "<case>.trace.json in this folder and the time per "
                         "kernel on stdout")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    for k, v in {"DTENSOR_RANK": "0", "DTENSOR_WORLD_SIZE": "1",
                 "DTENSOR_LOCAL_RANK": "0"}.items():
        os.environ.setdefault(k, v)
    runtime = load_runtime(a.dir)

    pattern = re.compile(r"^(\w+)_T(\d+)_TP(\d+)\.so$")
    names = sorted(n[:-3] for n in os.listdir(a.dir) if pattern.match(n))
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    torch.cuda.init()
    ctx = stream = None
    rows = []
    for name in names:
        block, T, tp = pattern.match(name + ".so").groups()
        T, tp = int(T), int(tp)
        art = Artifact(os.path.join(a.dir, name + ".so"), runtime)
        if ctx is None:
            ctx, stream = art.start_runtime("gpu_rank")
        with torch.cuda.stream(stream):
            torch.manual_seed(0)
            args = inputs(block, T, tp, torch.bfloat16)
            fn = BLOCKS[block]
            ref = fn(*args)
            ref = list(ref) if isinstance(ref, tuple) else [ref]
            shapes = [r.shape for r in ref]
            call = art.prepare(args, shapes)

            def errors(results):
                worst = 0.0
                for d, r in zip(results, ref):
                    got = as_tensor(d, r.shape, r.dtype).float()
                    want = r.float()
                    worst = max(worst, ((got - want).abs().max() /
                                        want.abs().max().clamp_min(1e-30)).item())
                return worst

            # numerics (first call), then timing
            call()
            torch.cuda.synchronize()
            err = errors(call.outputs())
            if block in ("attn", "layer"):
                # Which attention core ran (cuDNN's or the runtime's kernel).
                note = ctypes.create_string_buffer(4096)
                path = runtime.dtensor_rt_attention_last(
                    ctx, note, ctypes.c_int64(len(note)))
                print(f"  {name}: attention core: "
                      f"{ {1: 'cudnn', 0: 'kernel'}.get(path, 'none') }: "
                      f"{note.value.decode(errors='replace')}", flush=True)
            call.free()
            torch.cuda.synchronize()
            runtime.dtensor_rt_cuda_peak_bytes(ctx, 1)
            median_ms(call, 3, after=call.free)
            torch.cuda.synchronize()
            peak = runtime.dtensor_rt_cuda_peak_bytes(ctx, 1) / 2**20
            # CUDA graph of the whole program
            graph, graph_nodes, text = capture_graph(runtime, ctx, call)
            launch = lambda: runtime.dtensor_rt_graph_launch(ctx, graph)
            print(f"  {name}: graph: {text}", flush=True)
            median_ms(launch, 3)
            # Host time per launch: the median of 10 batches.
            batches = sorted(launch_batch_us(launch) for _ in range(10))
            host_us = batches[len(batches) // 2]
            torch.cuda.synchronize()
            gerr = errors(call.outputs())
            # PyTorch
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            fn(*args)
            torch.cuda.synchronize()
            eager_peak = (torch.cuda.max_memory_allocated() - base) / 2**20
            variants = {"ours": (call, call.free), "graph": (launch, None),
                        "eager": (lambda: fn(*args), None)}
            if not a.no_compile:
                cfn = torch.compile(fn)
                median_ms(lambda: cfn(*args), 3)
                variants["compile"] = (lambda: cfn(*args), None)
            if not hasattr(main, "bw"):
                main.bw = copy_bandwidth()
            parts = []

            def floor_round():
                parts.append(floor_parts(block, T, tp, runtime, ctx, main.bw,
                                         a.iters))
                return sum(parts[-1])

            times, rounds = interleaved_ms(variants, a.rounds, a.iters,
                                           {"floor": floor_round})
            compiled, graph_ms, eager = times["ours"], times["graph"], times["eager"]
            comp = times.get("compile", float("nan"))
            runtime.dtensor_rt_graph_destroy(ctx, graph)
            torch.cuda.synchronize()
            if a.trace:
                print(f"  {name}: our kernels")
                profile(call, os.path.join(a.trace, name + ".trace.json"))
                if not a.no_compile:
                    print(f"  {name}: torch.compile's kernels")
                    profile(lambda: cfn(*args),
                            os.path.join(a.trace, name + ".compile.trace.json"),
                            free=lambda: None)
            fl = times["floor"]
            median = lambda xs: sorted(xs)[len(xs) // 2]
            mm_ms, sdpa, bytes_ms = (median([p[i] for p in parts])
                                     for i in range(3))
        row = dict(case=name, block=block, tokens=T, tp=tp, compiled_ms=compiled,
                   graph_ms=graph_ms, graph_host_us=host_us,
                   graph_nodes=graph_nodes, floor_ms=fl,
                   eager_ms=eager, compile_ms=comp, sdpa_ms=sdpa,
                   floor_matmul_ms=mm_ms, floor_bytes_ms=bytes_ms,
                   rounds_ms=rounds,
                   peak_mib=peak, eager_peak_mib=eager_peak, rel_err=err,
                   graph_rel_err=gerr, copy_gbs=main.bw / 1e9)
        best = min(compiled, graph_ms)
        row["floor_ratio"] = fl / best
        # Speed-ups as medians of per-call ratios: call i of ours (direct or
        # graph, whichever has the lower median) against call i of theirs,
        # taken in turn with it (the same clocks); tighter than a ratio of
        # medians (p25-p75 within 0.5% on the H100 against up to 10% for
        # the medians themselves).
        mine = rounds["ours" if compiled <= graph_ms else "graph"]

        def paired(theirs):
            if theirs not in rounds:
                return float("nan")
            xs = sorted(t / o for t, o in zip(rounds[theirs], mine))
            return xs[len(xs) // 2]
        row["vs_eager"] = paired("eager")
        row["vs_compile"] = paired("compile")
        rows.append(row)
        print(f"{name:18s} ours {compiled:7.3f} graph {graph_ms:7.3f} "
              f"(host {host_us:5.1f} us) floor {fl:7.3f} ({row['floor_ratio']:.2f}) "
              f"eager {eager:7.3f} compile {comp:7.3f} x{row['vs_compile']:.2f} "
              f"peak {peak:7.0f}/{eager_peak:7.0f} MiB err {err:.1e}/{gerr:.1e}",
              flush=True)
        del args, ref
        torch.cuda.empty_cache()
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"copy bandwidth {main.bw / 1e9:.0f} GB/s" if rows else "no cases")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
