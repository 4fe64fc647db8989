#!/usr/bin/env python3
"""Writes the global-view tensor-parallel programs of bench/gpu_overlap: a
mesh of N ranks, bf16, Llama-3 sizes, placements in PyTorch-DTensor terms.
dtensor-compile --target cuda turns each into the per-rank program with its
collectives; bench/gpu_overlap/gpu_overlap.py times it beside PyTorch.

Cases (activations [tokens, hidden], weights [in, out] as `x @ w`):
  ag_mm   all_gather + matmul: x S(0) (rows) gathered, times w S(1)
          (column-sharded); the product stays S(1)
  mm_rs   matmul + reduce_scatter: h S(1) times w S(0) (row-sharded), the
          partial product reduce-scattered to S(0) rows
  mlp     TP SwiGLU MLP: x R, w1 and w3 S(1) (colwise), w2 S(0) (rowwise),
          the output all-reduced to R
  sp_mlp  sequence-parallel MLP: x S(0); RMSNorm of the rows, all_gather,
          the MLP, reduce_scatter, the residual add, output S(0)
  layer   one transformer layer under the sequence-parallel plan: x S(0);
          h = x + attn(rmsnorm(x)), out = h + mlp(rmsnorm(h)); wq, wk, wv
          S(1) (colwise: by heads, 32 heads), wo S(0) (rowwise), the MLP as
          in sp_mlp; each norm on the rank's rows, each block between an
          all_gather and a reduce_scatter

  gen_overlap.py --case ag_mm --tokens 8192 --hidden 4096 --ffn 14336 -n 2 -o ag.mlir
  gen_overlap.py --list     # the cases build.sh compiles, one per line
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from common.mlir_writer import Writer, function, write_output  # noqa: E402

CASES = ("ag_mm", "mm_rs", "mlp", "sp_mlp", "layer")
HEADS = 32

# (case, tokens, hidden, ffn): the rows of issue 16.
SHAPES = [(c, t, h, f) for c in ("ag_mm", "mm_rs")
          for t, h, f in ((8192, 4096, 14336), (4096, 4096, 14336),
                          (16384, 8192, 28672))]
SHAPES += [(c, t, 4096, 14336) for c in ("mlp", "sp_mlp", "layer")
           for t in (8192, 4096)]


def case_name(case, tokens, hidden, ffn, n):
    return f"{case}_T{tokens}_H{hidden}_F{ffn}_N{n}"


def parse_name(name):
    """(case, tokens, hidden, ffn, n) of a case_name, or None."""
    for case in CASES:
        if name.startswith(case + "_T"):
            try:
                t, h, f, n = name[len(case) + 2:].split("_")
                return (case, int(t), int(h[1:]), int(f[1:]), int(n[1:]))
            except ValueError:
                return None
    return None


def sharded_rows(w, value, layout, ty):
    """`value` annotated with the rows layout: the norm runs on the rank's
    rows (SequenceParallel), its output is what the all_gather moves into
    the colwise matmuls."""
    annotated = value + "s"
    w.emit(f"  {annotated} = dtensor.annotate {value} layout {layout} : {ty}")
    return annotated


def generate(case, T, H, F, n, dtype="bf16"):
    if T % n or F % n or HEADS % n or H % HEADS:
        sys.exit("gen_overlap.py: tokens, ffn and the heads must divide by "
                 f"the ranks, hidden by the {HEADS} heads")
    w = Writer(dtype)
    S0, S1, R = "<@tp, [S(0)]>", "<@tp, [S(1)]>", "<@tp, [R]>"
    X, W1, W2 = w.ty(T, H), w.ty(H, F), w.ty(F, H)
    if case == "ag_mm":
        params = [("x", X, S0), ("w", W1, S1)]
        results = [(w.matmul("%x", "%w", T, H, F), S1)]
    elif case == "mm_rs":
        params = [("h", w.ty(T, F), S1), ("w", W2, S0)]
        results = [(w.matmul("%h", "%w", T, F, H), S0)]
    elif case == "mlp":
        params = [("x", X, R), ("w1", W1, S1), ("w3", W1, S1), ("w2", W2, S0)]
        results = [(w.mlp("%x", "%w1", "%w3", "%w2", T, H, F), R)]
    elif case == "sp_mlp":
        params = [("x", X, S0), ("g", w.ty(H), R), ("w1", W1, S1),
                  ("w3", W1, S1), ("w2", W2, S0)]
        norm = sharded_rows(w, w.rmsnorm("%x", "%g", T, H), S0, X)
        y = w.mlp(norm, "%w1", "%w3", "%w2", T, H, F)
        results = [(w.add("%x", y, (T, H)), S0)]
    elif case == "layer":
        D = H // HEADS
        A = w.ty(H, HEADS * D)
        params = [("x", X, S0), ("g1", w.ty(H), R), ("wq", A, S1),
                  ("wk", A, S1), ("wv", A, S1),
                  ("wo", w.ty(HEADS * D, H), S0), ("g2", w.ty(H), R),
                  ("w1", W1, S1), ("w3", W1, S1), ("w2", W2, S0)]
        n1 = sharded_rows(w, w.rmsnorm("%x", "%g1", T, H), S0, X)
        a = w.attention_heads(n1, "%wq", "%wk", "%wv", "%wo", T, H, HEADS, D)
        h = sharded_rows(w, w.add("%x", a, (T, H)), S0, X)
        n2 = sharded_rows(w, w.rmsnorm(h, "%g2", T, H), S0, X)
        y = w.mlp(n2, "%w1", "%w3", "%w2", T, H, F)
        results = [(w.add(h, y, (T, H)), S0)]
    else:
        sys.exit(f"gen_overlap.py: unknown case '{case}'")
    return function(w, case, f'dtensor.mesh @tp shape = [{n}] names = ["tp"]',
                    params, results,
                    f"{case}, tokens {T}, hidden {H}, ffn {F}, {n} ranks, "
                    f"{dtype}: the global view (gen_overlap.py)")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=CASES)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("-n", "--ranks", type=int, default=2)
    ap.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="bf16")
    ap.add_argument("--list", action="store_true",
                    help="print the cases of the benchmark for -n ranks "
                         "(name case tokens hidden ffn) and exit")
    ap.add_argument("-o", "--output", default="-")
    a = ap.parse_args()
    if a.list:
        for c, t, h, f in SHAPES:
            print(case_name(c, t, h, f, a.ranks), c, t, h, f)
        return
    if not a.case:
        ap.error("--case is required (or --list)")
    text = generate(a.case, a.tokens, a.hidden, a.ffn, a.ranks, a.dtype)
    write_output(text, a.output)


if __name__ == "__main__":
    main()
