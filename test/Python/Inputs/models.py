"""The models of test/Python: tiny Hugging Face models, random init, with
their tensor-parallel plans. Each function returns the spec
`python3 -m dtensor export FILE:FUNCTION` takes."""
import torch
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput,
                                               RowwiseParallel, SequenceParallel)


def _dtype():
    import os
    return {"f32": torch.float32, "bf16": torch.bfloat16}[os.environ.get("DTYPE", "f32")]


def llama():
    """LlamaForCausalLM, 2 layers, GQA (8 heads, 4 kv heads), with Hugging
    Face's own tp_plan (base_model_tp_plan, the embedding and lm_head)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=4,
                      max_position_embeddings=64)
    torch.manual_seed(0)
    m = LlamaForCausalLM(cfg).to(_dtype()).eval()
    ids = torch.randint(0, 128, (2, 8))
    return {"module": m, "args": (ids,), "kwargs": {"use_cache": False},
            "plan": m.config.base_model_tp_plan, "mesh": 2}


def llama_full_plan():
    spec = llama()
    spec["plan"] = spec["module"].tp_plan
    return spec


def gpt2():
    """GPT2LMHeadModel (tiny) with a written parallelize_module plan:
    attention and MLP Megatron-style (c_attn / c_fc colwise, the c_proj's
    rowwise), the final norm sequence parallel."""
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=128, n_positions=32, n_embd=64, n_layer=2, n_head=4,
                     bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    m = GPT2LMHeadModel(cfg).to(_dtype()).eval()
    ids = torch.randint(0, 128, (2, 8))
    plan = {
        "transformer.h.*.attn.c_attn": ColwiseParallel(),
        "transformer.h.*.attn.c_proj": RowwiseParallel(),
        "transformer.h.*.mlp.c_fc": ColwiseParallel(),
        "transformer.h.*.mlp.c_proj": RowwiseParallel(output_layouts=Shard(1)),
        "transformer.h.*.ln_2": SequenceParallel(),
        "transformer.h.*.mlp": PrepareModuleInput(input_layouts=(Shard(1),),
                                                  desired_input_layouts=(Replicate(),)),
        "lm_head": ColwiseParallel(output_layouts=Replicate()),
    }
    return {"module": m, "args": (ids,), "kwargs": {"use_cache": False}, "plan": plan,
            "mesh": 2}


def bert():
    """A BERT encoder (BertModel without pooler), attention mask with
    padding, heads and MLP tensor parallel."""
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=128,
                     max_position_embeddings=32)
    torch.manual_seed(0)
    m = BertModel(cfg, add_pooling_layer=False).to(_dtype()).eval()
    ids = torch.randint(0, 128, (2, 8))
    types = torch.zeros(2, 8, dtype=torch.int64)
    plan = {
        "encoder.layer.*.attention.self.query": ColwiseParallel(),
        "encoder.layer.*.attention.self.key": ColwiseParallel(),
        "encoder.layer.*.attention.self.value": ColwiseParallel(),
        "encoder.layer.*.attention.output.dense": RowwiseParallel(),
        "encoder.layer.*.intermediate.dense": ColwiseParallel(),
        "encoder.layer.*.output.dense": RowwiseParallel(),
    }
    return {"module": m, "args": (ids,), "kwargs": {"token_type_ids": types},
            "plan": plan, "mesh": 2}


class _Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(16, 32)
        self.down = torch.nn.Linear(32, 16)

    def forward(self, x):
        y = self.down(torch.relu(self.up(x)))
        return torch.nn.functional.gelu(y, approximate="tanh").log_softmax(-1)


def mlp():
    """A plain module without a plan: inputs replicated, propagation lays out
    the rest."""
    torch.manual_seed(0)
    return {"module": _Mlp(), "args": (torch.randn(4, 8, 16),), "mesh": 2}


def llama_bf16_d64():
    """A bf16 Llama layer with head dim 64 and a batch of 1 (a unit dim the
    export keeps where the attention chain needs it)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=128, hidden_size=256, intermediate_size=256,
                      num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    m = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    return {"module": m, "args": (torch.randint(0, 128, (1, 16)),),
            "kwargs": {"use_cache": False}, "plan": m.tp_plan, "mesh": 2}
