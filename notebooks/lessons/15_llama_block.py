# %% [markdown]
# ## 1. The block, step by step
#
# A Llama decoder block is kata 06's Pre-LN encoder layer with a causal mask and its parts
# swapped for newer ones: RMSNorm for LayerNorm, rotary positions inside the attention
# instead of a table added to the embeddings, grouped key/value heads, and a gated MLP.
# (Grouped: Llama 3, and Llama 2's 34B and 70B. Llama 2's 7B and 13B have as many kv heads
# as query heads, kv = h, which the same code runs.)
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
# So `LlamaRMSNorm` normalises in float32, casts the result back to the input's dtype, and
# only then multiplies by the weight: `self.weight * hidden_states.to(input_dtype)`, the
# product in the weight's dtype. Multiplying by the weight in float32 and casting once
# (Gemma's order) is as good, but not bit for bit the same:

# %%
xb = torch.randn(256, 4096).bfloat16()                              # (tokens, dim)
wb = (1 + 0.1 * torch.randn(4096)).bfloat16()                       # (dim,)
wide = xb.float()
normed = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + 1e-6)
hf_order = wb * normed.to(torch.bfloat16)                           # cast back, then the weight
one_cast = (normed * wb.float()).to(torch.bfloat16)                 # the weight in float32, one cast
print(f"entries that differ: {(hf_order != one_cast).float().mean().item():.0%}")

# %% [markdown]
# bfloat16 has float32's range, so x² never overflows; what it lacks is digits: 8
# significant bits (7 stored), so each rounding can be off by up to 2⁻⁸ ≈ 0.4 %. Where does
# a bfloat16 norm lose them? Not in the sum of the squares: PyTorch's reductions on half
# types accumulate in float32. It loses them in each rounding to bfloat16 — of x², of their
# mean, of x · rsqrt. A running sum kept in bfloat16 would be far
# worse: once the total is large, each small square is below half its step and vanishes.

# %%
exact = xb.double().pow(2).mean(-1)                                 # (256,)
pytorch = xb.pow(2).mean(-1).double()                               # bfloat16 in and out
running = torch.zeros(256, dtype=torch.bfloat16)
for column in xb.pow(2).unbind(-1):                                 # a sum kept in bfloat16
    running = running + column
print(f"PyTorch's bfloat16 mean: largest relative error {((pytorch - exact).abs() / exact).max().item():.2%}")
print(f"a bfloat16 running sum : largest relative error {((running.double() / 4096 - exact).abs() / exact).max().item():.0%}")

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
# width of 2/3 · 4·dim = 8/3 · dim, which Meta's code for Llama 1 and 2 rounds up to a
# multiple of 256 (`multiple_of`):

# %%
dim = 4096
hidden = 256 * -(-int(8 * dim / 3) // 256)                          # round up to a multiple of 256
print("8/3 * dim =", round(8 * dim / 3, 1), "-> hidden width", hidden)
print("SwiGLU parameters:", 3 * dim * hidden, " a 4*dim two-matrix MLP:", 2 * dim * 4 * dim)

# %% [markdown]
# Llama 3 widens it: Meta's code multiplies int(8/3 · dim) by `ffn_dim_multiplier` = 1.3
# before rounding up, to a multiple of 1024 for Llama-3-8B. That, not 3.5 · dim, is where
# its 14336 comes from; Llama 2 70B used 1.3 and 4096.


# %%
def ffn_width(dim, multiple_of=256, multiplier=None):
    hidden = int(2 * 4 * dim / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * -(-hidden // multiple_of)


print("Llama-2-7B :", ffn_width(4096))
print("Llama-2-13B:", ffn_width(5120))
print("Llama-2-70B:", ffn_width(8192, 4096, 1.3))
print("Llama-3-8B :", ffn_width(4096, 1024, 1.3))

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
# Hugging Face's sdpa path can hand PyTorch the keys and values with their `kv` heads and
# let it pair them (`enable_gqa=True`), query head j with kv head j // (h / kv), as
# `repeat_interleave` would (kata 13). It does so only when no attention mask is passed
# (and PyTorch is 2.5 or newer): with a padding mask it first repeats them with `repeat_kv`,
# as its eager path always does. Both give the same numbers:

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
# is another matter: bfloat16's 8 significant bits hold only even numbers from 256 to 512,
# and near 16000 only multiples of 64, so 16001 and 16030 are both 16000.

# %%
inv_freq32 = 1.0 / (10000.0 ** (torch.arange(0, 128, 2).float() / 128))       # (64,) float32
inv_freq64 = 10000.0 ** (-torch.arange(0, 128, 2, dtype=torch.float64) / 128)
error = (16000 * inv_freq32).double() - 16000 * inv_freq64                  # (64,) radians
print("largest angle error in float32 at position 16000:", error.abs().max().item())
for position in (301.0, 16001.0, 16030.0):
    print(f"position {position:g} in bfloat16:", torch.tensor(position, dtype=torch.bfloat16).item())

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

# %% [markdown]
# ## 8. What an interviewer asks next
#
# **Tensor parallelism.** Over g GPUs (Megatron's split), q_proj, k_proj, v_proj, gate_proj
# and up_proj are split by output rows — each GPU gets whole heads and a slice of the
# hidden width — and o_proj and down_proj by input columns. Each GPU runs its heads and its
# slice of the MLP without talking to the others; one all-reduce sums the partial outputs
# of o_proj, one those of down_proj: two per block. A kv head cannot be split, so g GPUs
# need at least g kv heads (Llama-3-8B's 8 serve TP 8, one per GPU for its 4 query heads);
# beyond that the kv heads are copied. The MLP on two GPUs:

# %%
gate, up = torch.randn(40, 16), torch.randn(40, 16)                 # (hidden, dim)
down, tokens = torch.randn(16, 40), torch.randn(3, 16)              # (dim, hidden), (n, dim)
whole = (F.silu(tokens @ gate.T) * (tokens @ up.T)) @ down.T
partial = [(F.silu(tokens @ g.T) * (tokens @ u.T)) @ d.T            # one GPU's slice of hidden
           for g, u, d in zip(gate.chunk(2), up.chunk(2), down.chunk(2, dim=1))]
print("the all-reduce of the two partial outputs equals the MLP:", torch.allclose(sum(partial), whole, atol=1e-4))

# %% [markdown]
# **Decoding with a KV cache.** After the prompt, the block sees one new token per step. Its
# position is the cache length (per row, with left padding); its key is rotated at that
# position and appended — keys are cached *after* RoPE, so a cached key is never turned
# again — and its query needs no mask: every cached key is in its past. The prefill runs
# all n prompt tokens through each weight as one matrix product (bound by compute); each
# decode step reads every weight for one token per sequence (bound by memory bandwidth),
# which is why servers batch decode steps.

# %%
q, k, v = torch.randn(3, 1, 2, 6, 8).unbind(0)                      # (b, h, n, d) each
at = torch.arange(6)
prefill = F.scaled_dot_product_attention(rotate_half_rope(q, at), rotate_half_rope(k, at), v, is_causal=True)
cached_k = rotate_half_rope(k[:, :, :5], at[:5])                    # rotated when they were written
new_q, new_k = rotate_half_rope(q[:, :, 5:], at[5:]), rotate_half_rope(k[:, :, 5:], at[5:])
step = F.scaled_dot_product_attention(new_q, torch.cat((cached_k, new_k), dim=2), v)
print("one decode step equals the prefill's last row:", torch.allclose(step, prefill[:, :, 5:], atol=1e-6))

# %% [markdown]
# **Cost per token.** Each weight is used once per token, one multiply-add: about 2 · params
# FLOPs, plus the attention over the n cached tokens, q · k and p · v, 4 · n · dim per
# layer. Llama 3 also raised `rope_theta` from 10000 to 500000 for longer contexts: the
# slowest pair of a 128-wide head then turns once in millions of positions, not tens of
# thousands.

# %%
weights = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 128256 * 4096   # blocks and output layer
print(f"Llama-3-8B, 2 * params per token: {2 * weights / 1e9:.1f} GFLOPs")
print(f"attention at 8192 cached tokens : {32 * 4 * 8192 * 4096 / 1e9:.1f} GFLOPs")
for base in (10000.0, 500000.0):
    print(f"rope_theta {base:g}: the slowest pair turns once every {2 * math.pi * base ** (126 / 128):,.0f} positions")

# %% [markdown]
# **Other models in this block.** Qwen2 adds biases to q_proj, k_proj and v_proj: three
# more keys per layer, so `load_state_dict(strict=True)` fails on them. Gemma multiplies its
# RMSNorm by `1 + weight` (its gains are stored around 0) after normalising in float32,
# gates with GELU (tanh), scales the embeddings by sqrt(dim) and ties the output layer to
# them. Qwen3 drops the biases and adds QK-norm: an RMSNorm over head_dim on each query and
# key head, before RoPE. Mistral 7B adds the sliding window (kata 18). Gemma's gains read
# as Llama's would silence the block:

# %%
gains = torch.zeros(4)                                              # Gemma's stored norm weight
row = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
unit = row / torch.sqrt(row.pow(2).mean(-1, keepdim=True) + 1e-6)
print("read as Llama's weight:", unit * gains, " as Gemma's 1 + weight:", unit * (1 + gains))

# %% [markdown]
# **Fusions.** Serving kernels fuse what this block runs as separate steps: the residual add
# with the next RMSNorm (the stream read once), gate_proj and up_proj as one matrix product
# of width 2 · hidden_dim with SiLU and the product in its epilogue (q, k and v as one
# too), RoPE inside the attention kernel. Hugging Face's eager path runs every step as its
# own op (the softmax in float32); sdpa calls PyTorch's fused attention; flash_attention_2
# the FlashAttention library. Fusing gate and up changes no number:

# %%
gate_up = torch.cat((gate, up))                                     # (2 * hidden, dim): one product
g, u = (tokens @ gate_up.T).chunk(2, dim=-1)
print("one product for gate and up:", torch.allclose(F.silu(g) * u, F.silu(tokens @ gate.T) * (tokens @ up.T), atol=1e-5))

# %%
# kata: quiz
