# %% [markdown]
# ## 1. Three sub-blocks
#
# A decoder layer turns a target sequence into a new one of the same shape, looking at two
# sequences: the target itself (n tokens) and the encoder's output, the *memory* (m tokens).
# It is kata 06's encoder layer with a cross-attention block between the two others:
#
# | sub-block | queries from | keys and values from | masks | shapes inside (batch first) |
# |---|---|---|---|---|
# | self-attention `self_attn` | target | target | `tgt_mask` (n, n), `tgt_key_padding_mask` (b, n) | (b, n, d) → weights (b, h, n, n) → (b, n, d) |
# | cross-attention `multihead_attn` | target | **memory** | `memory_mask` (n, m), `memory_key_padding_mask` (b, m) | (b, n, d), (b, m, d) → weights (b, h, n, m) → (b, n, d) |
# | feed-forward | — | — | — | (b, n, d) → (b, n, d_ff) → (b, n, d) |
#
# Each block has its own residual connection, norm (`norm1`, `norm2`, `norm3`) and dropout
# (`dropout1`, `dropout2`, `dropout3`), in Post-LN or Pre-LN order exactly as in kata 06.

# %%
from torch import nn

d_model, nhead, n, m, b = 8, 2, 4, 6, 2
tgt = torch.randn(b, n, d_model)                                        # (b, n, d)
memory = torch.randn(b, m, d_model)                                     # (b, m, d)
cross = nn.MultiheadAttention(d_model, nhead, batch_first=True)
out, weights = cross(tgt, memory, memory, average_attn_weights=False)  # queries, keys, values
print("tgt", tuple(tgt.shape), "memory", tuple(memory.shape))
print("cross-attention output", tuple(out.shape), "weights (b, h, n, m)", tuple(weights.shape))

# %% [markdown]
# ## 2. Queries from the target, keys and values from memory
#
# Each target position asks one question (its query) and gets back a weighted average of the
# memory's values. So the output has the **target's** length whatever the memory's length,
# and the residual `x + ca(x, memory)` lines up. Swapping the roles, `cross(memory, tgt, tgt)`,
# gives one row per *memory* position: with n ≠ m the residual sum fails; with n = m it
# runs and is silently wrong. That is why the grader uses different lengths.
#
# Attention treats the keys as a set: shuffling the memory's positions (the same shuffle for
# keys and values) leaves the output unchanged. Order has to come from positional encodings
# added before the encoder.

# %%
shuffle = torch.randperm(m)
shuffled_out, _ = cross(tgt, memory[:, shuffle], memory[:, shuffle])
print("memory shuffled, output unchanged:", torch.allclose(out, shuffled_out, atol=1e-6))
swapped, _ = cross(memory, tgt, tgt)                                  # the classic slip
print("queries from memory instead:", tuple(swapped.shape), "- one row per memory position")

# %% [markdown]
# ## 3. Four masks, two attentions
#
# The rule: a mask's **last dimension is the length of the keys** it blocks, and a mask goes
# to the attention whose keys those are.
#
# | mask | shape | goes to | typical use |
# |---|---|---|---|
# | `tgt_mask` | (n, n) | `self_attn` | causal: position i may not see i+1, … |
# | `tgt_key_padding_mask` | (b, n) | `self_attn` | padded target positions |
# | `memory_mask` | (n, m) | `multihead_attn` | rare: e.g. monotonic alignment |
# | `memory_key_padding_mask` | (b, m) | `multihead_attn` | padded source positions: almost always |
#
# With n ≠ m, giving the causal mask to the cross-attention raises; with n = m it runs and
# blocks memory positions for no reason.

# %%
causal = nn.Transformer.generate_square_subsequent_mask(n)             # (n, n), 0 / -inf
try:
    cross(tgt, memory, memory, attn_mask=causal)
except RuntimeError as error:
    print("RuntimeError:", error)

# %% [markdown]
# ## 4. What the causal mask hides
#
# With **right**-padded targets, a real position i only sees keys 0..i under the causal mask,
# and those are all real: forgetting `tgt_key_padding_mask` changes nothing at the real
# positions (the padded ones are ignored by the loss). With padding anywhere else — left
# padding, or packed sequences — the forgotten mask lets real queries see padding. Graders
# (and tests of your own code) need padding in the middle to notice.

# %%
self_attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)
blocked = causal.isinf()                                                # the same mask as bool
lengths = torch.tensor([4, 2])
right = torch.arange(n)[None, :] >= lengths[:, None]                   # (b, n), True at padding
middle = torch.tensor([[False, True, False, False], [False, False, True, False]])
for name, padding in (("right padding", right), ("holes in the middle", middle)):
    with_pad, _ = self_attn(tgt, tgt, tgt, attn_mask=blocked, key_padding_mask=padding)
    without, _ = self_attn(tgt, tgt, tgt, attn_mask=blocked)
    changed = (with_pad - without).abs().amax(-1)[~padding] > 1e-6     # real positions only
    print(f"{name:20}: real positions changed by forgetting the padding mask: "
          f"{int(changed.sum())} of {int((~padding).sum())}")

# %% [markdown]
# ## 5. A query with nothing to see
#
# Left-pad a target under a causal mask and its first query sees only padding: every key is
# blocked, the softmax of a row of -inf is 0/0 = NaN. The contract gives such a row all-zero
# weights, so the attention output is `out_proj`'s bias. `nn.MultiheadAttention` does that
# with `need_weights=False` (it then calls `F.scaled_dot_product_attention`), but not with
# its default `need_weights=True`:

# %%
left = torch.tensor([[True, False, False, False], [False, False, False, False]])  # (b, n)
for need_weights in (True, False):
    attended, _ = self_attn(tgt, tgt, tgt, attn_mask=blocked, key_padding_mask=left,
                            need_weights=need_weights)
    first = attended[0, 0]
    print(f"need_weights={need_weights!s:5}: NaN: {bool(first.isnan().any())}, "
          f"equals out_proj.bias: {torch.allclose(first, self_attn.out_proj.bias)}")

# %%
# kata: exercise

# %% [markdown]
# ## 6. Who depends on whom
#
# Which inputs does output position i of a decoder layer depend on? The size of the gradient
# of output i with respect to each target position and each memory position, with a causal
# `tgt_mask` and memory 1 padded after 4 positions: the target part is lower-triangular (no
# peeking ahead), the memory part is full except the padded columns. Your classes once they
# pass the core checks, PyTorch's until then.

# %%
import matplotlib.pyplot as plt

source = "your TransformerDecoderLayer" if result.core_passed else "PyTorch's (pass the core checks to see yours)"
torch.manual_seed(0)
arguments = dict(dim_feedforward=16, dropout=0.0, batch_first=True)
layer = (TransformerDecoderLayer if result.core_passed else nn.TransformerDecoderLayer)(
    d_model, nhead, **arguments).eval()
memory_padding = torch.arange(m)[None, :] >= torch.tensor([m, 4])[:, None]   # (b, m)
tgt_in, memory_in = tgt[1:].clone().requires_grad_(), memory[1:].clone().requires_grad_()
on_tgt, on_memory = torch.zeros(n, n), torch.zeros(n, m)
probe = torch.randn(d_model)  # a LayerNorm's outputs sum to a constant: weigh them instead
for i in range(n):                                                      # one output row at a time
    output = layer(tgt_in, memory_in, tgt_mask=blocked, memory_key_padding_mask=memory_padding[1:])
    grad_tgt, grad_memory = torch.autograd.grad(output[0, i] @ probe, (tgt_in, memory_in))
    on_tgt[i], on_memory[i] = grad_tgt[0].norm(dim=-1), grad_memory[0].norm(dim=-1)
fig, axes = plt.subplots(1, 2, figsize=(7, 3))
for axis, grid, title in ((axes[0], on_tgt, "on target positions"), (axes[1], on_memory, "on memory positions")):
    axis.imshow(grid > 1e-7, cmap="Greys", vmin=0, vmax=1)
    axis.set(title=title, xlabel="input position", ylabel="output position")
fig.suptitle(source)
plt.tight_layout()
plt.show()
plt.close(fig)

# %%
# kata: quiz
