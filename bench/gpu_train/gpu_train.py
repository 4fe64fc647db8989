#!/usr/bin/env python3
"""Training benchmark on one GPU: the compiled forward + backward of each
per-rank TP block, and a training step of the layer, beside PyTorch eager
autograd and torch.compile, on the same weights, in one process; the
method of bench/gpu_rank (variants timed in turns, call by call).

Build here (no GPU), then run on the GPU machine (no LLVM/MLIR needed):

  bash bench/gpu_train/build.sh gpucarry/gpu-train
  python3 bench/gpu_train/gpu_train.py gpucarry/gpu-train --json train.json
  python3 bench/gpu_train/table.py train.json      # markdown for RESULTS.md

What build.sh compiles (dtensor-compile --target cuda), per case
(<block>_T<tokens>_TP<tp>: mlp, sp_mlp, attn, layer at 8192 tokens TP=2
and 4096 tokens TP=4, bf16, Llama-3-8B sizes, gen_rank.py's per-rank
programs), recorded with their signatures in DIR/build.json:
  <case>_grad   dtensor-autodiff's joint function: the forward's results,
                then the gradient of every argument (weights and
                activations), for one seed cotangent per result
  <case>_train  (layer, and mlp) one training step: forward, backward
                with respect to the weights (seeds of ones: loss =
                out.sum()), Adam from zero moments (dtensor-train-steps
                optimizer=adam unroll=1; it has no weight decay and no
                persistent optimizer state: every call is a first step),
                the updated weights returned
A case build.sh could not build is reported "not built: <stage>: <error>"
and PyTorch is still timed on it (--skip-missing: not at all).

Rows (kind fwd+bwd, one per <case>_grad; kind step, one per <case>_train):
  ours      the artifact called directly through its C interface, its
            results freed after each call (outside the timing)
  graph     the artifact captured once as a CUDA graph and replayed
            (--no-graph: skipped)
  eager     PyTorch eager: the block (bench/gpu_rank/gpu_rank.py's
            definition), then torch.autograd.grad of every argument with
            the same seeds (fwd+bwd); or zero_grad, forward,
            out.backward(ones), torch.optim.AdamW(fused=True,
            weight_decay=--weight-decay).step() (step)
  compile   the same with the block torch.compile'd (dynamic=False;
            AOTAutograd compiles forward and backward; the fused AdamW
            step is not compiled)
  sdpa      (attn, layer) PyTorch's causal scaled_dot_product_attention at
            the case's q/k/v shapes: forward alone, and forward + backward
            (sdpa bwd = their difference): the bar for our attention's
            backward (its kernels: --trace)
Times: ms per call, medians of CUDA-event timings of --rounds x --iters
calls, the variants taking turns call by call (order rotated per round),
on the artifact's compute stream (torch.cuda.ExternalStream). vs compile /
vs eager: median over calls of their time / our best variant's (ours or
graph, the lower median) time in the same turn; > 1 means we are faster.
Peak MiB: the most device memory one call holds beyond its inputs: ours,
the runtime's stream-ordered pool high-water mark (results included);
PyTorch, torch.cuda.max_memory_allocated during the call minus what was
allocated before it (outputs and gradients included), plus, for the
training step, the optimizer's state (our step allocates its moments in
the call).
Errors: max |a - b| / max |b| of each forward result and each gradient:
ours against eager, and torch.compile against eager for scale; with
--f32-ref (default) also ours and eager against PyTorch in float32 from the
same bf16 inputs. For the training step: the forward result and each
updated weight against PyTorch's first AdamW step (the weight decay our
step was compiled with, build.sh's WD, from fresh state: what our step
computes), and the update (new - old weight)
norm-wise, ||ours - theirs|| / ||theirs|| (the update is about
lr * sign(grad): a gradient element near zero rounded to the other sign
moves a weight by 2 lr, which a max-based error of weights or updates
shows alone; compile vs eager has the same noise, for scale).

  gpu_train.py DIR [--only mlp_T8192_TP2,layer] [--kinds grad,train]
               [--rounds 5] [--iters 10] [--no-compile] [--no-graph]
               [--json out.json] [--trace TRACEDIR]

Most of a run's time is torch.compile's (one compile per row, forward and
backward: minutes in all on an H200; --no-compile, or --only/--kinds to
split the run); the timed calls take seconds per row. Each row runs apart:
an error in one (a harness error, torch out of memory) is reported in its
row and the run goes on. The harness itself is checked without a GPU by
check_cpu.py (CPU artifacts of small programs against PyTorch, and this
script's main with the CUDA calls stood in for: --simulate).
"""
import argparse
import ctypes
import datetime
import faulthandler
import inspect
import json
import math
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "gpu_rank"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import gpu_rank  # noqa: E402  (the blocks in PyTorch, interleaved_ms)
from common.artifact import (Artifact, as_tensor, capture_graph,  # noqa: E402
                             launch_batch_us, load_runtime, median_ms, profile)

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16,
          "f32": torch.float32, "f64": torch.float64}
BLOCK_ORDER = {"mlp": 0, "sp_mlp": 1, "attn": 2, "layer": 3}
KIND_LABEL = {"grad": "fwd+bwd", "train": "step"}
# Where run_case puts its tensors; check_cpu.py --simulate sets "cpu".
DEVICE = "cuda"


# --- the case: inputs, seeds, references -----------------------------------

def load_build(directory):
    path = os.path.join(directory, "build.json")
    if not os.path.exists(path):
        sys.exit(f"gpu_train: no {path} (run bench/gpu_train/build.sh)")
    with open(path) as f:
        return json.load(f)


def rel_err(got, want):
    """max |got - want| / max |want| in float32; NaN if either has a NaN or
    an infinity where the other has not."""
    got, want = got.float(), want.float()
    if got.shape != want.shape:
        raise ValueError(f"shape {tuple(got.shape)} against {tuple(want.shape)}")
    if not torch.isfinite(got).all() and torch.isfinite(want).all():
        return float("nan")
    den = want.abs().max().clamp_min(1e-30)
    return ((got - want).abs().max() / den).item()


def rel_norm_err(got, want):
    """||got - want|| / ||want|| (2-norms, float32); NaN as rel_err."""
    got, want = got.float(), want.float()
    if got.shape != want.shape:
        raise ValueError(f"shape {tuple(got.shape)} against {tuple(want.shape)}")
    if not torch.isfinite(got).all() and torch.isfinite(want).all():
        return float("nan")
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def worst(errors):
    """The largest of `errors` (NaN if any is NaN)."""
    xs = list(errors)
    if any(math.isnan(x) for x in xs):
        return float("nan")
    return max(xs) if xs else float("nan")


class Case:
    """One artifact of build.json and what PyTorch needs to match it: the
    block, its inputs (seeded), the seed cotangents, the arguments
    differentiated, and how the artifact's results map to names."""

    def __init__(self, name, entry, device, seed=0):
        self.name, self.entry, self.device = name, entry, device
        self.kind, self.block = entry["kind"], entry["block"]
        self.case = name.rsplit("_", 1)[0]
        if "args" not in entry:
            raise ValueError(f"{name}: build.json has no signature "
                             f"({entry.get('error', '')})")
        self.fn = gpu_rank.BLOCKS[self.block]
        self.names = [a["name"] for a in entry["args"]]
        expected = list(inspect.signature(self.fn).parameters)
        if self.names != expected:
            raise ValueError(f"{name}: the program's arguments {self.names} "
                             f"are not gpu_rank.{self.block}'s {expected}")
        self.dtype = DTYPES[entry["args"][0]["type"]]
        self.wrt = list(entry["wrt"])
        self.nf = len(entry["results"])
        self.out_names = (["out"] if self.nf == 1 else
                          [f"out{i}" for i in range(self.nf)])
        gen = torch.Generator(device=device).manual_seed(seed)

        def draw(shape, kind):
            t = torch.randn(*shape, generator=gen, device=device)
            if kind == "gain":
                t = 1 + 0.1 * t
            elif kind == "weight":
                t = 0.02 * t
            return t.to(device=device, dtype=self.dtype)
        self.args = [draw(a["shape"], "gain" if a["name"].startswith("g")
                          else "weight" if a["name"].startswith("w")
                          else "activation") for a in entry["args"]]
        # fwd+bwd: random seeds; the training step seeds with ones.
        self.seeds = [draw(r["shape"], "activation") if self.kind == "grad"
                      else torch.ones(r["shape"], device=device,
                                      dtype=self.dtype)
                      for r in entry["results"]]
        # The artifact's seed arguments (which result each seeds) and
        # result order (which argument each later result belongs to); the
        # defaults where no program was written (PyTorch alone).
        self.seed_of = entry.get("seeds", list(range(self.nf))
                                 if self.kind == "grad" else [])
        self.grad_of = entry.get("grad_of", self.wrt)

    # The artifact's side.

    def validate(self, manifest):
        """Problems with running the artifact on these inputs: its
        signature against build.json's and these tensors'."""
        problems = []
        if sorted(self.grad_of) != sorted(self.wrt):
            problems.append(f"the program returns values of arguments "
                            f"{self.grad_of}, expected {self.wrt}")
        if self.kind == "train" and self.seed_of:
            problems.append(f"a training step with seed arguments {self.seed_of}")
        lay = manifest.get("layouts") or manifest.get("signature") or {}
        margs, mres = lay.get("args"), lay.get("results")
        if margs is None or mres is None:
            return problems + ["no argument/result shapes in the manifest"]
        inputs = self.ours_inputs()
        if [list(a["shape"]) for a in margs] != [list(t.shape) for t in inputs]:
            problems.append(f"argument shapes {[a['shape'] for a in margs]} "
                            f"against {[list(t.shape) for t in inputs]}")
        want = self.result_shapes()
        if [list(r["shape"]) for r in mres] != [list(s) for s in want]:
            problems.append(f"result shapes {[r['shape'] for r in mres]} "
                            f"against {[list(s) for s in want]}")
        types = {a.get("type") for a in margs + mres}
        mine = [k for k, v in DTYPES.items() if v == self.dtype]
        if types - set(mine):
            problems.append(f"element types {sorted(types)}, expected {mine}")
        return problems

    def ours_inputs(self):
        return self.args + [self.seeds[r] for r in self.seed_of]

    def result_shapes(self):
        return ([tuple(r["shape"]) for r in self.entry["results"]] +
                [tuple(self.args[i].shape) for i in self.grad_of])

    def result_names(self):
        pre = "d" if self.kind == "grad" else ""
        return self.out_names + [pre + self.names[i] for i in self.grad_of]

    def named(self, tensors):
        """The artifact's results by name (out..., then d<arg> or, for a
        training step, the updated <arg>)."""
        return dict(zip(self.result_names(), tensors))

    # PyTorch's side.

    def leaves(self, dtype=None, args=None):
        """Fresh leaf tensors of the inputs (in `dtype`), those in wrt
        requiring grad."""
        args = self.args if args is None else args
        return [a.detach().to(dtype or a.dtype).clone().requires_grad_(
            i in self.wrt) for i, a in enumerate(args)]

    def fwd_bwd(self, fn, leaves, seeds):
        """Forward results and the gradients of wrt (PyTorch autograd)."""
        outs = fn(*leaves)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        grads = torch.autograd.grad(outs, [leaves[i] for i in self.wrt],
                                    seeds, allow_unused=True,
                                    materialize_grads=True)
        return outs, grads

    def reference_grad(self, fn=None, dtype=None):
        """{name: tensor} of the forward results and gradients, by PyTorch
        (eager unless `fn`), in `dtype` (default the case's)."""
        fn = fn or self.fn
        leaves = self.leaves(dtype)
        seeds = [s.to(dtype or s.dtype) for s in self.seeds]
        outs, grads = self.fwd_bwd(fn, leaves, seeds)
        byarg = dict(zip(self.wrt, grads))
        res = dict(zip(self.out_names, (o.detach() for o in outs)))
        res.update({"d" + self.names[i]: byarg[i] for i in self.grad_of})
        return res

    def optimizer(self, params, opt, weight_decay):
        kw = dict(lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]),
                  eps=opt["eps"], weight_decay=weight_decay)
        if str(self.device).startswith("cuda"):
            kw["fused"] = True
        return torch.optim.AdamW(params, **kw)

    def reference_train(self, opt, fn=None):
        """{name: tensor}: the forward results and the weights after one
        AdamW step (the compiled step's weight decay, fresh state) with
        seeds of ones."""
        fn = fn or self.fn
        leaves = self.leaves()
        outs = fn(*leaves)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
        self.backward(outs)
        o = self.optimizer([leaves[i] for i in self.wrt], opt,
                           opt.get("weight_decay", 0.0))
        o.step()
        res = dict(zip(self.out_names, (x.detach() for x in outs)))
        res.update({self.names[i]: leaves[i].detach() for i in self.grad_of})
        return res

    def backward(self, outs):
        """out.backward(seed) for every result that depends on a weight
        (sp_mlp's x + rs does not: its seed contributes nothing)."""
        pairs = [(o, s) for o, s in zip(outs, self.seeds) if o.requires_grad]
        torch.autograd.backward([o for o, _ in pairs], [s for _, s in pairs])

    def train_step(self, fn, opt, weight_decay):
        """A training step for timing: (step(), optimizer): zero_grad,
        forward, backward with seeds of ones, AdamW step, on the case's
        own copies of the weights."""
        leaves = self.leaves()
        o = self.optimizer([leaves[i] for i in self.wrt], opt, weight_decay)

        def step():
            o.zero_grad(set_to_none=True)
            outs = fn(*leaves)
            outs = list(outs) if isinstance(outs, tuple) else [outs]
            self.backward(outs)
            o.step()
        return step, o

    def grad_step(self, fn):
        """forward + backward for timing, on leaves made once."""
        leaves = self.leaves()
        return lambda: self.fwd_bwd(fn, leaves, self.seeds)

    def errors(self, got, want, base=None):
        """{name: rel_err} over `want`'s names; with `base` (the weights
        before the step), also {name + " update": the norm-wise error of
        the change got - base}. Norm-wise: Adam's first update is about
        lr * sign(g), and a gradient element near zero that rounds to the
        other sign moves its weight by 2 lr; the max-based error of the
        change would show only the worst such element."""
        errs = {}
        for k, w in want.items():
            errs[k] = rel_err(got[k], w)
            if base is not None and k in base:
                errs[k + " update"] = rel_norm_err(
                    got[k].float() - base[k].float(),
                    w.float() - base[k].float())
        return errs


def result_tensor(desc, shape, dtype, device):
    """A tensor view (no copy) of an artifact's result descriptor: dense
    row-major, as the runtime allocates results (checked)."""
    shape = tuple(shape)
    strides, s = [], 1
    for d in reversed(shape):
        strides.insert(0, s)
        s *= d
    got_strides = [desc.strides[i] for i in range(len(shape))]
    got_sizes = [desc.sizes[i] for i in range(len(shape))]
    if got_sizes != list(shape):
        raise ValueError(f"result sizes {got_sizes}, expected {list(shape)}")
    if any(d > 1 and a != b for a, b, d in zip(got_strides, strides, shape)):
        raise ValueError(f"result strides {got_strides}, expected {strides}")
    if str(device).startswith("cuda"):
        return as_tensor(desc, shape, dtype)
    item = torch.empty((), dtype=dtype).element_size()
    n = max(1, math.prod(shape))
    buf = (ctypes.c_char * (n * item)).from_address(desc.aligned +
                                                    desc.offset * item)
    return torch.frombuffer(buf, dtype=dtype).view(shape)


def outputs_of(case, descs):
    return [result_tensor(d, s, case.dtype, case.device)
            for d, s in zip(descs, case.result_shapes())]


# --- one case on the GPU -----------------------------------------------------

def sdpa_fns(case):
    """(forward, forward + backward) of PyTorch's causal SDPA at the case's
    attention shapes, or None for blocks without attention."""
    if "wo" not in case.names:
        return None
    T = case.args[0].shape[0]
    wo = case.args[case.names.index("wo")]
    hh = wo.shape[0] // gpu_rank.D
    mk = lambda: torch.randn(1, hh, T, gpu_rank.D, device=DEVICE,
                             dtype=case.dtype, requires_grad=True)
    q, k, v = mk(), mk(), mk()
    do = torch.randn(1, hh, T, gpu_rank.D, device=DEVICE, dtype=case.dtype)

    def fwd():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def fwd_bwd():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.autograd.grad(o, (q, k, v), do)
    return fwd, fwd_bwd


def torch_peak_mib(fn, before=None, extra_bytes=0):
    """Device memory one call of fn holds beyond what was allocated before
    it (MiB), plus extra_bytes."""
    if before:
        before()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base + extra_bytes) / 2**20


def state_bytes(opt):
    return sum(t.numel() * t.element_size() for s in opt.state.values()
               for t in s.values() if torch.is_tensor(t))


T0 = time.monotonic()


def stage(name, what):
    """One line on stderr per stage of a case, with the seconds since the
    start: where a run stops, the last line says in what."""
    print(f"  [{time.monotonic() - T0:7.1f} s] {name}: {what}",
          file=sys.stderr, flush=True)


def run_case(name, entry, build, art, runtime, ctx, a):
    """Times one case; returns its row (also printed)."""
    case = Case(name, entry, DEVICE)
    row = dict(case=case.case, artifact=name, kind=KIND_LABEL[case.kind],
               block=case.block, tokens=entry["tokens"], tp=entry["tp"])
    opt = build.get("optimizer", {})
    if case.kind == "train":
        row["optimizer"] = dict(opt, torch_weight_decay=a.weight_decay)
    variants = {}
    call = None
    graph = None
    # PyTorch first: the references.
    base = None
    stage(name, "PyTorch reference")
    if case.kind == "grad":
        ref = case.reference_grad()
    else:
        base = {case.names[i]: case.args[i] for i in case.wrt}
        ref = case.reference_train(opt)
    # Ours.
    if art is not None:
        problems = case.validate(art.manifest)
        if problems:
            row["status"] = "harness error: " + "; ".join(problems)
            art = None
    if art is not None:
        stage(name, "ours: first call")
        call = art.prepare(case.ours_inputs(), case.result_shapes())
        call()
        torch.cuda.synchronize()
        got = case.named(outputs_of(case, call.outputs()))
        if case.kind == "grad":
            errs = case.errors(got, ref)
        else:
            errs = case.errors(got, ref, base)
        row["errors"] = {k: {"ours": v} for k, v in errs.items()}
        if case.block in ("attn", "layer"):
            note = ctypes.create_string_buffer(4096)
            path = runtime.dtensor_rt_attention_last(
                ctx, note, ctypes.c_int64(len(note)))
            row["attention_core"] = (
                f"{ {1: 'cudnn', 0: 'kernel'}.get(path, 'none') }: "
                f"{note.value.decode(errors='replace')}")
        call.free()
        torch.cuda.synchronize()
        runtime.dtensor_rt_cuda_peak_bytes(ctx, 1)
        median_ms(call, 3, after=call.free)
        torch.cuda.synchronize()
        row["ours_peak_mib"] = runtime.dtensor_rt_cuda_peak_bytes(ctx, 1) / 2**20
        variants["ours"] = (call, call.free)
        if not a.no_graph:
            stage(name, "ours: CUDA graph")
            graph, row["graph_nodes"], text = capture_graph(runtime, ctx, call)
            graph_descs = [type(d).from_buffer_copy(d) for d in call.outputs()]
            launch = lambda: runtime.dtensor_rt_graph_launch(ctx, graph)
            median_ms(launch, 3)
            batches = sorted(launch_batch_us(launch) for _ in range(10))
            row["graph_host_us"] = batches[len(batches) // 2]
            torch.cuda.synchronize()
            gots = case.named(outputs_of(case, graph_descs))
            row["graph_max_err"] = worst(case.errors(gots, ref).values())
            variants["graph"] = (launch, None)
    else:
        row.setdefault("status", "not built: " + (
            f"{entry.get('stage', '?')}: {entry.get('error', '')}"
            if entry.get("status") != "ok" else "artifact missing"))
        row["errors"] = {k: {} for k in ref}
    # PyTorch: eager and compiled.
    stage(name, "eager")
    errs_of = row["errors"]
    if case.kind == "grad":
        eager = case.grad_step(case.fn)
        row["eager_peak_mib"] = torch_peak_mib(eager)
        variants["eager"] = (eager, None)
        if not a.no_f32_ref:
            ref32 = case.reference_grad(dtype=torch.float32)
            for k, v in case.errors(ref, ref32).items():
                errs_of[k]["eager_f32"] = v
            if call is not None:
                for k, v in case.errors(got_again(case, call), ref32).items():
                    errs_of[k]["ours_f32"] = v
            del ref32
    else:
        eager, eager_opt = case.train_step(case.fn, opt, a.weight_decay)
        eager()
        row["eager_peak_mib"] = torch_peak_mib(
            eager, before=lambda: eager_opt.zero_grad(set_to_none=True),
            extra_bytes=state_bytes(eager_opt))
        variants["eager"] = (eager, None)
    if not a.no_compile:
        stage(name, "torch.compile")
        cfn = torch.compile(case.fn, dynamic=False)
        if case.kind == "grad":
            compiled = case.grad_step(cfn)
            compiled()
            cref = case.reference_grad(fn=cfn)
            row["compile_peak_mib"] = torch_peak_mib(compiled)
        else:
            compiled, copt = case.train_step(cfn, opt, a.weight_decay)
            compiled()
            cref = case.reference_train(opt, fn=cfn)
            row["compile_peak_mib"] = torch_peak_mib(
                compiled, before=lambda: copt.zero_grad(set_to_none=True),
                extra_bytes=state_bytes(copt))
        for k, v in case.errors(cref, ref, base if case.kind == "train"
                                else None).items():
            errs_of.setdefault(k, {})["compile"] = v
        del cref
        variants["compile"] = (compiled, None)
    sdpa = sdpa_fns(case) if case.kind == "grad" else None
    if sdpa:
        variants["sdpa_fwd"] = (sdpa[0], None)
        variants["sdpa_fwd_bwd"] = (sdpa[1], None)
    del ref
    # Timing, in turns.
    stage(name, "timing " + ", ".join(variants))
    times, rounds = gpu_rank.interleaved_ms(variants, a.rounds, a.iters)
    if graph is not None:
        runtime.dtensor_rt_graph_destroy(ctx, graph)
        torch.cuda.synchronize()
    for k in ("ours", "graph", "eager", "compile"):
        row[k + "_ms"] = times.get(k, float("nan"))
    if sdpa:
        row["sdpa_fwd_ms"] = times["sdpa_fwd"]
        row["sdpa_fwd_bwd_ms"] = times["sdpa_fwd_bwd"]
        row["sdpa_bwd_ms"] = times["sdpa_fwd_bwd"] - times["sdpa_fwd"]
    mine_key = None
    if "ours" in times:
        mine_key = "ours"
        if "graph" in times and times["graph"] < times["ours"]:
            mine_key = "graph"
        row["best"] = mine_key
        row["best_ms"] = times[mine_key]

    def paired(theirs):
        if mine_key is None or theirs not in rounds:
            return float("nan")
        xs = sorted(t / o for t, o in zip(rounds[theirs], rounds[mine_key]))
        return xs[len(xs) // 2]
    row["vs_eager"] = paired("eager")
    row["vs_compile"] = paired("compile")
    row["rounds_ms"] = {k: v for k, v in rounds.items()}
    for who in ("ours", "compile", "ours_f32", "eager_f32"):
        vals = [e[who] for e in errs_of.values() if who in e]
        if vals:
            row[f"max_err_{who}"] = worst(vals)
    row.setdefault("status", "ok")
    if a.trace and call is not None:
        print(f"  {name}: our kernels")
        profile(call, os.path.join(a.trace, name + ".trace.json"))
        if "compile" in variants:
            print(f"  {name}: torch.compile's kernels")
            profile(variants["compile"][0],
                    os.path.join(a.trace, name + ".compile.trace.json"),
                    free=lambda: None)
    return row


def got_again(case, call):
    """The artifact's results of a fresh call, copied (for a second
    comparison after the first call's results were freed)."""
    call()
    torch.cuda.synchronize()
    got = {k: v.clone() for k, v in
           case.named(outputs_of(case, call.outputs())).items()}
    call.free()
    return got


# --- output ------------------------------------------------------------------

def fmt(v, spec=".3f"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return format(v, spec)


def print_row(row):
    head = f"{row['case']:16s} {row['kind']:8s}"
    if row.get("status", "ok") != "ok":
        print(f"{head} ours: {row['status']}")
    speed = (f"ours {fmt(row.get('ours_ms'))} graph {fmt(row.get('graph_ms'))}"
             f" (host {fmt(row.get('graph_host_us'), '.1f')} us) eager "
             f"{fmt(row.get('eager_ms'))} compile {fmt(row.get('compile_ms'))}"
             f" | vs compile x{fmt(row.get('vs_compile'))} vs eager "
             f"x{fmt(row.get('vs_eager'))}")
    if "sdpa_bwd_ms" in row:
        speed += (f" | sdpa fwd {fmt(row['sdpa_fwd_ms'])} bwd "
                  f"{fmt(row['sdpa_bwd_ms'])}")
    print(f"{head} {speed}")
    print(f"{'':25s} peak MiB ours {fmt(row.get('ours_peak_mib'), '.0f')} "
          f"eager {fmt(row.get('eager_peak_mib'), '.0f')} compile "
          f"{fmt(row.get('compile_peak_mib'), '.0f')}")
    errs = row.get("errors", {})
    for who, label in (("ours", "ours vs eager"),
                       ("compile", "compile vs eager"),
                       ("ours_f32", "ours vs f32"),
                       ("eager_f32", "eager vs f32")):
        mine = {k: v[who] for k, v in errs.items() if who in v}
        if mine:
            print(f"{'':25s} err {label}: max {worst(mine.values()):.1e}: " +
                  ", ".join(f"{k} {v:.1e}" for k, v in mine.items()))
    if "attention_core" in row:
        print(f"{'':25s} attention core (forward): {row['attention_core']}")
    sys.stdout.flush()


# --- main --------------------------------------------------------------------

def load_table():
    """bench/gpu_train/table.py (by path: bench/gpu_rank has a table.py
    too, earlier on sys.path)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "gpu_train_table", os.path.join(HERE, "table.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def select(build, a):
    """The artifacts to run, in table order: fwd+bwd rows, then steps;
    blocks mlp, sp_mlp, attn, layer; more tokens first."""
    only = [s for s in a.only.split(",") if s]
    kinds = set(a.kinds.split(","))
    out = []
    for name, e in build.get("artifacts", {}).items():
        if e.get("kind") not in kinds:
            continue
        if only and not any(name == s or name.startswith(s + "_") or
                            e.get("block") == s for s in only):
            continue
        out.append((name, e))
    out.sort(key=lambda ne: (ne[1]["kind"] != "grad",
                             BLOCK_ORDER.get(ne[1]["block"], 9),
                             -ne[1]["tokens"], ne[1]["tp"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="build.sh's output folder")
    ap.add_argument("--only", default="",
                    help="comma-separated cases (mlp_T8192_TP2), artifacts "
                         "(mlp_T8192_TP2_grad) or blocks (mlp)")
    ap.add_argument("--kinds", default="grad,train",
                    help="grad (fwd+bwd rows) and/or train (step rows)")
    ap.add_argument("--iters", type=int, default=10,
                    help="timed calls per variant and round")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds of --iters calls per variant, taken in turns")
    ap.add_argument("--weight-decay", type=float, default=0.01,
                    help="PyTorch AdamW's weight decay in the timed steps "
                         "(ours has none; the numerics compare with 0)")
    ap.add_argument("--no-compile", action="store_true",
                    help="skip torch.compile (saves its compile time)")
    ap.add_argument("--no-graph", action="store_true",
                    help="skip the CUDA graph of our artifacts")
    ap.add_argument("--no-f32-ref", action="store_true",
                    help="skip the float32 PyTorch reference")
    ap.add_argument("--skip-missing", action="store_true",
                    help="skip cases build.sh could not build (default: "
                         "time PyTorch on them)")
    ap.add_argument("--watchdog", type=float, default=0,
                    help="every this many seconds, print every thread's "
                         "Python stack to stderr (find where a run hangs)")
    ap.add_argument("--json", default="")
    ap.add_argument("--trace", default="",
                    help="profile 3 calls of ours and of torch.compile per "
                         "case: Chrome traces in this folder, kernel times "
                         "on stdout")
    a = ap.parse_args()
    faulthandler.enable()  # a crash prints the Python stack it happened in
    if a.watchdog > 0:
        faulthandler.dump_traceback_later(a.watchdog, repeat=True)
    build = load_build(a.dir)
    cases = select(build, a)
    if not cases:
        sys.exit("gpu_train: no artifact in build.json matches --only/--kinds")
    if DEVICE == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_train: no CUDA device (the CPU check is check_cpu.py)")
    if a.trace:
        os.makedirs(a.trace, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    for k, v in {"DTENSOR_RANK": "0", "DTENSOR_WORLD_SIZE": "1",
                 "DTENSOR_LOCAL_RANK": "0"}.items():
        os.environ.setdefault(k, v)
    torch.cuda.init()
    print(f"gpu_train: build {build.get('commit')} "
          f"{'(dirty) ' if build.get('dirty') else ''}of {build.get('date')}, "
          f"{len(cases)} cases, {torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}", flush=True)

    def present(name, e):
        return (e.get("status") == "ok" and
                os.path.exists(os.path.join(a.dir, e["file"])))
    runtime = ctx = stream = None
    arts = {}
    for name, e in cases:
        if present(name, e):
            if runtime is None:
                runtime = load_runtime(a.dir)
            arts[name] = Artifact(os.path.join(a.dir, e["file"]), runtime)
            if ctx is None:
                ctx, stream = arts[name].start_runtime("gpu_train")
    if not arts:
        print("gpu_train: no artifact was built: PyTorch only", flush=True)
    if stream is None:
        stream = torch.cuda.current_stream()
    rows = []
    for name, e in cases:
        art = arts.get(name)
        if art is None:
            why = (f"{e.get('stage', '?')}: {e.get('error', '')}"
                   if e.get("status") != "ok" else
                   f"{e['file']} missing from {a.dir}")
            print(f"{name}: not built: {why}", flush=True)
            if a.skip_missing:
                continue
        try:
            with torch.cuda.stream(stream):
                row = run_case(name, e, build, art, runtime, ctx, a)
        except Exception as ex:  # one case's failure does not end the run
            traceback.print_exc()
            row = dict(case=name.rsplit("_", 1)[0], artifact=name,
                       kind=KIND_LABEL.get(e.get("kind"), "?"),
                       block=e.get("block"), tokens=e.get("tokens"),
                       tp=e.get("tp"),
                       status=f"harness error: {type(ex).__name__}: "
                       f"{str(ex).strip().splitlines()[0] if str(ex).strip() else ''}")
        rows.append(row)
        print_row(row)
        torch._dynamo.reset()
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    data = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "run_date": datetime.datetime.now(datetime.timezone.utc)
            .strftime("%Y-%m-%d %H:%M UTC"),
            "build": {k: v for k, v in build.items() if k != "artifacts"},
            "options": vars(a), "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(data, f, indent=1)
    print()
    load_table().render(data)


if __name__ == "__main__":
    main()
