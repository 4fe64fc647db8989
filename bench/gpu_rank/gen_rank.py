#!/usr/bin/env python3
"""Writes the per-rank program of one tensor-parallel block, in the
global-view syntax with no mesh: the computation one rank of a TP group
runs, at the rank's shapes, with the collectives taken out (they are timed
apart, by bench/gpu_overlap). Compiled with `dtensor-compile --target cuda`
it is exactly the rank's compute; bench/gpu_rank/gpu_rank.py runs it beside
PyTorch on the same weights.

Blocks (Llama-3 sizes by default; bf16; activations [tokens, hidden],
weights [in, out] as `x @ w`):
  mlp     SwiGLU MLP with ffn/TP columns: (silu(x w1) * (x w3)) w2
  sp_mlp  sequence-parallel MLP: RMSNorm of the rank's tokens/TP rows, the
          MLP on the gathered input, the residual add of the
          reduce-scattered output (the gathered input and the
          reduce-scattered output are arguments: what the collectives
          deliver)
  attn    attention with heads/TP heads: fused qkv projection, causal
          softmax(q k^T / sqrt(d)) v, output projection
  layer   a whole TP layer: x + attn(rmsnorm(x)), then h + mlp(rmsnorm(h))

  gen_rank.py --block mlp --tokens 8192 --tp 2 -o mlp.mlir
"""
import argparse
import sys

import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common.mlir_writer import Writer, function, write_output  # noqa: E402


def generate(a):
    w = Writer(a.dtype)
    t = a.dtype
    T, H, TP = a.tokens, a.hidden, a.tp
    F = a.ffn // TP
    hh = a.heads // TP
    D = H // a.heads
    if a.ffn % TP or a.heads % TP or H % a.heads or T % TP:
        sys.exit("gen_rank.py: ffn, heads and tokens must divide by tp, "
                 "hidden by heads")
    X = w.ty(T, H)
    if a.block == "mlp":
        params = [("x", X), ("w1", w.ty(H, F)), ("w3", w.ty(H, F)),
                  ("w2", w.ty(F, H))]
        results = [w.mlp("%x", "%w1", "%w3", "%w2", T, H, F)]
    elif a.block == "sp_mlp":
        R = T // TP
        params = [("x", w.ty(R, H)), ("g", w.ty(H)), ("xg", X),
                  ("w1", w.ty(H, F)), ("w3", w.ty(H, F)), ("w2", w.ty(F, H)),
                  ("rs", w.ty(R, H))]
        n = w.rmsnorm("%x", "%g", R, H)
        y = w.mlp("%xg", "%w1", "%w3", "%w2", T, H, F)
        out = w.add("%x", "%rs", (R, H))
        results = [n, y, out]
    elif a.block == "attn":
        params = [("x", X), ("wqkv", w.ty(H, 3 * hh * D)),
                  ("wo", w.ty(hh * D, H))]
        results = [w.attention("%x", "%wqkv", "%wo", T, H, hh, D)]
    else:  # layer
        params = [("x", X), ("g1", w.ty(H)), ("wqkv", w.ty(H, 3 * hh * D)),
                  ("wo", w.ty(hh * D, H)), ("g2", w.ty(H)),
                  ("w1", w.ty(H, F)), ("w3", w.ty(H, F)), ("w2", w.ty(F, H))]
        n1 = w.rmsnorm("%x", "%g1", T, H)
        a1 = w.attention(n1, "%wqkv", "%wo", T, H, hh, D)
        h = w.add("%x", a1, (T, H))
        n2 = w.rmsnorm(h, "%g2", T, H)
        m = w.mlp(n2, "%w1", "%w3", "%w2", T, H, F)
        results = [w.add(h, m, (T, H))]
    # One rank: every tensor replicated on the one-device mesh.
    return function(
        w, a.block, 'dtensor.mesh @rank shape = [1] names = ["tp"]',
        [(n, ty, "<@rank, [R]>") for n, ty in params],
        [(r, "<@rank, [R]>") for r in results],
        f"{a.block}, tokens {T}, hidden {H}, ffn {a.ffn}/{TP}, "
        f"heads {a.heads}/{TP}, {t}: the per-rank program (gen_rank.py)")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--block", choices=["mlp", "sp_mlp", "attn", "layer"],
                    required=True)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="bf16")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    text = generate(a)
    write_output(text, a.output)


if __name__ == "__main__":
    main()
