# %% [markdown]
# ## 1. The counting rule
#
# Only matrix multiplications are counted; softmax, scaling, masks, biases, activations and
# norms cost O(size), not O(size × width), and are left out. A product (p, q) @ (q, r) computes
# p·r dot products of length q: q multiplies and q adds each, so
#
# $$\text{FLOPs}\big((p, q) @ (q, r)\big) = 2\,p\,q\,r.$$
#
# (Counting multiply-adds instead, "MACs", gives half: a factor 2 that interviewers like to
# ask about.) PyTorch can count for us: `torch.utils.flop_counter.FlopCounterMode` records the
# FLOPs of every matmul that runs inside it. On the `meta` device a tensor has a shape and
# no storage, so nothing is computed and any size is free:

# %%
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

with torch.device("meta"), FlopCounterMode(display=False) as counter:
    torch.empty(3, 4) @ torch.empty(4, 5)                         # (p, q) @ (q, r)
print("(3, 4) @ (4, 5):", counter.get_total_flops(), "FLOPs = 2·3·4·5")

# %% [markdown]
# ## 2. Parameters: 4d² + 4d
#
# `nn.MultiheadAttention(d, h)` holds the q, k and v projections stacked in one (3d, d)
# matrix, their biases (3d), and the output projection, a (d, d) weight and a (d,) bias:
#
# $$3d^2 + 3d + d^2 + d = 4d^2 + 4d,$$
#
# whatever h is: heads are slices of the same projections. For d = 8:

# %%
attention = nn.MultiheadAttention(8, num_heads=2)
for name, parameter in attention.named_parameters():
    print(f"{name:20} {tuple(parameter.shape)}")
print("total", sum(p.numel() for p in attention.parameters()), "= 4·8² + 4·8")

# %% [markdown]
# ## 3. FLOPs of self-attention, term by term
#
# Self-attention on l tokens, batch b, width d, h heads of width d/h; there are l·b tokens:
#
# | step | product | FLOPs |
# |---|---|---|
# | queries | (l·b, d) @ (d, d) | 2·l·b·d² |
# | keys | (l·b, d) @ (d, d) | 2·l·b·d² |
# | values | (l·b, d) @ (d, d) | 2·l·b·d² |
# | scores, per batch element and head | (l, d/h) @ (d/h, l), b·h times | b·h · 2·l·(d/h)·l = 2·l²·b·d |
# | weights @ values, the same way | (l, l) @ (l, d/h), b·h times | 2·l²·b·d |
# | output projection | (l·b, d) @ (d, d) | 2·l·b·d² |
#
# $$\text{FLOPs} = \underbrace{8\,l\,b\,d^2}_{\text{four projections}} + \underbrace{4\,l^2\,b\,d}_{\text{two attention matmuls}}$$
#
# The head count cancels: h heads of width d/h do the same work as one head of width d. What
# PyTorch counts on a real `nn.MultiheadAttention` (l = 1024, b = 1, d = 512) for 1, 2 and 4
# heads, split into the projections (`addmm`) and the attention matmuls (`bmm`):

# %%
for heads in (1, 2, 4):
    with torch.device("meta"):
        attention = nn.MultiheadAttention(512, heads)
        x = torch.empty(1024, 1, 512)                                 # (l, b, d)
        with FlopCounterMode(display=False) as counter:
            attention(x, x, x, need_weights=True)
    by_op = {str(op): flops for op, flops in counter.get_flop_counts()["Global"].items()}
    print(f"h = {heads}: total {counter.get_total_flops():,}  by op {by_op}")

# %% [markdown]
# ## 4. When attention dominates: l > 2d
#
# The projections grow linearly in l, the attention matmuls quadratically. Attention costs
# more when
#
# $$4\,l^2\,b\,d > 8\,l\,b\,d^2 \iff l > 2d.$$
#
# Above, l = 1024 = 2·512 is exactly the break-even point: both parts are 2³¹ FLOPs. A model
# with d = 768 is projection-bound up to 1536 tokens; at 8k tokens attention is over five
# times the projections (4·8192 / (8·768) ≈ 5.3).
#
# ## 5. The O(n² d) complexity
#
# In big-O, self-attention on n tokens of width d costs **O(n² d) time** for the score and
# weighted-sum matmuls, plus O(n d²) for the projections, and the score matrix takes
# **O(n²) memory per head**: b·h·n² values. For b = 8, h = 16, n = 4096 in float32 that is
# 8·16·4096²·4 bytes = 8 GiB for a single layer's scores; doubling n quadruples it. This is
# why long-context models use fused kernels (FlashAttention) that never store the scores,
# or attention patterns that are not all-to-all.

# %% [markdown]
# ## 6. What training costs: 2× backward, 6N per token, 12d² per layer
#
# Three rules of thumb an interviewer expects you to derive, not recite.
#
# - **Backward ≈ 2 × forward.** For a linear layer Y = X Wᵀ, the backward pass computes two
#   products as big as the forward one: the gradient for the input, dY W, and the gradient
#   for the weights, dYᵀ X. So a training step costs about 3 × the forward.
# - **≈ 6N FLOPs per token.** The forward pass does one multiply-add per parameter per token,
#   2N FLOPs for N parameters (the l² attention matmuls aside); with the backward, 6N. A
#   model of N parameters trained on D tokens costs about 6·N·D FLOPs.
# - **≈ 12d² parameters per layer.** Attention has 4d² (W_q, W_k, W_v, W_o) and the
#   feed-forward block with d_ff = 4d has 2·d·4d = 8d²: 12d², biases and norms aside. GPT-3,
#   96 layers of d = 12288: 96 · 12 · 12288² ≈ 174 billion, close to its 175 billion.
#
# PyTorch's counter confirms all three on a real encoder layer, d = 512 with d_ff = 4d, on
# l = 64 tokens and b = 4 sequences, short enough for the l² attention term to be small
# (grad mode on, so the forward takes the path whose matmuls the counter sees):

# %%
with torch.device("meta"):
    layer = nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048)
    tokens_in = torch.empty(64, 4, 512, requires_grad=True)               # (l, b, d)
    with FlopCounterMode(display=False) as forward_counter:
        out = layer(tokens_in)
    with FlopCounterMode(display=False) as backward_counter:
        out.sum().backward()
parameters = sum(p.numel() for p in layer.parameters())
forward_flops, backward_flops = forward_counter.get_total_flops(), backward_counter.get_total_flops()
print(f"backward / forward = {backward_flops / forward_flops:.2f}")
per_token = (forward_flops + backward_flops) / (64 * 4)
print(f"FLOPs per token, forward + backward: {per_token:,.0f} = {per_token / parameters:.2f} × N, "
      f"N = {parameters:,}")
print(f"parameters {parameters:,} ≈ 12·d² = {12 * 512**2:,}")

# %%
# kata: exercise

# %% [markdown]
# ## 7. FLOPs against sequence length
#
# PyTorch's count for d = 512, b = 1, split into projections and attention matmuls, on
# log-log axes: the projections have slope 1, attention slope 2, and they cross at l = 2d.
# Once your functions pass the core checks, your `mha_flops` is drawn on top.

# %%
import matplotlib.pyplot as plt

lengths = [2**k for k in range(7, 13)]                                # 128 .. 4096 tokens
projections, attention_matmuls = [], []
for length in lengths:
    with torch.device("meta"):
        attention = nn.MultiheadAttention(512, 8)
        x = torch.empty(length, 1, 512)
        with FlopCounterMode(display=False) as counter:
            attention(x, x, x, need_weights=True)
    by_op = {str(op): flops for op, flops in counter.get_flop_counts()["Global"].items()}
    projections.append(by_op["aten.addmm"])
    attention_matmuls.append(by_op["aten.bmm"])
fig, axis = plt.subplots(figsize=(5.5, 3.5))
axis.loglog(lengths, projections, marker="o", label="projections (PyTorch's count)")
axis.loglog(lengths, attention_matmuls, marker="o", label="attention matmuls (PyTorch's count)")
if result.core_passed:
    axis.loglog(lengths, [mha_flops(length, 1, 512, 8) for length in lengths], "k--", label="your mha_flops (the total)")
else:
    print("Pass the core checks to see your mha_flops on this plot.")
axis.axvline(2 * 512, color="gray", linestyle=":", label="l = 2d")
axis.set(xlabel="sequence length l", ylabel="FLOPs", title="self-attention, d = 512, b = 1")
axis.set_xticks(lengths, [str(length) for length in lengths], minor=False)
axis.minorticks_off()
axis.legend(fontsize=8)
plt.tight_layout()
plt.show()
plt.close(fig)

# %%
# kata: quiz
