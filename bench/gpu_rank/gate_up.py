#!/usr/bin/env python3
"""Does one gate+up GEMM pay? For each bench/gpu_rank MLP shape (tokens
8192 and 4096, TP 2 and 4, hidden 4096, ffn 14336/TP), the best cuBLASLt
algorithm time of the SwiGLU's two projections as two GEMMs
(x [T, H] . w1 [H, F] and x . w3 [H, F]) against one GEMM of twice the width
(x . [w1 | w3] [H, 2F]): dtensor_rt_matmul_best_ms (every heuristic
candidate timed, L2 evicted before each run), the two taking turns over
--rounds rounds, medians reported. One GEMM needs the weights side by side
in memory: a program that gets w1 and w3 as separate arguments would copy
them (2 H F elements per call) first.

  python3 gate_up.py DIR [--rounds 5] [--json out.json]   (DIR: the runtime)
"""
import argparse
import ctypes
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common.artifact import load_runtime  # noqa: E402

H, FFN = 4096, 14336


def best_ms(rt, ctx, m, k, n):
    a = torch.randn(m, k, device="cuda").bfloat16()
    b = torch.randn(k, n, device="cuda").bfloat16()
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ms = rt.dtensor_rt_matmul_best_ms(
        ctx, 2, 1, m, n, k, ctypes.c_void_p(a.data_ptr()),
        ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(c.data_ptr()), 32, 5)
    torch.cuda.synchronize()
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    for k, v in {"DTENSOR_RANK": "0", "DTENSOR_WORLD_SIZE": "1",
                 "DTENSOR_LOCAL_RANK": "0"}.items():
        os.environ.setdefault(k, v)
    torch.cuda.init()
    rt = load_runtime(a.dir)
    argc = ctypes.c_int(0)
    if rt.dtensor_rt_init(b"nccl", ctypes.byref(argc), None) != 0:
        sys.exit("gate_up: dtensor_rt_init failed")
    ctx = ctypes.c_void_p(rt.dtensor_rt_context())
    rows = []
    for T in (8192, 4096):
        for tp in (2, 4):
            F = FFN // tp
            two, one = [], []
            for _ in range(a.rounds):
                two.append(2 * best_ms(rt, ctx, T, H, F))
                one.append(best_ms(rt, ctx, T, H, 2 * F))
            med = lambda xs: sorted(xs)[len(xs) // 2]
            copy_ms = 2 * H * F * 2 * 2 / 3.0e12 * 1e3  # read + write, 3 TB/s
            row = dict(tokens=T, tp=tp, two_gemms_ms=med(two),
                       one_gemm_ms=med(one), weight_copy_ms=copy_ms)
            rows.append(row)
            print(f"T {T} TP {tp}: two GEMMs {row['two_gemms_ms']:.3f} ms, "
                  f"one [H, 2F] GEMM {row['one_gemm_ms']:.3f} ms "
                  f"({(1 - row['one_gemm_ms'] / row['two_gemms_ms']) * 100:+.1f}%"
                  f" saved), weights side by side: a {copy_ms:.3f} ms copy",
                  flush=True)
    print(f"device {torch.cuda.get_device_name()}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
