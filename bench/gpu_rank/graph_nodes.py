#!/usr/bin/env python3
"""Host time of cuGraphLaunch by node type, on the GPU machine: PyTorch CUDA
graphs of 9 kernels (an in-place add over 256 MiB each, so the GPU stays
busy), alone, with 6 one-element kernels among them, with 6 4-byte memset
nodes among them (cuMemsetD8Async, as cuBLASLt and cuDNN zero a workspace
counter), and of 15 kernels. Each: median over 30 batches of the time per
replay of 5 replays, each batch after an untimed replay. Why the runtime
turns memset nodes into kernel nodes (lib/Target/CUDA/Runtime/Graph.cpp).
With --artifacts DIR (bench/gpu_rank/build.sh's), also each --cases
program's graph captured twice, with its memset nodes kept
(DTENSOR_RT_GRAPH_MEMSETS=keep) and replaced, the two launched in turns.

  python3 bench/gpu_rank/graph_nodes.py [--artifacts gpucarry/gpu-rank]
      [--cases layer_T4096_TP4,...] [--json out.json]
"""
import argparse
import ctypes
import json
import os
import re
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common.artifact import (Artifact, capture_graph,  # noqa: E402
                             launch_batch_us, load_runtime)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json")
    p.add_argument("--artifacts")
    p.add_argument("--cases", default="mlp_T4096_TP4,attn_T4096_TP4,"
                   "layer_T4096_TP4,layer_T8192_TP2")
    a = p.parse_args()
    cu = ctypes.CDLL("libcuda.so.1")
    cu.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte,
                                   ctypes.c_size_t, ctypes.c_void_p]
    big = torch.zeros(64 << 20, device="cuda")
    small = torch.zeros(1024, device="cuda", dtype=torch.int32)

    def build(pattern):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for node in pattern:
                    if node == "K":
                        big.add_(1)
                    elif node == "k":
                        small[:1].zero_()
                    else:
                        cu.cuMemsetD8Async(
                            small.data_ptr(), 0, 4,
                            ctypes.c_void_p(
                                torch.cuda.current_stream().cuda_stream))
        torch.cuda.synchronize()
        return g

    def host_us(g):
        for _ in range(3):
            g.replay()
        batches = [launch_batch_us(g.replay) for _ in range(30)]
        return sorted(batches)[len(batches) // 2]

    cases = [("9 kernels", "K" * 9),
             ("9 kernels + 6 one-element kernels", "kKkKkKkKkKkKKKK"),
             ("9 kernels + 6 memsets", "MKMKMKMKMKMKKKK"),
             ("15 kernels", "K" * 15)]
    results = {}
    print(torch.cuda.get_device_name(), f"PyTorch {torch.__version__}")
    for name, pattern in cases:
        results[name] = host_us(build(pattern))
        print(f"{name:36s} {results[name]:6.2f} us per replay", flush=True)
    programs = compiled(a) if a.artifacts else {}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "host_us": results,
                       "programs": programs}, f, indent=1)


def compiled(a):
    """Host µs per launch of each case's graph, memsets kept and replaced."""
    import gpu_rank
    for k, v in {"DTENSOR_RANK": "0", "DTENSOR_WORLD_SIZE": "1",
                 "DTENSOR_LOCAL_RANK": "0"}.items():
        os.environ.setdefault(k, v)
    rt = load_runtime(a.artifacts)
    ctx = None
    out = {}
    for name in a.cases.split(","):
        block, T, tp = re.fullmatch(r"(\w+?)_T(\d+)_TP(\d+)", name).groups()
        art = Artifact(os.path.join(a.artifacts, name + ".so"), rt)
        if ctx is None:
            ctx, stream = art.start_runtime("graph_nodes")
        with torch.cuda.stream(stream):
            args = gpu_rank.inputs(block, int(T), int(tp), torch.bfloat16)
            ref = gpu_rank.BLOCKS[block](*args)
            ref = list(ref) if isinstance(ref, tuple) else [ref]
            call = art.prepare(args, [r.shape for r in ref])
            call()
            torch.cuda.synchronize()
            call.free()
            graphs, nodes = {}, {}
            for mode in ("keep", "replace"):
                os.environ["DTENSOR_RT_GRAPH_MEMSETS"] = mode
                graphs[mode], _, text = capture_graph(rt, ctx, call)
                nodes[mode] = text.split(";")[0]
            os.environ.pop("DTENSOR_RT_GRAPH_MEMSETS")
            times = {"keep": [], "replace": []}
            for _ in range(30):
                for mode in ("keep", "replace"):
                    g = graphs[mode]
                    times[mode].append(launch_batch_us(
                        lambda: rt.dtensor_rt_graph_launch(ctx, g)))
            torch.cuda.synchronize()
            row = {}
            for mode in ("keep", "replace"):
                row[mode] = {"host_us": sorted(times[mode])[15],
                             "graph": nodes[mode]}
                rt.dtensor_rt_graph_destroy(ctx, graphs[mode])
            out[name] = row
            print(f"{name}: memsets kept {row['keep']['host_us']:6.2f} us "
                  f"({row['keep']['graph']}); replaced "
                  f"{row['replace']['host_us']:6.2f} us "
                  f"({row['replace']['graph']})", flush=True)
    return out


if __name__ == "__main__":
    main()
