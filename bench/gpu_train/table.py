#!/usr/bin/env python3
"""Markdown tables of gpu_train.py's JSON results (one or more files) for
bench/RESULTS.md: a heading line with the date, device and commit; the
times, speed-ups and peak memory of every row; attention against PyTorch's
SDPA; the relative error of every forward result and gradient (or updated
weight); the issue's gates.

  table.py train.json [more.json ...]
"""
import json
import math
import sys

ORDER = {"mlp": 0, "sp_mlp": 1, "attn": 2, "layer": 3}
GOAL = 1.10  # the speed-up aimed at; 1.00 is the bar


def f(v, spec=".3f", suffix=""):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return format(v, spec) + suffix


def key(r):
    return (r.get("kind") != "fwd+bwd", ORDER.get(r.get("block"), 9),
            -(r.get("tokens") or 0), r.get("tp") or 0)


def gate(r):
    """The issue's done-when for one row: at or above torch.compile's time
    (goal 1.10x), peak memory at or under torch.compile's."""
    if r.get("status", "ok") != "ok":
        return "not run"
    vs, pk, cpk = (r.get("vs_compile"), r.get("ours_peak_mib"),
                   r.get("compile_peak_mib"))
    if vs is None or (isinstance(vs, float) and math.isnan(vs)):
        return "no torch.compile"
    speed = ("goal" if vs >= GOAL else "ok" if vs >= 1.0 else "SLOWER")
    mem = "" if pk is None or cpk is None else (
        ", mem ok" if pk <= cpk else ", MORE MEMORY")
    return speed + mem


def render(data, out=print):
    rows = sorted(data["rows"], key=key)
    b = data.get("build", {})
    opt = next((r["optimizer"] for r in rows if "optimizer" in r), None)
    out(f"## {data.get('run_date', '?')[:10]}, {data.get('device', '?')}, "
        f"commit {b.get('commit', '?')}{' (dirty)' if b.get('dirty') else ''}")
    out("")
    out(f"PyTorch {data.get('torch')} (CUDA {data.get('cuda')}); build of "
        f"{b.get('date', '?')} ({b.get('subject', '')}); {b.get('dtype', '?')}; "
        f"{data.get('options', {}).get('rounds')} rounds x "
        f"{data.get('options', {}).get('iters')} calls per variant, taken in "
        "turns. ms per call (medians of CUDA-event timings); vs compile / vs "
        "eager = median over calls of their time / our best variant's (ours "
        "or graph) in the same turn (> 1: we are faster); peak MiB = device "
        "memory one call holds beyond its inputs (step: with the optimizer "
        "state); err = max |a - b| / max |b| against eager.")
    if opt:
        out("")
        out(f"Step: ours is Adam from zero moments (lr {opt.get('lr')}, betas "
            f"{opt.get('beta1')}/{opt.get('beta2')}, eps {opt.get('eps')}, no "
            f"weight decay: dtensor-train-steps); PyTorch's is AdamW(fused=True, "
            f"weight_decay={opt.get('torch_weight_decay')}) with persistent "
            "state; numerics against PyTorch's first step with weight_decay=0.")
    out("")
    out("| block | tokens | TP | kind | ours | graph | eager | torch.compile | "
        "vs compile | vs eager | peak MiB ours / eager / compile | "
        "max err ours | max err compile | gate |")
    out("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        status = r.get("status", "ok")
        ours = (f(r.get("ours_ms")) if status == "ok" else
                status.replace("|", "/")[:100] + ("..." if len(status) > 100
                                                  else ""))
        out(f"| {r.get('block')} | {r.get('tokens')} | {r.get('tp')} | "
            f"{r.get('kind')} | {ours} | {f(r.get('graph_ms'))} | "
            f"{f(r.get('eager_ms'))} | {f(r.get('compile_ms'))} | "
            f"{f(r.get('vs_compile'), '.3f', 'x')} | "
            f"{f(r.get('vs_eager'), '.3f', 'x')} | "
            f"{f(r.get('ours_peak_mib'), '.0f')} / "
            f"{f(r.get('eager_peak_mib'), '.0f')} / "
            f"{f(r.get('compile_peak_mib'), '.0f')} | "
            f"{f(r.get('max_err_ours'), '.1e')} | "
            f"{f(r.get('max_err_compile'), '.1e')} | {gate(r)} |")
    att = [r for r in rows if "sdpa_bwd_ms" in r]
    if att:
        out("")
        out("Attention: PyTorch's causal SDPA at the case's shapes (the bar "
            "for our attention backward: within 1.1x of `sdpa bwd`; our "
            "kernels' times are in a --trace run).")
        out("")
        out("| case | kind | sdpa fwd | sdpa bwd | sdpa fwd+bwd | "
            "our attention core (forward) |")
        out("|---|---|---|---|---|---|")
        for r in att:
            out(f"| {r['case']} | {r['kind']} | {f(r['sdpa_fwd_ms'])} | "
                f"{f(r['sdpa_bwd_ms'])} | {f(r['sdpa_fwd_bwd_ms'])} | "
                f"{r.get('attention_core', '—').split(':')[0]} |")
    out("")
    out("Relative error of each result: `d<arg>` the gradient of an "
        "argument, `<arg>` a weight after the step, `<arg> update` its "
        "change (norm-wise: ||a - b|| / ||b||); f32 = PyTorch in float32 "
        "from the same bf16 inputs.")
    out("")
    out("| case | kind | value | ours vs eager | compile vs eager | "
        "ours vs f32 | eager vs f32 |")
    out("|---|---|---|---|---|---|---|")
    for r in rows:
        for name, e in r.get("errors", {}).items():
            out(f"| {r['case']} | {r['kind']} | {name} | "
                f"{f(e.get('ours'), '.1e')} | {f(e.get('compile'), '.1e')} | "
                f"{f(e.get('ours_f32'), '.1e')} | {f(e.get('eager_f32'), '.1e')} |")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows, data = [], None
    for path in sys.argv[1:]:
        with open(path) as fh:
            d = json.load(fh)
        data = data or d
        rows += d["rows"]
    data = dict(data, rows=rows)
    render(data)


if __name__ == "__main__":
    main()
