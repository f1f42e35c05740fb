# %% [markdown]
# ## 1. Scores: every query against every key
#
# Attention lets each of n queries look at m keys and take a weighted average of the values
# that belong to those keys. The first step measures how well each query matches each key
# with a dot product. Stack the queries as the rows of Q and the keys as the rows of K:
#
# | tensor | shape |
# |---|---|
# | Q | (n, d_k) |
# | Kᵀ | (d_k, m) |
# | S = Q Kᵀ | (n, m) |
#
# Entry S[i, j] is the dot product of query i with key j. **Row i belongs to query i**;
# column j to key j. With batch dimensions in front, `key.transpose(-2, -1)` (or its
# short form `key.mT`, "matrix transpose") swaps only the last two axes, so
# `query @ key.transpose(-2, -1)` works for (n, d_k), (b, n, d_k) and (b, h, n, d_k) alike.
# Don't write `key.T` for that: on more than two axes it reverses *every* axis, and
# PyTorch deprecates it there (a warning today, an error in a future release).

# %%
n, m, d_k = 3, 5, 4
q = torch.randn(n, d_k)      # (n, d_k)
k = torch.randn(m, d_k)      # (m, d_k)
scores = q @ k.transpose(-2, -1)
print("q", tuple(q.shape), "k", tuple(k.shape), "-> scores", tuple(scores.shape))  # (3, 5)

batched_k = torch.randn(2, m, d_k)                                    # (b, m, d_k)
print("batched keys transposed:", tuple(batched_k.transpose(-2, -1).shape),  # (2, 4, 5)
      "| .mT:", tuple(batched_k.mT.shape))                                  # the same

# %% [markdown]
# ## 2. Why divide by √d_k
#
# Suppose the entries of a query q and a key k are independent, with mean 0 and variance 1
# (roughly what a well-initialised layer produces). Their dot product is a sum of d_k terms:
#
# $$q \cdot k = \sum_{i=1}^{d_k} q_i k_i$$
#
# Each term has mean E[q_i] E[k_i] = 0 and variance E[q_i²] E[k_i²] − 0 = 1·1 = 1. The terms
# are independent, so their variances add up:
#
# $$\operatorname{Var}(q \cdot k) = d_k, \qquad \operatorname{std}(q \cdot k) = \sqrt{d_k}.$$
#
# With d_k = 64 the scores have a standard deviation of 8; with 512, about 23. A softmax of
# numbers that far apart is nearly one-hot, and its gradient, p(1 − p) on the diagonal,
# is nearly zero: the layer stops learning. Dividing every score by √d_k brings the variance
# back to 1 whatever the width. Let us measure it on 2,000 random pairs per width.

# %%
import math

for width in (4, 64, 512):
    a, b = torch.randn(2000, width), torch.randn(2000, width)      # 2000 pairs, (2000, width)
    dots = (a * b).sum(dim=-1)                                      # (2000,)
    print(f"d_k = {width:3}: var(q·k) = {dots.var():6.1f}   "
          f"var(q·k / √d_k) = {(dots / math.sqrt(width)).var():.2f}")

# %% [markdown]
# This variance argument is also the answer to "additive or dot-product attention?".
# Additive attention (Bahdanau et al., 2015) scores a pair with a small network,
# vᵀ tanh(W q + U k); dot-product attention scores it with q · k, which for all pairs at
# once is a single matmul, much faster on a GPU. Vaswani et al. found the two about equally
# good for small d_k, but unscaled dot products falling behind for large d_k, and blamed the
# variance growing like d_k: hence the 1/√d_k, which makes dot-product attention as
# well-behaved as additive attention at any width.
#
# The same eight scores, unscaled and scaled, for d_k = 512. Watch the largest weight and the
# size of the softmax's gradient:

# %%
d_k = 512
logits = torch.randn(8) * math.sqrt(d_k)            # (8,): what unscaled scores look like
for label, row in (("unscaled", logits), ("scaled  ", logits / math.sqrt(d_k))):
    row = row.clone().requires_grad_()
    weights = row.softmax(dim=-1)
    weights[0].backward()                           # how much can the first weight still move?
    print(f"{label}: max weight {weights.max():.3f}, gradient norm {row.grad.norm():.2e}")

# %% [markdown]
# ## 3. Softmax over the key axis
#
# Each query needs a set of weights over the **keys** that is positive and sums to 1, so
# that its output is a weighted average of the value rows. The keys are the last axis of
# the scores, so the softmax runs over `dim=-1`:
#
# | step | shape |
# |---|---|
# | scores S | (n, m) |
# | weights = softmax(S, dim=-1) | (n, m), every row sums to 1 |
# | V | (m, d_v) |
# | output = weights @ V | (n, d_v): row i is query i's average of the values |
#
# The softmax over `dim=-2` would make each *key's* column sum to 1: it answers "how does a
# key share itself among the queries", which is not what a query's output should average.

# %%
weights = scores.softmax(dim=-1)                     # (n, m)
print("row sums, dim=-1:", weights.sum(dim=-1))      # all ones: one per query
wrong = scores.softmax(dim=-2)
print("row sums, dim=-2:", wrong.sum(dim=-1))        # anything: the columns sum to 1 instead
v = torch.randn(m, 2)                                # (m, d_v) with d_v = 2
print("output shape:", tuple((weights @ v).shape))   # (n, d_v) = (3, 2)

# %% [markdown]
# ### Softmax without overflow
#
# softmax(x)ᵢ = e^(xᵢ) / Σⱼ e^(xⱼ) computed as written overflows as soon as a score passes
# about 88 in float32 (e^89 > 3.4·10³⁸): inf / inf = NaN. Subtracting any constant c from
# every score changes nothing, e^(xᵢ − c) / Σⱼ e^(xⱼ − c) = softmax(x)ᵢ, so real
# implementations subtract the row's **maximum**: every exponent is then ≤ 0, each
# e^(xᵢ − max) is at most 1, and the largest is exactly 1, so the sum cannot be 0 either.
# `torch.softmax` does this for you; write it out when you implement a softmax by hand
# (kata 14's online softmax keeps a running maximum for the same reason).

# %%
big = torch.tensor([1000.0, 999.0, 990.0])                            # (3,) float32
naive = big.exp() / big.exp().sum()
stable = (big - big.max()).exp() / (big - big.max()).exp().sum()
print("naive :", naive)                                               # inf / inf = nan
print("stable:", stable, "| torch.softmax:", big.softmax(-1))

# %% [markdown]
# ## 4. What a mask does to a row
#
# A mask says which keys a query may not look at: padding, or the future in a decoder. In
# this project (as in `nn.MultiheadAttention`) a **bool mask is True where a key is blocked**.
# Blocking means setting that key's score to −∞ **before** the softmax: e^(−∞) = 0, so the key
# gets weight 0 and the softmax spreads the whole weight of 1 over the keys that are left.
# A **float mask is added** to the scores: 0 leaves a score alone, −∞ blocks it, anything
# else nudges it.
#
# Masking *after* the softmax is a classic mistake: zeroing a weight then leaves a row
# that sums to less than 1. And a query whose keys are *all* blocked has a row of −∞, whose
# softmax is 0/0 = NaN; this kata's contract gives such a query all-zero weights instead
# (what `F.scaled_dot_product_attention` returns; `nn.MultiheadAttention` gives NaN there
# with its default `need_weights=True`, and zeros with `need_weights=False`).

# %%
row = torch.tensor([[2.0, 1.0, 0.5, -1.0]])                 # one query, four keys: (1, 4)
blocked = torch.tensor([[False, True, False, True]])        # (1, 4): keys 1 and 3 blocked
print("no mask          ", row.softmax(-1))
print("mask, then soft. ", row.masked_fill(blocked, float("-inf")).softmax(-1))  # sums to 1
after = row.softmax(-1).masked_fill(blocked, 0.0)
print("soft., then mask ", after, "sum", round(after.sum().item(), 4))           # sums to < 1
print("all keys blocked ", torch.full((1, 4), float("-inf")).softmax(-1))        # NaN

# %% [markdown]
# ### Fully blocked rows: right forwards *and* backwards
#
# The tempting fix is to replace the NaN weights after the softmax,
# `torch.where(all_blocked, 0.0, weights)`. The forward pass is then right, but the
# backward pass is not, when the mask is a **float** mask. The softmax of that row still
# produced NaN, and its backward formula multiplies by those NaN weights: even though
# `torch.where` sends the row a zero gradient, 0 · NaN = NaN reaches its scores, and
# through `query @ key.mT` the NaN spreads to the query's gradient and to **every key's**
# (a bool mask hides it: `masked_fill` gives the filled scores a zero gradient, and with
# every score filled nothing reaches the query or the keys).
#
# The pattern that is right both ways: give the fully blocked rows harmless scores
# *before* the softmax (any finite values, e.g. 0), so that no NaN is ever computed,
# then set their weights to zero:
#
# ```python
# all_blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)          # (..., n, 1)
# weights = scores.masked_fill(all_blocked, 0.0).softmax(dim=-1).masked_fill(all_blocked, 0.0)
# ```
#
# Both on the same float mask, where query 1 has every key blocked:

# %%
float_mask = torch.zeros(3, 5)                                          # (n, m), float
float_mask[1] = float("-inf")                                           # query 1: all blocked
for label in ("torch.where after", "neutralise before"):
    q_leaf, k_leaf = q.clone().requires_grad_(), k.clone().requires_grad_()   # (n, d_k), (m, d_k)
    masked = q_leaf @ k_leaf.mT / math.sqrt(q.size(-1)) + float_mask   # (n, m)
    all_blocked = torch.isneginf(masked).all(dim=-1, keepdim=True)      # (n, 1)
    if label == "torch.where after":
        w = torch.where(all_blocked, 0.0, masked.softmax(dim=-1))
    else:
        w = masked.masked_fill(all_blocked, 0.0).softmax(dim=-1).masked_fill(all_blocked, 0.0)
    (w * torch.randn(3, 5)).sum().backward()
    print(f"{label}: weights of query 1 {w[1].tolist()}, NaN in the query's gradient: "
          f"{q_leaf.grad.isnan().any().item()}, keys with a NaN gradient: "
          f"{k_leaf.grad.isnan().any(dim=-1).sum().item()} of {m}")

# %% [markdown]
# ## 5. One head with its projections
#
# `SingleHeadAttention` wraps the function in four learned maps, each an
# `nn.Linear(d_model, d_model)`:
#
# | step | shape (batch first) |
# |---|---|
# | query x_q, key x_k, value x_v | (b, n, d), (b, m, d), (b, m, d) |
# | q_proj(x_q), k_proj(x_k), v_proj(x_v) | (b, n, d), (b, m, d), (b, m, d) |
# | attention | output (b, n, d), weights (b, n, m) |
# | out_proj(output) | (b, n, d) |
#
# Why four *different* matrices, and in particular W_q ≠ W_k? With one matrix W for both,
# the score of token i for token j in self-attention is (W x_i) · (W x_j): symmetric. Token
# i would attend to j exactly as much as j to i, and token i's score with itself,
# |W x_i|², is the largest in its row unless another token's projection is longer. Real
# relations are not symmetric (a verb looks for its subject, the subject does not look for
# the verb in the same way); two matrices let the query ask "what am I looking for?" and
# the key answer "what do I offer?" independently. Checked on 6 random tokens:
#
# ```python
# scores_shared = (x @ W.T) @ (x @ W.T).T        # W_q = W_k = W
# ```

# %%
from torch import nn

tokens_x, W, W_other = torch.randn(6, 8), torch.randn(8, 8), torch.randn(8, 8)   # (n, d), (d, d)
shared = (tokens_x @ W.T) @ (tokens_x @ W.T).T                     # (6, 6): W_q = W_k
separate = (tokens_x @ W.T) @ (tokens_x @ W_other.T).T             # (6, 6): W_q ≠ W_k
print("W_q = W_k: scores symmetric:", torch.allclose(shared, shared.T),
      "| W_q ≠ W_k:", torch.allclose(separate, separate.T))

# %% [markdown]
# PyTorch's default layout is **sequence first**, (n, b, d): with `batch_first=False` move
# the batch to the front on the way in, and back on the way out. The module equals
# `nn.MultiheadAttention(d, 1)`, which keeps the three input projections stacked in one
# (3d, d) matrix, `in_proj_weight`, in the order q, k, v:

# %%
reference = nn.MultiheadAttention(8, num_heads=1)
print("in_proj_weight", tuple(reference.in_proj_weight.shape), "= W_q, W_k, W_v stacked")
print("out_proj.weight", tuple(reference.out_proj.weight.shape))
seq_first = torch.randn(5, 2, 8)                              # (n, b, d)
print("seq first", tuple(seq_first.shape), "-> batch first", tuple(seq_first.transpose(0, 1).shape))

# %%
# kata: exercise

# %% [markdown]
# ## 6. Looking at the weights
#
# Once your function passes the core checks, this draws its weights for 6 random queries
# and keys of width 16: without a mask, and with a causal mask (True above the diagonal),
# where query i sees keys 0..i only. Every row is a distribution over the keys.

# %%
import matplotlib.pyplot as plt

if result.core_passed:
    q, k, v = torch.randn(6, 16), torch.randn(6, 16), torch.randn(6, 16)
    future = torch.ones(6, 6, dtype=torch.bool).triu(diagonal=1)   # (n, m), True = blocked
    fig, axes = plt.subplots(1, 2, figsize=(7, 3))
    for axis, mask, label in ((axes[0], None, "no mask"), (axes[1], future, "causal mask")):
        _, attention_weights = scaled_dot_product_attention(q, k, v, mask)
        axis.imshow(attention_weights, cmap="viridis", vmin=0, vmax=1)
        axis.set(title=label, xlabel="key j", ylabel="query i")
    plt.tight_layout()
    plt.show()
    plt.close(fig)
else:
    print("Pass the core checks to see your attention weights as a heat map.")

# %%
# kata: quiz
