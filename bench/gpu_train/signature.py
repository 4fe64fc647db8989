#!/usr/bin/env python3
"""What bench/gpu_train/build.sh records about each program it compiles,
in BUILD/build.json, for gpu_train.py (which runs on a machine without
LLVM or MLIR, and so cannot read the programs):

  signature.py params SRC.mlir FUNC
      the indices of FUNC's weights (arguments named w*, g*: what an
      optimizer updates; not the activations x, xg, rs), comma-separated:
      the `wrt` of dtensor-autodiff for a training step
  signature.py record BUILD.json NAME --kind grad|train --block B
      --tokens T --tp P --source SRC.mlir [--program P.mlir --entry E]
      [--wrt 1,2] [--status ok|failed --stage S --log L]
      adds artifact NAME to BUILD.json: the forward's arguments (names,
      shapes, types: from gen_rank.py's SRC.mlir, whose arguments are
      %<name>_arg) and results; with --program, the entry's signature as
      dtensor-autodiff / dtensor-train-steps wrote it: which result each
      seed argument seeds (`dtensor.cotangent`), which argument each
      result after the forward's is the gradient (or the updated value)
      of (`dtensor.grad_of`), `dtensor.forward_results`; the status, and
      for a failure the stage and the log's error lines
  signature.py header BUILD.json key=value ...
      sets top-level fields (commit, date, target, dtype, optimizer
      settings); values that parse as JSON are stored as such

The signature is read from the MLIR text of `func.func @E(...)`: the
arguments and results split at top-level commas, each one's tensor type
and `dtensor.*` integer attributes.
"""
import argparse
import json
import os
import re
import sys

ACTIVATIONS = {"x", "xg", "rs"}


def split_top(text):
    """`text` split at commas outside (), [], {} and <> (an `->` does not
    close a `<`)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c == "-" and text[i + 1:i + 2] == ">":
            i += 2
            continue
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def balanced(text, i):
    """The index just past the bracket group opening at text[i]."""
    pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
    stack = []
    while i < len(text):
        c = text[i]
        if c == "-" and text[i + 1:i + 2] == ">":
            i += 2
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    raise ValueError("unbalanced brackets")


TENSOR = re.compile(r"tensor<((?:\d+x)*)(bf16|f16|f32|f64)>")


def parse_value(text):
    """One argument or result: {name, shape, type, attrs}."""
    m = re.match(r"\s*%([\w$.-]+)\s*:\s*", text)
    name = None
    if m:
        name = m.group(1)
        text = text[m.end():]
    t = TENSOR.match(text.strip())
    if not t:
        raise ValueError(f"not a ranked float tensor: {text[:80]!r}")
    shape = [int(d) for d in t.group(1).split("x") if d]
    attrs = {k: int(v) for k, v in
             re.findall(r"(dtensor\.\w+)\s*=\s*(-?\d+)\s*:\s*i64", text)}
    return {"name": name, "shape": shape, "type": t.group(2), "attrs": attrs}


def signature(path, func):
    """(arguments, results, function attributes) of `func.func @func`."""
    with open(path) as f:
        text = f.read()
    m = re.search(r"func\.func\s+(?:\w+\s+)?@" + re.escape(func) + r"\(", text)
    if not m:
        raise ValueError(f"{path}: no func.func @{func}")
    open_paren = m.end() - 1
    close = balanced(text, open_paren)
    args = [parse_value(a) for a in split_top(text[open_paren + 1:close - 1])]
    rest = text[close:]
    arrow = re.match(r"\s*->\s*", rest)
    results = []
    after = rest
    if arrow:
        rest = rest[arrow.end():]
        if rest.startswith("("):
            end = balanced(rest, 0)
            results = [parse_value(r) for r in split_top(rest[1:end - 1])]
            after = rest[end:]
        else:
            # One result without attributes (MLIR prints a result with
            # attributes in parentheses).
            t = TENSOR.match(rest)
            if not t:
                raise ValueError(f"{path}: @{func}: unreadable result type")
            results = [parse_value(t.group(0))]
            after = rest[t.end():]
    fattrs = {}
    a = re.match(r"\s*attributes\s*", after)
    if a:
        group = after[a.end():balanced(after, a.end())]
        fattrs = {k: int(v) for k, v in
                  re.findall(r"(dtensor\.\w+)\s*=\s*(-?\d+)\s*:\s*i64", group)}
    return args, results, fattrs


def arg_name(a):
    """gen_rank.py names the arguments %<name>_arg."""
    n = a["name"] or ""
    return n[:-4] if n.endswith("_arg") else n


def params_of(path, func):
    args, _, _ = signature(path, func)
    return [i for i, a in enumerate(args) if arg_name(a) not in ACTIVATIONS]


def load(path):
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {"artifacts": {}}


def save(data, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def error_lines(log):
    """The `error:` lines of a log (else its last 3 lines), joined."""
    if not log or not os.path.exists(log):
        return ""
    with open(log, errors="replace") as f:
        lines = [line.rstrip() for line in f if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    # Without the source locations (`loc("/path/x.mlir":590:12): `).
    errors = [re.sub(r'loc\((?:"[^"]*"|[^()])*\):\s*', "", line)
              for line in errors]
    return " | ".join((errors or lines[-3:])[:4])[:1000]


def record(a):
    data = load(a.build)
    entry = {"kind": a.kind, "block": a.block, "tokens": a.tokens, "tp": a.tp,
             "file": a.name + ".so", "status": a.status}
    if a.stage:
        entry["stage"] = a.stage
    if a.status != "ok":
        entry["error"] = error_lines(a.log) or "(no log)"
    if a.log:
        entry["log"] = os.path.relpath(a.log, os.path.dirname(a.build) or ".")
    try:
        args, results, _ = signature(a.source, a.block)
        entry["args"] = [{"name": arg_name(x), "shape": x["shape"],
                          "type": x["type"]} for x in args]
        entry["results"] = [{"shape": x["shape"], "type": x["type"]}
                            for x in results]
    except (OSError, ValueError) as e:
        entry["status"] = "failed"
        entry.setdefault("stage", "signature")
        entry["error"] = f"{entry.get('error', '')} {e}".strip()
    if a.wrt:
        entry["wrt"] = [int(i) for i in a.wrt.split(",")]
    elif "args" in entry:
        entry["wrt"] = list(range(len(entry["args"])))
    if a.program and a.entry:
        entry["entry"] = a.entry
        try:
            pargs, presults, fattrs = signature(a.program, a.entry)
            seeds = [x["attrs"]["dtensor.cotangent"] for x in pargs
                     if "dtensor.cotangent" in x["attrs"]]
            nf = fattrs.get("dtensor.forward_results")
            if a.kind == "train":
                # dtensor-train-steps: the last step's forward results, then
                # the updated arguments (marked as the gradients were).
                nf = len([r for r in presults
                          if "dtensor.grad_of" not in r["attrs"]])
            if nf is None:
                raise ValueError(f"@{a.entry} has no dtensor.forward_results")
            entry["forward_results"] = nf
            entry["seeds"] = seeds
            entry["grad_of"] = [r["attrs"].get("dtensor.grad_of", -1)
                                for r in presults[nf:]]
            entry["program_args"] = [{"shape": x["shape"], "type": x["type"]}
                                     for x in pargs]
            entry["program_results"] = [{"shape": x["shape"], "type": x["type"]}
                                        for x in presults]
        except (OSError, ValueError) as e:
            if entry["status"] == "ok":
                entry["status"] = "failed"
                entry["stage"] = "signature"
                entry["error"] = str(e)
    data.setdefault("artifacts", {})[a.name] = entry
    save(data, a.build)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("params")
    p.add_argument("source")
    p.add_argument("func")
    r = sub.add_parser("record")
    r.add_argument("build")
    r.add_argument("name")
    r.add_argument("--kind", choices=["grad", "train"], required=True)
    r.add_argument("--block", required=True)
    r.add_argument("--tokens", type=int, required=True)
    r.add_argument("--tp", type=int, required=True)
    r.add_argument("--source", required=True)
    r.add_argument("--program", default="")
    r.add_argument("--entry", default="")
    r.add_argument("--wrt", default="")
    r.add_argument("--status", default="ok")
    r.add_argument("--stage", default="")
    r.add_argument("--log", default="")
    h = sub.add_parser("header")
    h.add_argument("build")
    h.add_argument("fields", nargs="*")
    a = ap.parse_args()
    if a.cmd == "params":
        try:
            print(",".join(str(i) for i in params_of(a.source, a.func)))
        except (OSError, ValueError) as e:
            sys.exit(f"signature.py: {e}")
    elif a.cmd == "record":
        record(a)
    else:
        data = load(a.build)
        for field in a.fields:
            key, _, value = field.partition("=")
            try:
                data[key] = json.loads(value)
            except ValueError:
                data[key] = value
        save(data, a.build)


if __name__ == "__main__":
    main()
