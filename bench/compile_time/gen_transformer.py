#!/usr/bin/env python3
"""Writes an N-layer transformer in the global-view syntax and its
sequence-parallel TP plan (torchtitan's Llama plan).

Each layer: RMSNorm, multi-head self-attention (q/k/v/o projections,
softmax(q k^T / sqrt(d)) v, no mask), residual, RMSNorm, SwiGLU MLP
(w2(silu(w1 x) * w3 x)), residual. Activations are [1, tokens, hidden];
weights are stored [out, in] as nn.Linear stores them and are function
arguments marked dtensor.param.

  gen_transformer.py --layers 64 --dtype bf16 -o model.mlir --plan plan.json
"""
import argparse
import json
import sys

HEADER = """\
#x = affine_map<(b, s, h) -> (b, s, h)>
#bs = affine_map<(b, s, h) -> (b, s)>
#h = affine_map<(b, s, h) -> (h)>
#in = affine_map<(b, s, o, k) -> (b, s, k)>
#w = affine_map<(b, s, o, k) -> (o, k)>
#out = affine_map<(b, s, o, k) -> (b, s, o)>
#q = affine_map<(b, h, s, t, e) -> (b, s, h, e)>
#k = affine_map<(b, h, s, t, e) -> (b, t, h, e)>
#scores = affine_map<(b, h, s, t, e) -> (b, h, s, t)>
#p = affine_map<(b, s, h, e, t) -> (b, h, s, t)>
#v = affine_map<(b, s, h, e, t) -> (b, t, h, e)>
#o = affine_map<(b, s, h, e, t) -> (b, s, h, e)>
#id4 = affine_map<(b, h, s, t) -> (b, h, s, t)>

dtensor.mesh @tp shape = [{tp}] names = ["tp"]
"""


def layer(l, a):
    t, S, H, F, NH = a.dtype, a.tokens, a.hidden, a.ffn, a.heads
    D = H // NH
    X = f"tensor<1x{S}x{H}x{t}>"
    XS = f"tensor<1x{S}x{t}>"
    XF = f"tensor<1x{S}x{F}x{t}>"
    XH = f"tensor<1x{S}x{NH}x{D}x{t}>"
    SC = f"tensor<{1}x{NH}x{S}x{S}x{t}>"
    WH = f"tensor<{H}x{H}x{t}>"
    p = f"layers.{l}"
    lines = []
    emit = lines.append

    def norm(name, x, g, res):
        emit(f"""  %{res}_ss = linalg.generic {{indexing_maps = [#x, #bs], iterator_types = ["parallel", "parallel", "reduction"]}}
      ins({x} : {X}) outs(%fs : {XS}) attrs = {{dtensor.module = "{p}.{name}"}} {{
  ^bb0(%a: {t}, %acc: {t}):
    %m = arith.mulf %a, %a : {t}
    %s = arith.addf %acc, %m : {t}
    linalg.yield %s : {t}
  }} -> {XS}
  %{res} = linalg.generic {{indexing_maps = [#x, #bs, #h, #x], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins({x}, %{res}_ss, {g} : {X}, {XS}, tensor<{H}x{t}>) outs(%ex : {X}) attrs = {{dtensor.module = "{p}.{name}"}} {{
  ^bb0(%a: {t}, %ss: {t}, %gain: {t}, %o: {t}):
    %mean = arith.mulf %ss, %inv_dim : {t}
    %var = arith.addf %mean, %eps : {t}
    %r = math.rsqrt %var : {t}
    %y = arith.mulf %a, %r : {t}
    %z = arith.mulf %y, %gain : {t}
    linalg.yield %z : {t}
  }} -> {X}""")

    def linear(name, x, w, res, init, itype, otype, wtype):
        emit(f"""  %{res} = linalg.generic {{indexing_maps = [#in, #w, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins({x}, {w} : {itype}, {wtype}) outs({init} : {otype}) attrs = {{dtensor.module = "{p}.{name}"}} {{
  ^bb0(%a: {t}, %b: {t}, %acc: {t}):
    %m = arith.mulf %a, %b : {t}
    %s = arith.addf %acc, %m : {t}
    linalg.yield %s : {t}
  }} -> {otype}""")

    x = f"%x{l}"
    norm("attention_norm", x, f"%an{l}", f"n{l}")
    for w in "qkv":
        linear(f"attention.w{w}", f"%n{l}", f"%w{w}{l}", f"{w}{l}", "%fx", X, X, WH)
        emit(f"""  %{w}h{l} = tensor.expand_shape %{w}{l} [[0], [1], [2, 3]] output_shape [1, {S}, {NH}, {D}] {{dtensor.module = "{p}.attention"}} : {X} into {XH}""")
    emit(f"""  %sc{l} = linalg.generic {{indexing_maps = [#q, #k, #scores], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}}
      ins(%qh{l}, %kh{l} : {XH}, {XH}) outs(%fsc : {SC}) attrs = {{dtensor.module = "{p}.attention"}} {{
  ^bb0(%a: {t}, %b: {t}, %acc: {t}):
    %m = arith.mulf %a, %b : {t}
    %s = arith.addf %acc, %m : {t}
    linalg.yield %s : {t}
  }} -> {SC}
  %scs{l} = linalg.generic {{indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
      ins(%sc{l} : {SC}) outs(%esc : {SC}) attrs = {{dtensor.module = "{p}.attention"}} {{
  ^bb0(%a: {t}, %o: {t}):
    %m = arith.mulf %a, %scale : {t}
    linalg.yield %m : {t}
  }} -> {SC}
  %pr{l} = linalg.softmax {{dtensor.module = "{p}.attention"}} dimension(3) ins(%scs{l} : {SC}) outs(%esc : {SC}) -> {SC}
  %oh{l} = linalg.generic {{indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}}
      ins(%pr{l}, %vh{l} : {SC}, {XH}) outs(%fxh : {XH}) attrs = {{dtensor.module = "{p}.attention"}} {{
  ^bb0(%a: {t}, %b: {t}, %acc: {t}):
    %m = arith.mulf %a, %b : {t}
    %s = arith.addf %acc, %m : {t}
    linalg.yield %s : {t}
  }} -> {XH}
  %o{l} = tensor.collapse_shape %oh{l} [[0], [1], [2, 3]] {{dtensor.module = "{p}.attention"}} : {XH} into {X}""")
    linear("attention.wo", f"%o{l}", f"%wo{l}", f"y{l}", "%fx", X, X, WH)
    emit(f"  %h{l} = linalg.add ins({x}, %y{l} : {X}, {X}) outs(%ex : {X}) -> {X}")
    norm("ffn_norm", f"%h{l}", f"%fn{l}", f"m{l}")
    WF = f"tensor<{F}x{H}x{t}>"
    linear("feed_forward.w1", f"%m{l}", f"%w1{l}", f"g{l}", "%ff", X, XF, WF)
    linear("feed_forward.w3", f"%m{l}", f"%w3{l}", f"u{l}", "%ff", X, XF, WF)
    emit(f"""  %a{l} = linalg.generic {{indexing_maps = [#x, #x, #x], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%g{l}, %u{l} : {XF}, {XF}) outs(%ef : {XF}) attrs = {{dtensor.module = "{p}.feed_forward"}} {{
  ^bb0(%a: {t}, %b: {t}, %o: {t}):
    %n = arith.negf %a : {t}
    %e = math.exp %n : {t}
    %d = arith.addf %e, %one : {t}
    %sg = arith.divf %a, %d : {t}
    %r = arith.mulf %sg, %b : {t}
    linalg.yield %r : {t}
  }} -> {XF}""")
    linear("feed_forward.w2", f"%a{l}", f"%w2{l}", f"d{l}", "%fx", XF, X,
           f"tensor<{H}x{F}x{t}>")
    emit(f"  %x{l + 1} = linalg.add ins(%h{l}, %d{l} : {X}, {X}) outs(%ex : {X}) -> {X}")
    return "\n".join(lines)


def program(a):
    t, S, H, F, NH = a.dtype, a.tokens, a.hidden, a.ffn, a.heads
    D = H // NH
    X = f"tensor<1x{S}x{H}x{t}>"
    args = [f"%x0: {X}"]
    for l in range(a.layers):
        p = f"layers.{l}"
        args += [
            f'%an{l}: tensor<{H}x{t}> {{dtensor.param = "{p}.attention_norm.weight"}}',
            *[f'%w{w}{l}: tensor<{H}x{H}x{t}> {{dtensor.param = "{p}.attention.w{w}.weight"}}' for w in "qkvo"],
            f'%fn{l}: tensor<{H}x{t}> {{dtensor.param = "{p}.ffn_norm.weight"}}',
            f'%w1{l}: tensor<{F}x{H}x{t}> {{dtensor.param = "{p}.feed_forward.w1.weight"}}',
            f'%w3{l}: tensor<{F}x{H}x{t}> {{dtensor.param = "{p}.feed_forward.w3.weight"}}',
            f'%w2{l}: tensor<{H}x{F}x{t}> {{dtensor.param = "{p}.feed_forward.w2.weight"}}',
        ]
    out = [HEADER.format(tp=a.tp)]
    out.append(f"func.func @{a.name}(\n    " + ",\n    ".join(args) + f")\n    -> {X} {{")
    out.append(f"""  %zero = arith.constant 0.0 : {t}
  %one = arith.constant 1.0 : {t}
  %inv_dim = arith.constant {1.0 / H!r} : {t}
  %eps = arith.constant 1.0e-5 : {t}
  %scale = arith.constant {1.0 / D ** 0.5!r} : {t}
  %es = tensor.empty() : tensor<1x{S}x{t}>
  %fs = linalg.fill ins(%zero : {t}) outs(%es : tensor<1x{S}x{t}>) -> tensor<1x{S}x{t}>
  %ex = tensor.empty() : {X}
  %fx = linalg.fill ins(%zero : {t}) outs(%ex : {X}) -> {X}
  %exh = tensor.empty() : tensor<1x{S}x{NH}x{D}x{t}>
  %fxh = linalg.fill ins(%zero : {t}) outs(%exh : tensor<1x{S}x{NH}x{D}x{t}>) -> tensor<1x{S}x{NH}x{D}x{t}>
  %esc = tensor.empty() : tensor<1x{NH}x{S}x{S}x{t}>
  %fsc = linalg.fill ins(%zero : {t}) outs(%esc : tensor<1x{NH}x{S}x{S}x{t}>) -> tensor<1x{NH}x{S}x{S}x{t}>
  %ef = tensor.empty() : tensor<1x{S}x{F}x{t}>
  %ff = linalg.fill ins(%zero : {t}) outs(%ef : tensor<1x{S}x{F}x{t}>) -> tensor<1x{S}x{F}x{t}>""")
    for l in range(a.layers):
        out.append(layer(l, a))
    out.append(f"  return %x{a.layers} : {X}\n}}\n")
    return "\n".join(out)


def plan(a):
    return {
        "mesh": "tp",
        "plan": {
            "layers.*.attention_norm": {"style": "SequenceParallel"},
            "layers.*.attention": {"style": "PrepareModuleInput",
                                   "input_layouts": ["S(1)"],
                                   "desired_input_layouts": ["R"]},
            "layers.*.attention.w[qkv]": {"style": "ColwiseParallel",
                                          "use_local_output": False},
            "layers.*.attention.wo": {"style": "RowwiseParallel",
                                      "output_layouts": ["S(1)"]},
            "layers.*.ffn_norm": {"style": "SequenceParallel"},
            "layers.*.feed_forward": {"style": "PrepareModuleInput",
                                      "input_layouts": ["S(1)"],
                                      "desired_input_layouts": ["R"]},
            "layers.*.feed_forward.w[13]": {"style": "ColwiseParallel"},
            "layers.*.feed_forward.w2": {"style": "RowwiseParallel",
                                         "output_layouts": ["S(1)"]},
        },
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--tp", type=int, default=4)
    ap.add_argument("--name", default="transformer")
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--plan", help="also write the TP plan (JSON) here")
    a = ap.parse_args()
    if a.hidden % a.heads:
        sys.exit("hidden must be a multiple of heads")
    text = program(a)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w") as f:
            f.write(text)
    if a.plan:
        with open(a.plan, "w") as f:
            json.dump(plan(a), f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
