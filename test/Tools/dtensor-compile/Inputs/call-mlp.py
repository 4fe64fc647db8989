# Calls _mlir_ciface_mlp of an unsharded artifact of examples/tp_mlp.mlir
# (relu(x @ w1) @ w2) through its C interface and compares the result with
# the same computation in Python.
import ctypes
import random
import sys


class Memref2D(ctypes.Structure):
    _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * 2),
                ("strides", ctypes.c_int64 * 2)]


def make(rows, cols, values):
    data = (ctypes.c_float * (rows * cols))(*values)
    ref = Memref2D(ctypes.cast(data, ctypes.c_void_p),
                   ctypes.cast(data, ctypes.c_void_p), 0, (rows, cols),
                   (cols, 1))
    return ref, data


def matmul(a, b, n, k, m):
    return [sum(a[i * k + p] * b[p * m + j] for p in range(k))
            for i in range(n) for j in range(m)]


rng = random.Random(7)
x = [rng.uniform(-1, 1) for _ in range(8 * 16)]
w1 = [rng.uniform(-1, 1) for _ in range(16 * 32)]
w2 = [rng.uniform(-1, 1) for _ in range(32 * 16)]
args = [make(8, 16, x), make(16, 32, w1), make(32, 16, w2)]
result = Memref2D()
library = ctypes.CDLL(sys.argv[1])
library._mlir_ciface_mlp(ctypes.byref(result),
                         *[ctypes.byref(ref) for ref, _ in args])
print("result sizes", list(result.sizes), "strides", list(result.strides))
out = ctypes.cast(result.aligned, ctypes.POINTER(ctypes.c_float))
h = [max(v, 0.0) for v in matmul(x, w1, 8, 16, 32)]
expected = matmul(h, w2, 8, 32, 16)
error = max(abs(out[result.offset + i] - e) / max(1.0, abs(e))
            for i, e in enumerate(expected))
print("max relative error below 1e-5:", error < 1e-5)
