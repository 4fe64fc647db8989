#!/usr/bin/env python3
"""GPU check of the runtime's attention (dtensor_rt_attention_<T>) against
PyTorch's scaled_dot_product_attention (computed in f32), on the GPU
machine, on both of its paths: cuDNN's fused flash attention
(DTENSOR_ATTENTION=cudnn) and the runtime's own kernel
(DTENSOR_ATTENTION=kernel). Cases: bf16 and f16, head dims 64 and 128,
causal or not, one or two batches, dense or strided operands (q, k, v as
views of one fused qkv projection, as compiled programs pass them),
sequence lengths that are not multiples of the 64-row tiles; one case with
operands that are not 16-byte aligned, which cuDNN must leave to the
kernel; one CUDA-graph capture and replay of the default path (cuDNN).

Each case line gives the max relative error of each path and the path the
runtime reports (dtensor_rt_attention_last). A case FAILs when an error is
>= 2e-2, or when PyTorch has cuDNN (so the runtime can load it) but the
cudnn run fell back to the kernel: the line then quotes the runtime's
reason (the cuDNN status and the step that failed). Then the time of the
cuDNN path, the kernel and SDPA at Llama sizes side by side, with the
ratio cudnn/SDPA (issue 17 wants <= 1.1).

The backward (issue 27): dtensor_rt_attention_stats_<T> (the forward that
saves the softmax statistics) and dtensor_rt_attention_backward_<T> on
both paths, bf16 and f16, head dims 64 and 128, causal or not, dense,
fused-qkv and unaligned operands: the statistics against logsumexp of the
scaled, masked scores, and dQ, dK, dV against PyTorch's SDPA backward in
float32 (max |a - b| / max |b|, each; PyTorch's own bf16/f16 SDPA
backward's error beside them for scale); a FAIL at >= 5e-2 or on a cudnn
run that fell back where PyTorch has cuDNN. One case mixes the paths
(cuDNN's statistics into the kernel's backward, and the reverse). Then
the backward's time at Llama sizes: cuDNN, the kernel and PyTorch's SDPA
backward (torch.autograd.grad of SDPA's output), ratio cudnn/SDPA (issue
27 wants <= 1.1). Ends "N passed, N failed".

  python3 scripts/gpu-attention-check.py LIBDIR [--backward-only]
      (LIBDIR: where libdtensor_runtime_cuda.so is; --backward-only skips
      the forward's cases and times)

DTENSOR_ATTENTION_VERBOSE=1 makes the runtime print its note per shape too.
"""
import ctypes
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
from common.artifact import descriptor, median_ms  # noqa: E402

TOLERANCE = 2e-2
PATHS = ("cudnn", "kernel")


def main():
    # PyTorch loads its cuDNN (the pip wheel's libcudnn.so.9) with torch;
    # the runtime's loader then finds that copy by its soname.
    torch_cudnn = torch.backends.cudnn.is_available()
    print(f"PyTorch {torch.__version__}, cuDNN "
          f"{torch.backends.cudnn.version() if torch_cudnn else 'absent'}",
          flush=True)
    lib = ctypes.CDLL(os.path.join(sys.argv[1], "libdtensor_runtime_cuda.so"),
                      mode=ctypes.RTLD_GLOBAL)
    for k, v in {"DTENSOR_RANK": "0", "DTENSOR_WORLD_SIZE": "1",
                 "DTENSOR_LOCAL_RANK": "0"}.items():
        os.environ.setdefault(k, v)
    argc = ctypes.c_int(0)
    if lib.dtensor_rt_init(None, ctypes.byref(argc), None) != 0:
        sys.exit("dtensor_rt_init failed")
    lib.dtensor_rt_context.restype = ctypes.c_void_p
    lib.dtensor_rt_cuda_stream.restype = ctypes.c_void_p
    lib.dtensor_rt_cuda_stream.argtypes = [ctypes.c_void_p]
    lib.dtensor_rt_attention_last.restype = ctypes.c_int32
    lib.dtensor_rt_graph_begin.argtypes = [ctypes.c_void_p]
    lib.dtensor_rt_graph_end.restype = ctypes.c_void_p
    lib.dtensor_rt_graph_end.argtypes = [ctypes.c_void_p]
    lib.dtensor_rt_graph_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.dtensor_rt_graph_destroy.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    ctx = ctypes.c_void_p(lib.dtensor_rt_context())
    stream = torch.cuda.ExternalStream(lib.dtensor_rt_cuda_stream(ctx))
    fns = {torch.bfloat16: lib.dtensor_rt_attention_bf16,
           torch.float16: lib.dtensor_rt_attention_f16}
    stats_fns = {torch.bfloat16: lib.dtensor_rt_attention_stats_bf16,
                 torch.float16: lib.dtensor_rt_attention_stats_f16}
    backward_fns = {torch.bfloat16: lib.dtensor_rt_attention_backward_bf16,
                    torch.float16: lib.dtensor_rt_attention_backward_f16}
    for fn in (*fns.values(), *stats_fns.values(), *backward_fns.values()):
        fn.restype = None
    note = ctypes.create_string_buffer(8192)

    def run(dt, q, k, v, o, scale, causal):
        ds = [descriptor(t) for t in (q, k, v, o)]
        args = [ctx]
        for t, d in zip((q, k, v, o), ds):
            args += [ctypes.c_int64(t.dim()), ctypes.byref(d)]
        fns[dt](*args, ctypes.c_float(scale), ctypes.c_int64(int(causal)))

    def memrefs(*tensors):
        args, keep = [], []
        for t in tensors:
            d = descriptor(t)
            keep.append(d)
            args += [ctypes.c_int64(t.dim()), ctypes.byref(d)]
        return args, keep

    def run_stats(dt, q, k, v, o, lse, scale, causal):
        args, keep = memrefs(q, k, v, o, lse)
        stats_fns[dt](ctx, *args, ctypes.c_float(scale),
                      ctypes.c_int64(int(causal)))

    def run_backward(dt, q, k, v, o, do, lse, dq, dk, dv, scale, causal):
        args, keep = memrefs(q, k, v, o, do, lse, dq, dk, dv)
        backward_fns[dt](ctx, *args, ctypes.c_float(scale),
                         ctypes.c_int64(int(causal)))

    def last():
        """(path the last call took: 'cudnn', 'kernel' or 'none', note)."""
        path = lib.dtensor_rt_attention_last(ctx, note,
                                             ctypes.c_int64(len(note)))
        return ({1: "cudnn", 0: "kernel"}.get(path, "none"),
                note.value.decode(errors="replace"))

    def reference(q, k, v, scale, causal):
        return F.scaled_dot_product_attention(
            *(t.float().transpose(1, 2) for t in (q, k, v)),
            is_causal=causal, scale=scale).transpose(1, 2)

    def rel_err(o, ref):
        return ((o.float() - ref).abs().max() / ref.abs().max()).item()

    passed = failed = 0

    def verdict(ok, text):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {text}", flush=True)

    backward_only = "--backward-only" in sys.argv[2:]
    with torch.cuda.stream(stream):
        if not backward_only:
            forward_checks(dict(
                torch_cudnn=torch_cudnn, run=run, last=last, verdict=verdict,
                lib=lib, ctx=ctx, reference=reference, rel_err=rel_err))
        backward_checks(dict(
            torch_cudnn=torch_cudnn, run_stats=run_stats,
            run_backward=run_backward, last=last, verdict=verdict))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


def forward_checks(h):
    torch_cudnn, run, last, verdict = (h["torch_cudnn"], h["run"], h["last"],
                                       h["verdict"])
    lib, ctx, reference, rel_err = (h["lib"], h["ctx"], h["reference"],
                                    h["rel_err"])
    torch.manual_seed(0)
    cases = [(1, 128, 4, 64, True, "dense"), (1, 128, 4, 128, False, "dense"),
             (2, 200, 3, 64, True, "fused"), (1, 1000, 8, 128, True, "fused"),
             (2, 77, 2, 128, False, "fused"), (1, 4096, 8, 128, True, "fused"),
             (1, 64, 1, 64, False, "dense"), (1, 256, 4, 128, True, "unaligned")]
    for dt in (torch.bfloat16, torch.float16):
        for (b, s, h, d, causal, layout) in cases:
            if layout == "fused":  # views of one [B, S, 3, H, D] projection
                qkv = torch.randn(b, s, 3, h, d, device="cuda").to(dt)
                q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
            elif layout == "unaligned":  # 2 bytes off 16-byte alignment
                base = torch.randn(3, b, s, h, d + 8, device="cuda").to(dt)
                q, k, v = (base[i, ..., 1:1 + d] for i in range(3))
            else:
                q, k, v = (torch.randn(b, s, h, d, device="cuda").to(dt)
                           for _ in range(3))
            scale = d ** -0.5
            ref = reference(q, k, v, scale, causal)
            errs, taken, notes = {}, {}, {}
            for path in PATHS:
                os.environ["DTENSOR_ATTENTION"] = path
                o = torch.empty(b, s, h, d, device="cuda", dtype=dt)
                run(dt, q, k, v, o, scale, causal)
                torch.cuda.synchronize()
                errs[path] = rel_err(o, ref)
                taken[path], notes[path] = last()
            want = "kernel" if layout == "unaligned" or not torch_cudnn \
                else "cudnn"
            problems = [f"{p} error {errs[p]:.3e}" for p in PATHS
                        if not errs[p] < TOLERANCE]
            if taken["kernel"] != "kernel":
                problems.append("DTENSOR_ATTENTION=kernel ran "
                                f"{taken['kernel']}")
            if taken["cudnn"] != want:
                problems.append(f"DTENSOR_ATTENTION=cudnn ran "
                                f"{taken['cudnn']}, expected {want}: "
                                f"{notes['cudnn']}")
            text = (f"{str(dt)[6:]} B{b} S{s} H{h} D{d} causal={causal} "
                    f"{layout}: cudnn path ran {taken['cudnn']} error "
                    f"{errs['cudnn']:.3e}, kernel error "
                    f"{errs['kernel']:.3e}")
            if layout == "unaligned":
                text += f" (runtime: {notes['cudnn']})"
            verdict(not problems,
                    text + "".join(f"; {p}" for p in problems))

    # The default path (DTENSOR_ATTENTION unset: cuDNN where PyTorch has
    # it) captured into a CUDA graph (its plan built by a first call
    # outside the capture) and replayed.
    os.environ.pop("DTENSOR_ATTENTION", None)
    b, s, h, d = 1, 1024, 8, 128
    qkv = torch.randn(b, s, 3, h, d, device="cuda").bfloat16()
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    ref = reference(q, k, v, d ** -0.5, True)
    o = torch.empty(b, s, h, d, device="cuda", dtype=torch.bfloat16)
    run(torch.bfloat16, q, k, v, o, d ** -0.5, True)
    o.zero_()
    torch.cuda.synchronize()
    lib.dtensor_rt_graph_begin(ctx)
    run(torch.bfloat16, q, k, v, o, d ** -0.5, True)
    graph = lib.dtensor_rt_graph_end(ctx)
    captured_path, captured_note = last()
    lib.dtensor_rt_graph_launch(ctx, graph)
    torch.cuda.synchronize()
    err = rel_err(o, ref)
    lib.dtensor_rt_graph_destroy(ctx, graph)
    want = "cudnn" if torch_cudnn else "kernel"
    verdict(err < TOLERANCE and captured_path == want,
            f"default path, graph capture + replay B{b} S{s} H{h} D{d} "
            f"causal: ran "
            f"{captured_path} (expected {want}), error {err:.3e}"
            + ("" if captured_path == want else f"; {captured_note}"))

    # Time at Llama sizes (tokens 4096/8192, 32/TP heads of 128).
    print("time, bf16 D128 causal, fused qkv views "
          "(median of 20; TFLOP/s counts the causal half):", flush=True)
    for s, h in ((4096, 8), (4096, 16), (8192, 8), (8192, 16)):
        qkv = torch.randn(1, s, 3, h, 128, device="cuda").bfloat16()
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        o = torch.empty(1, s, h, 128, device="cuda", dtype=torch.bfloat16)
        flops = 4 * s * s * 128 * h / 2
        ms, taken, notes = {}, {}, {}
        for path in PATHS:
            os.environ["DTENSOR_ATTENTION"] = path
            ms[path] = median_ms(lambda: run(torch.bfloat16, q, k, v, o,
                                             128 ** -0.5, True), 20)
            taken[path], notes[path] = last()
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        ms["sdpa"] = median_ms(lambda: F.scaled_dot_product_attention(
            qt, kt, vt, is_causal=True), 20)
        cols = ", ".join(
            f"{name} {ms[p]:.3f} ms ({flops / ms[p] / 1e9:.0f} TFLOP/s)"
            for p, name in (("cudnn", "cudnn"), ("kernel", "kernel"),
                            ("sdpa", "SDPA")))
        print(f"time S{s} H{h}: {cols}, cudnn/SDPA "
              f"{ms['cudnn'] / ms['sdpa']:.2f}, kernel/SDPA "
              f"{ms['kernel'] / ms['sdpa']:.2f}", flush=True)
        print(f"  cudnn run: {taken['cudnn']}: {notes['cudnn']}",
              flush=True)
        if torch_cudnn and taken["cudnn"] != "cudnn":
            verdict(False, f"time S{s} H{h}: DTENSOR_ATTENTION=cudnn fell "
                    f"back to the kernel: {notes['cudnn']}")
    os.environ.pop("DTENSOR_ATTENTION", None)


BACKWARD_TOLERANCE = 5e-2


def operands(dt, b, s, h, d, layout):
    """q, k, v [B, S, H, D] in `layout`: dense, views of one fused
    [B, S, 3, H, D] projection, or 2 bytes off 16-byte alignment."""
    if layout == "fused":
        qkv = torch.randn(b, s, 3, h, d, device="cuda").to(dt)
        return qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    if layout == "unaligned":
        base = torch.randn(3, b, s, h, d + 8, device="cuda").to(dt)
        return tuple(base[i, ..., 1:1 + d] for i in range(3))
    return tuple(torch.randn(b, s, h, d, device="cuda").to(dt)
                 for _ in range(3))


def sdpa_grads(q, k, v, do, scale, causal, dtype):
    """PyTorch's SDPA output, logsumexp and dQ, dK, dV ([B, S, H, D]) in
    `dtype` from the given inputs."""
    ts = [t.to(dtype).transpose(1, 2).detach().requires_grad_(True)
          for t in (q, k, v)]
    o = F.scaled_dot_product_attention(*ts, is_causal=causal, scale=scale)
    grads = torch.autograd.grad(o, ts, do.to(dtype).transpose(1, 2))
    return o.transpose(1, 2), [g.transpose(1, 2) for g in grads]


def reference_lse(q, k, scale, causal):
    """logsumexp over the keys of the scaled (masked) scores, f32
    [B, H, S]."""
    scores = torch.einsum("bshd,bthd->bhst", q.float(), k.float()) * scale
    if causal:
        s, t = scores.shape[-2:]
        mask = torch.ones(s, t, device=scores.device, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.logsumexp(scores, dim=-1)


def backward_checks(h):
    torch_cudnn, verdict, last = h["torch_cudnn"], h["verdict"], h["last"]
    run_stats, run_backward = h["run_stats"], h["run_backward"]

    def rel_err(x, ref):
        return ((x.float() - ref.float()).abs().max() /
                ref.float().abs().max()).item()

    def ours(path_fwd, path_bwd, dt, q, k, v, do, scale, causal):
        """Our forward (with statistics) on one path and backward on
        another: o, lse, (dq, dk, dv), the two paths taken, their notes."""
        b, s, hh, d = q.shape
        os.environ["DTENSOR_ATTENTION"] = path_fwd
        o = torch.empty(b, s, hh, d, device="cuda", dtype=dt)
        lse = torch.empty(b, hh, s, device="cuda", dtype=torch.float32)
        run_stats(dt, q, k, v, o, lse, scale, causal)
        fwd = last()
        os.environ["DTENSOR_ATTENTION"] = path_bwd
        grads = [torch.full_like(t, float("nan"), memory_format=torch.contiguous_format)
                 for t in (q, k, v)]
        run_backward(dt, q, k, v, o, do, lse, *grads, scale, causal)
        bwd = last()
        torch.cuda.synchronize()
        return o, lse, grads, fwd, bwd

    print("backward: dQ, dK, dV against PyTorch's SDPA backward in f32 "
          "(max |a - b| / max |b|)", flush=True)
    torch.manual_seed(1)
    cases = [(1, 128, 4, 64, True, "dense"), (1, 128, 4, 128, False, "dense"),
             (2, 200, 3, 64, True, "fused"), (1, 1000, 8, 128, True, "fused"),
             (2, 77, 2, 128, False, "fused"), (1, 512, 4, 64, False, "fused"),
             (1, 256, 4, 128, True, "unaligned")]
    # Plans untimed here (the first the heuristics give): many shapes.
    os.environ["DTENSOR_ATTENTION_AUTOTUNE"] = "0"
    for dt in (torch.bfloat16, torch.float16):
        for (b, s, hh, d, causal, layout) in cases:
            q, k, v = operands(dt, b, s, hh, d, layout)
            do = torch.randn(b, s, hh, d, device="cuda").to(dt)
            scale = d ** -0.5
            ref_o, ref = sdpa_grads(q, k, v, do, scale, causal, torch.float32)
            _, low = sdpa_grads(q, k, v, do, scale, causal, dt)
            ref_lse = reference_lse(q, k, scale, causal)
            torch_err = max(rel_err(g, r) for g, r in zip(low, ref))
            want = "kernel" if layout == "unaligned" or not torch_cudnn \
                else "cudnn"
            for path in ("cudnn", "kernel"):
                o, lse, grads, fwd, bwd = ours(path, path, dt, q, k, v, do,
                                               scale, causal)
                errs = [rel_err(g, r) for g, r in zip(grads, ref)]
                lse_err = (lse - ref_lse).abs().max().item()
                problems = []
                if not max(errs) < BACKWARD_TOLERANCE:
                    problems.append("gradient error")
                if not lse_err < 1e-2:
                    problems.append(f"statistics off by {lse_err:.3e}")
                if not rel_err(o, ref_o) < TOLERANCE:
                    problems.append(f"output error {rel_err(o, ref_o):.3e}")
                expected = want if path == "cudnn" else "kernel"
                for what, (taken, note) in (("forward", fwd),
                                            ("backward", bwd)):
                    if taken != expected:
                        problems.append(f"DTENSOR_ATTENTION={path} {what} "
                                        f"ran {taken}, expected {expected}: "
                                        f"{note}")
                text = (f"backward {str(dt)[6:]} B{b} S{s} H{hh} D{d} "
                        f"causal={causal} {layout} DTENSOR_ATTENTION={path}: "
                        f"ran {fwd[0]}/{bwd[0]}, dQ {errs[0]:.3e} dK "
                        f"{errs[1]:.3e} dV {errs[2]:.3e}, statistics "
                        f"{lse_err:.1e} (PyTorch {str(dt)[6:]} SDPA: "
                        f"{torch_err:.3e})")
                if layout == "unaligned" and path == "cudnn":
                    text += f" (runtime: {bwd[1]})"
                verdict(not problems, text + "".join(f"; {p}"
                                                     for p in problems))

    # The paths mixed: cuDNN's statistics into the kernel's backward and
    # the kernel's into cuDNN's.
    dt = torch.bfloat16
    q, k, v = operands(dt, 1, 384, 4, 128, "fused")
    do = torch.randn(1, 384, 4, 128, device="cuda").to(dt)
    _, ref = sdpa_grads(q, k, v, do, 128 ** -0.5, True, torch.float32)
    for fwd_path, bwd_path in (("cudnn", "kernel"), ("kernel", "cudnn")):
        _, _, grads, fwd, bwd = ours(fwd_path, bwd_path, dt, q, k, v, do,
                                     128 ** -0.5, True)
        errs = [rel_err(g, r) for g, r in zip(grads, ref)]
        verdict(max(errs) < BACKWARD_TOLERANCE,
                f"backward mixed: forward {fwd[0]}, backward {bwd[0]}: dQ "
                f"{errs[0]:.3e} dK {errs[1]:.3e} dV {errs[2]:.3e}")

    os.environ.pop("DTENSOR_ATTENTION_AUTOTUNE", None)
    print("backward time, bf16 D128 causal, fused qkv views "
          "(median of 20; TFLOP/s counts 2.5x the forward's causal half):",
          flush=True)
    for s, hh in ((4096, 8), (4096, 16), (8192, 8), (8192, 16)):
        q, k, v = operands(dt, 1, s, hh, 128, "fused")
        do = torch.randn(1, s, hh, 128, device="cuda").to(dt)
        scale = 128 ** -0.5
        flops = 2.5 * 4 * s * s * 128 * hh / 2
        ms, taken = {}, {}
        for path in ("cudnn", "kernel"):
            o, lse, grads, fwd, bwd = ours(path, path, dt, q, k, v, do,
                                           scale, True)
            os.environ["DTENSOR_ATTENTION"] = path
            ms[path] = median_ms(lambda: run_backward(
                dt, q, k, v, o, do, lse, *grads, scale, True), 20)
            taken[path] = last()
        ts = [t.transpose(1, 2).detach().requires_grad_(True)
              for t in (q, k, v)]
        out = F.scaled_dot_product_attention(*ts, is_causal=True)
        dot = do.transpose(1, 2)
        ms["sdpa"] = median_ms(lambda: torch.autograd.grad(
            out, ts, dot, retain_graph=True), 20)
        cols = ", ".join(
            f"{name} {ms[p]:.3f} ms ({flops / ms[p] / 1e9:.0f} TFLOP/s)"
            for p, name in (("cudnn", "cudnn"), ("kernel", "kernel"),
                            ("sdpa", "SDPA backward")))
        print(f"backward time S{s} H{hh}: {cols}, cudnn/SDPA "
              f"{ms['cudnn'] / ms['sdpa']:.2f}, kernel/SDPA "
              f"{ms['kernel'] / ms['sdpa']:.2f}", flush=True)
        print(f"  cudnn run: {taken['cudnn'][0]}: {taken['cudnn'][1]}",
              flush=True)
        if torch_cudnn and taken["cudnn"][0] != "cudnn":
            verdict(False, f"backward time S{s} H{hh}: DTENSOR_ATTENTION="
                    f"cudnn fell back to the kernel: {taken['cudnn'][1]}")
    os.environ.pop("DTENSOR_ATTENTION", None)


if __name__ == "__main__":
    main()
