# %% [markdown]
# ## 1. Why quantise the cache
#
# Each decoding step reads every cached key and value once, and does little arithmetic with
# them: the step is memory-bound. Storing them as int8 codes with one float32 scale per
# (batch, head, position) halves the cache's bytes, without changing the FLOPs. The count below
# is Llama-3-8B's cache per token (32 layers, 8 kv heads of 128). A step also reads the
# weights, so what it saves depends on which share dominates: the second cell computes both
# ends, one short sequence and a large batch of long ones.

# %%
import torch

layers, kv_heads, d = 32, 8, 128
fp16 = 2 * layers * kv_heads * d * 2
int8 = 2 * layers * kv_heads * (d + 4)
int4 = 2 * layers * kv_heads * (d // 2 + 4)
print(f"float16 {fp16:,} B, int8 {int8:,} B ({int8 / fp16:.1%}), int4 {int4:,} B ({int4 / fp16:.1%})")

# %%
weights = 8_030_261_248 * 2  # Llama-3-8B's parameters, bfloat16
for seqs, tokens in ((1, 2048), (64, 4096)):
    kv = seqs * tokens * fp16
    saved = 1 - (weights + seqs * tokens * int8) / (weights + kv)
    print(f"{seqs} x {tokens:,} tokens: weights {weights / 1e9:.2f} GB, cache {kv / 1e9:.2f} GB; "
          f"int8 saves {saved:.1%} of the step's bytes")

# %% [markdown]
# ## 2. Symmetric absmax quantisation
#
# | step | shape |
# |---|---|
# | x | (b, h, s, d) |
# | amax = max abs over d, kept | (b, h, s, 1) |
# | scale = amax / 127, float32 | (b, h, s, 1) |
# | codes = clamp(round(x / scale), -127, 127), int8 | (b, h, s, d) |
#
# The largest element lands on ±127, and rounding to the nearest code errs by at most half a
# step: |x − codes · scale| ≤ scale / 2. An all-zero row has scale 0, and 0/0 is NaN (NaN
# cast to an integer is undefined behaviour): the guard against it is left to you, as are
# unpacking's sign extension, the cache and the query offset. This lesson works only the
# README's formulas on raw tensors.

# %%
x = torch.randn(1, 1, 4, 128)
amax = x.abs().amax(-1, keepdim=True)
scale = amax / 127
codes = torch.round(x / scale).clamp(-127, 127).to(torch.int8)
err = (x - codes * scale).abs()
print("largest error / (scale / 2):", (err / (scale / 2)).max().item())
print("RMS error in units of sigma:", err.pow(2).mean().sqrt().item())

# %% [markdown]
# ## 3. int4 packed two to a byte
#
# Byte j holds element 2j in its low nibble and 2j + 1 in its high nibble; unpacking
# sign-extends a nibble (≥ 8 means nibble − 16).

# %%
c = torch.tensor([1, 2, 3, 4, -1, 7], dtype=torch.int8).to(torch.int16) & 0xF
packed = (c[0::2] | (c[1::2] << 4)).to(torch.uint8)
print([hex(v) for v in packed.tolist()])

# %%
# kata: exercise

# %% [markdown]
# ## 4. Follow-ups
#
# KIVI quantises keys per channel: a few key channels are much larger than the rest, and a
# per-token scale set by the outlier wastes the grid on the others (the cell below). One scale
# per channel over all positions (`quantize(k, dim=-2)`) cannot be appended to, since a new
# token may raise a channel's maximum; KIVI groups G tokens per scale and keeps the newest R
# tokens in full precision until a group fills. KVQuant quantises keys before RoPE, which
# mixes each channel pair and smears an outlier channel over two.

# %%
torch.manual_seed(0)
k = torch.randn(256, 128)
k[:, 0] *= 20
for name, dim in (("per token", -1), ("per channel", -2)):
    s = k.abs().amax(dim, keepdim=True) / 127
    e = k - torch.round(k / s).clamp(-127, 127) * s
    print(f"{name}: RMS error on the other channels {e[:, 1:].pow(2).mean().sqrt():.4f}")

# %% [markdown]
# Symmetric or asymmetric? On a skewed slice (all values in [0, 1)) a symmetric grid wastes
# its negative half; a min/max scale with a zero point uses every level. This kata is
# symmetric (0 maps to code 0, no zero point to store); KIVI is asymmetric at 2 bits.

# %%
torch.manual_seed(0)
x = torch.rand(1, 128)
for bits in (4, 2):
    qmax = 2 ** (bits - 1) - 1
    s = x.abs().amax(-1, keepdim=True) / qmax
    sym = torch.round(x / s).clamp(-qmax, qmax)
    lo, hi = x.amin(-1, keepdim=True), x.amax(-1, keepdim=True)
    sa = (hi - lo) / (2 ** bits - 1)
    zero = torch.round(-lo / sa)
    asym = (torch.round(x / sa) + zero).clamp(0, 2 ** bits - 1)
    print(f"{bits} bits: levels used {sym.unique().numel()} symmetric, {asym.unique().numel()} "
          f"asymmetric; RMS error {(x - sym * s).pow(2).mean().sqrt():.4f} against "
          f"{(x - (asym - zero) * sa).pow(2).mean().sqrt():.4f}")

# %%
# kata: quiz
