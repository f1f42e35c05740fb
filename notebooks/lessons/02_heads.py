# %% [markdown]
# ## 1. What a head is
#
# Multi-head attention runs h attentions of width d side by side instead of one of width
# E = h·d. The projections produce one wide tensor per input, (b, n, E); **head i owns the
# columns i·d : (i+1)·d of every token**. Splitting means gathering, for each head, its slice
# of every token, so that the head can run attention over the whole sequence:
#
# | step | shape | indexed by |
# |---|---|---|
# | projected input | (b, n, h·d) | batch, token, column |
# | cut the columns into h groups of d | (b, n, h, d) | batch, token, head, column in head |
# | put the head next to the batch | (b, h, n, d) | batch, head, token, column in head |
#
# The last layout is what attention needs: `q @ k.transpose(-2, -1)` treats the leading
# (b, h) as batch dimensions and multiplies (n, d) by (d, m) for every batch element and
# head at once.
#
# We use a tiny tensor whose values tell where they came from: value 10·t + c is token t,
# column c. One batch element, n = 3 tokens, h = 2 heads of width d = 2 (E = 4):

# %%
b, n, h, d = 1, 3, 2, 2
token = torch.arange(n).view(1, n, 1)                 # (1, n, 1)
column = torch.arange(h * d).view(1, 1, h * d)        # (1, 1, E)
x = 10 * token + column                               # (b, n, E) = (1, 3, 4)
print(x)

# %% [markdown]
# ## 2. Step one: `view(b, n, h, d)` cuts the columns, and nothing moves
#
# A view only changes how the same memory is indexed. Cutting the last axis, E = h·d,
# into (h, d) with h as the **outer** factor makes entry [.., t, i, j] the column i·d + j of
# token t: exactly head i's slice.

# %%
cut = x.view(b, n, h, d)                              # (1, 3, 2, 2): batch, token, head, column
print("token 1, head 0:", cut[0, 1, 0].tolist(), "  token 1, head 1:", cut[0, 1, 1].tolist())

# %% [markdown]
# ## 3. Step two: the transpose brings each head's slices together
#
# In (b, n, h, d) the tokens still come first: to read head 0 you would pick index 0 on the
# third axis of every token. `transpose(1, 2)` swaps the token and head axes, giving
# (b, h, n, d): now `[0, i]` is head i, an (n, d) matrix holding its slice of every token.

# %%
heads = cut.transpose(1, 2)                           # (1, 2, 3, 2): batch, head, token, column
print("shape", tuple(heads.shape))
print("head 0:\n", heads[0, 0])                       # columns 0, 1 of tokens 0, 1, 2
print("head 1:\n", heads[0, 1])                       # columns 2, 3 of tokens 0, 1, 2

# %% [markdown]
# ## 4. What reshape without the transpose scrambles
#
# `x.reshape(b, h, n, d)` has the right shape, so nothing complains. But a reshape keeps the
# order of the numbers in memory, and x's memory is token 0's four columns, then token 1's,
# then token 2's. Dealing those 12 numbers out as 2 heads × 3 rows × 2 columns gives head 0
# the first six numbers (all of token 0 and half of token 1) and head 1 the rest. Each
# "head" now mixes whole tokens and never sees the other tokens' slice: printed both ways,

# %%
scrambled = x.reshape(b, h, n, d)                     # (1, 2, 3, 2): same shape as heads
for head in range(h):
    print(f"head {head}  right: {heads[0, head].tolist()}")
    print(f"        reshape: {scrambled[0, head].tolist()}")

# %% [markdown]
# Cutting the last axis as (d, h) instead of (h, d) is the other silent mistake: head i then
# gets every h-th column (columns i, i + h, ...) instead of a contiguous block.

# %%
interleaved = x.view(b, n, d, h).transpose(-1, -2).transpose(1, 2)  # (1, 2, 3, 2)
print("head 0 with (d, h):", interleaved[0, 0].tolist())           # columns 0 and 2

# %% [markdown]
# ## 5. Merging back, and why `.view` fails after a transpose
#
# Merging undoes the two steps in reverse order: transpose (b, h, n, d) → (b, n, h, d), then
# glue the last two axes into (b, n, h·d). Attention hands back a fresh (b, h, n, d) tensor
# whose memory is in order. The catch is memory. A transpose moves no data:
# it swaps two **strides** (how many elements to skip per step along an axis), so the result
# is no longer laid out row after row in memory: it is *non-contiguous*. `.view` can only
# re-index memory that is already in order, so gluing axes of a transposed tensor with
# `.view` raises; `.reshape` copies when it has to, and `.contiguous().view` does the same
# explicitly.

# %%
attended = heads.contiguous()     # attention's output: a fresh (b, h, n, d) tensor, in order
back = attended.transpose(1, 2)   # (1, 3, 2, 2): batch, token, head, column
print("strides", attended.stride(), "-> after transpose", back.stride(),
      "contiguous:", back.is_contiguous())
try:
    back.view(b, n, h * d)
except RuntimeError as error:
    print("view fails:", str(error).split(".")[0])
print("reshape works, and round-trips:", back.reshape(b, n, h * d).equal(x))

# %% [markdown]
# ## 6. The seq-first layout: (n, b, h·d) → (b·h, n, d), batch-major
#
# With `batch_first=False` PyTorch's attention receives (n, b, E) and folds batch and heads
# into one axis of size b·h, so that a single batched matmul `bmm` does every head of every
# batch element:
#
# | step | shape |
# |---|---|
# | input | (n, b, h·d) |
# | cut the columns, merge b with h | (n, b·h, d) |
# | tokens second | (b·h, n, d) |
#
# The fold of (b, h) into b·h keeps b as the outer factor: **row i·h + j is batch i, head j**
# (batch-major). Per-head masks, shaped (b·h, n, m), use the same order, so the order is not
# a detail: head-major rows (j·b + i) have the right shape and the wrong numbers. Two batch
# elements (tokens 10·batch + column) and h = 2 heads show the row order:

# %%
seq, batch = 1, 2
x_seq_first = (10 * torch.arange(batch).view(1, batch, 1) + torch.arange(h * d)).expand(seq, batch, h * d)
print("input (n, b, E):", tuple(x_seq_first.shape))
folded = x_seq_first.reshape(seq, batch * h, d)      # (n, b·h, d): b outer, h inner
for row in range(batch * h):
    print(f"row {row} = batch {row // h}, head {row % h}:", folded[:, row].tolist())

# %%
# kata: exercise

# %% [markdown]
# ## 7. Check your split on the tiny tensor
#
# Once your functions pass the core checks, this prints your `split_heads` of the tensor
# from section 1 next to the scrambled reshape, and the rows of your seq-first split.

# %%
if result.core_passed:
    print("your split_heads, head 0:", split_heads(x, h)[0, 0].tolist())
    print("plain reshape,    head 0:", x.reshape(b, h, n, d)[0, 0].tolist())
    print("your seq-first rows:", split_heads_seq_first(x_seq_first, h)[:, 0].tolist())
else:
    print("Pass the core checks to see your split on the tiny tensor.")

# %%
# kata: quiz
