# %% [markdown]
# ## 1. Two sub-layers
#
# An encoder layer alternates two very different operations on a sequence of token vectors,
# both from (seq, batch, d_model) to the same shape:
#
# | sub-layer | what it does | shapes inside (batch first) |
# |---|---|---|
# | self-attention `sa` | mixes information **between tokens** | (b, n, d) → weights (b, h, n, n) → (b, n, d) |
# | feed-forward `ff` | transforms **each token on its own** | (b, n, d) → `linear1` (b, n, d_ff) → activation → `linear2` (b, n, d) |
#
# With dropout as in PyTorch: `sa(x) = dropout1(self_attn(x, x, x, ...))` and
# `ff(x) = dropout2(linear2(dropout(activation(linear1(x)))))`. Each sub-layer is wrapped
# in a residual connection and a LayerNorm; the two ways of wrapping are the subject of
# this lesson.

# %%
from torch import nn

d_model, d_ff, n_tokens = 8, 32, 5
x = torch.randn(2, n_tokens, d_model)                                  # (b, n, d)
linear1, linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
hidden = torch.relu(linear1(x))                                        # (2, 5, 32)
print("x", tuple(x.shape), "-> linear1 + relu", tuple(hidden.shape), "-> linear2", tuple(linear2(hidden).shape))

# %% [markdown]
# ## 2. Residual connections
#
# A residual connection computes x + f(x) instead of f(x): the sub-layer only learns a
# *change* to x. Its Jacobian is I + ∂f/∂x, so the gradient always has the identity path
# straight through, however small ∂f/∂x becomes. Stack 30 layers whose maps shrink their
# input and compare the gradient that reaches the input:

# %%
depth, width = 30, 8
maps = [nn.Linear(width, width) for _ in range(depth)]
for linear in maps:
    nn.init.normal_(linear.weight, std=0.1)        # each map shrinks its input
for residual in (False, True):
    x = torch.randn(1, width, requires_grad=True)
    h = x
    for linear in maps:
        h = h + torch.tanh(linear(h)) if residual else torch.tanh(linear(h))
    h.sum().backward()
    print(f"residual={residual!s:5}: gradient norm at the input {x.grad.norm():.2e}")

# %% [markdown]
# ## 3. LayerNorm, per token
#
# `nn.LayerNorm(d_model)` normalises each token's d_model features to mean 0 and variance 1,
# then applies a learned gain and bias (d_model each). It acts on the last axis only, so
# tokens and batch elements never mix: (b, n, d) → (b, n, d).

# %%
norm = nn.LayerNorm(d_model)
tokens = 3 + 5 * torch.randn(2, n_tokens, d_model)                    # (b, n, d), far from normal
normed = norm(tokens)
print("mean per token", normed.mean(-1)[0].detach(), "\nstd per token ", normed.std(-1, unbiased=False)[0].detach())

# %% [markdown]
# **Why not BatchNorm?** BatchNorm normalises each feature with statistics taken over the
# batch (and, for sequences, over every position): a token's output then depends on the
# other sequences in the batch, on how much padding they carry, and on the batch size, and
# inference has to use running averages that differ from what training saw. Sequences of
# different lengths and small or size-1 batches at inference make all of that worse.
# LayerNorm uses only the token's own d_model features: the same in training and
# inference, for any batch, any length, any padding. Below, only the *padding* of the
# second sequence changes; the first sequence's outputs stay put under LayerNorm and move
# under BatchNorm:

# %%
batch_norm = nn.BatchNorm1d(d_model)                                   # statistics over (b, n)
padded_batch = tokens.clone()                                          # (b, n, d)
other_padding = tokens.clone()
other_padding[1, 3:] = 100.0                                           # sequence 1's padding changes
for name, layer_norm_or_batch_norm in (("LayerNorm", lambda t: norm(t)),
                                       ("BatchNorm", lambda t: batch_norm(t.transpose(1, 2)).transpose(1, 2))):
    first = layer_norm_or_batch_norm(padded_batch)[0]                  # sequence 0: (n, d)
    again = layer_norm_or_batch_norm(other_padding)[0]
    print(f"{name}: sequence 0 unchanged when sequence 1's padding changes:",
          torch.allclose(first, again))

# %% [markdown]
# ## 4. Post-LN and Pre-LN
#
# Where the norm goes is the one design choice of the layer. In a diagram, for the attention
# sub-layer (the feed-forward one is the same with `norm2` and `ff`):
#
# ```
# Post-LN (norm_first=False, the original Transformer):
#
#     x ──┬──► self_attn ──► dropout1 ──► (+) ──► norm1 ──► out
#         │                                ▲
#         └────────────────────────────────┘        out = norm1(x + sa(x))
#
# Pre-LN (norm_first=True, GPT-2 and most models since):
#
#     x ──┬──► norm1 ──► self_attn ──► dropout1 ──► (+) ──► out
#         │                                          ▲
#         └──────────────────────────────────────────┘   out = x + sa(norm1(x))
# ```
#
# - **Post-LN** normalises the sum, so every layer's output has per-token mean 0 and
#   variance 1. But the residual path itself passes through a norm at every layer, so deep
#   stacks have no clean identity path; they need a learning-rate warm-up to train.
# - **Pre-LN** normalises only what goes *into* the sub-layer. The residual stream
#   x → x + sa(…) → x + sa(…) + ff(…) → … is never normalised: an unbroken identity path
#   from the first layer to the last, which trains stably without warm-up. The stream is
#   not normalised at the end either, so a Pre-LN stack needs a **final norm**
#   (`TransformerEncoder(..., norm=nn.LayerNorm(d))`).
# - In both, the residual adds the **un-normalised** x of that step: in Pre-LN it is
#   `x + sa(norm1(x))`, not `norm1(x) + sa(norm1(x))`.
#
# PyTorch's own layer, both ways, on the same input:

# %%
for norm_first in (False, True):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=d_ff, dropout=0.0,
                                       batch_first=True, norm_first=norm_first)
    out = layer(tokens)                                                # (b, n, d)
    print(f"norm_first={norm_first!s:5}: output std per token {out.std(-1, unbiased=False)[0].detach()}")

# %% [markdown]
# The trade-off is not one-sided. Pre-LN's stream grows with depth (section 6 below), so
# each later layer's update is a smaller and smaller change of it: deep Pre-LN stacks
# behave somewhat like shallower ones, and a Post-LN stack that *does* train (warm-up,
# careful initialisation) often ends slightly better. Stability won: GPT-2, GPT-3, Llama
# and most models since are Pre-LN, with two more changes in recent ones (Llama, Mistral,
# Qwen):
#
# - **RMSNorm** instead of LayerNorm: x / rms(x) · g, with rms(x) = √(mean(x²) + ε) — no
#   mean subtracted, no bias; cheaper, and as good in practice.
# - **SwiGLU** instead of linear → ReLU → linear: W₂(silu(W₁x) ⊙ W₃x), a gated unit with
#   three matrices; its hidden width is usually about 8/3·d instead of 4d, so that it has
#   about the same 8d² parameters as the feed-forward block it replaces.
#
# RMSNorm written out, against PyTorch's own when it has one, and SwiGLU's parameter count:
#
# ```python
# rms_normed = x / x.pow(2).mean(-1, keepdim=True).add(eps).sqrt() * weight
# swiglu = w2(F.silu(w1(x)) * w3(x))
# ```

# %%
import torch.nn.functional as F

eps = 1e-6
rms_normed = tokens / tokens.pow(2).mean(-1, keepdim=True).add(eps).sqrt()   # (b, n, d), gain 1
print("RMS per token after RMSNorm:", rms_normed.pow(2).mean(-1)[0].sqrt())
if hasattr(nn, "RMSNorm"):                                                    # PyTorch >= 2.4
    print("equals nn.RMSNorm:", torch.allclose(rms_normed, nn.RMSNorm(d_model, eps=eps)(tokens), atol=1e-6))
width = 768
hidden = 2048                                                                 # 8/3 · 768
w1, w3 = nn.Linear(width, hidden, bias=False), nn.Linear(width, hidden, bias=False)
w2 = nn.Linear(hidden, width, bias=False)
x_wide = torch.randn(2, width)                                                # (2, d)
swiglu_out = w2(F.silu(w1(x_wide)) * w3(x_wide))                             # (2, d)
swiglu_params = sum(p.numel() for m in (w1, w2, w3) for p in m.parameters())
print(f"SwiGLU with hidden {hidden}: {swiglu_params:,} weights; ReLU FFN with 4d: {2 * width * 4 * width:,}")

# %% [markdown]
# ## 5. A stack of deep copies
#
# `TransformerEncoder` applies num_layers layers in turn: (seq, b, d) → … → (seq, b, d), the
# same mask and padding mask for each. Every layer needs **its own** weights. Putting the
# same module in a list several times, `nn.ModuleList([layer] * 6)`, gives six references to
# one layer: one set of weights, counted once and trained as one. A shallow `copy.copy`
# makes a new module object whose parameters are still the old tensors. Only
# `copy.deepcopy` copies the parameters too. With a small `nn.Linear`:

# %%
import copy

layer = nn.Linear(4, 4)
same = nn.ModuleList([layer] * 3)
shallow = copy.copy(layer)
deep = nn.ModuleList(copy.deepcopy(layer) for _ in range(3))


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


print("[layer] * 3      : parameters", count(same), "| entry 0 is entry 1:", same[0] is same[1])
print("copy.copy        : shares the weight tensor:", shallow.weight is layer.weight)
print("3 deep copies    : parameters", count(deep), "| same values, own tensors:",
      torch.equal(deep[0].weight, layer.weight), deep[0].weight is not layer.weight)

# %%
# kata: exercise

# %% [markdown]
# ## 6. The residual stream through a stack
#
# The size (root mean square per feature) of the tokens after each of 8 layers, Post-LN
# against Pre-LN: Post-LN renormalises to 1 after every layer, while Pre-LN's residual
# stream keeps adding and grows, which is why it needs the final norm. Your classes once
# they pass the core checks, PyTorch's until then.

# %%
import matplotlib.pyplot as plt

source = "your TransformerEncoder" if result.core_passed else "PyTorch's (pass the core checks to see yours)"
fig, axis = plt.subplots(figsize=(5, 3))
for norm_first in (False, True):
    torch.manual_seed(0)
    arguments = dict(nhead=2, dim_feedforward=d_ff, dropout=0.0, batch_first=True, norm_first=norm_first)
    if result.core_passed:
        stack = TransformerEncoder(TransformerEncoderLayer(d_model, **arguments), num_layers=8)
    else:
        stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, **arguments), num_layers=8,
                                      enable_nested_tensor=False)
    h, sizes = tokens / tokens.std(), []
    with torch.no_grad():
        for layer in stack.layers:                                      # one layer at a time
            h = layer(h)
            sizes.append(h.pow(2).mean().sqrt().item())
    axis.plot(range(1, 9), sizes, marker="o", label="Pre-LN" if norm_first else "Post-LN")
axis.set(title=source, xlabel="after layer", ylabel="RMS of the tokens")
axis.legend()
plt.tight_layout()
plt.show()
plt.close(fig)

# %%
# kata: quiz
