"""python3 -m dtensor export|check ... (docs/frontend.md)."""
import argparse
import importlib
import json
import sys
import time

from ._emit import ExportError


def _load(spec):
    """'module:function' -> the function's result (a dict with 'module',
    'args', optionally 'kwargs', 'plan', 'mesh')."""
    mod, _, fn = spec.partition(":")
    if mod.endswith(".py"):
        import runpy
        ns = runpy.run_path(mod)
        return ns[fn or "model"]()
    return getattr(importlib.import_module(mod), fn or "model")()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m dtensor", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="export a module to DIR (program.mlir, plan.json, "
                       "arg<i>.npy, expected<i>.npy, manifest.json)")
    e.add_argument("spec", help="FILE.py:FUNCTION or package.module:FUNCTION returning "
                   "{'module': nn.Module, 'args': tuple, 'kwargs': dict, 'plan': dict, "
                   "'mesh': ...}")
    e.add_argument("-o", "--output", required=True, help="directory to write")
    e.add_argument("--mesh", help="mesh shape, e.g. 4 or 2,2 (default: the spec's, else 1)")
    e.add_argument("--no-plan", action="store_true", help="ignore the spec's plan")
    c = sub.add_parser("check", help="run an exported DIR on N CPU ranks and compare "
                       "with PyTorch eager's outputs")
    c.add_argument("dir")
    c.add_argument("-n", "--ranks", type=int, default=2)
    c.add_argument("--rtol", type=float, default=1e-4,
                   help="max|a-b|/max|b| allowed (default 1e-4)")
    c.add_argument("--tools-dir", help="where dtensor-opt and dtensor-run are")
    a = ap.parse_args(argv)
    from . import export
    if a.cmd == "export":
        spec = _load(a.spec)
        mesh = spec.get("mesh", 1)
        if a.mesh:
            mesh = tuple(int(x) for x in a.mesh.split(","))
        try:
            t0 = time.time()
            prog = export(spec["module"], spec["args"], spec.get("kwargs"), mesh=mesh,
                          plan=None if a.no_plan else spec.get("plan"))
            dt = time.time() - t0
        except ExportError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        prog.save(a.output)
        print(f"exported @{prog.entry} ({len(prog.input_names)} inputs, "
              f"{len(prog.param_names)} parameters and buffers, {len(prog.output_names)} "
              f"outputs) to {a.output} in {dt:.2f} s")
        return 0
    from .check import check
    return check(a.dir, a.ranks, a.rtol, a.tools_dir)


if __name__ == "__main__":
    sys.exit(main())
