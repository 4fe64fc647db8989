#!/usr/bin/env python3
"""Compares two little-endian f32 .npy files without numpy (CI has none).

  npy-compare.py A.npy B.npy   prints "<shape> <max|a-b|/max|b| < 1e-6>"
"""
import ast
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"{path}: not a .npy file")
    major = data[6]
    length_size = 2 if major == 1 else 4
    header_len = int.from_bytes(data[8:8 + length_size], "little")
    start = 8 + length_size
    header = ast.literal_eval(data[start:start + header_len].decode())
    if header["descr"] != "<f4" or header["fortran_order"]:
        sys.exit(f"{path}: expected C-ordered <f4, got {header}")
    body = data[start + header_len:]
    return header["shape"], struct.unpack(f"<{len(body) // 4}f", body)


(shape_a, a), (shape_b, b) = load(sys.argv[1]), load(sys.argv[2])
if shape_a != shape_b:
    sys.exit(f"shapes differ: {shape_a} vs {shape_b}")
diff = max(abs(x - y) for x, y in zip(a, b))
ref = max(abs(y) for y in b)
print(shape_a, diff / max(ref, 1e-30) < 1e-6)
