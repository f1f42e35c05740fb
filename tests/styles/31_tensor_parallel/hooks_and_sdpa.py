"""Style: no autograd.Function at all. f is a gradient hook that all-reduces x's gradient;
g is an all-reduce of a detached copy, joined to the graph with the straight-through trick
(partial + (total - partial).detach()), whose backward is the identity. The local heads go
through F.scaled_dot_product_attention (its bool mask means "may attend": the inverse).

Kata 31 reference: Megatron's tensor-parallel attention, x (batch, seq, embed_dim)."""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


def _world(group):
    if not dist.is_initialized():
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


def _sum_gradient(group):
    def hook(grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=group)
        return grad
    return hook


def f(x, group):
    """Identity forward; the gradient is summed over the ranks on its way back to x."""
    if _world(group)[1] == 1 or not x.requires_grad:
        return x
    y = x.view_as(x)
    y.register_hook(_sum_gradient(group))
    return y


def g(partial, group):
    """Sum over the ranks forward; identity backward."""
    if _world(group)[1] == 1:
        return partial
    total = partial.detach().clone()
    dist.all_reduce(total, group=group)
    return partial + (total - partial).detach()


class ColumnParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, group=None):
        super().__init__()
        _, ws = _world(group)
        self.group = group
        self.weight = nn.Parameter(torch.randn(out_features // ws, in_features) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features // ws)) if bias else None

    def forward(self, x):
        return F.linear(f(x, self.group), self.weight, self.bias)


class RowParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, group=None):
        super().__init__()
        _, ws = _world(group)
        self.group = group
        self.weight = nn.Parameter(torch.randn(out_features, in_features // ws) * 0.02)
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    def forward(self, x_local):
        out = g(x_local @ self.weight.T, self.group)
        return out if self.bias is None else out + self.bias


class TensorParallelAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True, group=None):
        super().__init__()
        self.rank, self.ws = _world(group)
        self.group = group
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.q_proj, self.k_proj, self.v_proj = (
            ColumnParallelLinear(embed_dim, embed_dim, bias, group) for _ in range(3))
        self.out_proj = RowParallelLinear(embed_dim, embed_dim, bias, group)

    def load_full_state_dict(self, state_dict):
        width = self.embed_dim // self.ws
        mine = torch.arange(self.rank * width, (self.rank + 1) * width)
        qkv = state_dict["in_proj_weight"].view(3, self.embed_dim, self.embed_dim)
        with torch.no_grad():
            for i, proj in enumerate((self.q_proj, self.k_proj, self.v_proj)):
                proj.weight.copy_(qkv[i].index_select(0, mine))
                if proj.bias is not None:
                    proj.bias.copy_(state_dict["in_proj_bias"].view(3, -1)[i, mine])
            self.out_proj.weight.copy_(state_dict["out_proj.weight"].index_select(1, mine))
            if self.out_proj.bias is not None:
                self.out_proj.bias.copy_(state_dict["out_proj.bias"])

    def forward(self, x, attn_mask=None, is_causal=False):
        b, n, _ = x.shape
        local = self.num_heads // self.ws
        x = f(x, self.group)
        q, k, v = (F.linear(x, p.weight, p.bias).unflatten(-1, (local, -1)).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            attn_mask = ~attn_mask  # SDPA: True = may attend
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                           is_causal=is_causal and attn_mask is None)
        return self.out_proj(o.transpose(1, 2).flatten(2))
