"""Modules and plans the frontend refuses (test/Python/errors.test)."""
import torch
from torch.distributed.tensor import Replicate
from torch.distributed.tensor.parallel import ColwiseParallel, loss_parallel  # noqa: F401
from torch.distributed.tensor.parallel.style import PrepareModuleInputOutput


class Sorts(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.sort(self.proj(x), dim=-1).values  # the unsupported op


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(8, 16)
        self.down = torch.nn.Linear(16, 8)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


def unsupported_op():
    return {"module": Sorts(), "args": (torch.randn(2, 8),), "mesh": 2}


def hf_local_colwise():
    return {"module": Mlp(), "args": (torch.randn(2, 8),), "mesh": 2,
            "plan": {"up": "local_colwise", "down": "rowwise"}}


def hf_unknown():
    return {"module": Mlp(), "args": (torch.randn(2, 8),), "mesh": 2,
            "plan": {"up": "colwize"}}


def style_unsupported():
    return {"module": Mlp(), "args": (torch.randn(2, 8),), "mesh": 2,
            "plan": {"up": PrepareModuleInputOutput(
                input_layouts=(Replicate(),), desired_input_layouts=(Replicate(),),
                output_layouts=(Replicate(),), desired_output_layouts=(Replicate(),))}}


def key_unmatched():
    return {"module": Mlp(), "args": (torch.randn(2, 8),), "mesh": 2,
            "plan": {"mid": ColwiseParallel()}}
