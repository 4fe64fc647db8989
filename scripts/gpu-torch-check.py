#!/usr/bin/env python3
"""The TP MLP of examples/tp_mlp.mlir on 2 GPU ranks against PyTorch eager.

  gpu-torch-check.py DIR [--single-gpu]

Draws x, w1, w2 with PyTorch, saves them as .npy, runs the compiled
2-rank artifact DIR/tp_mlp.n2.so with them (dtensor-launch --input), reads
the reassembled output and compares it with relu(x @ w1) @ w2 computed by
PyTorch eager on the GPU in fp32 without TF32. Prints the relative error;
exits 1 above 1e-5.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch


def main():
    directory = sys.argv[1]
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    x = torch.rand(8, 16, generator=gen) * 2 - 1
    w1 = torch.rand(16, 32, generator=gen) * 2 - 1
    w2 = torch.rand(32, 16, generator=gen) * 2 - 1
    with tempfile.TemporaryDirectory() as tmp:
        args = []
        for i, t in enumerate((x, w1, w2)):
            path = os.path.join(tmp, f"in{i}.npy")
            np.save(path, t.numpy())
            args.append(f"--input={i}={path}")
        out = os.path.join(tmp, "out")
        subprocess.run([os.path.join(directory, "dtensor-launch"),
                        os.path.join(directory, "tp_mlp.n2.so"), "--nproc",
                        "2", "--output-dir", out, *args, *sys.argv[2:]],
                       check=True)
        got = torch.from_numpy(np.load(os.path.join(out, "out0.npy"))).cuda()
    want = torch.relu(x.cuda() @ w1.cuda()) @ w2.cuda()
    err = ((got - want).abs().max() / want.abs().max()).item()
    print(f"max relative error {err:.3e} (tolerance 1e-5)")
    sys.exit(0 if err < 1e-5 else 1)


if __name__ == "__main__":
    main()
