"""Tensor-parallel plans -> the compiler's plan (dtensor-apply-tp-plan's
JSON, docs/tp-plans.md).

Accepted:
- the dict `parallelize_module` takes: fnmatch keys ("layers.*.attn.wq")
  -> a ParallelStyle of torch.distributed.tensor.parallel (ColwiseParallel,
  RowwiseParallel, SequenceParallel, PrepareModuleInput,
  PrepareModuleOutput), or a list of them;
- the strings of Hugging Face's `tp_plan` / `base_model_tp_plan`
  ("colwise", "rowwise", ...), mapped to the styles transformers itself
  registers for them (transformers/distributed/tensor_parallel.py), or
  refused with an ExportError naming the string.
"""
import fnmatch

from ._emit import ExportError

# Hugging Face plan strings -> (style, fields), as transformers registers
# them (ALL_PARALLEL_STYLES).
HF_STYLES = {
    "colwise": ("ColwiseParallel", {"input_layouts": ["R"], "output_layouts": ["S(-1)"]}),
    "colwise_rep": ("ColwiseParallel", {"input_layouts": ["R"], "output_layouts": ["R"]}),
    "colwise_gather_output": ("ColwiseParallel", {"input_layouts": ["R"], "output_layouts": ["R"]}),
    "rowwise": ("RowwiseParallel", {"input_layouts": ["S(-1)"], "output_layouts": ["R"]}),
    "rowwise_rep": ("RowwiseParallel", {"input_layouts": ["R"], "output_layouts": ["R"]}),
    "rowwise_split_input": ("RowwiseParallel", {"input_layouts": ["R"], "output_layouts": ["R"]}),
    "embedding_rowwise": ("RowwiseParallel", {"input_layouts": ["R"], "output_layouts": ["R"]}),
    "embedding_colwise": ("ColwiseParallel", {"input_layouts": ["R"], "output_layouts": ["R"]}),
    "sequence_parallel": ("SequenceParallel", {}),
    # Every rank keeps the whole parameter: what the compiler does anyway.
    "replicate": (None, {}),
}
HF_REFUSED = {
    "local_colwise": "a local (non-DTensor) column shard whose consumers see per-rank shapes",
    "local_rowwise": "a local (non-DTensor) row shard whose consumers see per-rank shapes",
    "local": "per-rank local tensors",
    "local_packed_rowwise": "per-rank local tensors",
    "gather": "a gather of a local shard the global view never has",
    "packed_colwise": "a packed (fused gate/up) weight sharded per half",
    "packed_rowwise": "a packed (fused gate/up) weight sharded per half",
    "isolated": "an isolated per-rank submesh",
    "moe_tp_experts": "expert parallelism of a fused experts module",
    "moe_identity_expert": "expert parallelism of a fused experts module",
    "ep_router": "expert parallelism",
    "grouped_gemm": "expert parallelism",
    "mla_kv_a_proj": "a model-specific hook",
    "all_reduce": "a hook that all-reduces a module's local output",
    "replicated_with_grad_allreduce": "a gradient hook",
    "local_params": "per-rank local parameters",
}


def placement(p):
    """A torch placement (Shard, Replicate, Partial) or a string -> the
    plan's placement string."""
    if p is None:
        return None
    if isinstance(p, str):
        return p
    name = type(p).__name__
    if name == "Shard":
        return f"S({p.dim})"
    if name == "Replicate":
        return "R"
    if name == "Partial":
        return f"P({getattr(p, 'reduce_op', 'sum')})"
    raise ExportError(f"tp plan: unsupported placement {p!r} ({name})")


def _layouts(ls):
    if ls is None:
        return None
    if not isinstance(ls, (tuple, list)):
        ls = (ls,)
    return [placement(p) for p in ls]


def style_json(style, key):
    """One ParallelStyle object (or a dict already in the plan's form) ->
    the plan's style object."""
    if isinstance(style, dict):
        return style
    name = type(style).__name__
    d = {"style": name}
    if name in ("ColwiseParallel", "RowwiseParallel"):
        d["input_layouts"] = _layouts(style.input_layouts)
        d["output_layouts"] = _layouts(style.output_layouts)
    elif name == "SequenceParallel":
        (shard,) = style.sequence_sharding
        d["sequence_dim"] = shard.dim
    elif name == "PrepareModuleInput":
        if getattr(style, "input_kwarg_layouts", None) or \
                getattr(style, "desired_input_kwarg_layouts", None):
            raise ExportError(f"tp plan: '{key}': PrepareModuleInput with keyword "
                              "inputs is not supported (a function's operands are positional)")
        d["input_layouts"] = _layouts(style.input_layouts)
        d["desired_input_layouts"] = _layouts(style.desired_input_layouts)
    elif name == "PrepareModuleOutput":
        d["output_layouts"] = _layouts(style.output_layouts)
        d["desired_output_layouts"] = _layouts(style.desired_output_layouts)
    else:
        raise ExportError(f"tp plan: '{key}': unsupported parallel style {name} "
                          "(supported: ColwiseParallel, RowwiseParallel, SequenceParallel, "
                          "PrepareModuleInput, PrepareModuleOutput and Hugging Face's "
                          "plan strings)")
    if hasattr(style, "use_local_output"):
        d["use_local_output"] = bool(style.use_local_output)
    return d


def hf_style_json(s, key):
    if s in HF_STYLES:
        name, fields = HF_STYLES[s]
        if name is None:
            return None
        return dict({"style": name}, **fields)
    if s in HF_REFUSED:
        raise ExportError(f"tp plan: '{key}': Hugging Face style '{s}' is not supported: "
                          f"{HF_REFUSED[s]}")
    raise ExportError(f"tp plan: '{key}': unknown Hugging Face style '{s}' "
                      f"(mapped: {', '.join(sorted(HF_STYLES))})")


def _matches(key, names):
    parts = key.split(".")
    for n in names:
        segs = n.split(".")
        if len(segs) == len(parts) and all(fnmatch.fnmatchcase(s, p) for s, p in zip(segs, parts)):
            return True
    return False


def to_plan_json(plan, module_names, mesh_name, mesh_dim, hf_prefix=None):
    """The compiler's plan document for `plan` on `module_names` (the
    modules the program's ops belong to). Hugging Face keys relative to the
    base model (`base_model_tp_plan`) are prefixed with `hf_prefix` where
    only that matches."""
    out = {}
    for key, style in plan.items():
        styles = style if isinstance(style, (list, tuple)) else [style]
        entries = []
        for s in styles:
            j = hf_style_json(s, key) if isinstance(s, str) else style_json(s, key)
            if j is not None:
                entries.append(j)
        if not entries:
            continue
        k = key
        if not _matches(k, module_names) and hf_prefix and \
                _matches(f"{hf_prefix}.{k}", module_names):
            k = f"{hf_prefix}.{k}"
        if not _matches(k, module_names):
            raise ExportError(f"tp plan: key '{key}' matches no module of the exported "
                              "program (a module with no ops, or a misspelt name)")
        out[k] = entries[0] if len(entries) == 1 else entries
    doc = {"mesh": mesh_name, "plan": out}
    if mesh_dim is not None:
        doc["mesh_dim"] = mesh_dim
    return doc
