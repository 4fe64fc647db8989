"""The MLIR writer the GPU benchmarks' program generators share
(bench/gpu_rank/gen_rank.py, bench/gpu_overlap/gen_overlap.py): linalg on
tensors of the shapes it is given (global or per-rank), bf16 by default, with
the blocks of a Llama-style layer (matmul, SwiGLU MLP, RMSNorm, causal
attention, residual add), and `function`, which wraps what it wrote into a
`func.func` whose arguments and results carry `dtensor.annotate` layouts.
"""
import re
import sys

MAPS = """\
#id2 = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#q = affine_map<(h, s, t, e) -> (s, h, e)>
#k = affine_map<(h, s, t, e) -> (t, h, e)>
#sc = affine_map<(h, s, t, e) -> (h, s, t)>
#p = affine_map<(s, h, e, t) -> (h, s, t)>
#v = affine_map<(s, h, e, t) -> (t, h, e)>
#o = affine_map<(s, h, e, t) -> (s, h, e)>
#id3 = affine_map<(h, s, t) -> (h, s, t)>
"""


class Writer:
    def __init__(self, dtype):
        self.t = dtype
        self.lines = []
        self.n = 0
        self.types = {}

    def fresh(self, base):
        self.n += 1
        return f"%{base}{self.n}"

    def emit(self, text):
        self.lines.append(text)

    def ty(self, *shape, t=None):
        return "tensor<" + "x".join(str(d) for d in shape) + f"x{t or self.t}>"

    def to_f32(self, v):
        return (f"%{v}f = arith.extf %{v} : {self.t} to f32"
                if self.t != "f32" else f"%{v}f = arith.addf %{v}, %{v}z : f32")

    def matmul(self, a, b, m, k, n):
        t = self.t
        e, f, r = self.fresh("e"), self.fresh("f"), self.fresh("mm")
        self.emit(f"  {e} = tensor.empty() : {self.ty(m, n)}")
        self.emit(f"  {f} = linalg.fill ins(%zero : {t}) outs({e} : {self.ty(m, n)}) -> {self.ty(m, n)}")
        self.emit(f"  {r} = linalg.matmul ins({a}, {b} : {self.ty(m, k)}, {self.ty(k, n)}) outs({f} : {self.ty(m, n)}) -> {self.ty(m, n)}")
        self.types[r] = self.ty(m, n)
        return r

    def elementwise(self, ins, shape, body):
        """body: lines computing %r (f32) from %a0f, %a1f, ... (f32)."""
        t = self.t
        e, r = self.fresh("e"), self.fresh("ew")
        ty = self.ty(*shape)
        args = ", ".join(f"%a{i}: {t}" for i in range(len(ins)))
        self.emit(f"  {e} = tensor.empty() : {ty}")
        maps = ", ".join(["#id2"] * (len(ins) + 1))
        self.emit(f"  {r} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [\"parallel\", \"parallel\"]}}")
        self.emit(f"      ins({', '.join(ins)} : {', '.join([ty] * len(ins))}) outs({e} : {ty}) {{")
        self.emit(f"  ^bb0({args}, %out: {t}):")
        for i in range(len(ins)):
            self.emit(f"    %a{i}f = arith.extf %a{i} : {t} to f32")
        for line in body:
            self.emit("    " + line)
        self.emit(f"    %rt = arith.truncf %r : f32 to {t}")
        self.emit(f"    linalg.yield %rt : {t}")
        self.emit(f"  }} -> {ty}")
        self.types[r] = ty
        return r

    def rmsnorm(self, x, g, rows, hidden):
        t = self.t
        e, f, ss, en, r = (self.fresh("e"), self.fresh("f"), self.fresh("ss"),
                           self.fresh("e"), self.fresh("norm"))
        self.emit(f"  {e} = tensor.empty() : tensor<{rows}xf32>")
        self.emit(f"  {f} = linalg.fill ins(%zf : f32) outs({e} : tensor<{rows}xf32>) -> tensor<{rows}xf32>")
        self.emit(f"  {ss} = linalg.generic {{indexing_maps = [#id2, #row], iterator_types = [\"parallel\", \"reduction\"]}}")
        self.emit(f"      ins({x} : {self.ty(rows, hidden)}) outs({f} : tensor<{rows}xf32>) {{")
        self.emit(f"  ^bb0(%a: {t}, %acc: f32):")
        self.emit(f"    %af = arith.extf %a : {t} to f32")
        self.emit("    %sq = arith.mulf %af, %af : f32")
        self.emit("    %s = arith.addf %acc, %sq : f32")
        self.emit("    linalg.yield %s : f32")
        self.emit(f"  }} -> tensor<{rows}xf32>")
        ty = self.ty(rows, hidden)
        self.emit(f"  {en} = tensor.empty() : {ty}")
        self.emit(f"  {r} = linalg.generic {{indexing_maps = [#id2, #row, #col, #id2], iterator_types = [\"parallel\", \"parallel\"]}}")
        self.emit(f"      ins({x}, {ss}, {g} : {ty}, tensor<{rows}xf32>, tensor<{hidden}x{t}>) outs({en} : {ty}) {{")
        self.emit(f"  ^bb0(%a: {t}, %s: f32, %gn: {t}, %out: {t}):")
        self.emit(f"    %inv = arith.constant {1.0 / hidden!r} : f32")
        self.emit("    %eps = arith.constant 1.0e-5 : f32")
        self.emit("    %mean = arith.mulf %s, %inv : f32")
        self.emit("    %var = arith.addf %mean, %eps : f32")
        self.emit("    %rinv = math.rsqrt %var : f32")
        self.emit(f"    %af = arith.extf %a : {t} to f32")
        self.emit(f"    %gf = arith.extf %gn : {t} to f32")
        self.emit("    %y = arith.mulf %af, %rinv : f32")
        self.emit("    %z = arith.mulf %y, %gf : f32")
        self.emit(f"    %zt = arith.truncf %z : f32 to {t}")
        self.emit(f"    linalg.yield %zt : {t}")
        self.emit(f"  }} -> {ty}")
        self.types[r] = ty
        return r

    def add(self, a, b, shape):
        return self.elementwise([a, b], shape, ["%r = arith.addf %a0f, %a1f : f32"])

    def mlp(self, x, w1, w3, w2, tokens, hidden, ffn):
        a = self.matmul(x, w1, tokens, hidden, ffn)
        b = self.matmul(x, w3, tokens, hidden, ffn)
        h = self.elementwise([a, b], (tokens, ffn), [
            "%one = arith.constant 1.0 : f32",
            "%neg = arith.negf %a0f : f32",
            "%ex = math.exp %neg : f32",
            "%den = arith.addf %ex, %one : f32",
            "%silu = arith.divf %a0f, %den : f32",
            "%r = arith.mulf %silu, %a1f : f32"])
        return self.matmul(h, w2, tokens, ffn, hidden)

    def attention(self, x, wqkv, wo, tokens, hidden, heads, dim):
        t = self.t
        T, hh, D = tokens, heads, dim
        qkv = self.matmul(x, wqkv, T, hidden, 3 * hh * D)
        q4 = self.fresh("qkv")
        self.emit(f"  {q4} = tensor.expand_shape {qkv} [[0], [1, 2, 3]] output_shape [{T}, 3, {hh}, {D}] : {self.ty(T, 3 * hh * D)} into {self.ty(T, 3, hh, D)}")
        parts = []
        for i, name in enumerate("qkv"):
            v = self.fresh(name)
            self.emit(f"  {v} = tensor.extract_slice {q4}[0, {i}, 0, 0] [{T}, 1, {hh}, {D}] [1, 1, 1, 1] : {self.ty(T, 3, hh, D)} to {self.ty(T, hh, D)}")
            parts.append(v)
        q, k, v = parts
        return self.attention_core(q, k, v, wo, T, hidden, hh, D)

    def attention_heads(self, x, wq, wk, wv, wo, tokens, hidden, heads, dim):
        """Attention with separate q, k, v projections ([hidden, heads*dim]
        each, so that a column sharding is a sharding by heads)."""
        T, hh, D = tokens, heads, dim
        parts = []
        for w, name in zip((wq, wk, wv), "qkv"):
            p = self.matmul(x, w, T, hidden, hh * D)
            v = self.fresh(name)
            self.emit(f"  {v} = tensor.expand_shape {p} [[0], [1, 2]] output_shape [{T}, {hh}, {D}] : {self.ty(T, hh * D)} into {self.ty(T, hh, D)}")
            parts.append(v)
        q, k, v = parts
        return self.attention_core(q, k, v, wo, T, hidden, hh, D)

    def attention_core(self, q, k, v, wo, T, hidden, hh, D):
        """Causal softmax(q k^T / sqrt(D)) v over q, k, v [T, hh, D], then
        the output projection wo [hh*D, hidden]."""
        t = self.t
        es, fs, sc = self.fresh("e"), self.fresh("f"), self.fresh("scores")
        S = self.ty(hh, T, T)
        self.emit(f"  {es} = tensor.empty() : {S}")
        self.emit(f"  {fs} = linalg.fill ins(%zero : {t}) outs({es} : {S}) -> {S}")
        self.emit(f"  {sc} = linalg.generic {{indexing_maps = [#q, #k, #sc], iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"reduction\"]}}")
        self.emit(f"      ins({q}, {k} : {self.ty(T, hh, D)}, {self.ty(T, hh, D)}) outs({fs} : {S}) {{")
        self.emit(f"  ^bb0(%a: {t}, %b: {t}, %acc: {t}):")
        self.emit(f"    %m = arith.mulf %a, %b : {t}")
        self.emit(f"    %s = arith.addf %acc, %m : {t}")
        self.emit(f"    linalg.yield %s : {t}")
        self.emit(f"  }} -> {S}")
        # scale and causal mask, in f32
        SF = f"tensor<{hh}x{T}x{T}xf32>"
        em, masked = self.fresh("e"), self.fresh("masked")
        self.emit(f"  {em} = tensor.empty() : {SF}")
        self.emit(f"  {masked} = linalg.generic {{indexing_maps = [#id3, #id3], iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}}")
        self.emit(f"      ins({sc} : {S}) outs({em} : {SF}) {{")
        self.emit(f"  ^bb0(%a: {t}, %out: f32):")
        self.emit("    %i = linalg.index 1 : index")
        self.emit("    %j = linalg.index 2 : index")
        self.emit(f"    %scale = arith.constant {1.0 / D ** 0.5!r} : f32")
        self.emit("    %ninf = arith.constant 0xFF800000 : f32")
        self.emit(f"    %af = arith.extf %a : {t} to f32")
        self.emit("    %y = arith.mulf %af, %scale : f32")
        self.emit("    %future = arith.cmpi ugt, %j, %i : index")
        self.emit("    %r = arith.select %future, %ninf, %y : f32")
        self.emit("    linalg.yield %r : f32")
        self.emit(f"  }} -> {SF}")
        ep, probs = self.fresh("e"), self.fresh("probs")
        self.emit(f"  {ep} = tensor.empty() : {SF}")
        self.emit(f"  {probs} = linalg.softmax dimension(2) ins({masked} : {SF}) outs({ep} : {SF}) -> {SF}")
        eb, pb = self.fresh("e"), self.fresh("pb")
        self.emit(f"  {eb} = tensor.empty() : {S}")
        self.emit(f"  {pb} = linalg.generic {{indexing_maps = [#id3, #id3], iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}}")
        self.emit(f"      ins({probs} : {SF}) outs({eb} : {S}) {{")
        self.emit(f"  ^bb0(%a: f32, %out: {t}):")
        self.emit(f"    %r = arith.truncf %a : f32 to {t}")
        self.emit(f"    linalg.yield %r : {t}")
        self.emit(f"  }} -> {S}")
        eo, fo, oh = self.fresh("e"), self.fresh("f"), self.fresh("oh")
        O = self.ty(T, hh, D)
        self.emit(f"  {eo} = tensor.empty() : {O}")
        self.emit(f"  {fo} = linalg.fill ins(%zero : {t}) outs({eo} : {O}) -> {O}")
        self.emit(f"  {oh} = linalg.generic {{indexing_maps = [#p, #v, #o], iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"reduction\"]}}")
        self.emit(f"      ins({pb}, {v} : {S}, {O}) outs({fo} : {O}) {{")
        self.emit(f"  ^bb0(%a: {t}, %b: {t}, %acc: {t}):")
        self.emit(f"    %m = arith.mulf %a, %b : {t}")
        self.emit(f"    %s = arith.addf %acc, %m : {t}")
        self.emit(f"    linalg.yield %s : {t}")
        self.emit(f"  }} -> {O}")
        o2 = self.fresh("o")
        self.emit(f"  {o2} = tensor.collapse_shape {oh} [[0], [1, 2]] : {O} into {self.ty(T, hh * D)}")
        return self.matmul(o2, wo, T, hh * D, hidden)


def function(w, name, mesh, params, results, comment):
    """The module text: `mesh` (a `dtensor.mesh` line), then `func.func @name`
    over `params` ([(name, type, layout)]) returning `results` ([(value,
    layout)], values written by `w`); every argument and result annotated
    with its layout (e.g. `<@tp, [S(0)]>`)."""
    t = w.t
    rtypes = [w.types[r] for r, _ in results]
    out = [MAPS, mesh, "", "// " + comment,
           f"func.func @{name}(" +
           ", ".join(f"%{n}_arg: {ty}" for n, ty, _ in params) +
           f") -> ({', '.join(rtypes)}) {{",
           f"  %zero = arith.constant 0.0 : {t}",
           "  %zf = arith.constant 0.0 : f32"]
    out += [f"  %{n} = dtensor.annotate %{n}_arg layout {lay} : {ty}"
            for n, ty, lay in params]
    lines = w.lines
    if t == "f32":
        # No conversion in f32: x + -0.0 is x exactly (extf/truncf f32 to
        # f32 do not verify).
        out.append("  %negz = arith.constant -0.0 : f32")
        lines = [re.sub(r"arith\.(extf|truncf) (%\w+) : f32 to f32",
                        r"arith.addf \2, %negz : f32", line) for line in lines]
    out += lines
    out += [f"  {r}_out = dtensor.annotate {r} layout {lay} : {ty}"
            for (r, lay), ty in zip(results, rtypes)]
    out.append(f"  return {', '.join(r + '_out' for r, _ in results)} : "
               f"{', '.join(rtypes)}")
    out.append("}")
    return "\n".join(out) + "\n"


def write_output(text, path):
    """`text` to the file `path`, or to stdout for "-"."""
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
