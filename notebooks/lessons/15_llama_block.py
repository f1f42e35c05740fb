# %% [markdown]
# ## 1. The block, step by step
#
# A Llama decoder block is kata 06's Pre-LN encoder layer with a causal mask and its parts
# swapped for newer ones: RMSNorm for LayerNorm, rotary positions inside the attention
# instead of a table added to the embeddings, grouped key/value heads, and a gated MLP.
#
# | step | shape |
# |---|---|
# | x | (b, n, dim) |
# | a = input_layernorm(x) (RMSNorm) | (b, n, dim) |
# | q, k, v = projections of a, split into heads | (b, h, n, d), (b, kv, n, d) |
# | q, k rotated by RoPE at the positions (never v) | same |
# | causal attention, query head j reading kv head j // (h / kv) | (b, h, n, d) |
# | heads merged, o_proj; h = x + that | (b, n, dim) |
# | out = h + mlp(post_attention_layernorm(h)) (SwiGLU) | (b, n, dim) |
#
# Every sublayer reads a normalised copy of the stream and **adds** its output to the
# un-normalised stream (pre-norm): the residual path from the first block to the last is
# never normalised, which keeps deep stacks stable to train.
#
# ## 2. RMSNorm: LayerNorm without the mean
#
# LayerNorm centres each token's vector, divides by its standard deviation, then scales and
# shifts. RMSNorm only rescales: it divides by the root mean square and multiplies by a
# weight. No mean, no bias, one reduction instead of two.

# %%
from torch import nn

x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])                              # (1, dim): mean 2.5
rms = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)          # (1, dim)
print("RMSNorm  :", rms)
print("LayerNorm:", nn.LayerNorm(4, elementwise_affine=False)(x))
print("nn.RMSNorm agrees:", torch.allclose(rms, nn.RMSNorm(4, eps=1e-6)(x)))

# %% [markdown]
# The outputs differ because LayerNorm removed the mean first. Where does eps go? Inside the
# square root. Outside, `x / (sqrt(mean(x²)) + eps)` is almost the same for values of
# order 1, and not for small ones:

# %%
small = torch.full((1, 4), 1e-3)                                        # mean square 1e-6, like eps
inside = small / torch.sqrt(small.pow(2).mean(-1, keepdim=True) + 1e-6)
outside = small / (torch.sqrt(small.pow(2).mean(-1, keepdim=True)) + 1e-6)
print("eps inside the root :", inside[0, 0].item())
print("eps outside the root:", outside[0, 0].item())

# %% [markdown]
# Hugging Face's `LlamaRMSNorm` computes in float32 whatever the input's dtype. The reason
# shows in float16, whose largest number is 65504: a value of 300 squares to 90000.

# %%
big = torch.tensor([300.0, -20.0, 5.0, 1.0], dtype=torch.float16)
print("mean of squares in float16:", big.pow(2).mean().item())
print("mean of squares in float32:", big.float().pow(2).mean().item())

# %% [markdown]
# ## 3. SwiGLU: a gated MLP, and why its width is 8/3 · dim
#
# kata 06's MLP is `linear2(activation(linear1(x)))`: two matrices. SwiGLU has three: a gate
# and an up projection to the hidden width, multiplied elementwise after the gate goes
# through SiLU, then a down projection:
#
# $$\text{SwiGLU}(x) = W_\text{down}\,\big(\text{silu}(W_\text{gate}\,x) \odot W_\text{up}\,x\big), \qquad \text{silu}(z) = z\,\sigma(z)$$
#
# With three matrices instead of two, keeping the parameters of a 4·dim MLP means a hidden
# width of 2/3 · 4·dim = 8/3 · dim, which Meta rounds up to a multiple of 256:

# %%
dim = 4096
hidden = 256 * -(-int(8 * dim / 3) // 256)                          # round up to a multiple of 256
print("8/3 * dim =", round(8 * dim / 3, 1), "-> hidden width", hidden)
print("SwiGLU parameters:", 3 * dim * hidden, " a 4*dim two-matrix MLP:", 2 * dim * 4 * dim)

# %% [markdown]
# ## 4. RoPE inside the attention
#
# RoPE turns each query and key by an angle proportional to its position (kata 12). It acts
# **after** the head split, on every head alike, with the head width d in the frequencies,
# and never on the values: a score q·k then depends on the two positions only through their
# difference, while the values carry content. So shifting every position by the same amount
# (a longer prompt before, a cache offset) leaves the attention unchanged:

# %%
import math

import torch.nn.functional as F


def rotate_half_rope(t, positions, base=10000.0):
    """t (..., n, d) turned with the pairs (i, i + d/2), float64 angles."""
    d = t.shape[-1]
    angles = positions.double()[:, None] * base ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)
    cos, sin = torch.cat((angles, angles), -1).cos().float(), torch.cat((angles, angles), -1).sin().float()
    t1, t2 = t.chunk(2, dim=-1)
    return t * cos + torch.cat((-t2, t1), dim=-1) * sin


q, k, v = torch.randn(3, 1, 2, 6, 8).unbind(0)                      # (b, h, n, d) each
for offset in (0, 1000):
    at = torch.arange(6) + offset
    out = F.scaled_dot_product_attention(rotate_half_rope(q, at), rotate_half_rope(k, at), v, is_causal=True)
    print(f"positions from {offset:4}: last query's output {out[0, 0, -1, :4]}")

# %% [markdown]
# The causal mask, in contrast, follows the **sequence index**: query i sees keys 0 … i
# whatever numbers `positions` holds (with left padding the positions of a row may start
# later, or repeat over the padding).
#
# ## 5. Grouped-query causal attention in one call
#
# Llama's sdpa path hands PyTorch the keys and values with their `kv` heads and lets it pair
# them, query head j with kv head j // (h / kv), as `repeat_interleave` would (kata 13):

# %%
b, n, h, kv, d = 2, 5, 4, 2, 8
q, k, v = torch.randn(b, h, n, d), torch.randn(b, kv, n, d), torch.randn(b, kv, n, d)
wide_k, wide_v = k.repeat_interleave(h // kv, dim=1), v.repeat_interleave(h // kv, dim=1)   # (b, h, n, d)
future = torch.ones(n, n, dtype=torch.bool).triu(1)                  # True above the diagonal: blocked
scores = (q @ wide_k.transpose(-2, -1) / math.sqrt(d)).masked_fill(future, float("-inf"))
by_hand = scores.softmax(-1) @ wide_v                               # (b, h, n, d)
pytorch = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
print("by hand equals SDPA:", torch.allclose(by_hand, pytorch, atol=1e-6))

# %% [markdown]
# ## 6. Precision: what float32 costs at long positions
#
# Hugging Face computes the RoPE frequencies and `position · inv_freq` in float32. At
# position 16000 the angles reach 16000 radians, and float32 holds them only to about a
# thousandth of a radian: harmless for a model trained that way, and the reason the grader allows
# float32-precise angles (and RMSNorm, and softmax) even for float64 inputs. Half precision
# is another matter: bfloat16 holds numbers above 256 only to a multiple of 2.

# %%
inv_freq32 = 1.0 / (10000.0 ** (torch.arange(0, 128, 2).float() / 128))       # (64,) float32
inv_freq64 = 10000.0 ** (-torch.arange(0, 128, 2, dtype=torch.float64) / 128)
error = (16000 * inv_freq32).double() - 16000 * inv_freq64                  # (64,) radians
print("largest angle error in float32 at position 16000:", error.abs().max().item())
print("position 16001 in bfloat16:", torch.tensor(16001.0, dtype=torch.bfloat16).item())

# %%
# kata: exercise

# %% [markdown]
# ## 7. A real model's numbers
#
# Llama-2-7B's block (dim 4096, 32 heads, 32 kv heads, hidden width 11008) and
# Llama-3-8B's (8 kv heads, hidden width 14336), counted on the meta device (shapes only, no
# memory): with your `LlamaBlock` once it passes the core checks, with the formula until
# then. Then the KV cache per token of all 32 layers in bfloat16.

# %%
sizes = {"Llama-2-7B": (4096, 32, 32, 11008), "Llama-3-8B": (4096, 32, 8, 14336)}
for name, (dim, heads, kv_heads, hidden) in sizes.items():
    if result.core_passed:
        with torch.device("meta"):
            count = sum(p.numel() for p in LlamaBlock(dim, heads, kv_heads, hidden).parameters())
    else:
        kv_width = kv_heads * dim // heads
        count = 2 * dim * dim + 2 * dim * kv_width + 3 * dim * hidden + 2 * dim
    cache = 2 * 32 * kv_heads * (dim // heads) * 2                   # keys and values, 32 layers, 2 bytes
    print(f"{name}: {count:,} parameters per block, {cache // 1024} KiB of KV cache per token")

# %%
# kata: quiz
