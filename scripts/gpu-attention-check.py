#!/usr/bin/env python3
"""GPU check of the runtime's fused attention (dtensor_rt_attention_<T>)
against PyTorch's scaled_dot_product_attention (computed in f32), on the GPU
machine: bf16 and f16, head dims 64 and 128, causal or not, one or two
batches, dense or strided operands (q, k, v as views of one fused qkv
projection, as compiled programs pass them), sequence lengths that are not
multiples of the 64-row tiles. Prints one line per case, then the time of
the fused kernel beside SDPA at Llama sizes, and ends "N passed, N failed".

  python3 scripts/gpu-attention-check.py LIBDIR   (libdtensor_runtime_cuda.so)
"""
import ctypes
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench",
                                "gpu_rank"))
from gpu_rank import descriptor, median_ms  # noqa: E402


def main():
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
    ctx = ctypes.c_void_p(lib.dtensor_rt_context())
    stream = torch.cuda.ExternalStream(lib.dtensor_rt_cuda_stream(ctx))
    fns = {torch.bfloat16: lib.dtensor_rt_attention_bf16,
           torch.float16: lib.dtensor_rt_attention_f16}
    for fn in fns.values():
        fn.restype = None

    def run(dt, q, k, v, o, scale, causal):
        ds = [descriptor(t) for t in (q, k, v, o)]
        args = [ctx]
        for t, d in zip((q, k, v, o), ds):
            args += [ctypes.c_int64(t.dim()), ctypes.byref(d)]
        fns[dt](*args, ctypes.c_float(scale), ctypes.c_int64(int(causal)))

    passed = failed = 0
    with torch.cuda.stream(stream):
        torch.manual_seed(0)
        for dt in (torch.bfloat16, torch.float16):
            for (b, s, h, d, causal, fused) in [
                    (1, 128, 4, 64, True, False), (1, 128, 4, 128, False, False),
                    (2, 200, 3, 64, True, True), (1, 1000, 8, 128, True, True),
                    (2, 77, 2, 128, False, True), (1, 4096, 8, 128, True, True),
                    (1, 64, 1, 64, False, False)]:
                if fused:  # views of one [B, S, 3, H, D] projection
                    qkv = torch.randn(b, s, 3, h, d, device="cuda").to(dt)
                    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
                else:
                    q, k, v = (torch.randn(b, s, h, d, device="cuda").to(dt)
                               for _ in range(3))
                o = torch.empty(b, s, h, d, device="cuda", dtype=dt)
                scale = d ** -0.5
                run(dt, q, k, v, o, scale, causal)
                torch.cuda.synchronize()
                ref = F.scaled_dot_product_attention(
                    *(t.float().transpose(1, 2) for t in (q, k, v)),
                    is_causal=causal, scale=scale).transpose(1, 2)
                err = ((o.float() - ref).abs().max() / ref.abs().max()).item()
                ok = err < 2e-2
                passed += ok
                failed += not ok
                print(f"{'PASS' if ok else 'FAIL'} {str(dt)[6:]} B{b} S{s} H{h} "
                      f"D{d} causal={causal} fused_qkv={fused}: "
                      f"max relative error {err:.3e}", flush=True)
        # time at Llama sizes (tokens 4096/8192, 32/TP heads of 128)
        for s, h in ((4096, 8), (4096, 16), (8192, 8), (8192, 16)):
            qkv = torch.randn(1, s, 3, h, 128, device="cuda").bfloat16()
            q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
            o = torch.empty(1, s, h, 128, device="cuda", dtype=torch.bfloat16)
            ours = median_ms(lambda: run(torch.bfloat16, q, k, v, o,
                                         128 ** -0.5, True), 20)
            qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
            sdpa = median_ms(lambda: F.scaled_dot_product_attention(
                qt, kt, vt, is_causal=True), 20)
            flops = 4 * s * s * 128 * h / 2
            print(f"time S{s} H{h} D128 causal: fused {ours:.3f} ms "
                  f"({flops / ours / 1e9:.0f} TFLOP/s), SDPA {sdpa:.3f} ms "
                  f"({flops / sdpa / 1e9:.0f} TFLOP/s), ratio {ours / sdpa:.2f}",
                  flush=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
