#!/usr/bin/env python3
"""Runs an unsharded CUDA artifact of examples/tp_mlp.mlir on the GPU.

  python3 test/Target/CUDA/run-artifact.py ARTIFACT.so

Made here with `dtensor-compile examples/tp_mlp.mlir --unsharded --target
cuda -o mlp.so`; on the GPU machine (next to libdtensor_runtime_cuda.so, on
LD_LIBRARY_PATH) this initialises the runtime, calls _mlir_ciface_mlp on
device buffers (PyTorch allocates them, on the same primary context) with
fresh random inputs and compares relu(x @ w1) @ w2 with PyTorch's, fp32
without TF32. Needs no MLIR; prints the manifest and the relative error.
"""
import ctypes
import sys

import torch


class Memref2D(ctypes.Structure):
    _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                ("offset", ctypes.c_int64), ("sizes", ctypes.c_int64 * 2),
                ("strides", ctypes.c_int64 * 2)]


def memref(t):
    rows, cols = t.shape
    return Memref2D(t.data_ptr(), t.data_ptr(), 0, (rows, cols), (cols, 1))


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    runtime = ctypes.CDLL("libdtensor_runtime_cuda.so", mode=ctypes.RTLD_GLOBAL)
    argc = ctypes.c_int(0)
    argv = ctypes.POINTER(ctypes.c_char_p)()
    runtime.dtensor_rt_init.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.c_void_p]
    if runtime.dtensor_rt_init(b"nccl", ctypes.byref(argc),
                               ctypes.byref(argv)) != 0:
        sys.exit("run-artifact: dtensor_rt_init failed")
    torch.cuda.init()
    artifact = ctypes.CDLL(sys.argv[1])
    artifact.dtensor_artifact_manifest.restype = ctypes.c_char_p
    print("manifest:", artifact.dtensor_artifact_manifest().decode())

    gen = torch.Generator(device="cuda").manual_seed(11)
    x = torch.rand(8, 16, device="cuda", generator=gen) * 2 - 1
    w1 = torch.rand(16, 32, device="cuda", generator=gen) * 2 - 1
    w2 = torch.rand(32, 16, device="cuda", generator=gen) * 2 - 1
    args = [memref(t) for t in (x, w1, w2)]
    result = Memref2D()
    artifact._mlir_ciface_mlp(ctypes.byref(result),
                              *[ctypes.byref(a) for a in args])
    torch.cuda.synchronize()
    ok = torch.cuda.current_device() == 0 and list(result.sizes) == [8, 16]
    got = torch.empty(8, 16, device="cuda")
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuCtxSynchronize()
    copied = cuda.cuMemcpyDtoD_v2(ctypes.c_uint64(got.data_ptr()),
                                  ctypes.c_uint64(result.aligned), 8 * 16 * 4)
    torch.cuda.synchronize()
    want = torch.relu(x @ w1) @ w2
    err = ((got - want).abs().max() / want.abs().max()).item()
    ok = ok and copied == 0 and err < 1e-5
    print(f"mlp on the GPU: sizes {list(result.sizes)}, max relative error "
          f"{err:.3e} (tolerance 1e-5): {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
