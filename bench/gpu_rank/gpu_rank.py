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
            scaled_dot_product_attention time
  eager     PyTorch eager of the same per-rank computation
  compile   torch.compile of it
Times are medians of CUDA-event timings of --iters calls after warm-ups,
taken in --rounds rounds in which the variants (ours, graph, eager,
compile) take turns, the median over rounds reported (drift of clocks over
a run then moves every variant alike); on
the program's own stream (wrapped by torch.cuda.ExternalStream, so PyTorch
runs on it too). Also: host time per graph launch, peak device memory of the
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
import time

import torch
import torch.nn.functional as F

H, FFN, HEADS = 4096, 14336, 32
D = H // HEADS


# --- the artifact's C interface -------------------------------------------

_MEMREF_TYPES = {}


def memref_type(rank):
    if rank in _MEMREF_TYPES:
        return _MEMREF_TYPES[rank]

    class MemRef(ctypes.Structure):
        _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                    ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * rank),
                    ("strides", ctypes.c_int64 * rank)]
    _MEMREF_TYPES[rank] = MemRef
    return MemRef


def descriptor(t):
    """The memref descriptor of a tensor or a strided view (data_ptr is the
    view's first element)."""
    d = memref_type(t.dim())()
    d.allocated = d.aligned = t.data_ptr()
    d.offset = 0
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        d.sizes[i], d.strides[i] = s, st
    return d


class Artifact:
    def __init__(self, path, runtime):
        self.lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        self.lib.dtensor_artifact_manifest.restype = ctypes.c_char_p
        self.manifest = json.loads(self.lib.dtensor_artifact_manifest())
        self.entry = getattr(self.lib, "_mlir_ciface_" + self.manifest["entry"])
        self.entry.restype = None
        self.rt = runtime

    def prepare(self, args, result_shapes):
        return Call(self, args, result_shapes)


class Call:
    """One call of an artifact's entry on fixed arguments: descriptors built
    once, so that a call costs the program's own host time only."""

    def __init__(self, art, args, result_shapes):
        fields = [(f"r{i}", memref_type(len(shape))) for i, shape in
                  enumerate(result_shapes)]
        Results = type("Results", (ctypes.Structure,), {"_fields_": fields})
        self.results = Results()
        self.count = len(result_shapes)
        self.descs = [descriptor(a) for a in args]
        self.pointers = [ctypes.byref(self.results)] + [
            ctypes.byref(d) for d in self.descs]
        self.entry = art.entry
        self.rt = art.rt

    def __call__(self):
        self.entry(*self.pointers)

    def outputs(self):
        return [getattr(self.results, f"r{i}") for i in range(self.count)]

    def free(self):
        for r in self.outputs():
            self.rt.dtensor_rt_buffer_free(r.allocated)


def as_tensor(desc, shape, dtype):
    """A torch view of a result descriptor (no copy)."""
    class View:
        pass
    v = View()
    wide = dtype == torch.float32
    v.__cuda_array_interface__ = {
        "shape": tuple(shape), "typestr": "<f4" if wide else "<i2",
        "data": (desc.aligned + desc.offset * (4 if wide else 2), False),
        "version": 2}
    t = torch.as_tensor(v, device="cuda")
    return t.view(dtype) if dtype != torch.float32 else t


# --- timing -------------------------------------------------------------------

def median_ms(fn, iters, warmup=3, after=None):
    for _ in range(warmup):
        fn()
        if after:
            after()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in events:
        a.record()
        fn()
        b.record()
        if after:
            after()
    torch.cuda.synchronize()
    xs = sorted(a.elapsed_time(b) for a, b in events)
    return xs[len(xs) // 2]


def interleaved_ms(fns, rounds, iters):
    """Median over `rounds` of each variant's median of `iters` timed calls,
    the variants taking turns in every round: clock and power drift over a
    run (5-10% on the lent H100s) then moves every variant alike instead of
    favouring the one timed first. `fns` maps a name to (fn, after)."""
    per = {name: [] for name in fns}
    for _ in range(rounds):
        for name, (fn, after) in fns.items():
            per[name].append(median_ms(fn, iters, warmup=1, after=after))
            torch.cuda.synchronize()
    return {name: sorted(xs)[len(xs) // 2] for name, xs in per.items()}


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

def floor_ms(block, T, tp, rt, ctx, bandwidth, sdpa_ms, cache):
    f, hh = FFN // tp, HEADS // tp
    mlp_mm = [(T, H, f), (T, H, f), (T, f, H)]
    attn_mm = [(T, H, 3 * hh * D), (T, hh * D, H)]
    e = 2  # bf16 bytes
    if block == "mlp":
        mms, nbytes, extra = mlp_mm, 3 * T * f * e, 0.0
    elif block == "sp_mlp":
        R = T // tp
        mms, nbytes, extra = mlp_mm, 3 * T * f * e + 2 * R * H * e + 3 * R * H * e, 0.0
    elif block == "attn":
        mms, nbytes, extra = attn_mm, 0, sdpa_ms
    else:
        mms = attn_mm + mlp_mm
        nbytes = 3 * T * f * e + 2 * (2 * T * H * e) + 2 * (3 * T * H * e)
        extra = sdpa_ms
    total = 0.0
    for m, k, n in mms:
        key = (m, k, n)
        if key not in cache:
            a = torch.randn(m, k, device="cuda").bfloat16()
            b = torch.randn(k, n, device="cuda").bfloat16()
            c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            cache[key] = rt.dtensor_rt_matmul_best_ms(
                ctx, 2, 1, m, n, k, ctypes.c_void_p(a.data_ptr()),
                ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(c.data_ptr()),
                32, 10)
            del a, b, c
        total += cache[key]
    return total + nbytes / bandwidth * 1e3 + extra


def copy_bandwidth():
    """Device copy bandwidth, bytes/s (read + write) of a 1 GiB bf16 copy."""
    src = torch.empty(512 << 20, device="cuda", dtype=torch.bfloat16).normal_()
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src), 20)
    return 2 * src.numel() * 2 / (ms * 1e-3)


def profile(call, path, free=None):
    """Kernels and copies of three calls (CUPTI sees the runtime's launches
    too): a Chrome trace at `path`, and the GPU time per kernel name.
    `free` (default call.free) runs after each call."""
    free = free or call.free
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            call()
            torch.cuda.synchronize()
            free()
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    events.sort(key=lambda e: -e.device_time_total)
    for e in events[:12]:
        print(f"    {e.device_time_total / 3 / 1e3:8.3f} ms/call  "
              f"{e.count // 3:3d}x  {e.key[:90]}")


# --- main -----------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--only", default="")
    ap.add_argument("--iters", type=int, default=20,
                    help="timed calls per variant and round")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds in which the variants take turns; each "
                         "time is the median over rounds of the round's "
                         "median")
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
    runtime = ctypes.CDLL(os.path.join(a.dir, "libdtensor_runtime_cuda.so"),
                          mode=ctypes.RTLD_GLOBAL)
    runtime.dtensor_rt_context.restype = ctypes.c_void_p
    runtime.dtensor_rt_cuda_stream.restype = ctypes.c_void_p
    runtime.dtensor_rt_cuda_stream.argtypes = [ctypes.c_void_p]
    runtime.dtensor_rt_graph_end.restype = ctypes.c_void_p
    runtime.dtensor_rt_graph_end.argtypes = [ctypes.c_void_p]
    runtime.dtensor_rt_graph_begin.argtypes = [ctypes.c_void_p]
    runtime.dtensor_rt_graph_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    runtime.dtensor_rt_graph_destroy.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    runtime.dtensor_rt_attention_last.restype = ctypes.c_int32
    runtime.dtensor_rt_cuda_peak_bytes.restype = ctypes.c_uint64
    runtime.dtensor_rt_cuda_peak_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    runtime.dtensor_rt_matmul_best_ms.restype = ctypes.c_float
    runtime.dtensor_rt_matmul_best_ms.argtypes = [
        ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64,
        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
        ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32]
    runtime.dtensor_rt_buffer_free.argtypes = [ctypes.c_void_p]

    pattern = re.compile(r"^(\w+)_T(\d+)_TP(\d+)\.so$")
    names = sorted(n[:-3] for n in os.listdir(a.dir) if pattern.match(n))
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    torch.cuda.init()
    initialised = False
    ctx = stream = None
    rows = []
    for name in names:
        block, T, tp = pattern.match(name + ".so").groups()
        T, tp = int(T), int(tp)
        art = Artifact(os.path.join(a.dir, name + ".so"), runtime)
        if not initialised:
            argc = ctypes.c_int(0)
            if art.lib.dtensor_artifact_init(ctypes.byref(argc), None) != 0:
                sys.exit("gpu_rank: dtensor_artifact_init failed")
            ctx = ctypes.c_void_p(runtime.dtensor_rt_context())
            stream = torch.cuda.ExternalStream(runtime.dtensor_rt_cuda_stream(ctx))
            initialised = True
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
            runtime.dtensor_rt_graph_begin(ctx)
            call()
            graph = runtime.dtensor_rt_graph_end(ctx)
            launch = lambda: runtime.dtensor_rt_graph_launch(ctx, graph)
            median_ms(launch, 3)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(50):
                launch()
            host_us = (time.perf_counter() - t0) / 50 * 1e6
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
            times = interleaved_ms(variants, a.rounds, a.iters)
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
            # floor
            hh = HEADS // tp
            if block in ("attn", "layer"):
                q = torch.randn(1, hh, T, D, device="cuda", dtype=torch.bfloat16)
                sdpa = median_ms(lambda: F.scaled_dot_product_attention(
                    q, q, q, is_causal=True), a.iters)
                del q
            else:
                sdpa = 0.0
            if not hasattr(main, "bw"):
                main.bw = copy_bandwidth()
            # The floor in this case's own measurements (not cached across
            # cases: clocks drift over a run).
            fl = floor_ms(block, T, tp, runtime, ctx, main.bw, sdpa, {})
        row = dict(case=name, block=block, tokens=T, tp=tp, compiled_ms=compiled,
                   graph_ms=graph_ms, graph_host_us=host_us, floor_ms=fl,
                   eager_ms=eager, compile_ms=comp, sdpa_ms=sdpa,
                   peak_mib=peak, eager_peak_mib=eager_peak, rel_err=err,
                   graph_rel_err=gerr, copy_gbs=main.bw / 1e9)
        best = min(compiled, graph_ms)
        row["floor_ratio"] = fl / best
        row["vs_eager"] = eager / best
        row["vs_compile"] = comp / best
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
