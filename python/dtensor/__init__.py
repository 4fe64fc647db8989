"""dtensor's PyTorch frontend: export an nn.Module, example inputs, a mesh
and a tensor-parallel plan to the compiler's global-view MLIR program
(docs/frontend.md).

    prog = dtensor.export(model, (ids,), mesh=4, plan=model.tp_plan)
    prog.save("out/")      # program.mlir, plan.json, weights, inputs, eager outputs
"""
from ._emit import ExportError
from .export import Program, export

__all__ = ["export", "Program", "ExportError"]
