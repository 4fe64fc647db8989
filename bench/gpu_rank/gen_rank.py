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

--qkv separate writes attention with separate q, k and v projections
instead of one fused projection split by slices.

--mesh N writes the block's global program instead, on a TP mesh of N
processes (tensor parallelism as PyTorch's ColwiseParallel /
RowwiseParallel place it: w1, w3 and the q/k/v projections sharded by
columns, w2 and wo by rows, norm gains and activations replicated; sp_mlp
becomes the sequence-parallel block x + mlp(rmsnorm(x)) with x sharded by
tokens): what dtensor-run checks on N CPU ranks against the unsharded
program, forward and (after dtensor-autodiff) backward.

  gen_rank.py --block layer --mesh 2 --qkv separate --tokens 16 --hidden 64
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
    if a.mesh:
        TP = 1  # Global shapes: the mesh divides them.
    F = a.ffn // TP
    hh = a.heads // TP
    D = H // a.heads
    if a.ffn % TP or a.heads % TP or H % a.heads or T % TP:
        sys.exit("gen_rank.py: ffn, heads and tokens must divide by tp, "
                 "hidden by heads")
    X = w.ty(T, H)
    colwise, rowwise, rep, seq = "[S(1)]", "[S(0)]", "[R]", "[S(0)]"
    layouts = {}

    def attention(x):
        if a.qkv == "separate":
            qkv = [("wq", w.ty(H, hh * D)), ("wk", w.ty(H, hh * D)),
                   ("wv", w.ty(H, hh * D))]
            layouts.update({n: colwise for n, _ in qkv})
            layouts["wo"] = rowwise
            return qkv + [("wo", w.ty(hh * D, H))], lambda inp: w.attention_heads(
                inp, "%wq", "%wk", "%wv", "%wo", T, H, hh, D)
        layouts.update({"wqkv": colwise, "wo": rowwise})
        return ([("wqkv", w.ty(H, 3 * hh * D)), ("wo", w.ty(hh * D, H))],
                lambda inp: w.attention(inp, "%wqkv", "%wo", T, H, hh, D))

    layouts.update({"w1": colwise, "w3": colwise, "w2": rowwise})
    result_layout = rep
    if a.block == "sp_mlp" and a.mesh:
        params = [("x", X), ("g", w.ty(H)), ("w1", w.ty(H, F)),
                  ("w3", w.ty(H, F)), ("w2", w.ty(F, H))]
        layouts["x"] = seq
        n = w.rmsnorm("%x", "%g", T, H)
        y = w.mlp(n, "%w1", "%w3", "%w2", T, H, F)
        results = [w.add("%x", y, (T, H))]
        result_layout = seq
    elif a.block == "mlp":
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
        attn_params, attn = attention("%x")
        params = [("x", X)] + attn_params
        results = [attn("%x")]
    else:  # layer
        attn_params, attn = attention(None)
        params = [("x", X), ("g1", w.ty(H))] + attn_params + [
            ("g2", w.ty(H)), ("w1", w.ty(H, F)), ("w3", w.ty(H, F)),
            ("w2", w.ty(F, H))]
        n1 = w.rmsnorm("%x", "%g1", T, H)
        a1 = attn(n1)
        h = w.add("%x", a1, (T, H))
        n2 = w.rmsnorm(h, "%g2", T, H)
        m = w.mlp(n2, "%w1", "%w3", "%w2", T, H, F)
        results = [w.add(h, m, (T, H))]
    if a.mesh:
        return function(
            w, a.block, f'dtensor.mesh @tp shape = [{a.mesh}] names = ["tp"]',
            [(n, ty, f"<@tp, {layouts.get(n, rep)}>") for n, ty in params],
            [(r, f"<@tp, {result_layout}>") for r in results],
            f"{a.block}, tokens {T}, hidden {H}, ffn {a.ffn}, heads "
            f"{a.heads}, {t}, qkv {a.qkv}: the global program on a TP mesh of "
            f"{a.mesh} (gen_rank.py --mesh)")
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
    ap.add_argument("--qkv", choices=["fused", "separate"], default="fused",
                    help="attention's q/k/v projections (default fused)")
    ap.add_argument("--mesh", type=int, default=0,
                    help="write the global program on a TP mesh of this many "
                         "processes instead of the per-rank program")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    text = generate(a)
    write_output(text, a.output)


if __name__ == "__main__":
    main()
