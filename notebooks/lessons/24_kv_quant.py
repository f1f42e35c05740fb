# %% [markdown]
# ## 1. Why quantise the cache
#
# Each decoding step reads every cached key and value once, and does little arithmetic with
# them: the step is memory-bound. Storing them as int8 codes with one float32 scale per
# (batch, head, position) halves the bytes read, without changing the FLOPs. The count below
# is Llama-3-8B's cache per token (32 layers, 8 kv heads of 128).

# %%
import torch

layers, kv_heads, d = 32, 8, 128
fp16 = 2 * layers * kv_heads * d * 2
int8 = 2 * layers * kv_heads * (d + 4)
int4 = 2 * layers * kv_heads * (d // 2 + 4)
print(f"float16 {fp16:,} B, int8 {int8:,} B ({int8 / fp16:.1%}), int4 {int4:,} B ({int4 / fp16:.1%})")

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
# step: |x − codes · scale| ≤ scale / 2. An all-zero row has scale 0: divide by 1 there, never
# by 0 (0/0 is NaN, and NaN cast to an integer is undefined behaviour).

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
# KIVI quantises keys per channel (`quantize(k, dim=-2)`): a few key channels are much larger
# than the rest, and a per-token scale set by the outlier wastes the grid on the others. The
# per-token key scale folds into score column j, the value scale into probability column j.

# %%
torch.manual_seed(0)
k = torch.randn(256, 128)
k[:, 0] *= 20
for name, dim in (("per token", -1), ("per channel", -2)):
    s = k.abs().amax(dim, keepdim=True) / 127
    e = k - torch.round(k / s).clamp(-127, 127) * s
    print(f"{name}: RMS error on the other channels {e[:, 1:].pow(2).mean().sqrt():.4f}")

# %%
# kata: quiz
