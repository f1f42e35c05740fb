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
# Mistral 7B: 32 layers of window 4096 reach about 32 × 4095 ≈ 131k positions back,
# although each layer scores only 4096 keys per query. (Reaching back is not the same as
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
# every query after them, and the model stays stable over millions of tokens.
#
# ## 4. Never an (n, n) matrix
#
# Each query needs only `num_sinks + window` keys. Gather them: an index tensor
# `(n, num_sinks + window)` (positions below 0 are padding, blocked), the keys
# `k[..., idx, :]` `(b, h, n, num_sinks + window, d)`, scores `(b, h, n, num_sinks + window)`.
# The sizes per head at 32k tokens:

# %%
n_long, w_long, s_long, d_long = 32768, 4096, 4, 128
print(f"(n, n) scores:                {n_long * n_long:>13,} numbers")
print(f"(n, sinks + window) band:     {n_long * (s_long + w_long):>13,} numbers")
print(f"gathered keys (n, S + W, d):  {n_long * (s_long + w_long) * d_long:>13,} numbers (a copy per query: fine here, wasteful at scale)")
print(f"query blocks of W rows:       {w_long * (s_long + 2 * w_long):>13,} numbers per block")

# %% [markdown]
# Query blocks are what real kernels do: a block of `window` queries needs the keys from
# `window - 1` before its first query to its last one, plus the sinks, and every key block
# outside that range is skipped. The catch is the off-by-one: the window counts the query
# itself, so `i - j < window`, not `<=` (Mistral's first release had the `<=`, via
# `triu(diagonal=-window)`).

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

# %%
# kata: quiz
