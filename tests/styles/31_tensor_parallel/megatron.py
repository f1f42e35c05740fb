"""Style: as Megatron-LM writes it (tensor_parallel/mappings.py and layers.py).

_CopyToModelParallelRegion / _ReduceFromModelParallelRegion with Megatron's in-place
_reduce (on g's fresh input), get_tensor_model_parallel_* helpers, skip_bias_add-free layers,
and the local heads split as Megatron's attention splits them: (b, n, h/ws, d), scores through
torch.baddbmm with the 1/sqrt(d) folded in as alpha.

Kata 31 reference: Megatron's tensor-parallel attention, x (batch, seq, embed_dim)."""

import math

import torch
import torch.distributed
import torch.nn.functional as F
from torch import nn


def get_tensor_model_parallel_world_size(group=None):
    if not torch.distributed.is_initialized():
        return 1
    return torch.distributed.get_world_size(group=group)


def get_tensor_model_parallel_rank(group=None):
    if not torch.distributed.is_initialized():
        return 0
    return torch.distributed.get_rank(group=group)


def _reduce(input_, group):
    """All-reduce the input tensor across the model parallel group (in place)."""
    if get_tensor_model_parallel_world_size(group) == 1:
        return input_
    torch.distributed.all_reduce(input_.contiguous(), group=group)
    return input_


class _CopyToModelParallelRegion(torch.autograd.Function):
    """Pass the input to the model parallel region."""

    @staticmethod
    def forward(ctx, input_, group):
        ctx.group = group
        return input_

    @staticmethod
    def backward(ctx, grad_output):
        return _reduce(grad_output.clone(), ctx.group), None


class _ReduceFromModelParallelRegion(torch.autograd.Function):
    """All-reduce the input from the model parallel region."""

    @staticmethod
    def forward(ctx, input_, group):
        return _reduce(input_, group)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


def copy_to_tensor_model_parallel_region(input_, group=None):
    return _CopyToModelParallelRegion.apply(input_, group)


def reduce_from_tensor_model_parallel_region(input_, group=None):
    return _ReduceFromModelParallelRegion.apply(input_, group)


def divide(numerator, denominator):
    assert numerator % denominator == 0, f"{numerator} is not divisible by {denominator}"
    return numerator // denominator


class ColumnParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, group=None):
        super().__init__()
        self.group = group
        self.output_size_per_partition = divide(out_features,
                                                get_tensor_model_parallel_world_size(group))
        self.weight = nn.Parameter(torch.empty(self.output_size_per_partition, in_features))
        nn.init.normal_(self.weight, std=0.02)
        if bias:
            self.bias = nn.Parameter(torch.zeros(self.output_size_per_partition))
        else:
            self.register_parameter("bias", None)

    def forward(self, input_, input_is_copied=False):
        input_parallel = input_ if input_is_copied else copy_to_tensor_model_parallel_region(
            input_, self.group)
        return F.linear(input_parallel, self.weight, self.bias)


class RowParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, group=None):
        super().__init__()
        self.group = group
        self.input_size_per_partition = divide(in_features,
                                               get_tensor_model_parallel_world_size(group))
        self.weight = nn.Parameter(torch.empty(out_features, self.input_size_per_partition))
        nn.init.normal_(self.weight, std=0.02)
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_features))
        else:
            self.register_parameter("bias", None)

    def forward(self, input_):
        output_parallel = F.linear(input_, self.weight)
        output_ = reduce_from_tensor_model_parallel_region(output_parallel, self.group)
        return output_ + self.bias if self.bias is not None else output_


class TensorParallelAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True, group=None):
        super().__init__()
        world_size = get_tensor_model_parallel_world_size(group)
        self.group = group
        self.hidden_size_per_attention_head = divide(embed_dim, num_heads)
        self.num_attention_heads_per_partition = divide(num_heads, world_size)
        self.hidden_size_per_partition = divide(embed_dim, world_size)
        self.rank = get_tensor_model_parallel_rank(group)
        self.q_proj = ColumnParallelLinear(embed_dim, embed_dim, bias, group)
        self.k_proj = ColumnParallelLinear(embed_dim, embed_dim, bias, group)
        self.v_proj = ColumnParallelLinear(embed_dim, embed_dim, bias, group)
        self.out_proj = RowParallelLinear(embed_dim, embed_dim, bias, group)

    def load_full_state_dict(self, state_dict):
        per = self.hidden_size_per_partition
        start, end = self.rank * per, (self.rank + 1) * per
        weights = torch.split(state_dict["in_proj_weight"], state_dict["in_proj_weight"].shape[0] // 3)
        with torch.no_grad():
            for proj, weight in zip((self.q_proj, self.k_proj, self.v_proj), weights):
                proj.weight.copy_(weight[start:end])
            self.out_proj.weight.copy_(state_dict["out_proj.weight"][:, start:end])
            if "in_proj_bias" in state_dict:
                biases = torch.split(state_dict["in_proj_bias"],
                                     state_dict["in_proj_bias"].shape[0] // 3)
                for proj, b in zip((self.q_proj, self.k_proj, self.v_proj), biases):
                    proj.bias.copy_(b[start:end])
                self.out_proj.bias.copy_(state_dict["out_proj.bias"])

    def forward(self, hidden_states, attn_mask=None, is_causal=False):
        b, s, _ = hidden_states.shape
        hidden_states = copy_to_tensor_model_parallel_region(hidden_states, self.group)
        np_, hn = self.num_attention_heads_per_partition, self.hidden_size_per_attention_head

        def split(layer):  # [b, s, np*hn] -> [b*np, s, hn]
            return (layer(hidden_states, input_is_copied=True).view(b, s, np_, hn)
                    .permute(0, 2, 1, 3).reshape(b * np_, s, hn))

        query, key, value = split(self.q_proj), split(self.k_proj), split(self.v_proj)
        scores = torch.baddbmm(
            torch.zeros(b * np_, s, s, dtype=query.dtype, device=query.device),
            query, key.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(hn))
        if is_causal and attn_mask is None:
            attn_mask = torch.ones(s, s, dtype=torch.bool, device=query.device).triu(1)
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                scores = scores.masked_fill(attn_mask, float("-inf"))
            else:
                scores = scores + attn_mask
        probs = torch.softmax(scores, dim=-1)
        context = torch.bmm(probs, value).view(b, np_, s, hn).permute(0, 2, 1, 3)
        return self.out_proj(context.reshape(b, s, np_ * hn))
