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
ratio cudnn/SDPA (issue 17 wants <= 1.1). Ends "N passed, N failed".

  python3 scripts/gpu-attention-check.py LIBDIR   (libdtensor_runtime_cuda.so)

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
    for fn in fns.values():
        fn.restype = None
    note = ctypes.create_string_buffer(8192)

    def run(dt, q, k, v, o, scale, causal):
        ds = [descriptor(t) for t in (q, k, v, o)]
        args = [ctx]
        for t, d in zip((q, k, v, o), ds):
            args += [ctypes.c_int64(t.dim()), ctypes.byref(d)]
        fns[dt](*args, ctypes.c_float(scale), ctypes.c_int64(int(causal)))

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

    with torch.cuda.stream(stream):
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
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
