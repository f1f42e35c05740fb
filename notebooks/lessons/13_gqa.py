# %% [markdown]
# ## 1. What decoding keeps: the KV cache
#
# A decoder generates one token at a time. The new token's query attends to the keys and
# values of **every** earlier token, and those do not change, so they are computed once and
# kept: the KV cache. Per layer it holds two tensors, keys and values, each
# `(b, heads_kept, seq_len, head_dim)`. With multi-head attention `heads_kept = num_heads`:
#
# $$\text{bytes} = 2 \cdot b \cdot \text{seq\_len} \cdot \text{layers} \cdot \text{heads\_kept} \cdot \text{head\_dim} \cdot \text{bytes per number}$$
#
# For a 70B-sized model (80 layers, E = 8192, 64 heads of 128) in float16, one sequence of
# 4096 tokens, on the meta device (shapes only, no memory):

# %%
# The 70B-sized model, kept in capitals: the small examples below reuse E, h, d.
LAYERS, WIDTH, HEADS, SEQ = 80, 8192, 64, 4096
HEAD_DIM = WIDTH // HEADS                                             # 128
with torch.device("meta"):
    keys = torch.empty(1, HEADS, SEQ, HEAD_DIM, dtype=torch.float16)  # (b, h, seq, d)
per_layer = 2 * keys.nbytes                                           # keys and values
print(f"multi-head cache: {LAYERS * per_layer / 2**30:.2f} GiB per sequence")

# %% [markdown]
# Ten GiB for **one** sequence: a batch of 16 needs 160 GiB for its cache alone, more than
# the model's 140 GB of float16 weights. And every generated token reads the whole cache:
# decoding is limited by memory bandwidth, not by FLOPs. The fix is to keep fewer key/value
# heads.
#
# ## 2. Fewer key/value heads
#
# Grouped-query attention keeps `h` query heads but only `kv` key/value heads; each kv head
# is shared by a **group** of `h / kv` consecutive query heads. Multi-query attention is the
# extreme `kv = 1`; `kv = h` is plain multi-head attention.
#
# | step | shape |
# |---|---|
# | x | (b, n, E) |
# | q = q_proj(x), split into h heads | (b, h, n, d) |
# | k = k_proj(x), v = v_proj(x), split into kv heads | (b, kv, n, d) |
# | k, v widened: kv head g copied to heads g·group … g·group + group − 1 | (b, h, n, d) |
# | scores = q kᵀ / √d, weights = softmax(scores) | (b, h, n, n) |
# | weights v, heads merged, o_proj | (b, n, E) |
#
# Only `k_proj` and `v_proj` shrink: E → kv·d instead of E → E.

# %%
from torch import nn

b, n, E, h, kv = 2, 5, 16, 4, 2
d, group = E // h, h // kv
x = torch.randn(b, n, E)
q_proj, k_proj, v_proj = nn.Linear(E, E, bias=False), nn.Linear(E, kv * d, bias=False), nn.Linear(E, kv * d, bias=False)
q = q_proj(x).view(b, n, h, d).transpose(1, 2)                       # (b, h, n, d)
k = k_proj(x).view(b, n, kv, d).transpose(1, 2)                      # (b, kv, n, d)
v = v_proj(x).view(b, n, kv, d).transpose(1, 2)                      # (b, kv, n, d)
print("q", tuple(q.shape), " k", tuple(k.shape), " v", tuple(v.shape))
print("k_proj weight", tuple(k_proj.weight.shape), "instead of", (E, E))

# %% [markdown]
# ## 3. Which kv head does query head j read? `repeat_interleave`, not `repeat`
#
# Query head j reads kv head `j // group`. `repeat_interleave(group, dim=1)` copies each kv
# head `group` times in place; `repeat(1, group, 1, 1)` tiles the whole set, giving head j
# the kv head `j % kv`. Same shape, no error, different model:

# %%
label = torch.arange(kv).view(1, kv, 1, 1)                            # kv head g holds the number g
print("repeat_interleave:", label.repeat_interleave(group, dim=1).flatten().tolist())
print("repeat           :", label.repeat(1, group, 1, 1).flatten().tolist())
print("j // group       :", [j // group for j in range(h)])

# %% [markdown]
# PyTorch agrees: `F.scaled_dot_product_attention(..., enable_gqa=True)` takes k and v with
# kv heads and pairs them the `repeat_interleave` way (the grader uses it as the reference;
# your code may not call it):

# %%
import math

import torch.nn.functional as F

wide_k, wide_v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)   # (b, h, n, d)
weights = torch.softmax(q @ wide_k.transpose(-2, -1) / math.sqrt(d), dim=-1)           # (b, h, n, n)
by_hand = weights @ wide_v                                                               # (b, h, n, d)
pytorch = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
tiled = F.scaled_dot_product_attention(q, k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1))
print("interleaved equals PyTorch:", torch.allclose(by_hand, pytorch, atol=1e-6))
print("tiled equals PyTorch:      ", torch.allclose(tiled, pytorch, atol=1e-6))

# %% [markdown]
# With `kv = 1` or `kv = h` the two agree (one kv head for all, or one each), which is why
# a test of MQA and MHA alone cannot catch the tiling mistake.
#
# ## 4. No copies: broadcast the groups
#
# `repeat_interleave` makes `group` copies of k and v. Instead, split the query heads as
# `(kv, group)` and let matmul broadcast one kv head over its group:
#
# | tensor | shape |
# |---|---|
# | q grouped | (b, kv, group, n, d) |
# | k, v | (b, kv, 1, n, d) |
# | scores | (b, kv, group, n, n) → reshape to (b, h, n, n) |
#
# Head `j = g·group + r` lands at `[g, r]`: the same pairing.

# %%
grouped_q = q.view(b, kv, group, n, d)                                   # (b, kv, group, n, d)
scores = grouped_q @ k.unsqueeze(2).transpose(-2, -1) / math.sqrt(d)     # (b, kv, group, n, n)
broadcast = (scores.softmax(-1) @ v.unsqueeze(2)).view(b, h, n, d)       # (b, h, n, d)
print("broadcast equals PyTorch:", torch.allclose(broadcast, pytorch, atol=1e-6))

# %% [markdown]
# ## 5. Masks
#
# As in every kata here, a bool `attn_mask` is True where a key is **blocked** (PyTorch's
# `scaled_dot_product_attention` reads True as "may attend": negate before comparing),
# a float mask is added to the scores, and `is_causal` blocks the keys after each query,
# on top of `attn_mask`. The mask broadcasts against the scores `(b, h, n, n)`, so a
# `(b, 1, 1, n)` padding mask or a `(n, n)` one works unchanged. A query with every key
# blocked gets zero weights, not the NaN of `softmax([-inf, …, -inf])`.

# %%
causal = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)            # True above the diagonal: blocked
print(causal.int())

# %%
# kata: exercise

# %% [markdown]
# ## 6. Cache size against kv heads
#
# The float16 cache of one 4096-token sequence for the 70B-sized model, for every kv head
# count that divides 64: your `kv_cache_bytes` once it passes the core checks, the formula
# on meta tensors until then.

# %%
import matplotlib.pyplot as plt

counts = [1, 2, 4, 8, 16, 32, 64]
if result.core_passed:
    sizes = [kv_cache_bytes(1, SEQ, LAYERS, WIDTH, HEADS, count) for count in counts]
    source = "your kv_cache_bytes"
else:
    sizes = []
    for count in counts:
        with torch.device("meta"):
            keys = torch.empty(1, count, SEQ, HEAD_DIM, dtype=torch.float16)
        sizes.append(LAYERS * 2 * keys.nbytes)
    source = "meta tensors (pass the core checks to see yours)"
fig, axis = plt.subplots(figsize=(5.5, 3.2))
axis.bar([str(count) for count in counts], [size / 2**30 for size in sizes])
axis.set(xlabel="num_kv_heads (64 query heads)", ylabel="GiB per 4096-token sequence",
         title=f"KV cache, 80 layers, E = 8192, float16 — {source}")
axis.title.set_fontsize(9)
plt.tight_layout()
plt.show()
plt.close(fig)

# %%
# kata: quiz
