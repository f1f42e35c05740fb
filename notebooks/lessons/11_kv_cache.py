# %% [markdown]
# ## 1. Generating one token at a time
#
# A decoder generates text one token at a time: token n + 1 is chosen from the output at
# position n, appended, and the model runs again. Without a cache, step n runs the whole
# prefix of n tokens through every layer again: the keys and values of the old tokens are
# recomputed each time, although they never change (causal attention: an old token never
# sees the new ones). With a cache, each step projects only the new token and reuses the
# stored keys and values.
#
# | per layer, for step n | without a cache | with a cache |
# |---|---|---|
# | tokens projected (q, k, v) | n | 1 |
# | scores | (n, n) | (1, n) |
# | memory kept between steps | none | k and v: 2 · n · E values |
#
# The count below adds up the token projections over a whole generation of N tokens.

# %%
N = 1000
without_cache = sum(n for n in range(1, N + 1))      # step n re-projects all n tokens
with_cache = N                                       # step n projects 1 token
print(f"{N} tokens: {without_cache:,} token projections without a cache, {with_cache:,} with one "
      f"({without_cache // with_cache}x fewer)")

# %% [markdown]
# ## 2. Causal self-attention on a whole sequence
#
# First, one call on all n tokens. Project x (b, n, E) into q, k, v, split them into h heads
# (b, h, n, d), and block key j for query i when j > i: the mask is the (n, n) upper
# triangle, `True` = blocked as in `nn.MultiheadAttention`.
#
# | step | shape |
# |---|---|
# | x | (b, n, E) |
# | q, k, v after the projections and the head split | (b, h, n, d) |
# | scores q kᵀ / √d, masked | (b, h, n, n) |
# | weights @ v, heads merged, out_proj | (b, n, E) |
#
# `nn.MultiheadAttention` with the causal mask computes exactly this; its `in_proj_weight`
# is W_q, W_k, W_v stacked.

# %%
import math

import torch.nn.functional as F

E, h, b, n = 8, 2, 1, 5
d = E // h
reference = torch.nn.MultiheadAttention(E, h, batch_first=True)
W_q, W_k, W_v = reference.in_proj_weight.detach().chunk(3)
b_q, b_k, b_v = reference.in_proj_bias.detach().chunk(3)
W_o, b_o = reference.out_proj.weight.detach(), reference.out_proj.bias.detach()


def heads(t):                                        # (b, len, E) -> (b, h, len, d)
    return t.view(t.size(0), t.size(1), h, d).transpose(1, 2)


def merge(t):                                        # (b, h, len, d) -> (b, len, E)
    return t.transpose(1, 2).reshape(t.size(0), t.size(2), E)


x = torch.randn(b, n, E)
q, k, v = heads(F.linear(x, W_q, b_q)), heads(F.linear(x, W_k, b_k)), heads(F.linear(x, W_v, b_v))
causal = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)               # (n, n), True = blocked
scores = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(causal, float("-inf"))
full = F.linear(merge(scores.softmax(dim=-1) @ v), W_o, b_o)               # (b, n, E)
expected = reference(x, x, x, attn_mask=causal, need_weights=False)[0]
print("q, k, v", tuple(q.shape), "scores", tuple(scores.shape), "output", tuple(full.shape))
print("equal to nn.MultiheadAttention with a causal mask:", torch.allclose(full, expected, atol=1e-6))

# %% [markdown]
# ## 3. A chunk after a prefill: the mask moves
#
# Now the first s tokens have been processed (the *prefill*) and their keys and values are
# in the cache; t new tokens arrive. Their queries are (b, h, t, d), the keys and values of
# all s + t positions (b, h, s + t, d), so the scores are (b, h, t, s + t). New query i is
# **position s + i**: it sees every cached key and the new keys up to its own. The mask is
# the last t rows of the full (s + t) × (s + t) causal mask: `triu(diagonal=s + 1)` on a
# (t, s + t) matrix.
#
# The top-left triangle, `triu(diagonal=1)`, is what `is_causal=True` means to
# `F.scaled_dot_product_attention` when the scores are not square: it would let new query 0
# see key 0 only.

# %%
s, t = 3, 2
shifted = torch.ones(t, s + t, dtype=torch.bool).triu(diagonal=s + 1)
top_left = torch.ones(t, s + t, dtype=torch.bool).triu(diagonal=1)
last_rows = causal[s:s + t]                                                 # rows s..s+t-1 of the full mask
print("shifted mask (True = blocked):\n", shifted.int())
print("equal to the last t rows of the full causal mask:", torch.equal(shifted, last_rows))
print("top-left mask, is_causal=True's for (t, s + t) scores:\n", top_left.int())

# The chunk's output with the shifted mask is the full output's last t rows; top-left is not.
q_new = q[:, :, s:]                                                         # (b, h, t, d)
chunk_scores = q_new @ k.transpose(-2, -1) / math.sqrt(d)                   # (b, h, t, s + t)
for name, mask in (("shifted", shifted), ("top-left", top_left)):
    out = F.linear(merge(chunk_scores.masked_fill(mask, float("-inf")).softmax(-1) @ v), W_o, b_o)
    print(f"{name:8s} mask: chunk output == full output at positions {s}..{s + t - 1}:",
          torch.allclose(out, full[:, s:], atol=1e-6))
sdpa = F.scaled_dot_product_attention(q_new, k, v, is_causal=True)
print("F.scaled_dot_product_attention(is_causal=True) agrees with the top-left mask:",
      torch.allclose(F.linear(merge(sdpa), W_o, b_o),
                     F.linear(merge(chunk_scores.masked_fill(top_left, float("-inf")).softmax(-1) @ v),
                              W_o, b_o), atol=1e-6))

# %% [markdown]
# ## 4. Growing the cache without touching it
#
# The cache is a tuple (k, v), each (b, h, s, d): k_proj and v_proj outputs split into
# heads, **unscaled** (the 1/√d belongs to the scores). Appending the new positions is a
# concatenation along the positions axis, dim 2 — not dim 1 (heads), which a (b, s, ...)
# habit suggests.
#
# `torch.cat` builds a new tensor, and that matters: the caller may keep the old cache and
# continue from it twice (beam search keeps several continuations of one prefix;
# speculative decoding throws draft tokens away). Writing into the cache you were given —
# in place, or into spare room behind a view of a preallocated buffer — corrupts the other
# branch.

# %%
cache = (k[:, :, :s], v[:, :, :s])                                        # (b, h, s, d) each
k_new, v_new = k[:, :, s:], v[:, :, s:]                                    # (b, h, t, d)
grown = (torch.cat([cache[0], k_new], dim=2), torch.cat([cache[1], v_new], dim=2))
print("cache", tuple(cache[0].shape), "+ new", tuple(k_new.shape), "->", tuple(grown[0].shape))
print("the old cache is untouched and shares no memory with the new one:",
      cache[0].shape[2] == s, grown[0].data_ptr() != cache[0].data_ptr())
try:
    torch.cat([cache[0], k_new], dim=1)                                     # along heads
except RuntimeError as error:
    print("dim=1 (heads) fails here:", str(error).split(".")[0])

# %%
# kata: exercise

# %% [markdown]
# ## 5. Every split gives the same answer
#
# Feed the sequence as a prefill of 2 tokens and then one token at a time, and compare with
# one call on the whole sequence: your module with its cache once it passes the core
# checks; until then the cache-free way, `nn.MultiheadAttention` re-run on the whole prefix
# at every step (the last row of each run is the new token's output). The picture shows,
# for a prefill of 5 and a chunk of 3, which keys each new query may see (yellow), in the
# full (8, 8) mask.

# %%
import matplotlib.pyplot as plt

with torch.no_grad():
    if result.core_passed:
        module = CausalSelfAttention(E, h)
        module.load_state_dict({"q_proj.weight": W_q, "q_proj.bias": b_q, "k_proj.weight": W_k,
                                "k_proj.bias": b_k, "v_proj.weight": W_v, "v_proj.bias": b_v,
                                "out_proj.weight": W_o, "out_proj.bias": b_o})
        outputs, kv = [], None
        out, kv = module(x[:, :2])                                          # prefill 2 tokens
        outputs.append(out)
        for position in range(2, n):                                        # then one at a time
            out, kv = module(x[:, position:position + 1], kv)
            outputs.append(out)
        source = f"your CausalSelfAttention, prefill 2 then 1 + 1 + 1 (cache {tuple(kv[0].shape)})"
    else:
        outputs = []
        for position in range(n):                                           # no cache: the whole prefix again
            prefix = x[:, :position + 1]
            mask = torch.ones(position + 1, position + 1, dtype=torch.bool).triu(diagonal=1)
            outputs.append(reference(prefix, prefix, prefix, attn_mask=mask)[0][:, -1:])
        source = "nn.MultiheadAttention on every prefix (pass the core checks to use yours)"
print(source + ": equals one call:", torch.allclose(torch.cat(outputs, dim=1), full, atol=1e-5))

s_pic, t_pic = 5, 3
allowed = ~torch.ones(s_pic + t_pic, s_pic + t_pic, dtype=torch.bool).triu(diagonal=1)
fig, axis = plt.subplots(figsize=(4, 3.2))
picture = allowed.float()
picture[:s_pic] = 0.3                                                       # rows already computed
axis.imshow(picture, cmap="viridis", vmin=0, vmax=1)
axis.axhline(s_pic - 0.5, color="white")
axis.axvline(s_pic - 0.5, color="white", linestyle=":")
axis.set(title=f"prefill {s_pic}, then a chunk of {t_pic}", xlabel="key position",
         ylabel="query position")
plt.tight_layout()
plt.show()
plt.close(fig)

# %% [markdown]
# ## 6. Prefill is compute-bound, decoding is memory-bound
#
# **Arithmetic intensity** = FLOPs per byte moved to or from memory. A GPU whose peak is P
# FLOP/s and whose memory delivers B bytes/s waits for memory below P / B FLOPs per byte
# (memory-bound) and for its arithmetic above it (compute-bound). NVIDIA's datasheet for
# the H100 SXM gives 1,979 TFLOP/s of bfloat16 with 2:4 sparsity, half that dense, and
# 3.35 TB/s of HBM.
#
# A linear layer with a d × d weight applied to t tokens costs 2·t·d² FLOPs and moves the
# weight (2·d² bytes in bfloat16) plus t input and t output rows. A prefill of thousands of
# tokens reuses every weight thousands of times; a decode step, t = 1, reads every weight
# to do 2 FLOPs with it: about 1 FLOP per byte. Batching b sequences makes t = b and helps
# the linear layers, but not attention over the cache: each sequence reads its own keys and
# values (2·n·d numbers) to do 4·n·d FLOPs with them, whatever the batch. That is why a
# decode step's time is the time to read the weights and the cache, and why shrinking the
# cache (kata 13) speeds decoding up.

# %%
d_model, bytes_per_value = 4096, 2                                      # bfloat16
peak, bandwidth = 1979e12 / 2, 3.35e12                                  # H100 SXM: dense bfloat16, HBM
ridge = peak / bandwidth
print(f"H100 SXM ridge point: {ridge:.0f} FLOPs per byte")


def linear_intensity(tokens):                                           # (tokens, d) @ (d, d)
    flops = 2 * tokens * d_model * d_model
    moved = bytes_per_value * (d_model * d_model + 2 * tokens * d_model)  # weight, input, output
    return flops / moved


for tokens, what in ((1, "decode step, batch 1"), (64, "decode step, batch 64"),
                     (4096, "prefill of 4096 tokens")):
    intensity = linear_intensity(tokens)
    bound = "compute-bound" if intensity > ridge else "memory-bound"
    print(f"{what:23}: linear layer {intensity:7.1f} FLOPs per byte -> {bound}")
cached = 4096                                                           # one sequence's cache length
attention_flops = 4 * cached * d_model                                  # scores and weights @ V
attention_bytes = bytes_per_value * 2 * cached * d_model                # read K and V once
print(f"attention of one new token over a {cached}-token cache: "
      f"{attention_flops / attention_bytes:.1f} FLOPs per byte, at any batch size")

# %%
# kata: quiz
