"""Style: CS336-style plain code, one local head at a time, with f and g as two small
autograd Functions written with torch.distributed's functional names; the masks are merged
into one additive float mask first.

Kata 31 reference: Megatron's tensor-parallel attention, x (batch, seq, embed_dim)."""

import math

import torch
import torch.distributed as dist
from torch import nn


class Identity_AllReduceBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        out = grad.contiguous().clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out


class AllReduce_IdentityBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.contiguous().clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad


def ws_rank():
    return dist.get_world_size(), dist.get_rank()


class ColumnParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, group=None):
        super().__init__()
        ws, _ = ws_rank()
        self.weight = nn.Parameter(torch.empty(out_features // ws, in_features).uniform_(-0.1, 0.1))
        self.bias = nn.Parameter(torch.zeros(out_features // ws)) if bias else None

    def local(self, x):
        y = x @ self.weight.t()
        return y + self.bias if self.bias is not None else y

    def forward(self, x):
        return self.local(Identity_AllReduceBackward.apply(x))


class RowParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, group=None):
        super().__init__()
        ws, _ = ws_rank()
        self.weight = nn.Parameter(torch.empty(out_features, in_features // ws).uniform_(-0.1, 0.1))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    def forward(self, x_local):
        y = AllReduce_IdentityBackward.apply(x_local @ self.weight.t())
        return y + self.bias if self.bias is not None else y


class TensorParallelAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, bias=True, group=None):
        super().__init__()
        ws, self.rank = ws_rank()
        self.ws, self.d = ws, embed_dim // num_heads
        self.heads_here = num_heads // ws
        self.q_proj = ColumnParallelLinear(embed_dim, embed_dim, bias)
        self.k_proj = ColumnParallelLinear(embed_dim, embed_dim, bias)
        self.v_proj = ColumnParallelLinear(embed_dim, embed_dim, bias)
        self.out_proj = RowParallelLinear(embed_dim, embed_dim, bias)

    def load_full_state_dict(self, sd):
        E = sd["out_proj.weight"].shape[0]
        lo, hi = self.rank * E // self.ws, (self.rank + 1) * E // self.ws
        with torch.no_grad():
            for i, proj in enumerate([self.q_proj, self.k_proj, self.v_proj]):
                proj.weight.copy_(sd["in_proj_weight"][i * E + lo:i * E + hi])
                if "in_proj_bias" in sd:
                    proj.bias.copy_(sd["in_proj_bias"][i * E + lo:i * E + hi])
            self.out_proj.weight.copy_(sd["out_proj.weight"][:, lo:hi])
            if "out_proj.bias" in sd:
                self.out_proj.bias.copy_(sd["out_proj.bias"])

    def forward(self, x, attn_mask=None, is_causal=False):
        n = x.shape[1]
        additive = torch.zeros(n, n, dtype=x.dtype)
        if attn_mask is not None:
            additive = (additive.masked_fill(attn_mask, -math.inf) if attn_mask.dtype == torch.bool
                        else additive + attn_mask)
        if is_causal:
            additive = additive.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
        x = Identity_AllReduceBackward.apply(x) if self.ws > 1 else x
        q, k, v = self.q_proj.local(x), self.k_proj.local(x), self.v_proj.local(x)
        outs = []
        for h in range(self.heads_here):
            cols = slice(h * self.d, (h + 1) * self.d)
            scores = q[..., cols] @ k[..., cols].transpose(-1, -2) / math.sqrt(self.d) + additive
            outs.append(torch.softmax(scores, dim=-1) @ v[..., cols])
        return self.out_proj(torch.cat(outs, dim=-1))
