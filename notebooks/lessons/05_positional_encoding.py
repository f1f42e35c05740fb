# %% [markdown]
# ## 1. Attention does not know the order of the tokens
#
# Self-attention compares every token with every other, and nothing in the scores depends
# on *where* a token sits. Shuffle the input sequence and the output is shuffled the same
# way, with the same rows: attention is permutation-equivariant. Without extra information
# "dog bites man" and "man bites dog" look alike. A check with PyTorch's own module on
# 5 tokens of width 8:

# %%
from torch import nn

attention = nn.MultiheadAttention(8, num_heads=2, batch_first=True).eval()
tokens = torch.randn(1, 5, 8)                                   # (b, n, d)
order = torch.tensor([3, 0, 4, 1, 2])                           # a shuffle of the 5 positions
out, _ = attention(tokens, tokens, tokens)                      # (1, 5, 8)
shuffled_out, _ = attention(tokens[:, order], tokens[:, order], tokens[:, order])
print("shuffling the input shuffles the output, nothing else:",
      torch.allclose(shuffled_out, out[:, order], atol=1e-6))

# %% [markdown]
# ## 2. The table of sines and cosines
#
# The fix of the original Transformer: add to the embedding of position p a fixed vector
# PE[p], so that equal tokens at different positions differ. The table has one row per
# position and one column per embedding feature, shape (max_len, d_model). Its columns come
# in pairs i = 0, 1, ..., each pair with one frequency
#
# $$\omega_i = \frac{1}{\text{base}^{2i/d_\text{model}}}, \qquad
# PE[p, 2i] = \sin(p\,\omega_i), \qquad PE[p, 2i+1] = \cos(p\,\omega_i),$$
#
# with base = 10000. The exponent is 2i/d_model as a whole: `base ** (2 * i / d_model)`,
# with its parentheses. The frequencies fall geometrically from 1 (pair 0, a wavelength of
# 2π ≈ 6.3 positions) to base^(−(d_model−2)/d_model) for the last pair, i = d_model/2 − 1:
# fast columns tell neighbours apart, slow ones distant positions. That last frequency is
# close to 1/base only for a large d_model (1.04·10⁻⁴ for d_model = 512); for the small
# d_model = 8 below it is 10000^(−6/8) = 0.001:

# %%
import math

d_model, base = 8, 10000.0
for i in range(d_model // 2):
    omega = 1 / base ** (2 * i / d_model)                       # a Python float per pair
    print(f"pair {i}: columns {2 * i}, {2 * i + 1}   ω = {omega:.4f}   wavelength {2 * math.pi / omega:9.1f} positions")

# %% [markdown]
# ## 3. Interleaved, not in halves
#
# Sines take the **even** columns and cosines the **odd** ones, so the two members of a pair
# sit side by side: column 2i is sin of pair i, column 2i + 1 is cos of pair i. Putting all
# the sines in the first half and the cosines in the second half gives a table of the right
# shape with the columns in the wrong places. In PyTorch the even and odd columns are the
# slices `[:, 0::2]` and `[:, 1::2]`. With an odd d_model the last pair has a sine and no
# cosine, so there is one more even column than odd ones:

# %%
for width in (6, 5):
    columns = torch.arange(width)
    print(f"d_model = {width}: sin columns {columns[0::2].tolist()}, cos columns {columns[1::2].tolist()}")

# %% [markdown]
# ## 4. Why pairs: a shift is a rotation
#
# For one pair, (sin(pω), cos(pω)) is a point on the unit circle at angle pω. Moving k
# positions further adds kω to the angle, which is a rotation by kω, the same rotation
# whatever p is:
#
# $$\begin{pmatrix}\sin((p+k)\omega)\\ \cos((p+k)\omega)\end{pmatrix} =
# \begin{pmatrix}\cos k\omega & \sin k\omega\\ -\sin k\omega & \cos k\omega\end{pmatrix}
# \begin{pmatrix}\sin p\omega\\ \cos p\omega\end{pmatrix}$$
#
# So PE[p + k] is a fixed linear function of PE[p]: a layer can learn to attend "k tokens
# back" with one set of weights for every p. Checked for ω = 0.1, k = 3 and three values of p:

# %%
omega, k = 0.1, 3
rotation = torch.tensor([[math.cos(k * omega), math.sin(k * omega)],
                         [-math.sin(k * omega), math.cos(k * omega)]])   # (2, 2)
for p in (0, 7, 40):
    here = torch.tensor([math.sin(p * omega), math.cos(p * omega)])      # (2,)
    there = torch.tensor([math.sin((p + k) * omega), math.cos((p + k) * omega)])
    print(f"p = {p:2}: rotation of PE[p] equals PE[p + {k}]:", torch.allclose(rotation @ here, there))

# %% [markdown]
# ## 5. Adding the table along the sequence axis
#
# The module adds the first seq rows of the table to x. Which axis is the sequence depends
# on the layout, so the table needs a size-1 axis where the batch is:
#
# | layout | x | table slice | broadcast as |
# |---|---|---|---|
# | `batch_first=False` (default) | (seq, batch, d) | (seq, d) | (seq, 1, d) |
# | `batch_first=True` | (batch, seq, d) | (seq, d) | (1, seq, d) |
#
# A (seq, d) table added straight to x broadcasts against x's last two axes. For a
# batch-first x those are (seq, d): right. For a seq-first x they are (batch, d), and
# three things can happen: it raises when batch ≠ seq and batch > 1; when batch = seq it
# silently adds pe[b] to every token of batch element b, the wrong axis; and when
# batch = 1, (seq, 1, d) + (seq, d) silently **broadcasts** to (seq, seq, d), a tensor of
# the wrong shape that the next layer may or may not notice. Be explicit about where the
# size-1 axis goes.

# %%
table_slice = torch.zeros(5, 8)                                 # stands for pe[:seq]: (seq, d)
print("seq first  :", tuple(table_slice[:, None, :].shape), "+ (5, 2, 8)")
print("batch first:", tuple(table_slice[None, :, :].shape), "+ (2, 5, 8)")
print("seq first, batch 1, no size-1 axis:", tuple((torch.zeros(5, 1, 8) + table_slice).shape))

# %% [markdown]
# ### Why the embeddings are multiplied by √d_model first
#
# In the original Transformer the token embeddings are multiplied by √d_model before the
# table is added. The embedding matrix is shared with the output layer (the logits are
# x Eᵀ), which wants small weights, and its entries start with a standard deviation of
# about 1/√d_model (what the reference implementation, tensor2tensor, used). The table's
# entries are sines and cosines between −1 and 1 (a standard deviation of about 0.7).
# Unscaled, at d_model = 512 the tokens would be some 15 times smaller than
# their positions, and the positions would drown them; multiplied by √d_model, both are
# of size ~1. Measured:

# %%
import math

width = 512
embedding = nn.Embedding(1000, width)                                  # (vocab, d_model)
nn.init.normal_(embedding.weight, std=width ** -0.5)
token_vectors = embedding(torch.arange(1000))                          # (1000, d_model)
positions = torch.arange(1000.0)[:, None]                              # (1000, 1)
angles = positions / 10000 ** (torch.arange(0, width, 2) / width)      # (1000, d_model / 2)
table = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(1)   # (1000, d_model), interleaved
print(f"std of the embeddings {token_vectors.std():.3f}, "
      f"times √d_model {(token_vectors * math.sqrt(width)).std():.3f}, "
      f"of the table {table.std():.3f}")

# %% [markdown]
# ## 6. Why a buffer
#
# The table is state of the module: it must follow `.to(device)` and `.to(dtype)`, and may
# be saved with the model. But it is fixed, so the optimiser must not train it. That is
# what a **buffer** is. A toy module holding one tensor each way:

# %%
class ThreeWays(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("as_buffer", torch.zeros(2))       # state, not trained
        self.as_parameter = nn.Parameter(torch.zeros(2))        # trained by the optimiser
        self.as_attribute = torch.zeros(2)                      # invisible to the module


toy = ThreeWays().to(torch.float64)
print("parameters :", [name for name, _ in toy.named_parameters()])
print("state_dict :", list(toy.state_dict()))
print("after .to(float64): buffer", toy.as_buffer.dtype, "| attribute", toy.as_attribute.dtype)

# %%
# kata: exercise

# %% [markdown]
# ## 7. Your table
#
# Once your code passes the core checks: the table for 64 positions and d_model = 32 (each
# column a wave, faster on the left), and three of its columns along the positions.

# %%
import matplotlib.pyplot as plt

if result.core_passed:
    table = sinusoidal_positional_encoding(64, 32)                  # (64, 32)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3))
    image = left.imshow(table, cmap="RdBu", aspect="auto", vmin=-1, vmax=1)
    left.set(title="PE table (64, 32)", xlabel="column", ylabel="position")
    fig.colorbar(image, ax=left)
    for column in (0, 4, 10):                                       # sines of pairs 0, 2, 5
        right.plot(table[:, column], label=f"column {column}")
    right.set(title="columns along the positions", xlabel="position")
    right.legend(fontsize=8)
    plt.tight_layout()
    plt.show()
    plt.close(fig)
else:
    print("Pass the core checks to see your positional-encoding table.")

# %%
# kata: quiz
