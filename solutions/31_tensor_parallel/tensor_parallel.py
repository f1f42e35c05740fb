"""Reference solution for kata 31: Megatron's tensor-parallel attention on torch.distributed.

Shapes: x (batch, seq, embed_dim); every rank holds the same x and h / ws of the heads.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


def world(group=None):
    """(rank, world size) in ``group``: (0, 1) when no process group is initialised."""
    if not dist.is_available() or not dist.is_initialized():
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


class CopyToModelParallelRegion(torch.autograd.Function):
    """Megatron's f: the identity forward; the backward sums the gradient over the ranks."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class ReduceFromModelParallelRegion(torch.autograd.Function):
    """Megatron's g: the forward sums the partial outputs over the ranks; identity backward."""

    @staticmethod
    def forward(ctx, partial, group):
        total = partial.clone()
        dist.all_reduce(total, group=group)
        return total

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def copy_to_tensor_model_parallel_region(x, group=None):
    return CopyToModelParallelRegion.apply(x, group) if world(group)[1] > 1 else x


def reduce_from_tensor_model_parallel_region(x, group=None):
    return ReduceFromModelParallelRegion.apply(x, group) if world(group)[1] > 1 else x


class ColumnParallelLinear(nn.Module):
    """y = x W_r^T + b_r with W_r this rank's rows of W: (..., in) -> (..., out / ws)."""

    def __init__(self, in_features, out_features, bias=True, group=None):
        super().__init__()
        self.group = group
        rank, ws = world(group)
        self.weight = nn.Parameter(torch.empty(out_features // ws, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features // ws)) if bias else None
        nn.init.xavier_uniform_(self.weight)

    def local(self, x):
        """The local linear alone (f already applied to x by the caller)."""
        return F.linear(x, self.weight, self.bias)

    def forward(self, x):
        return self.local(copy_to_tensor_model_parallel_region(x, self.group))


class RowParallelLinear(nn.Module):
    """y = sum_r x_r W_r^T + b with W_r this rank's columns: (..., in / ws) -> (..., out)."""

    def __init__(self, in_features, out_features, bias=True, group=None):
        super().__init__()
        self.group = group
        rank, ws = world(group)
        self.weight = nn.Parameter(torch.empty(out_features, in_features // ws))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x_local):
        partial = F.linear(x_local, self.weight)
        out = reduce_from_tensor_model_parallel_region(partial, self.group)
        return out + self.bias if self.bias is not None else out  # the bias once, after g


class TensorParallelAttention(nn.Module):
    """Multi-head self-attention with this rank's h / ws heads: (b, n, E) -> (b, n, E)."""

    def __init__(self, embed_dim, num_heads, bias=True, group=None):
        super().__init__()
        self.group = group
        self.rank, self.world_size = world(group)
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.local_heads = num_heads // self.world_size
        self.q_proj = ColumnParallelLinear(embed_dim, embed_dim, bias, group)
        self.k_proj = ColumnParallelLinear(embed_dim, embed_dim, bias, group)
        self.v_proj = ColumnParallelLinear(embed_dim, embed_dim, bias, group)
        self.out_proj = RowParallelLinear(embed_dim, embed_dim, bias, group)

    @torch.no_grad()
    def load_full_state_dict(self, state_dict):
        """Keep this rank's slices of nn.MultiheadAttention's state dict."""
        r, width = self.rank, self.embed_dim // self.world_size
        rows = slice(r * width, (r + 1) * width)  # heads r*h/ws ... (r+1)*h/ws - 1
        w_q, w_k, w_v = state_dict["in_proj_weight"].chunk(3, dim=0)
        for proj, w in zip((self.q_proj, self.k_proj, self.v_proj), (w_q, w_k, w_v)):
            proj.weight.copy_(w[rows])
        self.out_proj.weight.copy_(state_dict["out_proj.weight"][:, rows])
        if self.out_proj.bias is not None:
            b_q, b_k, b_v = state_dict["in_proj_bias"].chunk(3, dim=0)
            for proj, b in zip((self.q_proj, self.k_proj, self.v_proj), (b_q, b_k, b_v)):
                proj.bias.copy_(b[rows])
            self.out_proj.bias.copy_(state_dict["out_proj.bias"])

    def forward(self, x, attn_mask=None, is_causal=False):
        b, n, _ = x.shape
        x = copy_to_tensor_model_parallel_region(x, self.group)  # f once, shared by q, k, v

        def heads(t):  # (b, n, E/ws) -> (b, h/ws, n, d)
            return t.view(b, n, self.local_heads, self.head_dim).transpose(1, 2)

        q, k, v = (heads(p.local(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
        if is_causal and attn_mask is None:
            attn_mask = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                scores = scores.masked_fill(attn_mask, float("-inf"))
            else:
                scores = scores + attn_mask
        o = torch.softmax(scores, dim=-1) @ v  # (b, h/ws, n, d)
        o = o.transpose(1, 2).reshape(b, n, self.local_heads * self.head_dim)
        return self.out_proj(o)
