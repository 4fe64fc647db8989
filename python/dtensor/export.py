"""dtensor.export: nn.Module -> Program (MLIR text, entry, names, plan)."""
import json
import os

import numpy as np
import torch

from ._emit import ExportError, emit_program
from .plan import to_plan_json


def _decompositions():
    """Core ATen, but scaled_dot_product_attention kept whole: it is emitted
    as the attention chain the compiler fuses (its decomposition would hide
    the causal mask in a materialized tensor)."""
    table = torch.export.default_decompositions()
    del table[torch.ops.aten.scaled_dot_product_attention.default]
    return table


def _npy_array(t):
    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()  # .npy has no bf16: as f32 (what dtensor-run reads)
    return t.numpy()


class Program:
    """An exported program.

    text: the MLIR module (a `dtensor.mesh` and `func.func @entry`);
    entry: the function's name; input_names: the user inputs (the first
    arguments); param_names: the parameters and buffers (the arguments after
    them, marked `dtensor.param`), in that order; output_names: the
    results; plan: the compiler's plan document (dtensor-apply-tp-plan's
    JSON) or None; mesh: the mesh shape; args: the argument tensors (inputs,
    weights) in argument order; expected: PyTorch eager's outputs."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def save(self, directory):
        """Writes program.mlir, plan.json (with a plan), arg<i>.npy (the
        i-th argument: inputs, then the module's weights), expected<i>.npy
        (PyTorch eager's i-th output) and manifest.json (the names)."""
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, "program.mlir"), "w") as f:
            f.write(self.text)
        if self.plan is not None:
            with open(os.path.join(directory, "plan.json"), "w") as f:
                json.dump(self.plan, f, indent=1)
                f.write("\n")
        for i, a in enumerate(self.args):
            np.save(os.path.join(directory, f"arg{i}.npy"), _npy_array(a))
        for i, o in enumerate(self.expected):
            np.save(os.path.join(directory, f"expected{i}.npy"), _npy_array(o))
        with open(os.path.join(directory, "manifest.json"), "w") as f:
            json.dump({"entry": self.entry, "inputs": self.input_names,
                       "params": self.param_names, "outputs": self.output_names,
                       "mesh": list(self.mesh)}, f, indent=1)
            f.write("\n")


def _mesh(mesh):
    """mesh: an int, a tuple of ints, or a dict name -> size. Returns
    (shape, names)."""
    if isinstance(mesh, int):
        return (mesh,), ("tp",)
    if isinstance(mesh, dict):
        return tuple(mesh.values()), tuple(mesh.keys())
    mesh = tuple(mesh)
    names = ("tp",) if len(mesh) == 1 else tuple(f"d{i}" for i in range(len(mesh) - 1)) + ("tp",)
    return mesh, names


def export(module, args, kwargs=None, *, mesh=1, plan=None, mesh_dim=None,
           entry="forward", hf_prefix=None):
    """Exports `module` called on `args`/`kwargs` (example inputs: their
    shapes and dtypes are the program's) to the compiler's global view.

    mesh: the device mesh (4, (2, 2) or {"dp": 2, "tp": 2}); plan: a
    `parallelize_module`-style dict or a Hugging Face tp_plan (module path
    patterns -> styles), applied along `mesh_dim` (default: the mesh's
    "tp" dim, else its last). Raises ExportError for an op or plan the
    exporter does not support."""
    kwargs = dict(kwargs or {})
    module = module.eval()
    shape, names = _mesh(mesh)
    with torch.no_grad():
        expected = module(*args, **kwargs)
    flat_expected = [t for t in torch.utils._pytree.tree_leaves(expected)
                     if isinstance(t, torch.Tensor)]
    ep = torch.export.export(module, tuple(args), kwargs=kwargs, strict=False)
    ep = ep.run_decompositions(_decompositions())
    sym = "tp" if len(shape) == 1 else "mesh"
    mesh_line = (f"dtensor.mesh @{sym} shape = [{', '.join(map(str, shape))}] "
                 f"names = [{', '.join(repr(n).replace(chr(39), chr(34)) for n in names)}]")
    # Without a plan every input is replicated (propagation lays out the
    # rest), so that the program runs as it is.
    replicated = f"#dtensor.layout<@{sym}, [{', '.join(['R'] * len(shape))}]>"
    text, input_names, param_names, output_names = emit_program(
        ep, entry, mesh_line, None if plan is not None else replicated)
    # The argument tensors, in the function's order.
    state = dict(module.named_parameters(remove_duplicate=False))
    state.update(dict(module.named_buffers(remove_duplicate=False)))
    flat_inputs = {}
    user_specs = [s for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    flat_args = torch.utils._pytree.tree_leaves((tuple(args), kwargs))
    for spec, value in zip(user_specs, flat_args):
        flat_inputs[spec.arg.name] = value
    arg_tensors = [flat_inputs[n] for n in input_names] + [state[p] for p in param_names]
    if len(flat_expected) != len(output_names):
        raise ExportError("the module's outputs do not match the exported program's")
    plan_doc = None
    if plan is not None:
        modules = set()
        for line in text.splitlines():
            i = line.find('dtensor.module = "')
            if i >= 0:
                path = line[i + 18:line.index('"', i + 18)]
                parts = path.split(".")
                modules.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
        if mesh_dim is None:
            mesh_dim = names.index("tp") if "tp" in names else len(shape) - 1
        if hf_prefix is None:
            hf_prefix = getattr(module, "base_model_prefix", None)
        plan_doc = to_plan_json(plan, modules, sym, mesh_dim if len(shape) > 1 else None,
                                hf_prefix)
    return Program(text=text, entry=entry, input_names=input_names,
                   param_names=param_names, output_names=output_names,
                   plan=plan_doc, mesh=shape, mesh_names=names,
                   args=arg_tensors, expected=flat_expected, exported=ep)
