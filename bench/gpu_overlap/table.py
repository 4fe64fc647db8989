#!/usr/bin/env python3
"""Markdown tables of gpu_overlap.py's JSON results (one file per machine)
for bench/RESULTS.md: the timing table and, where the run had --trace, the
measured-vs-modelled table.

  table.py r2.json [r4.json ...] [--commit C] [--date D]
"""
import argparse
import json
import math

ORDER = {"ag_mm": 0, "mm_rs": 1, "mlp": 2, "sp_mlp": 3, "layer": 4}


def ms(row, key):
    v = row.get(key + "_ms", float("nan"))
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.3f} ({row['floor_ms'] / v:.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--commit", default="")
    ap.add_argument("--date", default="")
    a = ap.parse_args()
    for path in a.files:
        with open(path) as f:
            data = json.load(f)
        rows = sorted(data["rows"], key=lambda r: (ORDER.get(r["kind"], 9),
                                                    -r["tokens"], r["hidden"]))
        print(f"**{data['ranks']}× {data['device']}**"
              + (f", {a.date}" if a.date else "")
              + (f", commit {a.commit}" if a.commit else "")
              + f"; PyTorch {data['torch']}, NCCL {data.get('nccl', '?')}, "
              "bf16. ms, medians of CUDA-event timings, each after a barrier; "
              "(ratio) = floor / time; floor = max(compute alone, "
              "communication alone) measured in the same run; speed-up = "
              "best PyTorch path / ours; peak MiB: ours / ours as "
              "partitioned / PyTorch eager.")
        print()
        print("| case | tokens×hidden, ffn | floor | ours | ours, no fusion | "
              "PyTorch sequential | symm_mem | torch.compile | speed-up | "
              "peak MiB | rel. err |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['kind']} | {r['tokens']}×{r['hidden']}, {r['ffn']} | "
                  f"{r['floor_ms']:.3f} | {ms(r, 'ours')} | "
                  f"{ms(r, 'ours_seq')} | {ms(r, 'sequential')} | "
                  f"{ms(r, 'symm_mem')} | {ms(r, 'compiled')} | "
                  f"{r['speedup']:.2f}x | {r['ours_peak_mib']:.0f} / "
                  f"{r['ours_seq_peak_mib']:.0f} / {r['eager_peak_mib']:.0f} | "
                  f"{r['ours_rel_err']:.1e} |")
        traced = [r for r in rows if r.get("trace")]
        if not traced:
            print()
            continue
        print()
        print("Measured (CUPTI, GPU time per step of rank 0) against modelled "
              "(the compiler's timeline), µs:")
        print()
        print("| case | variant | matmul | collective | fused (modelled) | "
              "other | step |")
        print("|---|---|---|---|---|---|---|")
        for r in traced:
            for t in r["trace"]:
                model = t.get("modelled_us", {})

                def cell(k):
                    m = t["measured_us"][k]
                    return (f"{m:.0f} / {model[k]:.0f}" if k in model
                            else f"{m:.0f} / —")
                step = (f"{t['measured_step_us']:.0f} / "
                        f"{t.get('modelled_step_us', float('nan')):.0f}")
                fused = model.get("fused", 0)
                print(f"| {r['case']} | {t['variant']} | {cell('matmul')} | "
                      f"{cell('collective')} | "
                      f"{f'{fused:.0f}' if fused else '—'} | {cell('other')} | "
                      f"{step} |")
        print()


if __name__ == "__main__":
    main()
