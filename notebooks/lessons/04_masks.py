# %% [markdown]
# ## 1. Two kinds of mask, one convention
#
# Attention gives every query a weight for every key, a (n, m) matrix per batch element and
# head. A mask removes some of those pairs before the softmax, for one of two reasons:
#
# | mask | shape | blocks | same for |
# |---|---|---|---|
# | attention mask, e.g. causal | (n, m) | query i looking at key j (a causal mask: j > i) | every sequence and head |
# | key padding mask | (b, m) | key j of sequence i, when it is padding | every query and head |
#
# Both come in two forms. A **bool** mask is `True` where attention is **blocked** (the
# convention of `nn.MultiheadAttention`). A **float** mask is **added** to the scores: 0
# leaves a score alone, −∞ blocks it (e^(−∞) = 0), any other value nudges it, e.g. a
# relative-position bias. A bool mask turns into a float one by putting −∞ where it is True
# and 0 elsewhere. PyTorch's own causal mask, float, for n = m = 4:

# %%
from torch import nn

causal = nn.Transformer.generate_square_subsequent_mask(4)     # (n, m) = (4, 4), float
print(causal)
print("blocked (bool form):\n", causal.isinf())                # True strictly above the diagonal

# %% [markdown]
# Row i is query i. Query i may see keys 0..i, **itself included**: the diagonal stays 0.
# Blocking the diagonal too (`diagonal=0` in `triu`) would leave query 0 with no key at all.
#
# ## 2. A padding mask from lengths
#
# A batch of sequences of lengths 4 and 2, padded to m = 4. Position j of sequence i is
# padding when j ≥ length_i. Comparing a (1, m) row of positions with a (b, 1) column of
# lengths broadcasts to (b, m):

# %%
lengths = torch.tensor([4, 2])                                 # (b,) = (2,)
positions = torch.arange(4)                                    # (m,) = (4,)
print("positions (1, m) >= lengths (b, 1) ->", tuple((positions[None, :] >= lengths[:, None]).shape))
print(positions[None, :] >= lengths[:, None])                  # True = padding

# %% [markdown]
# ## 3. From (b, m) to (b·h, 1, m), and meeting the (n, m) mask
#
# Inside, PyTorch runs attention on (b·h, n, m) scores: batch and heads folded into one
# axis, **batch-major** (row i·h + j is batch element i, head j; kata 02). The padding mask
# has to line up with those rows and apply to every query:
#
# | step | shape | why |
# |---|---|---|
# | key padding mask | (b, m) | one row per sequence |
# | add a query axis | (b, 1, m) | the same for every query: broadcasts over n |
# | one copy per head, each batch row repeated h times in a row | (b·h, 1, m) | row i·h + j = batch i |
# | meets the attention mask (n, m) | (b·h, n, m) | broadcasting: (b·h, 1, m) with (1, n, m) |
#
# The last step needs no code: adding the float forms broadcasts (b·h, 1, m) + (n, m) to
# (b·h, n, m), and a key is blocked when **either** mask blocks it, because −∞ + 0 = −∞
# and −∞ + −∞ = −∞. For bool masks the same thing is an OR. With b = 2 and h = 2:

# %%
h = 2
padding = positions[None, :] >= lengths[:, None]              # (b, m) = (2, 4)
per_row = padding.repeat_interleave(h, dim=0)[:, None, :]     # (b·h, 1, m) = (4, 1, 4)
print("per_row", tuple(per_row.shape), "| causal", tuple(causal.shape),
      "| together", tuple((per_row | causal.isinf()).shape))
for row in range(4):
    print(f"row {row} = batch {row // h}, head {row % h}: padding {per_row[row, 0].int().tolist()}")

# %% [markdown]
# ## 4. Why the order of b and h matters
#
# `repeat_interleave(h, dim=0)` repeats each row h times in place: batch 0, batch 0,
# batch 1, batch 1, the batch-major order. `repeat(h, 1)` tiles the whole mask instead:
# batch 0, batch 1, batch 0, batch 1, the head-major order. Both give (b·h, m). With the
# second, row 1 (batch 0, head 1) gets batch 1's padding: batch 0's second head ignores
# keys 2 and 3 although they are real tokens, and batch 1's first head attends to its
# padding. Nothing raises; only the numbers are wrong:

# %%
batch_of_row = torch.arange(2)[:, None]                        # (b, 1): each row's batch
print("repeat_interleave:", batch_of_row.repeat_interleave(h, dim=0).flatten().tolist())
print("repeat:           ", batch_of_row.repeat(h, 1).flatten().tolist())
print("row 1 padding, right:", padding.repeat_interleave(h, dim=0)[1].int().tolist(),
      " wrong:", padding.repeat(h, 1)[1].int().tolist())

# %% [markdown]
# ## 5. Why −∞ and not −1e9
#
# A query whose keys are all blocked has a row of −∞ and a NaN softmax, which the attention
# can detect and turn into zeros. With −1e9 the same row silently becomes uniform over the
# padding. And −1e9 does not fit in float16, whose largest magnitude is 65504: *casting* it
# gives −∞, but `scores.masked_fill(mask, -1e9)` on float16 scores raises. Code that does
# want a finite "very negative" number (many Hugging Face models) uses
# `torch.finfo(scores.dtype).min`, the most negative value of the scores' own dtype.

# %%
print("uniform over padding:", torch.full((1, 3), -1e9).softmax(-1))
print("-1e9 cast to float16:", torch.tensor(-1e9).half().item())
half_scores, blocked = torch.zeros(1, 3, dtype=torch.float16), torch.tensor([[False, True, True]])
try:
    half_scores.masked_fill(blocked, -1e9)
except RuntimeError as error:
    print("masked_fill(mask, -1e9) on float16 raises:", str(error).split(".")[0])
print("torch.finfo(float16).min =", torch.finfo(torch.float16).min, "->",
      half_scores.masked_fill(blocked, torch.finfo(torch.float16).min))

# %%
# kata: exercise

# %% [markdown]
# ## 6. The merged mask, row by row
#
# The four (batch, head) rows of the merged mask for lengths 4 and 2, a causal mask and
# h = 2 (dark = blocked): your `merge_masks` once it passes the core checks, PyTorch's
# `nn.MultiheadAttention.merge_masks` until then. Rows 2 and 3 (batch 1) block keys 2 and 3
# on top of the causal triangle.

# %%
import matplotlib.pyplot as plt

if result.core_passed:
    merged = merge_masks(padding, causal, num_heads=h).expand(4, 4, 4)        # (b·h, n, m)
    source = "your merge_masks"
else:
    # PyTorch's merge_masks wants both masks of one kind: with a float attn_mask, a bool
    # padding mask would be *added*, True as +1.0, and block nothing. So pass it as floats.
    padding_as_float = torch.zeros(2, 4).masked_fill(padding, float("-inf"))  # (b, m)
    attention = nn.MultiheadAttention(8, num_heads=h, batch_first=True)
    merged, _ = attention.merge_masks(causal, padding_as_float, torch.zeros(2, 4, 8))  # (b, h, n, m)
    merged = merged.reshape(4, 4, 4)
    source = "PyTorch's merge_masks (pass the core checks to see yours)"
fig, axes = plt.subplots(1, 4, figsize=(10, 2.8))
for row, axis in enumerate(axes):
    axis.imshow(merged[row].isinf(), cmap="gray_r", vmin=0, vmax=1)
    axis.set(title=f"batch {row // h}, head {row % h}", xlabel="key", ylabel="query" if row == 0 else "")
fig.suptitle(source)
plt.tight_layout()
plt.show()
plt.close(fig)

# %%
# kata: quiz
