# %% [markdown]
# ## 1. The rule, one pair at a time
#
# Query `i` may see key `j` when `j <= i` (causal) and either `i - j < window` (the key is
# among the last `window` positions, the query's own included) or `j < num_sinks` (the key
# is a sink). Drawn for `n = 8`, `window = 3`, `num_sinks = 2` (1 = may attend):

# %%
n, window, num_sinks = 8, 3, 2
i = torch.arange(n)[:, None]                                          # (n, 1) queries
j = torch.arange(n)[None, :]                                          # (1, n) keys
causal, in_window, is_sink = j <= i, i - j < window, j < num_sinks
allowed = causal & (in_window | is_sink)                              # (n, n)
print(allowed.int())
print("keys per query:", allowed.sum(-1).tolist())

# %% [markdown]
# Row 3 sees keys 0, 1, 2, 3: the window is 1, 2, 3 and the sinks 0, 1, and sink 1 is
# counted **once**. From row 4 on, every query sees exactly `num_sinks + window = 5` keys,
# however long the sequence: that is what makes the cost linear in `n`.
#
# ## 2. A window per layer, a longer reach through layers
#
# One layer lets position `i` read positions `i - window + 1 … i`. The next layer reads
# those outputs, each of which already mixed `window - 1` earlier positions. After `L`
# layers, information travels up to `L · (window - 1)` positions: the receptive field grows
# with depth, as in a stack of convolutions. Gradients show it: which inputs does the last
# output depend on, for 1, 2 and 3 layers of window 4?

# %%
def windowed_attention(x, window):
    """Dense sliding-window self-attention (q = k = v = x), only for this small demo."""
    n, d = x.shape[-2], x.shape[-1]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    blocked = (j > i) | (i - j >= window)                             # (n, n), True = blocked
    scores = (x @ x.transpose(-2, -1) / d**0.5).masked_fill(blocked, float("-inf"))
    return torch.softmax(scores, dim=-1) @ x


x = torch.randn(16, 4, dtype=torch.float64, requires_grad=True)      # (n, d)
for layers in (1, 2, 3):
    y = x
    for _ in range(layers):
        y = windowed_attention(y, 4)
    (grad,) = torch.autograd.grad(y[-1].sum(), x)
    reached = (grad.abs().sum(-1) > 0).nonzero().flatten()
    print(f"{layers} layer(s): the last position (15) depends on inputs {reached.min().item()} … 15")

# %% [markdown]
# Mistral 7B: 32 layers of window 4096. With the window counting the query (this kata's
# convention, and Hugging Face's), each layer reaches 4095 back: 32 × 4095 = 131,040
# positions. Mistral's paper counts the window as positions `i − W … i` (W + 1 keys, each
# layer reaching W back): 32 × 4096 = 131,072, its "about 131K", exactly. Either way each
# layer scores only about 4096 keys per query. (Reaching back is not the same as
# remembering well: the information has to survive every hop.)
#
# ## 3. Why the first tokens become sinks
#
# A query's weights must sum to 1. When nothing in context matters to it, a trained model
# parks the weight on keys whose values add little, and the first tokens are the only ones
# every later query has always been able to see: they become **attention sinks**. Here a
# query puts most of its weight on position 0, whose value is near zero. Evict position 0
# (a plain window that has slid past it) and the softmax hands that weight to the others:

# %%
scores = torch.tensor([6.0, 1.0, 1.5, 0.5, 1.2])                     # key 0: the sink
values = torch.tensor([[0.0, 0.0], [1.0, -2.0], [0.5, 1.0], [-1.0, 0.5], [2.0, 1.0]])
kept = torch.softmax(scores, dim=0)
evicted = torch.softmax(scores[1:], dim=0)
print("weights with the sink:   ", [round(w, 3) for w in kept.tolist()])
print("weights without the sink:", [round(w, 3) for w in evicted.tolist()])
print("output with the sink:    ", [round(o, 3) for o in (kept @ values).tolist()])
print("output without the sink: ", [round(o, 3) for o in (evicted @ values[1:]).tolist()])

# %% [markdown]
# The output jumps by more than an order of magnitude: every layer, every head that relied
# on the sink now attends elsewhere, and the model's perplexity explodes once the first
# tokens leave the window. StreamingLLM keeps 4 sink positions in the cache, visible to
# every query after them, and reports stable perplexity on texts of up to 4 · 10⁶ tokens — with a
# second ingredient that this kata leaves out.
#
# **Positions inside the cache.** StreamingLLM numbers positions by their index *within the
# cache*, in logical order, not by their place in the text: a cache holding text positions
# `[0, 1, 2, 3, 6, 7, 8]` while decoding text position 9 uses RoPE positions `0 … 6` for the
# keys and 7 for the query (its §3.2, which calls this crucial). To do so it caches keys
# **before** RoPE and rotates them again at every step. (Hugging Face's former `SinkCache`
# got the same effect by re-rotating the already rotated keys whenever the window slid.)
#
# This kata's cache keeps the original positions: keys arrive already rotated and are never
# re-indexed. For a pure window that is harmless: every query–key distance is below
# `window`, a distance the model saw in training, and RoPE depends on the distance only.
# The sinks break it: the distance from a query to the sinks grows with the text.

# %%
window_long, sinks_long, trained = 4096, 4, 32768
for position in (4096, 32768, 10**6):
    in_cache = min(position, sinks_long + window_long - 1)  # StreamingLLM: the query's index in the cache
    print(f"query at text position {position:>9,}: RoPE distance to sink 0 = {position:>9,} "
          f"here, {in_cache:>5,} in StreamingLLM (trained up to {trained:,})")

# %% [markdown]
# At 10⁶ tokens this kata's cache asks the model for query–sink distances 30 times longer
# than any it was trained on: bounded memory, but not a model that still works. Either
# re-number as StreamingLLM does, or use a model trained for it.
#
# ## 4. Never an (n, n) matrix
#
# Each query needs only `num_sinks + window` keys, so its scores fit in a **band**
# `(n, num_sinks + window)`: an index tensor `(n, num_sinks + window)` says which key each
# column holds (positions below 0 are padding, blocked). The quickest way to fill the band
# gathers the keys, `k[..., idx, :]` `(b, h, n, num_sinks + window, d)`: a copy of the keys
# per query. It passes the grader at its test sizes (`d = 4`), but it is a demo-only
# shortcut. The sizes per head at 32k tokens, against the memory rule's limit:

# %%
n_long, w_long, s_long, d_long = 32768, 4096, 4, 128
print(f"(n, n) scores:                {n_long * n_long:>13,} numbers")
print(f"(n, sinks + window) band:     {n_long * (s_long + w_long):>13,} numbers")
print(f"the rule's limit, n² / 2:      {n_long * n_long // 2:>13,} numbers")
gathered = n_long * (s_long + w_long) * d_long
print(f"gathered keys (n, S + W, d):  {gathered:>13,} numbers "
      f"({gathered / (n_long * n_long // 2):.0f} × the limit: a demo-only shortcut)")
print(f"query blocks of W rows:       {w_long * (s_long + 2 * w_long - 1):>13,} numbers per block")

# %% [markdown]
# Query blocks are what real kernels do: a block of `window` queries `start … end` needs
# the keys `start − window + 1 … end`, plus the sinks before them, and every key block
# outside that range is skipped. Score the block against those keys, mask by the rule,
# softmax, multiply by their values: the largest tensor is `(window, num_sinks + 2 · window
# − 1)` per head, whatever `n`. A band of scores computed block by block is the same idea.
#
# The catch is the off-by-one, and there are two conventions. In this kata the window
# counts the query itself: `i − j < window`, `window` keys (Hugging Face's
# `kv_idx > q_idx − sliding_window`). Mistral's paper, and its reference code
# (`tril(diagonal=0)` then `triu(diagonal=−sliding_window)`), let query `i` see
# `i − W … i`: `W + 1` keys. Neither is a bug; read which one a model's config means.

# %%
# kata: exercise

# %% [markdown]
# ## 5. The rolling cache and its memory
#
# Decoding with a window needs only the sinks and the last `window` positions: the cache
# never grows. With your `RollingKVCache` (once the core checks pass), the number of
# positions it holds as a sequence of 40 tokens is appended one at a time; a full cache
# holds them all:

# %%
import matplotlib.pyplot as plt

steps = list(range(1, 41))
if result.core_passed:
    cache = RollingKVCache(window=8, num_sinks=2)
    held = []
    for _ in steps:
        cache.append(torch.randn(1, 1, 1, 4), torch.randn(1, 1, 1, 4))
        held.append(cache.keys_values()[0].shape[-2])
    source = "your RollingKVCache"
else:
    held = [min(p, 2 + 8) for p in steps]
    source = "the rule (pass the core checks to see yours)"
fig, axis = plt.subplots(figsize=(5.5, 3.2))
axis.plot(steps, steps, label="full cache")
axis.plot(steps, held, label="rolling cache (window 8, 2 sinks)")
axis.set(xlabel="tokens appended", ylabel="positions held", title=f"cache size — {source}")
axis.title.set_fontsize(9)
axis.legend()
plt.tight_layout()
plt.show()
plt.close(fig)

# %% [markdown]
# At Mistral 7B's scale (32 layers, 8 key/value heads of 128, float16) a token costs
# 128 KiB of cache. At 32k tokens the full cache is 4 GiB per sequence; a 4096 window holds
# 0.5 GiB, and stays there however long the generation runs:

# %%
per_token = 2 * 32 * 8 * 128 * 2                                      # bytes: k and v, layers, heads, width, float16
for tokens in (4096, 32768, 131072):
    full, rolling = tokens * per_token / 2**30, min(tokens, 4096) * per_token / 2**30
    print(f"{tokens:>7} tokens: full {full:5.1f} GiB, rolling {rolling:4.1f} GiB")

# %% [markdown]
# ## 6. What an interviewer asks next
#
# **Local and global layers.** Recent models mix windowed layers with full ones: Gemma 2
# alternates them 1:1 with a 4096 window, Gemma 3 uses 5 local layers (window 1024) per
# global one, gpt-oss alternates full layers with 128-token bands. Only the global layers'
# cache grows with the context. Per layer, on average, at 128k tokens:

# %%
context = 131072
for name, local_share, w in (("all global", 0, 0), ("1:1, W = 4096 (Gemma 2)", 1 / 2, 4096),
                             ("5:1, W = 1024 (Gemma 3)", 5 / 6, 1024), ("all local, W = 4096", 1, 4096)):
    held = (1 - local_share) * context + local_share * min(context, w)
    print(f"{name:24s} {held:>9,.0f} positions per layer ({held / context:6.1%} of a full cache)")

# %% [markdown]
# **Learned sinks.** A sink token is a trick the model learns; it can be built in instead.
# gpt-oss gives each head a learned *sink logit*: one more column in the softmax with no
# value behind it, so a head can give weight to "nothing" (the "softmax + 1" idea; gated
# attention is another fix). Sun et al. (*Massive Activations in Large Language Models*,
# 2024) trace sinks to a few huge activations that turn the first token into a near-constant
# key. A sink logit of 6 takes the weight that position 0 took above, with no token kept:

# %%
sink_logit = torch.tensor([6.0])
weights = torch.softmax(torch.cat([sink_logit, scores[1:]]), dim=0)[1:]  # the sink column dropped
print("weights with a learned sink logit:", [round(w, 3) for w in weights.tolist()],
      "sum", round(weights.sum().item(), 3))
print("output:", [round(o, 3) for o in (weights @ values[1:]).tolist()])

# %% [markdown]
# **A real rolling buffer.** A ring buffer writes position `p` into slot `p % window`: O(1)
# per token, no copy. The reference's `torch.cat` then `clone` copies the whole window at
# every append: simple, and `window` times the work. Mistral prefills a long prompt in
# chunks of `window` tokens, each chunk attending to the cache and to itself; a paged
# cache (vLLM) can free the blocks that fell out of the window.

#
# **Tiles a windowed kernel skips.** FlashAttention-style kernels work in tiles of, say,
# 128 queries × 128 keys; a windowed kernel skips every tile that holds no allowed pair.
# At `n = 32k`, `window = 4k`:

# %%
n_tiles, tile, w_tiles = 32768, 128, 4096
blocks = n_tiles // tile
causal_tiles = blocks * (blocks + 1) // 2
# a key tile is needed when its newest key is less than `window` before the tile's first query
per_row = [sum(1 for kb in range(qb + 1) if qb * tile - ((kb + 1) * tile - 1) < w_tiles)
           for qb in range(blocks)]
print(f"causal: {causal_tiles:,} tiles; windowed: {sum(per_row):,} tiles "
      f"({causal_tiles / sum(per_row):.1f} × fewer; at most {max(per_row)} key tiles per query tile)")

# %% [markdown]
# The quiz counts (query, key) pairs; a kernel pays per tile. The two ratios agree (4.27
# and 4.15) because the partly filled tiles on the window's edge are few.

# %%
# kata: quiz
