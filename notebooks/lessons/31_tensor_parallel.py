# %% [markdown]
# ## 1. Heads split over ranks, simulated in one process
#
# Rank `r` of `ws` keeps rows `r·E/ws … (r+1)·E/ws − 1` of `W_q`, `W_k`, `W_v` (its `h/ws` whole
# heads) and the same columns of `W_o`. Each rank's heads give a partial output `(b, n, E)`;
# their sum plus the bias is the full module's output. This cell plays both ranks of `ws = 2`
# by slicing one `nn.MultiheadAttention`, with no process group at all: the sum is what `g`'s
# all-reduce computes.

# %%
import torch
from torch import nn

torch.manual_seed(0)
E, h, ws = 16, 4, 2
d, width = E // h, E // ws
full = nn.MultiheadAttention(E, h, batch_first=True)
with torch.no_grad():  # its own init zeroes the biases, which would hide a bias added twice
    full.in_proj_bias.normal_()
    full.out_proj.bias.normal_()
x = torch.randn(2, 5, E)
w_q, w_k, w_v = full.in_proj_weight.detach().chunk(3)
b_q, b_k, b_v = full.in_proj_bias.detach().chunk(3)
w_o, b_o = full.out_proj.weight.detach(), full.out_proj.bias.detach()

partials = []
for r in range(ws):
    rows = slice(width * r, width * (r + 1))
    q, k, v = (x @ w[rows].T + b[rows] for w, b in ((w_q, b_q), (w_k, b_k), (w_v, b_v)))
    q, k, v = (t.view(2, 5, h // ws, d).transpose(1, 2) for t in (q, k, v))  # (b, h/ws, n, d)
    o = torch.softmax(q @ k.transpose(-2, -1) / d ** 0.5, dim=-1) @ v
    o = o.transpose(1, 2).reshape(2, 5, width)  # (b, n, E/ws)
    partials.append(o @ w_o[:, rows].T)  # (b, n, E): this rank's share of out_proj
    print(f"rank {r}: heads {r * h // ws}..{(r + 1) * h // ws - 1}, partial {tuple(partials[-1].shape)}")

expected = full(x, x, x, need_weights=False)[0]
print("sum of partials + bias vs nn.MultiheadAttention:",
      (sum(partials) + b_o - expected).abs().max().item())
print("bias added on every rank, off by:", (sum(p + b_o for p in partials) - expected).abs().max().item())

# %% [markdown]
# ## 2. Why x's gradient needs the other all-reduce
#
# Every rank reads the same `x`, but only through its own heads: the gradient that reaches
# `x` on rank `r` is rank `r`'s share. The true gradient is the sum of the shares, which is
# `f`'s backward all-reduce. Without it each rank would train on a wrong `x.grad`, and the
# layer before would drift apart from rank to rank.

# %%
def rank_output(r, x):
    rows = slice(width * r, width * (r + 1))
    q, k, v = (x @ w[rows].T + b[rows] for w, b in ((w_q, b_q), (w_k, b_k), (w_v, b_v)))
    q, k, v = (t.view(2, 5, h // ws, d).transpose(1, 2) for t in (q, k, v))
    o = (torch.softmax(q @ k.transpose(-2, -1) / d ** 0.5, dim=-1) @ v).transpose(1, 2)
    return o.reshape(2, 5, width) @ w_o[:, rows].T

g_out = torch.randn(2, 5, E)
shares = []
for r in range(ws):
    x_r = x.clone().requires_grad_()
    rank_output(r, x_r).backward(g_out)  # g's backward is the identity: every rank gets g_out
    shares.append(x_r.grad)
x_full = x.clone().requires_grad_()
full(x_full, x_full, x_full, need_weights=False)[0].backward(g_out)
print("rank 0's share vs the full x.grad:", (shares[0] - x_full.grad).abs().max().item())
print("sum of the shares vs the full x.grad:", (sum(shares) - x_full.grad).abs().max().item())

# %% [markdown]
# ## 3. What it costs: bytes all-reduced
#
# Each all-reduce carries one `(b, n, E)` activation. A transformer layer has two in the
# forward (after attention and after the MLP) and two in the backward. For Llama-3-70B
# (hidden size 8192, 80 layers, bfloat16) at TP = 8:

# %%
hidden, layers, tp, bf16 = 8192, 80, 8, 2
per_token = hidden * bf16
print(f"one all-reduce: {per_token:,} bytes per token")
print(f"per layer: {2 * per_token:,} forward, {4 * per_token:,} with the backward")
print(f"ring all-reduce, sent by each rank: {2 * (tp - 1) * per_token // tp:,} bytes per token")
print(f"the 80 layers' forward: {layers * 2 * per_token:,} bytes per token")

# %%
# kata: exercise

# %%
# kata: quiz
