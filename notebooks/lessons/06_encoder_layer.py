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
