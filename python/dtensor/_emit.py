"""FX graph (core ATen, from torch.export) -> MLIR 22 text of the dtensor
compiler's global view: func + linalg + tensor + arith + math.

Values are kept in a *physical* layout that may differ from their logical
(PyTorch) shape, so that permutes, unsqueezes, expands and keepdim
reductions cost nothing: a `Val` is an MLIR tensor (`pshape`) plus, per
logical dim, the physical dim that holds it (`lmap`, None for a dim the
physical tensor does not have: a unit dim or a broadcast). Elementwise ops
read any layout through their indexing maps and write the layout of their
first full-sized operand; contractions read their operands through their
maps (a Linear's weight stays `[out, in]`, attention reads q, k, v as
`[batch, seq, heads, dim]`). A value is materialized in its logical layout
(`linalg.transpose`, a broadcast, `tensor.expand_shape`) only where an op
needs it so.
"""
import math
import operator
import re
import struct

import numpy as np
import torch

aten = torch.ops.aten


class ExportError(Exception):
    """An op or a plan the exporter does not support; the message names the
    ATen op and the user's source line."""


DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.bfloat16: "bf16",
    torch.float16: "f16", torch.int64: "i64", torch.int32: "i32",
    torch.int16: "i16", torch.int8: "i8", torch.uint8: "i8", torch.bool: "i1",
}
FLOATS = {"f32", "f64", "bf16", "f16"}


def mlir_type(dtype):
    if dtype not in DTYPES:
        raise ExportError(f"unsupported dtype {dtype}")
    return DTYPES[dtype]


def ttype(shape, t):
    return "tensor<" + "".join(f"{d}x" for d in shape) + t + ">"


def source_line(node):
    """The innermost frame of the node's stack trace outside torch itself
    (the user's or the model library's line), as 'file:line: code'."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in \S+\n\s*(.*)', trace)
    if not frames:
        return "<no source line>"
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    f, line, code = user[-1]
    return f"{f}:{line}: {code.strip()}"


def float_hex(value, t):
    """An exact MLIR literal of `value` in float type `t` (hex bits)."""
    if t == "f64":
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if t == "f32":
        return "0x%08X" % bits
    if t == "bf16":
        return "0x%04X" % (torch.tensor(value, dtype=torch.bfloat16)
                           .view(torch.int16).item() & 0xFFFF)
    if t == "f16":
        return "0x%04X" % (np.float16(value).view(np.uint16).item())
    raise ExportError(f"not a float type: {t}")


def scalar_const(value, t):
    if t in FLOATS:
        return f"{float_hex(float(value), t)} : {t}"
    if t == "i1":
        return f"{'true' if value else 'false'}"
    return f"{int(value)} : {t}"


class Val:
    """A tensor: MLIR value `name` of physical shape `pshape`; logical
    shape `shape`, logical dim i held by physical dim lmap[i] (None: not
    held; the dim is a unit dim or a broadcast). Physical dims that no
    logical dim maps to have size 1."""

    def __init__(self, name, pshape, t, shape, lmap):
        self.name, self.pshape, self.t = name, tuple(pshape), t
        self.shape, self.lmap = tuple(shape), list(lmap)

    @property
    def ptype(self):
        return ttype(self.pshape, self.t)

    def is_identity(self):
        return self.pshape == self.shape and self.lmap == list(
            range(len(self.shape)))

    def is_exact(self):
        """Every logical dim held by its own physical dim of its size, every
        physical dim held."""
        held = [p for p in self.lmap if p is not None]
        return (len(held) == len(self.shape) == len(self.pshape) and
                sorted(held) == list(range(len(self.pshape))) and
                all(self.pshape[p] == s for p, s in zip(self.lmap, self.shape)))

    def squeezable(self):
        """Every logical dim of size > 1 is held by a physical dim of its
        size (no broadcast to materialize)."""
        for l, s in enumerate(self.shape):
            if s != 1 and (self.lmap[l] is None or self.pshape[self.lmap[l]] != s):
                return False
        return True


def reshape_groups(src, dst):
    """Groups of equal product between two lists of sizes > 1: [(i0, i1,
    j0, j1)] meaning src[i0:i1] <-> dst[j0:j1]."""
    groups, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        i0, j0 = i, j
        if i >= len(src) or j >= len(dst):
            return None
        a, b = src[i], dst[j]
        i, j = i + 1, j + 1
        while a != b:
            if a < b:
                if i >= len(src):
                    return None
                a *= src[i]
                i += 1
            else:
                if j >= len(dst):
                    return None
                b *= dst[j]
                j += 1
        groups.append((i0, i, j0, j))
    return groups


class Body:
    """The scalar region of a linalg.generic."""

    def __init__(self, em):
        self.em, self.lines, self.n = em, [], 0

    def fresh(self):
        self.n += 1
        return f"%s{self.n}"

    def op(self, text):
        r = self.fresh()
        self.lines.append(f"    {r} = {text}")
        return r

    def const(self, value, t):
        return self.op(f"arith.constant {scalar_const(value, t)}" if t != "i1"
                       else f"arith.constant {scalar_const(value, t)}")

    def cast(self, v, src, dst):
        if src == dst:
            return v
        if src in FLOATS and dst in FLOATS:
            wider = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
            if src in ("bf16", "f16") and dst in ("bf16", "f16"):
                v = self.op(f"arith.extf {v} : {src} to f32")
                return self.op(f"arith.truncf {v} : f32 to {dst}")
            op = "extf" if wider[dst] > wider[src] else "truncf"
            return self.op(f"arith.{op} {v} : {src} to {dst}")
        if src == "i1" and dst in FLOATS:
            return self.op(f"arith.uitofp {v} : i1 to {dst}")
        if src in FLOATS and dst == "i1":
            z = self.const(0.0, src)
            return self.op(f"arith.cmpf une, {v}, {z} : {src}")
        if dst == "i1":
            z = self.const(0, src)
            return self.op(f"arith.cmpi ne, {v}, {z} : {src}")
        if src in FLOATS:
            return self.op(f"arith.fptosi {v} : {src} to {dst}")
        if dst in FLOATS:
            return self.op(f"arith.sitofp {v} : {src} to {dst}")
        bits = lambda t: int(t[1:])
        if src == "i1":
            return self.op(f"arith.extui {v} : i1 to {dst}")
        op = "extsi" if bits(dst) > bits(src) else "trunci"
        return self.op(f"arith.{op} {v} : {src} to {dst}")


def compute_type(t):
    """The type PyTorch computes an elementwise op of type t in on CPU."""
    return "f32" if t in ("bf16", "f16") else t


def torch_dtype_of(x):
    if isinstance(x, torch.fx.Node):
        return x.meta["val"].dtype
    if isinstance(x, bool):
        return torch.bool
    if isinstance(x, int):
        return torch.int64
    return torch.float32


def promote(args):
    """torch's result type of tensors and Python scalars, as MLIR type."""
    tensors = [a for a in args if isinstance(a, torch.fx.Node)]
    scalars = [a for a in args if not isinstance(a, torch.fx.Node)]
    dt = None
    for a in tensors:
        d = a.meta["val"].dtype
        dt = d if dt is None else torch.promote_types(dt, d)
    for s in scalars:
        if dt is None:
            dt = torch_dtype_of(s)
        elif isinstance(s, float) and not dt.is_floating_point:
            dt = torch.float32
        elif isinstance(s, int) and not isinstance(s, bool) and dt == torch.bool:
            dt = torch.int64
    return mlir_type(dt)


# Elementwise ops: name -> fn(body, args (scalar SSA values in `ct`), ct,
# node) -> (result, its type).
def _arith(fop, iop):
    def f(b, a, ct, node):
        op = fop if ct in FLOATS else iop
        return b.op(f"arith.{op} {a[0]}, {a[1]} : {ct}"), ct
    return f


def _alpha(fop, iop):
    def f(b, a, ct, node):
        y = a[1]
        alpha = node.kwargs.get("alpha", 1)
        if alpha != 1:
            c = b.const(alpha, ct)
            y = b.op(f"arith.{'mulf' if ct in FLOATS else 'muli'} {y}, {c} : {ct}")
        op = fop if ct in FLOATS else iop
        return b.op(f"arith.{op} {a[0]}, {y} : {ct}"), ct
    return f


def _unary_math(name):
    def f(b, a, ct, node):
        return b.op(f"math.{name} {a[0]} : {ct}"), ct
    return f


def _neg(b, a, ct, node):
    if ct in FLOATS:
        return b.op(f"arith.negf {a[0]} : {ct}"), ct
    z = b.const(0, ct)
    return b.op(f"arith.subi {z}, {a[0]} : {ct}"), ct


def _sigmoid(b, a, ct, node):
    one = b.const(1.0, ct)
    n = b.op(f"arith.negf {a[0]} : {ct}")
    e = b.op(f"math.exp {n} : {ct}")
    d = b.op(f"arith.addf {e}, {one} : {ct}")
    return b.op(f"arith.divf {one}, {d} : {ct}"), ct


def _reciprocal(b, a, ct, node):
    one = b.const(1.0, ct)
    return b.op(f"arith.divf {one}, {a[0]} : {ct}"), ct


def _div(b, a, ct, node):
    mode = node.kwargs.get("rounding_mode")
    if ct not in FLOATS:
        raise ExportError("integer division")
    r = b.op(f"arith.divf {a[0]}, {a[1]} : {ct}")
    if mode == "floor":
        r = b.op(f"math.floor {r} : {ct}")
    elif mode == "trunc":
        r = b.op(f"math.trunc {r} : {ct}")
    return r, ct


def _pow_scalar(b, a, ct, node):
    e = node.args[1]
    if e == 2:
        return b.op(f"arith.mulf {a[0]}, {a[0]} : {ct}"), ct
    if e == 0.5:
        return b.op(f"math.sqrt {a[0]} : {ct}"), ct
    if e == 1:
        return a[0], ct
    if e == 3:
        sq = b.op(f"arith.mulf {a[0]}, {a[0]} : {ct}")
        return b.op(f"arith.mulf {sq}, {a[0]} : {ct}"), ct
    return b.op(f"math.powf {a[0]}, {a[1]} : {ct}"), ct


def _cmp(fpred, ipred):
    def f(b, a, ct, node):
        if ct in FLOATS:
            return b.op(f"arith.cmpf {fpred}, {a[0]}, {a[1]} : {ct}"), "i1"
        return b.op(f"arith.cmpi {ipred}, {a[0]}, {a[1]} : {ct}"), "i1"
    return f


def _minmax(fop, iop):
    def f(b, a, ct, node):
        return b.op(f"arith.{fop if ct in FLOATS else iop} {a[0]}, {a[1]} : {ct}"), ct
    return f


def _where(b, a, ct, node):
    return b.op(f"arith.select {a[0]}, {a[1]}, {a[2]} : {ct}"), ct


def _logical(op):
    def f(b, a, ct, node):
        return b.op(f"arith.{op} {a[0]}, {a[1]} : i1"), "i1"
    return f


def _logical_not(b, a, ct, node):
    t = b.const(True, "i1")
    return b.op(f"arith.xori {a[0]}, {t} : i1"), "i1"


def _identity(b, a, ct, node):
    return a[0], ct


def _gelu(b, a, ct, node):
    x = a[0]
    half = b.const(0.5, ct)
    one = b.const(1.0, ct)
    if node.kwargs.get("approximate", "none") == "tanh":
        c = b.const(math.sqrt(2.0 / math.pi), ct)
        k = b.const(0.044715, ct)
        x3 = b.op(f"arith.mulf {x}, {x} : {ct}")
        x3 = b.op(f"arith.mulf {x3}, {x} : {ct}")
        inner = b.op(f"arith.mulf {x3}, {k} : {ct}")
        inner = b.op(f"arith.addf {x}, {inner} : {ct}")
        inner = b.op(f"arith.mulf {inner}, {c} : {ct}")
        t = b.op(f"math.tanh {inner} : {ct}")
    else:
        r = b.const(1.0 / math.sqrt(2.0), ct)
        s = b.op(f"arith.mulf {x}, {r} : {ct}")
        t = b.op(f"math.erf {s} : {ct}")
    t = b.op(f"arith.addf {t}, {one} : {ct}")
    h = b.op(f"arith.mulf {x}, {half} : {ct}")
    return b.op(f"arith.mulf {h}, {t} : {ct}"), ct


def _clamp(b, a, ct, node):
    x = a[0]
    lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
    hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    if lo is not None:
        c = b.const(lo, ct)
        x = b.op(f"arith.{'maximumf' if ct in FLOATS else 'maxsi'} {x}, {c} : {ct}")
    if hi is not None:
        c = b.const(hi, ct)
        x = b.op(f"arith.{'minimumf' if ct in FLOATS else 'minsi'} {x}, {c} : {ct}")
    return x, ct


def _relu(b, a, ct, node):
    if ct in FLOATS:
        z = b.const(0.0, ct)
        return b.op(f"arith.maximumf {a[0]}, {z} : {ct}"), ct
    z = b.const(0, ct)
    return b.op(f"arith.maxsi {a[0]}, {z} : {ct}"), ct


def _silu(b, a, ct, node):
    s, _ = _sigmoid(b, a, ct, node)
    return b.op(f"arith.mulf {a[0]}, {s} : {ct}"), ct


ELEMENTWISE = {
    aten.relu.default: _relu,
    aten.silu.default: _silu,
    aten.add.Tensor: _alpha("addf", "addi"),
    aten.add.Scalar: _alpha("addf", "addi"),
    aten.sub.Tensor: _alpha("subf", "subi"),
    aten.sub.Scalar: _alpha("subf", "subi"),
    aten.rsub.Scalar: None,  # handled by argument swap below
    aten.mul.Tensor: _arith("mulf", "muli"),
    aten.mul.Scalar: _arith("mulf", "muli"),
    aten.div.Tensor: _div,
    aten.div.Scalar: _div,
    aten.div.Tensor_mode: _div,
    aten.neg.default: _neg,
    aten.exp.default: _unary_math("exp"),
    aten.log.default: _unary_math("log"),
    aten.sqrt.default: _unary_math("sqrt"),
    aten.rsqrt.default: _unary_math("rsqrt"),
    aten.sin.default: _unary_math("sin"),
    aten.cos.default: _unary_math("cos"),
    aten.tanh.default: _unary_math("tanh"),
    aten.erf.default: _unary_math("erf"),
    aten.abs.default: _unary_math("absf"),
    aten.sigmoid.default: _sigmoid,
    aten.reciprocal.default: _reciprocal,
    aten.pow.Tensor_Scalar: _pow_scalar,
    aten.pow.Tensor_Tensor: lambda b, a, ct, n: (b.op(f"math.powf {a[0]}, {a[1]} : {ct}"), ct),
    aten.maximum.default: _minmax("maximumf", "maxsi"),
    aten.minimum.default: _minmax("minimumf", "minsi"),
    aten.clamp.default: _clamp,
    aten.where.self: _where,
    aten.eq.Tensor: _cmp("oeq", "eq"), aten.eq.Scalar: _cmp("oeq", "eq"),
    aten.ne.Tensor: _cmp("une", "ne"), aten.ne.Scalar: _cmp("une", "ne"),
    aten.lt.Tensor: _cmp("olt", "slt"), aten.lt.Scalar: _cmp("olt", "slt"),
    aten.le.Tensor: _cmp("ole", "sle"), aten.le.Scalar: _cmp("ole", "sle"),
    aten.gt.Tensor: _cmp("ogt", "sgt"), aten.gt.Scalar: _cmp("ogt", "sgt"),
    aten.ge.Tensor: _cmp("oge", "sge"), aten.ge.Scalar: _cmp("oge", "sge"),
    aten.logical_and.default: _logical("andi"),
    aten.logical_or.default: _logical("ori"),
    aten.bitwise_and.Tensor: _logical("andi"),
    aten.bitwise_or.Tensor: _logical("ori"),
    aten.logical_not.default: _logical_not,
    aten.bitwise_not.default: _logical_not,
    aten.gelu.default: _gelu,
    aten._to_copy.default: _identity,
}
# Ops that are the value itself (SSA values are immutable).
IDENTITY = {aten.clone.default, aten.alias.default, aten.detach.default,
            aten.lift_fresh_copy.default, aten.contiguous.default}
CMP_OPS = {k for k, v in ELEMENTWISE.items()
           if k.__name__.split(".")[0] in ("eq", "ne", "lt", "le", "gt", "ge")}
BOOL_OPS = {aten.logical_and.default, aten.logical_or.default,
            aten.logical_not.default, aten.bitwise_and.Tensor,
            aten.bitwise_or.Tensor, aten.bitwise_not.default}
SKIP = {aten._assert_tensor_metadata.default, aten._assert_scalar.default,
        torch.ops.aten.sym_constrain_range_for_size.default}


class Emitter:
    def __init__(self):
        self.lines = []
        self.n = 0
        self.module = None  # dtensor.module of the ops being emitted
        self.consts = {}

    # -- text ---------------------------------------------------------------
    def fresh(self, base="v"):
        self.n += 1
        return f"%{base}{self.n}"

    def emit(self, line):
        self.lines.append("  " + line)

    def attr(self):
        return f'{{dtensor.module = "{self.module}"}}' if self.module else ""

    def gattrs(self):
        return f' attrs = {{dtensor.module = "{self.module}"}}' if self.module else ""

    def empty(self, shape, t):
        e = self.fresh("e")
        self.emit(f"{e} = tensor.empty() : {ttype(shape, t)}")
        return e

    def fill(self, shape, t, value):
        key = (tuple(shape), t, value)
        c = self.fresh("c")
        self.emit(f"{c} = arith.constant {scalar_const(value, t)}")
        e = self.empty(shape, t)
        f = self.fresh("f")
        self.emit(f"{f} = linalg.fill ins({c} : {t}) outs({e} : {ttype(shape, t)}) -> {ttype(shape, t)}")
        return f

    # -- constants ----------------------------------------------------------
    def constant(self, tensor):
        tensor = tensor.detach().contiguous()
        t = mlir_type(tensor.dtype)
        shape = tuple(tensor.shape)
        c = self.fresh("cst")
        if tensor.numel() == 1 or bool((tensor == tensor.reshape(-1)[0]).all()):
            v = tensor.reshape(-1)[0].item()
            lit = ("true" if v else "false") if t == "i1" else (
                float_hex(float(v), t) if t in FLOATS else str(int(v)))
            self.emit(f"{c} = arith.constant dense<{lit}> : {ttype(shape, t)}")
        elif t == "i1":
            vals = ", ".join("true" if v else "false"
                             for v in tensor.reshape(-1).tolist())
            self.emit(f"{c} = arith.constant dense<[{vals}]> : tensor<{tensor.numel()}xi1>")
            return self.reshape(Val(c, (tensor.numel(),), t, (tensor.numel(),), [0]), shape)
        else:
            if tensor.dtype == torch.bfloat16:
                raw = tensor.view(torch.int16).numpy().tobytes()
            else:
                raw = tensor.numpy().tobytes()
            self.emit(f'{c} = arith.constant dense<"0x{raw.hex().upper()}"> : {ttype(shape, t)}')
        return Val(c, shape, t, shape, range(len(shape)))

    # -- layouts ------------------------------------------------------------
    def materialize(self, v):
        """v in its logical layout."""
        if v.is_identity():
            return v
        shape, t = v.shape, v.t
        if v.is_exact():
            e = self.empty(shape, t)
            r = self.fresh("tr")
            self.emit(f"{r} = linalg.transpose ins({v.name} : {v.ptype}) outs({e} : {ttype(shape, t)}) permutation = [{', '.join(map(str, v.lmap))}] {self.attr()}")
            return Val(r, shape, t, shape, range(len(shape)))
        held = [p for p in v.lmap if p is not None]
        if (v.squeezable() and held == sorted(held) and
                all(s == 1 or v.lmap[l] is not None for l, s in enumerate(shape))):
            # Only unit dims to add or remove: a reshape.
            return self.reshape(v, shape, force_identity=True)
        # A broadcast (and transpose) by a generic.
        loops = len(shape)
        m_in = self.input_map(v, list(range(loops)), shape, loops)
        m_out = f"affine_map<({self.dims(loops)}) -> ({self.dims(loops)})>"
        e = self.empty(shape, t)
        r = self.fresh("bc")
        its = ", ".join(['"parallel"'] * loops)
        self.emit(f"{r} = linalg.generic {{indexing_maps = [{m_in}, {m_out}], iterator_types = [{its}]}} ins({v.name} : {v.ptype}) outs({e} : {ttype(shape, t)}){self.gattrs()} {{")
        self.emit(f"^bb0(%a: {t}, %o: {t}):")
        self.emit(f"  linalg.yield %a : {t}")
        self.emit(f"}} -> {ttype(shape, t)}")
        return Val(r, shape, t, shape, range(len(shape)))

    def exact(self, v):
        """v with every logical dim held by a physical dim of its size; unit
        dims are inserted physically next to the dim before them, so the
        physical order of the others is kept."""
        if v.is_exact():
            return v
        held = [p for p in v.lmap if p is not None]
        if (v.squeezable() and sorted(held) == list(range(len(v.pshape))) and
                all(v.shape[l] == 1 or v.pshape[p] == v.shape[l]
                    for l, p in enumerate(v.lmap) if p is not None)):
            # Physical position of each logical dim: held dims keep theirs,
            # a unit dim goes right after the dim before it.
            keys = {}
            for l, p in enumerate(v.lmap):
                if p is not None:
                    keys[l] = (p, 0, l)
                else:
                    keys[l] = (keys[l - 1][0] if l else -1, 1, l)
            order = sorted(range(len(v.shape)), key=lambda l: keys[l])
            pshape = [v.shape[l] for l in order]
            groups, cur = [], []
            for i, l in enumerate(order):
                cur.append(i)
                if v.lmap[l] is not None:
                    groups.append(cur)
                    cur = []
            if cur:
                if groups:
                    groups[-1] += cur
                else:
                    groups = []
            ra = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"
            r = self.fresh("ex")
            self.emit(f"{r} = tensor.expand_shape {v.name} {ra} output_shape [{', '.join(map(str, pshape))}] {self.attr()} : {v.ptype} into {ttype(pshape, v.t)}")
            pos = {l: i for i, l in enumerate(order)}
            return Val(r, pshape, v.t, v.shape, [pos[l] for l in range(len(v.shape))])
        return self.materialize(v)

    def realize(self, v):
        """v with its broadcast dims materialized in place: each right
        after the physical dim of the logical dim before it, the physical
        order of the others kept (GQA's repeated k/v heads stay next to
        their kv head)."""
        if v.squeezable():
            return v
        keys = {}
        for l, s in enumerate(v.shape):
            if s == 1:
                continue
            p = v.lmap[l]
            if p is not None and v.pshape[p] == s:
                keys[l] = (p, 0, l)
            else:
                prev = [q for q in range(l) if q in keys and keys[q][1] == 0]
                keys[l] = (keys[prev[-1]][0] if prev else -1, 1, l)
        order = sorted(keys, key=lambda l: keys[l])
        return self.elementwise([v], v.shape, v.t, lambda b, a: (a[0], v.t), [v.t],
                                order=order)

    @staticmethod
    def dims(n):
        return ", ".join(f"d{i}" for i in range(n))

    def input_map(self, v, loop_of, out_shape, loops):
        """The indexing map of v as an elementwise operand: logical dim l of
        v is output logical dim l + (rank difference), read at loop
        loop_of[that dim]; physical dims of size 1 at 0."""
        off = len(out_shape) - len(v.shape)
        exprs = []
        for k, size in enumerate(v.pshape):
            ls = [l for l, p in enumerate(v.lmap) if p == k]
            if ls and size == 1 and out_shape[ls[0] + off] == 1 and \
                    (ls[0] + off) in loop_of:
                exprs.append(f"d{loop_of[ls[0] + off]}")  # a unit dim kept
            elif size == 1 or not ls:
                exprs.append("0")
            else:
                exprs.append(f"d{loop_of[ls[0] + off]}")
        return f"affine_map<({self.dims(loops)}) -> ({', '.join(exprs)})>"

    def squeeze_physical(self, v):
        """v without its physical unit dims (collapsed away)."""
        if all(s != 1 for s in v.pshape):
            return v
        keep = [k for k, s in enumerate(v.pshape) if s != 1]
        groups, cur = [], []
        for k in range(len(v.pshape)):
            cur.append(k)
            if v.pshape[k] != 1:
                groups.append(cur)
                cur = []
        if cur:
            if groups:
                groups[-1] += cur
        newshape = tuple(v.pshape[k] for k in keep)
        r = self.fresh("sq")
        reassoc = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"
        self.emit(f"{r} = tensor.collapse_shape {v.name} {reassoc} {self.attr()} : {v.ptype} into {ttype(newshape, v.t)}")
        newpos = {k: i for i, k in enumerate(keep)}
        lmap = [newpos.get(p) if p is not None else None for p in v.lmap]
        return Val(r, newshape, v.t, v.shape, lmap)

    def reshape(self, v, shape, force_identity=False):
        """view/reshape to `shape`, in the physical layout where the merged
        and split dims are adjacent there, else after materializing."""
        shape = tuple(shape)
        v = self.realize(v)
        src = [l for l, s in enumerate(v.shape) if s != 1]
        dst = [l for l, s in enumerate(shape) if s != 1]
        groups = reshape_groups([v.shape[l] for l in src], [shape[l] for l in dst])
        if groups is None:
            raise ExportError(f"cannot reshape {v.shape} to {shape}")
        ok = True
        for i0, i1, _, _ in groups:
            ps = [v.lmap[src[i]] for i in range(i0, i1)]
            if ps != list(range(ps[0], ps[0] + len(ps))):
                ok = False
        if not ok:
            v = self.materialize(v)
        v = self.squeeze_physical(v)
        # Physical positions are now 0..len(src)-1 for the src dims.
        order = sorted(groups, key=lambda g: v.lmap[src[g[0]]])
        cshape, creassoc, eshape, ereassoc = [], [], [], []
        lmap = [None] * len(shape)
        for gi, (i0, i1, j0, j1) in enumerate(order):
            creassoc.append([v.lmap[src[i]] for i in range(i0, i1)])
            cshape.append(math.prod(v.shape[src[i]] for i in range(i0, i1)))
            grp = []
            for j in range(j0, j1):
                lmap[dst[j]] = len(eshape)
                grp.append(len(eshape))
                eshape.append(shape[dst[j]])
            ereassoc.append(grp)
        name = v.name
        if any(len(g) > 1 for g in creassoc):
            r = self.fresh("cl")
            ra = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in creassoc) + "]"
            self.emit(f"{r} = tensor.collapse_shape {name} {ra} {self.attr()} : {v.ptype} into {ttype(cshape, v.t)}")
            name = r
        if any(len(g) > 1 for g in ereassoc):
            r = self.fresh("ex")
            ra = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in ereassoc) + "]"
            self.emit(f"{r} = tensor.expand_shape {name} {ra} output_shape [{', '.join(map(str, eshape))}] {self.attr()} : {ttype(cshape, v.t)} into {ttype(eshape, v.t)}")
            name = r
        out = Val(name, eshape, v.t, shape, lmap)
        if force_identity and not out.is_identity():
            # Add the unit dims back physically.
            if out.is_identity():
                return out
            r = self.fresh("ex")
            groups2, cur = [], []
            for l, s in enumerate(shape):
                cur.append(l)
                if s != 1:
                    groups2.append(cur)
                    cur = []
            if cur:
                if groups2:
                    groups2[-1] += cur
            if not eshape:
                ra = "[]"
            else:
                ra = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups2) + "]"
            self.emit(f"{r} = tensor.expand_shape {name} {ra} output_shape [{', '.join(map(str, shape))}] {self.attr()} : {ttype(eshape, v.t)} into {ttype(shape, v.t)}")
            return Val(r, shape, v.t, shape, range(len(shape)))
        return out

    # -- elementwise --------------------------------------------------------
    def elementwise(self, inputs, out_shape, out_t, body_fn, in_types=None, order=None):
        """inputs: Vals or Python scalars (in `ct` each, in_types[i]); body_fn
        (body, scalar values converted to their in_types) -> (result,
        type)."""
        out_shape = tuple(out_shape)
        nz = [l for l, s in enumerate(out_shape) if s != 1]
        ref = None
        for x in inputs:
            if isinstance(x, Val) and x.shape == out_shape and x.squeezable():
                ref = x
                break
        if order is not None:
            nz = list(order)
        elif ref is not None:
            # Unit dims the reference holds stay (a batch of 1 keeps its dim).
            nz = [l for l in range(len(out_shape))
                  if out_shape[l] != 1 or ref.lmap[l] is not None]
            nz.sort(key=lambda l: ref.lmap[l])
        loops = len(nz)
        loop_of = {l: i for i, l in enumerate(nz)}
        # Unit output dims never index anything: input dims of size 1 map to 0.
        pshape = [out_shape[l] for l in nz]
        lmap = [loop_of.get(l) for l in range(len(out_shape))]
        tensors = [x for x in inputs if isinstance(x, Val)]
        maps, ins, tys = [], [], []
        for x in tensors:
            maps.append(self.input_map(x, loop_of, out_shape, loops))
            ins.append(x.name)
            tys.append(x.ptype)
        maps.append(f"affine_map<({self.dims(loops)}) -> ({self.dims(loops)})>")
        b = Body(self)
        args, k = [], 0
        for i, x in enumerate(inputs):
            want = in_types[i] if in_types else None
            if isinstance(x, Val):
                a = f"%a{k}"
                k += 1
                args.append(b.cast(a, x.t, want) if want else a)
            else:
                args.append(b.const(x, want))
        r, rt = body_fn(b, args)
        r = b.cast(r, rt, out_t)
        e = self.empty(pshape, out_t)
        name = self.fresh("ew")
        its = ", ".join(['"parallel"'] * loops)
        ins_txt = f"ins({', '.join(ins)} : {', '.join(tys)}) " if ins else ""
        self.emit(f"{name} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}} {ins_txt}outs({e} : {ttype(pshape, out_t)}){self.gattrs()} {{")
        bargs = ", ".join([f"%a{i}: {x.t}" for i, x in enumerate(tensors)] + [f"%o: {out_t}"])
        self.emit(f"^bb0({bargs}):")
        for line in b.lines:
            self.emit(line[2:])
        self.emit(f"  linalg.yield {r} : {out_t}")
        self.emit(f"}} -> {ttype(pshape, out_t)}")
        return Val(name, pshape, out_t, out_shape, lmap)

    # -- reductions ---------------------------------------------------------
    def reduce(self, v, dims, kind, acc_t, keepdim):
        """sum/max/min/or of v over logical `dims`, accumulated in acc_t."""
        if not v.squeezable():
            v = self.materialize(v)
        v = self.squeeze_physical(v)
        rank = len(v.shape)
        dims = sorted(d % rank if rank else 0 for d in dims)
        red_p = [v.lmap[d] for d in dims if v.lmap[d] is not None]
        loops = len(v.pshape)
        keep_p = [k for k in range(loops) if k not in red_p]
        out_pshape = [v.pshape[k] for k in keep_p]
        in_map = f"affine_map<({self.dims(loops)}) -> ({self.dims(loops)})>"
        out_map = f"affine_map<({self.dims(loops)}) -> ({', '.join(f'd{k}' for k in keep_p)})>"
        init = {"sum": 0.0 if acc_t in FLOATS else 0,
                "max": -math.inf if acc_t in FLOATS else -(2 ** 63),
                "min": math.inf if acc_t in FLOATS else 2 ** 63 - 1,
                "or": False}[kind]
        f = self.fill(out_pshape, acc_t, init)
        b = Body(self)
        x = b.cast("%a", v.t, acc_t)
        fl = acc_t in FLOATS
        op = {"sum": "addf" if fl else "addi", "max": "maximumf" if fl else "maxsi",
              "min": "minimumf" if fl else "minsi", "or": "ori"}[kind]
        r = b.op(f"arith.{op} %acc, {x} : {acc_t}")
        name = self.fresh("red")
        its = ", ".join('"reduction"' if k in red_p else '"parallel"' for k in range(loops))
        self.emit(f"{name} = linalg.generic {{indexing_maps = [{in_map}, {out_map}], iterator_types = [{its}]}} ins({v.name} : {v.ptype}) outs({f} : {ttype(out_pshape, acc_t)}){self.gattrs()} {{")
        self.emit(f"^bb0(%a: {v.t}, %acc: {acc_t}):")
        for line in b.lines:
            self.emit(line[2:])
        self.emit(f"  linalg.yield {r} : {acc_t}")
        self.emit(f"}} -> {ttype(out_pshape, acc_t)}")
        newpos = {k: i for i, k in enumerate(keep_p)}
        shape, lmap = [], []
        for l in range(rank):
            if l in dims:
                if keepdim:
                    shape.append(1)
                    lmap.append(None)
            else:
                shape.append(v.shape[l])
                lmap.append(newpos[v.lmap[l]] if v.lmap[l] is not None else None)
        return Val(name, out_pshape, acc_t, shape, lmap)

    # -- contractions -------------------------------------------------------
    def contraction(self, a, b, a_dims, b_dims, out_dims, out_shape, out_t, named=None):
        """A two-input contraction: a_dims/b_dims name the loop of each
        logical dim of a and b; out_dims the loops of the output in
        physical order (out_shape physical). Reads a, b physically."""
        a, b = self.exact(a), self.exact(b)
        loops = 1 + max(max(a_dims), max(b_dims), max(out_dims))

        def pmap(v, ldims):
            ex = [None] * len(v.pshape)
            for l, p in enumerate(v.lmap):
                ex[p] = f"d{ldims[l]}"
            return f"affine_map<({self.dims(loops)}) -> ({', '.join(ex)})>"
        ma, mb = pmap(a, a_dims), pmap(b, b_dims)
        mo = f"affine_map<({self.dims(loops)}) -> ({', '.join(f'd{d}' for d in out_dims)})>"
        f = self.fill(out_shape, out_t, 0.0 if out_t in FLOATS else 0)
        r = self.fresh("mm")
        oty = ttype(out_shape, out_t)
        if named == "matmul":
            default = (ma == "affine_map<(d0, d1, d2) -> (d0, d2)>" and
                       mb == "affine_map<(d0, d1, d2) -> (d2, d1)>")
            maps = "" if default else f"indexing_maps = [{ma}, {mb}, {mo}] "
            self.emit(f"{r} = linalg.matmul {maps}{self.attr()} ins({a.name}, {b.name} : {a.ptype}, {b.ptype}) outs({f} : {oty}) -> {oty}")
            return r
        if named == "batch_matmul" and ma == "affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>" and \
                mb == "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>":
            self.emit(f"{r} = linalg.batch_matmul {self.attr()} ins({a.name}, {b.name} : {a.ptype}, {b.ptype}) outs({f} : {oty}) -> {oty}")
            return r
        red = set(a_dims) | set(b_dims)
        its = ", ".join('"parallel"' if d in out_dims else '"reduction"' for d in range(loops))
        self.emit(f"{r} = linalg.generic {{indexing_maps = [{ma}, {mb}, {mo}], iterator_types = [{its}]}} ins({a.name}, {b.name} : {a.ptype}, {b.ptype}) outs({f} : {oty}){self.gattrs()} {{")
        t = out_t
        add, mul = ("addf", "mulf") if t in FLOATS else ("addi", "muli")
        self.emit(f"^bb0(%a: {a.t}, %b: {b.t}, %acc: {t}):")
        self.emit(f"  %m = arith.{mul} %a, %b : {t}")
        self.emit(f"  %s = arith.{add} %acc, %m : {t}")
        self.emit(f"  linalg.yield %s : {t}")
        self.emit(f"}} -> {oty}")
        return r


def _causal(mask):
    """Whether a constant boolean mask [.., s, t] is the causal one (keys
    after the query masked), the same for every leading index."""
    if mask.dtype != torch.bool or mask.dim() < 2:
        return False
    s, t = mask.shape[-2], mask.shape[-1]
    want = torch.ones(s, t, dtype=torch.bool).tril()
    return bool((mask == want).all())


class GraphEmitter(Emitter):
    """Walks the decomposed graph of an ExportedProgram."""

    def __init__(self, ep):
        super().__init__()
        self.ep = ep
        self.vals = {}

    # Constant folding: nodes whose inputs are all constants are evaluated
    # here, in PyTorch (the mask construction of Hugging Face models, the
    # positions of an arange); only what a computed value uses is emitted.
    def fold(self):
        sig = self.ep.graph_signature
        consts = {}
        for spec in sig.input_specs:
            if spec.kind.name in ("CONSTANT_TENSOR",):
                consts[spec.arg.name] = self.ep.constants[spec.target]
        for node in self.ep.graph_module.graph.nodes:
            if node.op == "placeholder":
                if node.name in consts:
                    self.consts[node] = consts[node.name]
                continue
            if node.op != "call_function" or node.target in SKIP:
                continue
            deps = node.all_input_nodes
            if all(d in self.consts for d in deps):
                args, kwargs = torch.fx.node.map_arg(
                    (node.args, node.kwargs), lambda n: self.consts[n])
                try:
                    self.consts[node] = node.target(*args, **kwargs)
                except Exception:  # leave it to emission
                    pass

    def val(self, x):
        """The Val of a node argument (a constant tensor emitted on use)."""
        if isinstance(x, torch.fx.Node):
            if x in self.vals:
                return self.vals[x]
            if x in self.consts and isinstance(self.consts[x], torch.Tensor):
                saved, self.module = self.module, None
                v = self.constant(self.consts[x])
                self.module = saved
                self.vals[x] = v
                return v
            raise ExportError(f"no value for {x.name}")
        return x

    def fail(self, node, why):
        raise ExportError(
            f"unsupported: {why} (ATen op {node.target}) at {source_line(node)}")

    def run(self, node):
        """Emits `node`; returns its Val (or a tuple of Vals)."""
        tgt = node.target
        meta = node.meta.get("val")
        if tgt == operator.getitem:
            return self.vals[node.args[0]][node.args[1]]
        if tgt in IDENTITY:
            return self.val(node.args[0])
        if tgt in ELEMENTWISE or tgt == aten.rsub.Scalar:
            return self.emit_elementwise(node)
        fn = getattr(self, "op_" + str(tgt).replace("aten.", "").replace(".", "_"), None)
        if fn is None:
            self.fail(node, "no lowering for this op")
        return fn(node, meta)

    def emit_elementwise(self, node):
        tgt = node.target
        meta = node.meta["val"]
        out_t = mlir_type(meta.dtype)
        args = list(node.args)
        if tgt == aten._to_copy.default:
            args = args[:1]
        if tgt == aten.pow.Tensor_Scalar and args[1] in (0.5, 1, 2, 3):
            args = args[:1]
        if tgt == aten.clamp.default:
            args = args[:1]
        fn = ELEMENTWISE.get(tgt)
        if tgt == aten.rsub.Scalar:
            args = [args[1], args[0]]
            fn = _alpha("subf", "subi")
        if tgt in CMP_OPS:
            ct = compute_type(promote(args))
        elif tgt in BOOL_OPS:
            ct = "i1"
        elif tgt == aten.where.self:
            ct = compute_type(promote(args[1:]))
        elif tgt == aten._to_copy.default:
            src = mlir_type(args[0].meta["val"].dtype)
            ct = src
            return self.elementwise([self.val(args[0])], meta.shape, out_t,
                                    lambda b, a: (a[0], src), [src])
        elif out_t in FLOATS:
            ct = compute_type(out_t)
        else:
            ct = out_t
        in_types = []
        vals = []
        for i, a in enumerate(args):
            if tgt == aten.where.self and i == 0:
                in_types.append("i1")
            elif tgt in BOOL_OPS:
                in_types.append("i1")
            else:
                in_types.append(ct)
            if isinstance(a, (int, float, bool)) and not isinstance(a, torch.fx.Node):
                vals.append(a)
            elif isinstance(a, torch.fx.Node):
                vals.append(self.val(a))
            else:
                self.fail(node, f"argument {a!r}")
        return self.elementwise(vals, meta.shape, out_t,
                                lambda b, a: fn(b, a, ct, node), in_types)

    # -- views ----------------------------------------------------------
    def op_view_default(self, node, meta):
        return self.reshape(self.val(node.args[0]), meta.shape)
    op__unsafe_view_default = op_view_default
    op_reshape_default = op_view_default

    def op_permute_default(self, node, meta):
        v = self.val(node.args[0])
        p = [d % len(v.shape) for d in node.args[1]]
        return Val(v.name, v.pshape, v.t, [v.shape[d] for d in p], [v.lmap[d] for d in p])

    def op_unsqueeze_default(self, node, meta):
        v = self.val(node.args[0])
        d = node.args[1] % (len(v.shape) + 1)
        return Val(v.name, v.pshape, v.t, meta.shape, v.lmap[:d] + [None] + v.lmap[d:])

    def op_squeeze_dims(self, node, meta):
        v = self.val(node.args[0])
        dims = node.args[1] if len(node.args) > 1 else range(len(v.shape))
        dims = {d % len(v.shape) for d in dims if v.shape[d % len(v.shape)] == 1}
        return Val(v.name, v.pshape, v.t, meta.shape,
                   [p for l, p in enumerate(v.lmap) if l not in dims])
    op_squeeze_dim = op_squeeze_dims
    op_squeeze_default = op_squeeze_dims

    def op_expand_default(self, node, meta):
        v = self.val(node.args[0])
        extra = len(meta.shape) - len(v.shape)
        return Val(v.name, v.pshape, v.t, meta.shape, [None] * extra + v.lmap)

    def op_slice_Tensor(self, node, meta):
        v = self.val(node.args[0])
        dim = node.args[1] % len(v.shape) if len(node.args) > 1 else 0
        start = node.args[2] if len(node.args) > 2 else 0
        step = node.args[4] if len(node.args) > 4 else 1
        size = v.shape[dim]
        start = 0 if start is None else (start + size if start < 0 else min(start, size))
        n = meta.shape[dim]
        if n == size:
            return v
        p = v.lmap[dim]
        shape = list(v.shape)
        shape[dim] = n
        if p is None or v.pshape[p] == 1:
            return Val(v.name, v.pshape, v.t, shape, v.lmap)
        offs = [0] * len(v.pshape)
        sizes = list(v.pshape)
        strides = [1] * len(v.pshape)
        offs[p], sizes[p], strides[p] = start, n, step
        r = self.fresh("sl")
        self.emit(f"{r} = tensor.extract_slice {v.name}[{', '.join(map(str, offs))}] [{', '.join(map(str, sizes))}] [{', '.join(map(str, strides))}] {self.attr()} : {v.ptype} to {ttype(sizes, v.t)}")
        return Val(r, sizes, v.t, shape, v.lmap)

    def op_select_int(self, node, meta):
        v = self.val(node.args[0])
        dim = node.args[1] % len(v.shape)
        idx = node.args[2] % v.shape[dim]
        p = v.lmap[dim]
        lmap = v.lmap[:dim] + v.lmap[dim + 1:]
        if p is None or v.pshape[p] == 1:
            return Val(v.name, v.pshape, v.t, meta.shape, lmap)
        offs = [0] * len(v.pshape)
        sizes = list(v.pshape)
        offs[p], sizes[p] = idx, 1
        out = [s for k, s in enumerate(v.pshape) if k != p]
        r = self.fresh("sel")
        self.emit(f"{r} = tensor.extract_slice {v.name}[{', '.join(map(str, offs))}] [{', '.join(map(str, sizes))}] [{', '.join(['1'] * len(sizes))}] {self.attr()} : {v.ptype} to {ttype(out, v.t)}")
        lmap = [None if q is None else (q - 1 if q > p else q) for q in lmap]
        return Val(r, out, v.t, meta.shape, lmap)

    def op_split_with_sizes_default(self, node, meta):
        v = self.val(node.args[0])
        sizes = node.args[1]
        dim = (node.args[2] if len(node.args) > 2 else 0) % len(v.shape)
        outs, start = [], 0
        for m, s in zip(meta, sizes):
            fake = torch.fx.Node(node.graph, "split_part", "call_function",
                                 aten.slice.Tensor, (node.args[0], dim, start, start + s), {})
            fake.meta = {"val": m}
            outs.append(self.op_slice_Tensor(fake, m))
            start += s
        return tuple(outs)

    def op_split_Tensor(self, node, meta):
        size = node.args[1]
        n = node.args[0].meta["val"].shape[(node.args[2] if len(node.args) > 2 else 0)]
        node.args = (node.args[0], [min(size, n - i) for i in range(0, n, size)]) + tuple(node.args[2:])
        return self.op_split_with_sizes_default(node, meta)

    def op_cat_default(self, node, meta):
        vs = [self.val(a) for a in node.args[0]]
        vs = [v for v in vs if 0 not in v.shape]
        dim = (node.args[1] if len(node.args) > 1 else 0) % len(meta.shape)
        if len(vs) == 1:
            return vs[0]
        lm = vs[0].lmap
        if all(v.lmap == lm and v.is_exact() for v in vs) and vs[0].is_exact():
            p = lm[dim]
            shape = list(vs[0].pshape)
            shape[p] = sum(v.pshape[p] for v in vs)
            r = self.fresh("cat")
            self.emit(f"{r} = tensor.concat dim({p}) {', '.join(v.name for v in vs)} {self.attr()} : ({', '.join(v.ptype for v in vs)}) -> {ttype(shape, vs[0].t)}")
            return Val(r, shape, vs[0].t, meta.shape, lm)
        vs = [self.materialize(v) for v in vs]
        r = self.fresh("cat")
        self.emit(f"{r} = tensor.concat dim({dim}) {', '.join(v.name for v in vs)} {self.attr()} : ({', '.join(v.ptype for v in vs)}) -> {ttype(meta.shape, vs[0].t)}")
        return Val(r, meta.shape, vs[0].t, meta.shape, range(len(meta.shape)))

    # -- creation ---------------------------------------------------------
    def op_full_default(self, node, meta):
        t = mlir_type(meta.dtype)
        return self.constant(torch.full(tuple(meta.shape), node.args[1], dtype=meta.dtype))

    # -- linear algebra ---------------------------------------------------
    def op_mm_default(self, node, meta):
        a, b = self.val(node.args[0]), self.val(node.args[1])
        t = mlir_type(meta.dtype)
        r = self.contraction(a, b, [0, 2], [2, 1], [0, 1], tuple(meta.shape), t, named="matmul")
        return Val(r, meta.shape, t, meta.shape, [0, 1])

    def op_addmm_default(self, node, meta):
        bias = self.val(node.args[0])
        beta = node.kwargs.get("beta", 1)
        alpha = node.kwargs.get("alpha", 1)
        if beta != 1 or alpha != 1:
            self.fail(node, "addmm with beta or alpha other than 1")
        mm = self.op_mm_default(
            type("N", (), {"args": node.args[1:], "kwargs": {}})(), meta)
        t = mm.t
        ct = compute_type(t)
        return self.elementwise([mm, bias], meta.shape, t,
                                lambda b, a: (b.op(f"arith.addf {a[0]}, {a[1]} : {ct}"), ct),
                                [ct, ct])

    def op_bmm_default(self, node, meta):
        a, b = self.val(node.args[0]), self.val(node.args[1])
        t = mlir_type(meta.dtype)
        r = self.contraction(a, b, [0, 1, 3], [0, 3, 2], [0, 1, 2], tuple(meta.shape), t,
                             named="batch_matmul")
        return Val(r, meta.shape, t, meta.shape, [0, 1, 2])

    def op_embedding_default(self, node, meta):
        table = self.materialize(self.val(node.args[0]))
        ids = self.val(node.args[1])
        shape = tuple(ids.shape) + (1,)
        idx = self.reshape(ids, shape, force_identity=True) if ids.shape else None
        if idx is None:
            self.fail(node, "embedding of a 0-d index")
        r = self.fresh("emb")
        out = tuple(meta.shape)
        self.emit(f"{r} = tensor.gather {table.name}[{idx.name}] gather_dims([0]) {self.attr()} : ({table.ptype}, {ttype(shape, idx.t)}) -> {ttype(out, table.t)}")
        return Val(r, out, table.t, out, range(len(out)))

    def op__softmax_default(self, node, meta):
        v = self.val(node.args[0])
        if not v.is_exact():
            v = self.materialize(v)
        dim = node.args[1] % len(v.shape)
        t = mlir_type(meta.dtype)
        x = v
        if v.t != "f32" and v.t != "f64":
            x = self.elementwise([v], v.shape, "f32", lambda b, a: (a[0], "f32"), ["f32"])
        e = self.empty(x.pshape, x.t)
        r = self.fresh("sm")
        self.emit(f"{r} = linalg.softmax {self.attr()} dimension({x.lmap[dim]}) ins({x.name} : {x.ptype}) outs({e} : {x.ptype}) -> {x.ptype}")
        out = Val(r, x.pshape, x.t, x.shape, x.lmap)
        if t != x.t:
            out = self.elementwise([out], out.shape, t, lambda b, a: (a[0], "f32"), ["f32"])
        return out

    def op__log_softmax_default(self, node, meta):
        v = self.val(node.args[0])
        dim = node.args[1] % len(v.shape)
        t = mlir_type(meta.dtype)
        ct = compute_type(t)
        m = self.reduce(v, [dim], "max", ct, True)
        sh = self.elementwise([v, m], v.shape, ct,
                              lambda b, a: (b.op(f"arith.subf {a[0]}, {a[1]} : {ct}"), ct), [ct, ct])
        ex = self.elementwise([sh], v.shape, ct,
                              lambda b, a: (b.op(f"math.exp {a[0]} : {ct}"), ct), [ct])
        s = self.reduce(ex, [dim], "sum", ct, True)
        return self.elementwise([sh, s], v.shape, t, lambda b, a: (
            b.op(f"arith.subf {a[0]}, {b.op(f'math.log {a[1]} : {ct}')} : {ct}"), ct), [ct, ct])

    def _mean(self, v, dims, out_t, keepdim):
        acc = compute_type(v.t) if v.t in FLOATS else "f32"
        s = self.reduce(v, dims, "sum", acc, keepdim)
        n = math.prod(v.shape[d] for d in dims) if dims else 1
        return self.elementwise([s], s.shape, out_t, lambda b, a: (
            b.op(f"arith.divf {a[0]}, {b.const(float(n), acc)} : {acc}"), acc), [acc])

    def op_mean_dim(self, node, meta):
        v = self.val(node.args[0])
        dims = node.args[1] if len(node.args) > 1 and node.args[1] is not None else range(len(v.shape))
        keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        return self._mean(v, [d % len(v.shape) for d in dims], mlir_type(meta.dtype), keep)

    def op_sum_dim_IntList(self, node, meta):
        v = self.val(node.args[0])
        dims = node.args[1] if len(node.args) > 1 and node.args[1] is not None else range(len(v.shape))
        keep = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        t = mlir_type(meta.dtype)
        acc = compute_type(t)
        s = self.reduce(v, [d % len(v.shape) for d in dims], "sum", acc, keep)
        if acc == t:
            return s
        return self.elementwise([s], s.shape, t, lambda b, a: (a[0], acc), [acc])

    def op_amax_default(self, node, meta, kind="max"):
        v = self.val(node.args[0])
        dims = node.args[1] if len(node.args) > 1 else range(len(v.shape))
        keep = node.args[2] if len(node.args) > 2 else False
        return self.reduce(v, [d % len(v.shape) for d in dims], kind, v.t, keep)

    def op_amin_default(self, node, meta):
        return self.op_amax_default(node, meta, "min")

    def op_native_layer_norm_default(self, node, meta):
        x = self.val(node.args[0])
        nshape = node.args[1]
        w = self.val(node.args[2]) if node.args[2] is not None else None
        bias = self.val(node.args[3]) if node.args[3] is not None else None
        eps = node.args[4]
        t = mlir_type(meta[0].dtype)
        ct = compute_type(t)
        dims = list(range(len(x.shape) - len(nshape), len(x.shape)))
        mean = self._mean(x, dims, ct, True)
        cen = self.elementwise([x, mean], x.shape, ct, lambda b, a: (
            b.op(f"arith.subf {a[0]}, {a[1]} : {ct}"), ct), [ct, ct])
        sq = self.elementwise([cen], x.shape, ct, lambda b, a: (
            b.op(f"arith.mulf {a[0]}, {a[0]} : {ct}"), ct), [ct])
        var = self._mean(sq, dims, ct, True)
        rstd = self.elementwise([var], var.shape, ct, lambda b, a: (
            b.op(f"math.rsqrt {b.op(f'arith.addf {a[0]}, {b.const(eps, ct)} : {ct}')} : {ct}"), ct), [ct])
        ins = [cen, rstd] + ([w] if w is not None else []) + ([bias] if bias is not None else [])

        def body(b, a):
            y = b.op(f"arith.mulf {a[0]}, {a[1]} : {ct}")
            i = 2
            if w is not None:
                y = b.op(f"arith.mulf {y}, {a[i]} : {ct}")
                i += 1
            if bias is not None:
                y = b.op(f"arith.addf {y}, {a[i]} : {ct}")
            return y, ct
        out = self.elementwise(ins, x.shape, t, body, [ct] * len(ins))
        return (out, mean, rstd)

    def op_scaled_dot_product_attention_default(self, node, meta):
        q, k, v = (self.val(a) for a in node.args[:3])
        names = ["attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"]
        opts = dict(zip(names, node.args[3:]))
        opts.update(node.kwargs)
        if opts.get("dropout_p", 0.0) != 0.0:
            self.fail(node, "attention dropout (export the module in eval mode)")
        mask_node = opts.get("attn_mask")
        causal = bool(opts.get("is_causal", False))
        mask = None
        if mask_node is not None:
            if mask_node in self.consts and _causal(self.consts[mask_node]):
                causal = True
            else:
                mask = self.val(mask_node)
        if len(q.shape) != 4:
            self.fail(node, "attention on other than [batch, heads, seq, dim]")
        B, H, S, E = q.shape
        Hk, T, Ev = k.shape[1], k.shape[2], v.shape[3]
        if Hk != H:
            if not opts.get("enable_gqa"):
                self.fail(node, "k/v heads differ from q heads without enable_gqa")
            rep = H // Hk
            k, v = (self.reshape(Val(x.name, x.pshape, x.t, (B, Hk, rep) + x.shape[2:],
                                     x.lmap[:2] + [None] + x.lmap[2:]), (B, H) + x.shape[2:])
                    for x in (k, v))
        t = q.t
        scale = opts.get("scale")
        if scale is None:
            scale = 1.0 / math.sqrt(E)
        # scores [b, h, s, t] = sum_e q[b, h, s, e] k[b, h, t, e]; loops b h s t e.
        sc = self.contraction(q, k, [0, 1, 2, 4], [0, 1, 3, 4], [0, 1, 2, 3], (B, H, S, T), t)
        scores = Val(sc, (B, H, S, T), t, (B, H, S, T), [0, 1, 2, 3])
        ins = [scores] + ([mask] if mask is not None else [])

        def body(b, a):
            x = a[0]
            y = b.op(f"arith.mulf {x}, {b.const(scale, 'f32')} : f32")
            if causal:
                i = b.op("linalg.index 2 : index")
                j = b.op("linalg.index 3 : index")
                ninf = b.const(-math.inf, "f32")
                fut = b.op(f"arith.cmpi ugt, {j}, {i} : index")
                y = b.op(f"arith.select {fut}, {ninf}, {y} : f32")
            if mask is not None:
                if mask.t == "i1":
                    ninf = b.const(-math.inf, "f32")
                    y = b.op(f"arith.select {a[1]}, {y}, {ninf} : f32")
                else:
                    y = b.op(f"arith.addf {y}, {a[1]} : f32")
            return y, "f32"
        in_types = ["f32"] + ([("i1" if mask.t == "i1" else "f32")] if mask is not None else [])
        masked = self.elementwise(ins, (B, H, S, T), "f32", body, in_types)
        masked = self.exact(masked)
        e = self.empty(masked.pshape, "f32")
        r = self.fresh("probs")
        self.emit(f"{r} = linalg.softmax {self.attr()} dimension({masked.lmap[3]}) ins({masked.name} : {masked.ptype}) outs({e} : {masked.ptype}) -> {masked.ptype}")
        probs = Val(r, masked.pshape, "f32", masked.shape, masked.lmap)
        if t != "f32":
            probs = self.elementwise([probs], probs.shape, t, lambda b, a: (a[0], "f32"), ["f32"])
        # o [b, s, h, e] = sum_t p[b, h, s, t] v[b, h, t, e]; loops b s h e t.
        o = self.contraction(probs, v, [0, 2, 1, 4], [0, 2, 4, 3], [0, 1, 2, 3], (B, S, H, Ev), t)
        return Val(o, (B, S, H, Ev), t, (B, H, S, Ev), [0, 2, 1, 3])


def emit_program(ep, entry, mesh_line, input_layout=None):
    """The MLIR text of the decomposed ExportedProgram `ep` as `func.func
    @entry`; returns (text, user input names, parameter names, output
    names). Arguments: the user's tensor inputs (laid out `input_layout`
    where given), then parameters, then buffers (dtensor.param = their
    fully qualified names)."""
    g = GraphEmitter(ep)
    g.fold()
    sig = ep.graph_signature
    nodes = {n.name: n for n in ep.graph_module.graph.nodes}
    user, params, buffers = [], [], []
    for spec in sig.input_specs:
        kind = spec.kind.name
        if kind == "USER_INPUT":
            if spec.arg.name in nodes and isinstance(nodes[spec.arg.name].meta.get("val"), torch.Tensor):
                user.append((spec.arg.name, None))
        elif kind == "PARAMETER":
            params.append((spec.arg.name, spec.target))
        elif kind == "BUFFER":
            buffers.append((spec.arg.name, spec.target))
        elif kind == "CONSTANT_TENSOR":
            continue
        else:
            raise ExportError(f"unsupported input kind {kind} ({spec.arg.name})")
    args = []
    for name, fqn in user + params + buffers:
        n = nodes[name]
        meta = n.meta["val"]
        t = mlir_type(meta.dtype)
        shape = tuple(meta.shape)
        ssa = "%" + re.sub(r"[^A-Za-z0-9_]", "_", name)
        g.vals[n] = Val(ssa, shape, t, shape, range(len(shape)))
        attr = f' {{dtensor.param = "{fqn}"}}' if fqn else (
            f" {{dtensor.layout = {input_layout}}}" if input_layout else "")
        args.append(f"{ssa}: {ttype(shape, t)}{attr}")
    out_node = next(n for n in ep.graph_module.graph.nodes if n.op == "output")
    for node in ep.graph_module.graph.nodes:
        if node.op != "call_function" or node.target in SKIP:
            continue
        if node in g.consts and isinstance(g.consts[node], torch.Tensor) and \
                node not in out_node.args[0]:
            continue  # folded; emitted where a computed value uses it
        if node in g.consts and not isinstance(g.consts[node], torch.Tensor):
            continue
        stack = node.meta.get("nn_module_stack") or {}
        g.module = list(stack.values())[-1][0] if stack else None
        if g.module == "":
            g.module = None
        g.vals[node] = g.run(node)
    g.module = None
    results = []
    for o in out_node.args[0]:
        if not isinstance(o, torch.fx.Node):
            raise ExportError(f"a non-tensor output {o!r}")
        results.append(g.materialize(g.val(o)))
    out_names = [s.arg.name for s in sig.output_specs if s.kind.name == "USER_OUTPUT"]
    if len(out_names) != len(results):
        raise ExportError("the program mutates its inputs or buffers (not supported)")
    rtypes = ", ".join(r.ptype for r in results)
    text = [mesh_line, "",
            f"func.func @{entry}({', '.join(args)}) -> ({rtypes}) {{"]
    text += g.lines
    text.append(f"  return {', '.join(r.name for r in results)} : {rtypes}")
    text.append("}")
    return ("\n".join(text) + "\n", [n for n, _ in user],
            [f for _, f in params + buffers], out_names)
