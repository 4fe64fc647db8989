"""Runs an exported program (Program.save's directory) on N CPU ranks with
the module's own weights and inputs and compares every output with PyTorch
eager's: `python3 -m dtensor check DIR -n N`. A thin wrapper over
dtensor-opt (the plan) and dtensor-run (--input, --work-dir)."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np


def find_tool(name, tools_dir=None):
    for d in [tools_dir, os.environ.get("DTENSOR_TOOLS_DIR")]:
        if d and os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    here = os.path.dirname(os.path.abspath(__file__))
    p = os.path.join(here, "..", "..", "build", "bin", name)
    if os.path.exists(p):
        return os.path.abspath(p)
    p = shutil.which(name)
    if p:
        return p
    raise FileNotFoundError(f"{name} not found (set DTENSOR_TOOLS_DIR or --tools-dir)")


def check(directory, ranks, rtol, tools_dir=None, out=sys.stdout):
    """Returns 0 when every output is within rtol (max|a-b|/max|b|) of
    PyTorch's, 1 on a mismatch; raises on a tool failure."""
    directory = os.path.abspath(directory)
    manifest = json.load(open(os.path.join(directory, "manifest.json")))
    program = os.path.join(directory, "program.mlir")
    if os.path.exists(os.path.join(directory, "plan.json")):
        planned = os.path.join(directory, "planned.mlir")
        subprocess.run([find_tool("dtensor-opt", tools_dir), program,
                        f"--dtensor-apply-tp-plan=plan={os.path.join(directory, 'plan.json')}",
                        "-o", planned], check=True)
        program = planned
    nargs = len(manifest["inputs"]) + len(manifest["params"])
    work = os.path.join(directory, f"run{ranks}")
    cmd = [find_tool("dtensor-run", tools_dir), program, "-n", str(ranks),
           "--work-dir", work, "--rtol", str(rtol)]
    for i in range(nargs):
        cmd += ["--input", f"{i}={os.path.join(directory, f'arg{i}.npy')}"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out.write(r.stdout)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"dtensor-run failed ({r.returncode})")
    status = 0 if r.returncode == 0 else 1
    for i, name in enumerate(manifest["outputs"]):
        a = np.load(os.path.join(work, f"out{i}.npy")).astype(np.float64)
        b = np.load(os.path.join(directory, f"expected{i}.npy")).astype(np.float64)
        if a.shape != b.shape:
            out.write(f"output {i} ({name}): shape {a.shape}, PyTorch's {b.shape} MISMATCH\n")
            status = 1
            continue
        err = float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
        ok = err < rtol
        out.write(f"output {i} ({name}) vs PyTorch eager on {ranks} ranks: max relative "
                  f"error {err:.3e} {'<' if ok else '>='} {rtol:g} {'ok' if ok else 'MISMATCH'}\n")
        status |= 0 if ok else 1
    return status
