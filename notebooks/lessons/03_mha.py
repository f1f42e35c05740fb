# %% [markdown]
# ## 1. One head, four matrices
#
# Kata 01's single head has four learned matrices, each E × E: W_q, W_k, W_v to make the
# queries, keys and values, and W_o to map the attended values back to the model's space.
# For one batch element of n tokens (keys and values m tokens):
#
# | step | shape |
# |---|---|
# | x_q, x_kv | (n, E), (m, E) |
# | q = x_q W_qᵀ, k = x_kv W_kᵀ, v = x_kv W_vᵀ | (n, E), (m, E), (m, E) |
# | weights = softmax(q kᵀ / √E) | (n, m) |
# | attended = weights v | (n, E) |
# | output = attended W_oᵀ | (n, E) |
#
# One head means one set of weights per query: a single way of deciding what to look at.

# %%
import math

E, n, m = 4, 3, 5
x_q, x_kv = torch.randn(n, E), torch.randn(m, E)     # (n, E), (m, E)
W_q, W_k, W_v, W_o = (torch.randn(E, E) for _ in range(4))
q, k, v = x_q @ W_q.T, x_kv @ W_k.T, x_kv @ W_v.T    # (3, 4), (5, 4), (5, 4)
one_head = (q @ k.T / math.sqrt(E)).softmax(dim=-1) @ v @ W_o.T
print("one head: 4 matrices of", tuple(W_q.shape), "-> output", tuple(one_head.shape))

# %% [markdown]
# ## 2. Two heads, seven matrices
#
# Two heads of width d = E / 2 each get their **own** query, key and value matrices, now
# d × E: they look at the same tokens through different, narrower lenses, and each computes
# its own weights. That is 2 × 3 = 6 matrices. Their outputs, (n, d) each, are concatenated
# back to (n, E), and a single W_o (E × E) mixes them: **seven** matrices.
#
# | step, per head i | shape |
# |---|---|
# | q⁽ⁱ⁾ = x_q W_q⁽ⁱ⁾ᵀ, k⁽ⁱ⁾, v⁽ⁱ⁾ | (n, d), (m, d), (m, d) |
# | weights⁽ⁱ⁾ = softmax(q⁽ⁱ⁾ k⁽ⁱ⁾ᵀ / √d) | (n, m): scaled by the **head** width d |
# | head⁽ⁱ⁾ = weights⁽ⁱ⁾ v⁽ⁱ⁾ | (n, d) |
# | concat(head⁽⁰⁾, head⁽¹⁾) W_oᵀ | (n, E) |

# %%
d = E // 2
per_head = [tuple(torch.randn(d, E) for _ in range(3)) for _ in range(2)]   # 2 heads × (W_q, W_k, W_v)
heads = []
for W_qi, W_ki, W_vi in per_head:
    qi, ki, vi = x_q @ W_qi.T, x_kv @ W_ki.T, x_kv @ W_vi.T                  # (n, d), (m, d), (m, d)
    heads.append((qi @ ki.T / math.sqrt(d)).softmax(dim=-1) @ vi)            # (n, d)
two_heads = torch.cat(heads, dim=-1) @ W_o.T                                  # (n, E)
print("two heads:", 3 * len(per_head), "matrices of", (d, E), "+ W_o", tuple(W_o.shape),
      "-> output", tuple(two_heads.shape))

# %% [markdown]
# ## 3. h heads, one fused projection
#
# Stack the heads' query matrices on top of each other: W_q⁽⁰⁾ over W_q⁽¹⁾ is an E × E matrix
# W_q, and x W_qᵀ computes every head's queries in **one** matmul, head i in columns
# i·d : (i+1)·d. That is exactly kata 02's layout, so `view(..., h, d)` + `transpose` hands
# each head its own queries. Do the same for keys and values, then stack the three: a single
# (3E, E) matrix, PyTorch's `in_proj_weight`, rows 0:E for q, E:2E for k, 2E:3E for v.
#
# | tensor | shape |
# |---|---|
# | `in_proj_weight` = [W_q; W_k; W_v] | (3E, E) |
# | `in_proj_bias` = [b_q; b_k; b_v] | (3E,) |
# | `out_proj` | nn.Linear(E, E) |
#
# For self-attention (query = key = value) one (n, E) × (E, 3E) matmul makes q, k and v at
# once. Parameters: 3E² + E² weights and 3E + E biases, **4E² + 4E whatever h is**. The
# check below: the stacked matrix gives each head the very same queries as its own matrix.

# %%
W_q_stacked = torch.cat([W_qi for W_qi, _, _ in per_head], dim=0)           # (E, E)
all_queries = x_q @ W_q_stacked.T                                            # (n, E) = (3, 4)
for i, (W_qi, _, _) in enumerate(per_head):
    print(f"head {i}: columns {i * d}:{(i + 1) * d} equal its own queries:",
          torch.allclose(all_queries[:, i * d:(i + 1) * d], x_q @ W_qi.T))

reference = torch.nn.MultiheadAttention(8, num_heads=2)
print("in_proj_weight", tuple(reference.in_proj_weight.shape),
      "in_proj_bias", tuple(reference.in_proj_bias.shape),
      "parameters", sum(p.numel() for p in reference.parameters()), "= 4·8² + 4·8")

# %% [markdown]
# ## 4. What W_o does with the heads
#
# Concatenating and then multiplying by W_oᵀ is the same as giving each head its own block
# of W_o's columns and **adding** the results: head i contributes head⁽ⁱ⁾ W_o[:, i·d:(i+1)·d]ᵀ.
# So the output projection is where the heads are mixed; without it each head's result
# would stay in its own d columns.

# %%
summed = sum(head @ W_o[:, i * d:(i + 1) * d].T for i, head in enumerate(heads))   # (n, E)
print("concat then W_o == sum of per-head blocks:", torch.allclose(two_heads, summed, atol=1e-5))

# %% [markdown]
# ### Why several narrow heads rather than one wide one?
#
# At the same width E the cost is the same: 4E² + 4E parameters and the same FLOPs whatever
# h is (above, and kata 07). What changes is what a query can do with them. One head gives
# each query **one** distribution over the keys, so its output is a single weighted average
# of the value rows: if it needs the subject of its verb *and* the previous token, one
# softmax has to split its weight between them and blurs both. h heads give each query h
# independent distributions, each reading its own d columns of the values: one head can put
# all its weight on the subject while another puts all its weight on the previous token,
# and W_o combines the two. The price: each head compares queries and keys in only
# d = E / h dimensions, so its (n, m) score matrix has rank at most d; too many heads and
# each one is too narrow (and in trained models many heads turn out redundant and can be
# pruned). Two heads copying two different tokens, which one head's weights cannot do:

# %%
values = torch.arange(16.0).view(4, E)                      # (m, E) = (4, 4): four tokens' values
picks = torch.zeros(2, 1, 4)                                 # (h, n, m): one query, two heads
picks[0, 0, 1] = picks[1, 0, 3] = 1.0                        # head 0 -> token 1, head 1 -> token 3
per_head_values = values.view(4, 2, d).transpose(0, 1)       # (h, m, d): each head's columns
two_head_output = (picks @ per_head_values).transpose(0, 1).reshape(1, E)   # (n, E)
print("token 1:", values[1].tolist(), " token 3:", values[3].tolist())
print("two heads:", two_head_output.tolist(), "= token 1's first half, token 3's second half")
one_head = torch.tensor([[0.0, 0.5, 0.0, 0.5]]) @ values     # one distribution for every column
print("one head, weight split between them:", one_head.tolist(), "= a blur of both")

# %% [markdown]
# ## 5. The whole forward pass, shape by shape
#
# With batch first, b batch elements, h heads of width d = E / h:
#
# | step | shape |
# |---|---|
# | query, key, value | (b, n, E), (b, m, E), (b, m, E) |
# | project with the three (E, E) blocks of `in_proj_weight` | (b, n, E), (b, m, E), (b, m, E) |
# | split heads (kata 02) | (b, h, n, d), (b, h, m, d), (b, h, m, d) |
# | scores q kᵀ / √d | (b, h, n, m) |
# | softmax over the keys, dropout in training | (b, h, n, m): the returned weights |
# | weights @ v | (b, h, n, d) |
# | merge heads | (b, n, E) |
# | `out_proj` | (b, n, E) |
#
# Key and value may be longer than the query (cross-attention, m ≠ n), so project them
# separately rather than assuming query = key = value. PyTorch's default layout is
# sequence first, (n, b, E): transpose on the way in and out. Dropout drops attention
# *weights*, and only while `self.training` is True.

# %%
# kata: exercise

# %% [markdown]
# ## 6. What the heads look at
#
# Each head computes its own (n, m) weights from the same tokens. This draws the weights of
# the four heads of a random 16-wide attention over 6 tokens: your module's once it passes
# the core checks, PyTorch's `nn.MultiheadAttention` until then.

# %%
import matplotlib.pyplot as plt

torch.manual_seed(0)
reference = torch.nn.MultiheadAttention(16, num_heads=4, batch_first=True)
tokens = 4 * torch.randn(1, 6, 16)          # (b, n, E); large enough for sharp weights
if result.core_passed:
    mine = MultiheadAttention(16, 4, batch_first=True)
    mine.load_state_dict(reference.state_dict())
    _, head_weights = mine(tokens, tokens, tokens)                 # (b, h, n, m)
    source = "your MultiheadAttention"
else:
    _, head_weights = reference(tokens, tokens, tokens, average_attn_weights=False)
    source = "nn.MultiheadAttention (pass the core checks to see yours)"
fig, axes = plt.subplots(1, 4, figsize=(10, 2.8))
for head, axis in enumerate(axes):
    axis.imshow(head_weights[0, head].detach(), cmap="viridis", vmin=0, vmax=1)
    axis.set(title=f"head {head}", xlabel="key", ylabel="query" if head == 0 else "")
fig.suptitle(source)
plt.tight_layout()
plt.show()
plt.close(fig)

# %%
# kata: quiz
