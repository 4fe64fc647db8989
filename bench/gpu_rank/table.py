#!/usr/bin/env python3
"""Markdown table of gpu_rank.py's JSON results (one or more files).

  table.py r1.json [r2.json ...]
"""
import json
import sys


def main():
    rows, device, torch = [], None, None
    for path in sys.argv[1:]:
        with open(path) as f:
            data = json.load(f)
        device, torch = data["device"], data["torch"]
        rows += data["rows"]
    order = {"mlp": 0, "sp_mlp": 1, "attn": 2, "layer": 3}
    rows.sort(key=lambda r: (order[r["block"]], -r["tokens"], r["tp"]))
    print(f"{device}, PyTorch {torch}, bf16; ms, medians of CUDA-event "
          "timings of calls taken in turns; ratio = floor / our best "
          "(direct or graph); speed-up = median over calls of their time / "
          "our best variant's time of the same turn; peak MiB ours / eager")
    print()
    print("| block | tokens | TP | ours | graph (host µs) | floor | ratio | "
          "eager | compile | vs eager | vs compile | peak MiB | rel. err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['block']} | {r['tokens']} | {r['tp']} | "
              f"{r['compiled_ms']:.3f} | {r['graph_ms']:.3f} "
              f"({r['graph_host_us']:.0f}) | {r['floor_ms']:.3f} | "
              f"{r['floor_ratio']:.2f} | {r['eager_ms']:.3f} | "
              f"{r['compile_ms']:.3f} | {r['vs_eager']:.3f}x | "
              f"{r['vs_compile']:.3f}x | {r['peak_mib']:.0f} / "
              f"{r['eager_peak_mib']:.0f} | {r['rel_err']:.1e} |")


if __name__ == "__main__":
    main()
