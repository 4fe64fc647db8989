#!/usr/bin/env python3
"""Multi-GPU overlap benchmark: the compiled tensor-parallel programs of
bench/gpu_overlap (gen_overlap.py, compiled by build.sh) beside PyTorch's
tensor-parallel paths, one process per GPU, in one run:

  torchrun --standalone --nproc-per-node N bench/gpu_overlap/gpu_overlap.py \\
      gpucarry/gpu-overlap --json r.json [--trace DIR]

For every case DIR/<case>_N<N>.so (N = the world size) and the same weights
(every rank draws the global tensors from one seed and keeps its shards):
  ours        the artifact: fused and scheduled (dtensor-compile --fuse
              --overlap default), called through its C interface
  ours_seq    the artifact as partitioned (no fusion, no scheduling)
  sequential  PyTorch eager: NCCL collective, then cuBLAS (no overlap)
  symm_mem    torch.ops.symm_mem fused all_gather+matmul /
              matmul+reduce_scatter (async TP), where the case has them
  compiled    torch.compile with _inductor.config._micro_pipeline_tp
  floor       measured in the same run: max(compute alone, communication
              alone), each the sum of its parts (AG+MM: the matmul and the
              all_gather; MLP: the whole per-rank compute and the
              all_reduce; SP MLP and layer: norms + blocks + residuals,
              and the all_gathers + reduce_scatters)
Times are medians of CUDA-event timings of --iters calls after warm-ups,
each started after a barrier (as the anchor measurements,
../shared/bench/anchor_async_tp.py). Printed per case: time, floor /
time, speed-up over the best PyTorch path, peak device memory (ours, ours as
partitioned, eager), the relative error of our outputs against PyTorch's
sequential path (max |a-b| / max |b|). Rank 0 writes --json.

--trace DIR: a CUPTI Chrome trace of three measured steps of each artifact
(fused and sequential, every rank: <case>[.seq].rank<R>.trace.json) and,
beside the compiler's modelled timeline (build.sh's model/<case>.model.json
and .seq.model.json), a comparison per kind of op (matmul, collective,
other) of measured GPU time against modelled time: <case>.compare.json and
a table on stdout (docs/gpu-overlap.md).

--list / --dry-run: the cases this run would time and the files each needs,
without loading torch, the runtime or any artifact.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from common.artifact import (Artifact, as_tensor, load_runtime,  # noqa: E402
                             median_ms)
from gen_overlap import HEADS, parse_name  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="build.sh's output (artifacts, runtime, model/)")
    ap.add_argument("--only", default="",
                    help="comma-separated case names (without _N<ranks>) or "
                         "case kinds (ag_mm, mm_rs, mlp, sp_mlp, layer)")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json", default="", help="rank 0 writes the rows here")
    ap.add_argument("--trace", default="",
                    help="write CUPTI traces of our artifacts and the "
                         "measured-vs-modelled comparison into this folder")
    ap.add_argument("--no-compile", action="store_true",
                    help="skip torch.compile (faster)")
    ap.add_argument("--no-symm-mem", action="store_true",
                    help="skip the symm_mem fused ops")
    ap.add_argument("--ranks", type=int, default=0,
                    help="with --list/--dry-run: the world size to list "
                         "for (default: $WORLD_SIZE, else every size built)")
    ap.add_argument("--single-gpu", action="store_true",
                    help="every rank on GPU 0 (NCCL over loopback: a "
                         "distinct NCCL_HOSTID per process); for checking "
                         "the harness on one GPU, the times mean nothing")
    ap.add_argument("--list", action="store_true",
                    help="list the cases and exit (loads nothing)")
    ap.add_argument("--dry-run", action="store_true",
                    help="list the cases with the files each needs and "
                         "whether they exist, and exit (loads nothing)")
    return ap.parse_args(argv)


def find_cases(directory, ranks, only):
    """[(name, (case, tokens, hidden, ffn, n))] of the fused artifacts in
    `directory` for `ranks` ranks (0: any), filtered by --only."""
    wanted = [w for w in only.split(",") if w]
    found = []
    for entry in sorted(os.listdir(directory)):
        if not entry.endswith(".so") or entry.endswith(".seq.so"):
            continue
        parsed = parse_name(entry[:-3])
        if not parsed or (ranks and parsed[4] != ranks):
            continue
        base = entry[:-3].rsplit("_N", 1)[0]
        if wanted and base not in wanted and parsed[0] not in wanted:
            continue
        found.append((entry[:-3], parsed))
    return found


def needed_files(directory, name):
    return [os.path.join(directory, f) for f in (
        name + ".so", name + ".seq.so", "libdtensor_runtime_cuda.so",
        os.path.join("model", name + ".model.json"),
        os.path.join("model", name + ".seq.model.json"))]


def dry_run(a):
    ranks = a.ranks or int(os.environ.get("WORLD_SIZE", "0"))
    cases = find_cases(a.dir, ranks, a.only)
    for name, (case, t, h, f, n) in cases:
        line = f"{name}: {case} tokens {t} hidden {h} ffn {f} on {n} ranks"
        if a.dry_run:
            missing = [p for p in needed_files(a.dir, name)
                       if not os.path.exists(p)]
            line += "; files: " + ("all present" if not missing else
                                   "missing " + ", ".join(missing))
        print(line)
    print(f"{len(cases)} cases" + (f" for {ranks} ranks" if ranks else ""))
    return 0 if cases else 1


# --- the cases in PyTorch --------------------------------------------------


def make_inputs(case, T, H, F, n, rank, torch):
    """The global tensors from one seed (same on every rank), and this
    rank's shards in the order of the program's arguments."""
    gen = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=gen) *
                scale).bfloat16()

    def rows(t):
        return t.chunk(n, 0)[rank].contiguous()

    def cols(t):
        return t.chunk(n, 1)[rank].contiguous()

    if case == "ag_mm":
        return [rows(randn(T, H)), cols(randn(H, F, scale=H ** -0.5))]
    if case == "mm_rs":
        return [cols(randn(T, F)), rows(randn(F, H, scale=F ** -0.5))]
    w1, w3 = randn(H, F, scale=0.02), randn(H, F, scale=0.02)
    w2 = randn(F, H, scale=0.02)
    if case == "mlp":
        return [randn(T, H), cols(w1), cols(w3), rows(w2)]

    def gain():
        return (1 + 0.1 * torch.randn(H, device="cuda",
                                      generator=gen)).bfloat16()

    if case == "sp_mlp":
        return [rows(randn(T, H)), gain(), cols(w1), cols(w3), rows(w2)]
    # layer: x, g1, wq, wk, wv, wo, g2, w1, w3, w2
    x, g1 = rows(randn(T, H)), gain()
    wq, wk, wv = (cols(randn(H, H, scale=0.02)) for _ in range(3))
    wo = rows(randn(H, H, scale=0.02))
    return [x, g1, wq, wk, wv, wo, gain(), cols(w1), cols(w3), rows(w2)]


class TorchPaths:
    """PyTorch's paths for one case: callables on the rank's shards."""

    def __init__(self, case, args, n, group, torch, dist, symm_ok):
        import torch.nn.functional as F
        import torch.distributed._functional_collectives as funcol
        self.paths, self.compute, self.comm = {}, [], []
        gname = group.group_name
        bf16 = torch.bfloat16

        def rmsnorm(x, g):
            return F.rms_norm(x.float(), (x.shape[-1],), g.float(),
                              eps=1e-5).to(x.dtype)

        def mlp(x, w1, w3, w2):
            return (F.silu(x @ w1) * (x @ w3)) @ w2

        def sdpa_projected(q, k, v, wo):
            # q, k, v [T, heads/n * D], by heads: causal SDPA, then the
            # output projection's partial sum.
            T, D = q.shape[0], q.shape[1] // (HEADS // n)
            q, k, v = (t.view(T, -1, D).transpose(0, 1)[None] for t in (q, k, v))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return o[0].transpose(0, 1).reshape(T, -1) @ wo

        def gathered(x):
            out = torch.empty(x.shape[0] * n, *x.shape[1:], device="cuda",
                              dtype=x.dtype)
            return out

        def all_gather(out, x):
            dist.all_gather_into_tensor(out, x)
            return out

        def reduce_scatter(p):
            out = torch.empty(p.shape[0] // n, *p.shape[1:], device="cuda",
                              dtype=p.dtype)
            dist.reduce_scatter_tensor(out, p)
            return out

        symm = torch.ops.symm_mem if symm_ok else None

        # The sequence-parallel MLP block on rows h (S(0)): h + the
        # reduce_scatter of mlp(all_gather(rmsnorm(h))), three ways.
        def eager_mlp_block(h, g, full, w1, w3, w2):
            all_gather(full, rmsnorm(h, g))
            return h + reduce_scatter(mlp(full, w1, w3, w2))

        def symm_mlp_block(h, g, w1, w3, w2):
            _, (a, b) = symm.fused_all_gather_matmul(
                rmsnorm(h, g), [w1, w3], gather_dim=0, group_name=gname)
            return h + symm.fused_matmul_reduce_scatter(
                F.silu(a) * b, w2, "sum", scatter_dim=0, group_name=gname)

        def funcol_mlp_block(h, g, w1, w3, w2):
            hg = funcol.all_gather_tensor(rmsnorm(h, g), 0, group)
            return h + funcol.reduce_scatter_tensor(
                mlp(hg, w1, w3, w2), "sum", 0, group)
        if case == "ag_mm":
            x, w = args
            full = gathered(x)
            self.paths["sequential"] = lambda: all_gather(full, x) @ w
            if symm:
                self.paths["symm_mem"] = lambda: symm.fused_all_gather_matmul(
                    x, [w], gather_dim=0, group_name=gname)[1][0]
            self.traced = lambda x, w: funcol.all_gather_tensor(x, 0, group) @ w
            self.compute = [lambda: full @ w]
            self.comm = [lambda: all_gather(full, x)]
        elif case == "mm_rs":
            h, w = args
            p = h @ w
            self.paths["sequential"] = lambda: reduce_scatter(h @ w)
            if symm:
                self.paths["symm_mem"] = (
                    lambda: symm.fused_matmul_reduce_scatter(
                        h, w, "sum", scatter_dim=0, group_name=gname))
            self.traced = lambda h, w: funcol.reduce_scatter_tensor(
                h @ w, "sum", 0, group)
            self.compute = [lambda: h @ w]
            self.comm = [lambda: reduce_scatter(p)]
        elif case == "mlp":
            x, w1, w3, w2 = args
            y = mlp(x, w1, w3, w2)

            def sequential():
                out = mlp(x, w1, w3, w2)
                dist.all_reduce(out)
                return out
            self.paths["sequential"] = sequential
            self.traced = lambda x, w1, w3, w2: funcol.all_reduce(
                mlp(x, w1, w3, w2), "sum", group)
            self.compute = [lambda: mlp(x, w1, w3, w2)]
            self.comm = [lambda: dist.all_reduce(y)]
        elif case == "layer":
            x, g1, wq, wk, wv, wo, g2, w1, w3, w2 = args
            full = gathered(x)
            p = torch.empty(x.shape[0] * n, x.shape[1], device="cuda",
                            dtype=bf16)

            def sequential():
                all_gather(full, rmsnorm(x, g1))
                h = x + reduce_scatter(
                    sdpa_projected(full @ wq, full @ wk, full @ wv, wo))
                return eager_mlp_block(h, g2, full, w1, w3, w2)
            self.paths["sequential"] = sequential
            if symm:
                def fused():
                    _, (q, k, v) = symm.fused_all_gather_matmul(
                        rmsnorm(x, g1), [wq, wk, wv], gather_dim=0,
                        group_name=gname)
                    T, D = q.shape[0], q.shape[1] // (HEADS // n)
                    q, k, v = (t.view(T, -1, D).transpose(0, 1)[None]
                               for t in (q, k, v))
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    h = x + symm.fused_matmul_reduce_scatter(
                        o[0].transpose(0, 1).reshape(T, -1), wo, "sum",
                        scatter_dim=0, group_name=gname)
                    return symm_mlp_block(h, g2, w1, w3, w2)
                self.paths["symm_mem"] = fused

            def traced(x, g1, wq, wk, wv, wo, g2, w1, w3, w2):
                xg = funcol.all_gather_tensor(rmsnorm(x, g1), 0, group)
                h = x + funcol.reduce_scatter_tensor(
                    sdpa_projected(xg @ wq, xg @ wk, xg @ wv, wo), "sum", 0,
                    group)
                return funcol_mlp_block(h, g2, w1, w3, w2)
            self.traced = traced
            self.compute = [lambda: rmsnorm(x, g1),
                            lambda: sdpa_projected(full @ wq, full @ wk,
                                                   full @ wv, wo),
                            lambda: x + x, lambda: rmsnorm(x, g2),
                            lambda: mlp(full, w1, w3, w2), lambda: x + x]
            self.comm = [lambda: all_gather(full, x), lambda: reduce_scatter(p),
                         lambda: all_gather(full, x), lambda: reduce_scatter(p)]
        else:  # sp_mlp
            x, g, w1, w3, w2 = args
            full = gathered(x)
            p = torch.empty(x.shape[0] * n, x.shape[1], device="cuda",
                            dtype=bf16)
            self.paths["sequential"] = lambda: eager_mlp_block(
                x, g, full, w1, w3, w2)
            if symm:
                self.paths["symm_mem"] = lambda: symm_mlp_block(
                    x, g, w1, w3, w2)
            self.traced = funcol_mlp_block
            self.compute = [lambda: rmsnorm(x, g), lambda: mlp(full, w1, w3, w2),
                            lambda: x + x]
            self.comm = [lambda: all_gather(full, x), lambda: reduce_scatter(p)]
        self.args = args

    def add_compiled(self, torch):
        compiled = torch.compile(self.traced, fullgraph=True)
        self.paths["compiled"] = lambda: compiled(*self.args)


# --- traces ----------------------------------------------------------------


def kind_of_kernel(name):
    low = name.lower()
    if "nccl" in low:
        return "collective"
    if "gemm" in low or "cutlass" in low or "xmma" in low or "matmul" in low:
        return "matmul"
    return "other"


def kind_of_model_op(op, lane):
    if "all_gather_matmul" in op or "matmul_reduce_scatter" in op:
        return "fused"
    if "comm" in lane:
        return "collective"
    if op in ("linalg.matmul", "linalg.batch_matmul") or "matmul" in op:
        return "matmul"
    return "other"


def measured_by_kind(trace_path, steps):
    """GPU time per kind of kernel in a torch.profiler Chrome trace, us per
    step."""
    with open(trace_path) as f:
        events = json.load(f).get("traceEvents", [])
    totals = {"matmul": 0.0, "collective": 0.0, "other": 0.0}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy",
                                                    "gpu_memset"):
            totals[kind_of_kernel(e.get("name", ""))] += e.get("dur", 0) / steps
    return totals


def modelled_by_kind(model_path):
    """Time per kind of op in the compiler's modelled timeline (waits, which
    are exposed communication, left out; "fused": all_gather_matmul and
    matmul_reduce_scatter, priced as their ring pipeline, whose kernels are
    matmuls and NCCL sends), us, and the modelled total."""
    with open(model_path) as f:
        trace = json.load(f)
    lanes = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    totals = {"matmul": 0.0, "collective": 0.0, "fused": 0.0, "other": 0.0}
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") == "exposed_comm":
            continue
        op = e.get("args", {}).get("op", e.get("name", ""))
        totals[kind_of_model_op(op, lanes.get(e.get("tid"), ""))] += e["dur"]
    functions = trace.get("otherData", {}).get("functions", [])
    total = sum(fn.get("total_us", 0) for fn in functions)
    return totals, total


def trace_and_compare(call, name, variant, directory, a, rank, step_ms):
    from common.artifact import profile
    suffix = ".seq" if variant == "seq" else ""
    path = os.path.join(a.trace, f"{name}{suffix}.rank{rank}.trace.json")
    profile(call, path)
    if rank != 0:
        return None
    model = os.path.join(directory, "model", f"{name}{suffix}.model.json")
    measured = measured_by_kind(path, 3)
    result = {"variant": variant, "measured_us": measured,
              "measured_step_us": step_ms * 1e3}
    if os.path.exists(model):
        modelled, total = modelled_by_kind(model)
        result.update(modelled_us=modelled, modelled_step_us=total,
                      model_trace=model)
    print(f"  {variant:4s} per step, us: " + ", ".join(
        f"{k} measured {v:.1f}" + (f" / modelled {result['modelled_us'][k]:.1f}"
                                   if "modelled_us" in result else "")
        for k, v in measured.items()) +
        (f", fused modelled {result['modelled_us']['fused']:.1f}"
         if result.get("modelled_us", {}).get("fused") else "") +
        f"; step measured {step_ms * 1e3:.1f}" +
        (f" / modelled {result['modelled_step_us']:.1f}"
         if "modelled_us" in result else ""), flush=True)
    return result


# --- main ------------------------------------------------------------------


def nccl_version(torch):
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def main():
    a = parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if a.list or a.dry_run:
        return dry_run(a)
    try:
        import torch
        import torch._inductor.config as inductor_config
        import torch.distributed as dist
    except ImportError as ex:
        sys.exit(f"gpu_overlap: needs PyTorch with CUDA ({ex}); --list and "
                 "--dry-run work without it")

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if a.single_gpu:
        # NCCL refuses two ranks on one GPU of one host; distinct host ids
        # over loopback make it accept them (PyTorch's communicators and
        # the runtime's, DTENSOR_SINGLE_GPU_TEST, alike).
        local = 0
        os.environ["NCCL_HOSTID"] = f"dtensor-gpu-overlap-{rank}"
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
        os.environ["DTENSOR_SINGLE_GPU_TEST"] = "1"
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    group = dist.group.WORLD
    torch.backends.cuda.matmul.allow_tf32 = False
    symm_ok = False
    if not a.no_symm_mem:
        try:
            import torch.distributed._symmetric_memory as symm
            if hasattr(symm, "enable_symm_mem_for_group"):
                symm.enable_symm_mem_for_group(group.group_name)
            symm_ok = hasattr(torch.ops, "symm_mem")
        except Exception as ex:  # noqa: BLE001
            if rank == 0:
                print("symm_mem unavailable:", str(ex)[:200])
    inductor_config._micro_pipeline_tp = True
    if a.trace:
        os.makedirs(a.trace, exist_ok=True)

    runtime = load_runtime(a.dir)
    cases = find_cases(a.dir, world, a.only)
    if not cases:
        sys.exit(f"gpu_overlap: no cases for {world} ranks in {a.dir}")
    ctx = stream = None

    def barrier():
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()

    def timed(fn, after=None):
        return median_ms(fn, a.iters, warmup=a.warmup, after=after,
                         before=barrier)

    rows = []
    for name, (case, T, H, F, n) in cases:
        fused = Artifact(os.path.join(a.dir, name + ".so"), runtime)
        seq = Artifact(os.path.join(a.dir, name + ".seq.so"), runtime)
        if ctx is None:
            # One runtime per process: the first artifact starts it and
            # registers the mesh @tp every case shares (mesh 0, [world]).
            ctx, stream = fused.start_runtime("gpu_overlap")
        row = dict(case=name, kind=case, tokens=T, hidden=H, ffn=F, ranks=n)
        with torch.cuda.stream(stream):
            args = make_inputs(case, T, H, F, n, rank, torch)
            paths = TorchPaths(case, args, n, group, torch, dist, symm_ok)
            if not a.no_compile:
                paths.add_compiled(torch)
            ref = paths.paths["sequential"]()
            torch.cuda.synchronize()
            ref = ref.clone()

            def check(call):
                call()
                torch.cuda.synchronize()
                got = as_tensor(call.outputs()[0], ref.shape, ref.dtype).float()
                want = ref.float()
                err = ((got - want).abs().max() /
                       want.abs().max().clamp_min(1e-30)).item()
                call.free()
                return err

            for key, art in (("ours", fused), ("ours_seq", seq)):
                call = art.prepare(args, [ref.shape])
                row[key + "_rel_err"] = check(call)
                torch.cuda.synchronize()
                runtime.dtensor_rt_cuda_peak_bytes(ctx, 1)
                row[key + "_ms"] = timed(call, after=call.free)
                torch.cuda.synchronize()
                row[key + "_peak_mib"] = runtime.dtensor_rt_cuda_peak_bytes(
                    ctx, 1) / 2**20
                if a.trace:
                    cmp = trace_and_compare(call, name,
                                            "fused" if key == "ours" else "seq",
                                            a.dir, a, rank, row[key + "_ms"])
                    if cmp:
                        row.setdefault("trace", []).append(cmp)
            for key, fn in paths.paths.items():
                try:
                    row[key + "_ms"] = timed(fn)
                except Exception as ex:  # noqa: BLE001
                    row[key + "_ms"] = float("nan")
                    if rank == 0:
                        print(f"{name}: {key} failed: {str(ex)[:300]}")
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            paths.paths["sequential"]()
            torch.cuda.synchronize()
            row["eager_peak_mib"] = (torch.cuda.max_memory_allocated() -
                                     base) / 2**20
            row["compute_ms"] = sum(timed(fn) for fn in paths.compute)
            row["comm_ms"] = sum(timed(fn) for fn in paths.comm)
        row["floor_ms"] = max(row["compute_ms"], row["comm_ms"])
        row["floor_ratio"] = row["floor_ms"] / row["ours_ms"]
        pytorch = [row.get(k + "_ms", float("nan"))
                   for k in ("sequential", "symm_mem", "compiled")]
        pytorch = [v for v in pytorch if v == v]
        row["best_pytorch_ms"] = min(pytorch)
        row["speedup"] = row["best_pytorch_ms"] / row["ours_ms"]
        row["vs_compiled"] = row.get("compiled_ms", float("nan")) / row["ours_ms"]
        row["peak_vs_seq"] = row["ours_peak_mib"] / max(row["ours_seq_peak_mib"], 1e-9)
        rows.append(row)
        if rank == 0:
            fmt = lambda k: f"{row.get(k + '_ms', float('nan')):7.3f}"  # noqa: E731
            print(f"{name:28s} ours {fmt('ours')} ({row['floor_ratio']:.2f}) "
                  f"seq {fmt('ours_seq')} | torch seq {fmt('sequential')} "
                  f"symm {fmt('symm_mem')} compiled {fmt('compiled')} | floor "
                  f"{row['floor_ms']:7.3f} (compute {row['compute_ms']:.3f}, "
                  f"comm {row['comm_ms']:.3f}) x{row['speedup']:.2f} | peak "
                  f"{row['ours_peak_mib']:.0f}/{row['ours_seq_peak_mib']:.0f}/"
                  f"{row['eager_peak_mib']:.0f} MiB | err "
                  f"{row['ours_rel_err']:.1e}/{row['ours_seq_rel_err']:.1e}",
                  flush=True)
        del args, paths, ref
        torch.cuda.empty_cache()
    if rank == 0 and a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(),
                       "ranks": world, "torch": torch.__version__,
                       "nccl": nccl_version(torch),
                       "rows": rows}, f, indent=1)
    barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
