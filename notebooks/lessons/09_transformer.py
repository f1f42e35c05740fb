# %% [markdown]
# ## 1. One batch through the model
#
# Everything in this kata is batch-first. Follow a batch of token ids to the logits:
#
# ```
# src (b, s) ids ──► src_embed · √d ──► + pe[:s] ──► dropout ──► encoder ─────────► memory (b, s, d)
#                                                   (src_key_padding_mask)            │
#                                                                                      ▼
# tgt (b, t) ids ──► tgt_embed · √d ──► + pe[:t] ──► dropout ──► decoder ──► generator ──► logits (b, t, V)
#                                                   (causal tgt_mask, tgt_key_padding_mask,
#                                                    memory_key_padding_mask)
# ```
#
# The encoder and decoder are the stacks of katas 06 and 08; this kata is about the
# plumbing around them: the embedding path, the three masks, and decoding.

# %%
import math

from torch import nn

d_model, src_vocab, tgt_vocab, pad = 16, 10, 12, 0
src = torch.tensor([[5, 6, 7, 8], [3, 4, pad, pad]])          # (b=2, s=4): row 1 has two pads
tgt = torch.tensor([[1, 9, 4], [1, 7, pad]])                  # (b=2, t=3): bos = 1
src_embed = nn.Embedding(src_vocab, d_model, padding_idx=pad)
print("src", tuple(src.shape), "-> embedded", tuple(src_embed(src).shape))
print("the pad row of the table is zero:", bool((src_embed.weight[pad] == 0).all()))

# %% [markdown]
# ## 2. Why multiply by √d_model?
#
# `nn.Embedding` starts from N(0, 1), but many models initialise (or tie) the table with
# entries of size about 1/√d — the scale of a linear layer's weights. The sinusoidal table
# has entries of size about 1 whatever d is. Without the factor √d, the positions would
# drown the tokens as d grows; with it, both are of order 1:

# %%
for d in (16, 128, 512):
    table = torch.randn(1000, d) / math.sqrt(d)                # a 1/sqrt(d)-scaled embedding
    position = torch.arange(100)[:, None] * torch.exp(-math.log(10000.0) * torch.arange(0, d, 2) / d)
    pe_rms = torch.cat([position.sin(), position.cos()], dim=1).pow(2).mean().sqrt()
    print(f"d={d:4}: token rms {table.pow(2).mean().sqrt():.3f}, times sqrt(d) "
          f"{(table * math.sqrt(d)).pow(2).mean().sqrt():.3f}, positions rms {pe_rms:.3f}")

# %% [markdown]
# ## 3. Three masks, one convention
#
# All three are bool with `True` = **blocked**, as in `nn.Transformer`:
#
# | mask | shape | where it goes | why |
# |---|---|---|---|
# | `src == pad` | (b, s) | encoder self-attention keys, *and* decoder cross-attention keys | no real token reads padding |
# | `tgt == pad` | (b, t) | decoder self-attention keys | the same, in the target |
# | causal `triu(ones(t, t), 1)` | (t, t) | decoder self-attention | position i may not read i + 1, … |
#
# For row 1 of our batch, the decoder's self-attention sees the union of the causal and the
# target padding mask; its cross-attention sees the source padding mask:

# %%
import matplotlib.pyplot as plt

t = tgt.size(1)
causal = torch.ones(t, t, dtype=torch.bool).triu(1)                    # (t, t)
self_blocked = causal | (tgt == pad)[:, None, :]                       # (b, t, t): query x key
cross_blocked = (src == pad)[:, None, :].expand(-1, t, -1)             # (b, t, s)
fig, axes = plt.subplots(1, 2, figsize=(6, 2.5))
for axis, mask, title in ((axes[0], self_blocked[1], "decoder self-attention"),
                          (axes[1], cross_blocked[1], "cross-attention")):
    axis.imshow(mask, cmap="Greys", vmin=0, vmax=1)
    axis.set(title=title, xlabel="key", ylabel="query")
plt.tight_layout()
plt.show()
plt.close(fig)

# %% [markdown]
# ## 4. What the causal mask buys
#
# With teacher forcing the decoder sees the whole target at once, shifted right. The
# causal mask is what keeps position i from reading position i + 1 — the token it must
# predict. Change the *last* target token and watch which outputs move, with and without
# the mask (PyTorch's decoder, random weights):

# %%
torch.manual_seed(0)
layer = nn.TransformerDecoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
decoder = nn.TransformerDecoder(layer, num_layers=1).eval()
memory = torch.randn(1, 4, d_model)
y = torch.randn(1, 5, d_model)
y_changed = y.clone()
y_changed[0, -1] += 1.0                                                # only the last token differs
mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
for name, tgt_mask in (("with the causal mask", mask), ("without", None)):
    moved = (decoder(y, memory, tgt_mask=tgt_mask) - decoder(y_changed, memory, tgt_mask=tgt_mask))
    print(f"{name:22}: positions whose output changed {moved.abs().amax(-1)[0].gt(1e-6).int().tolist()}")

# %% [markdown]
# Without the mask every position "knows" the future: training loss falls towards zero,
# and generation, which has no future to read, falls apart.

# %%
# kata: exercise

# %% [markdown]
# ## 5. Greedy decoding, step by step
#
# Inference has no target: start every row with `bos`, run the decoder on the prefix, take
# the argmax of the **last** position, append, repeat. A row that has produced `eos` is
# finished: its later positions are `pad_idx`, and the loop stops when every row is
# finished or the length reaches `max_len`. Each step re-runs the decoder on the whole
# prefix — O(n²) decoder positions for n tokens — which a key/value cache (kata 11) avoids.
#
# Below, a model (yours once the core checks pass, else a small stand-in) has its eos logit
# forced: never before a row's chosen step, always at it (row 0 after 2 tokens, row 1 after
# 4). The other tokens are the untrained model's argmax. The tokens after each step:

# %%
torch.manual_seed(0)
if result.core_passed:
    model = Seq2SeqTransformer(src_vocab, tgt_vocab, d_model=16, nhead=2, num_encoder_layers=1,
                               num_decoder_layers=1, dim_feedforward=32, max_len=50, pad_idx=pad)
    source = "your Seq2SeqTransformer"
else:
    class StandIn(nn.Module):
        """nn.Transformer between two embeddings (no positions, no scaling): enough to decode."""

        def __init__(self):
            super().__init__()
            self.pad_idx = pad
            self.embed = nn.ModuleList([nn.Embedding(src_vocab, d_model), nn.Embedding(tgt_vocab, d_model)])
            self.transformer = nn.Transformer(d_model, 2, 1, 1, 32, dropout=0.0, batch_first=True)
            self.transformer.encoder.use_nested_tensor = False             # plain tensors throughout
            self.generator = nn.Linear(d_model, tgt_vocab)

        def encode(self, src):
            return self.transformer.encoder(self.embed[0](src), src_key_padding_mask=src.eq(pad))

        def decode(self, tgt, memory, src):
            future = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
            return self.transformer.decoder(self.embed[1](tgt), memory, tgt_mask=future,
                                            memory_key_padding_mask=src.eq(pad))

    model = StandIn()
    source = "a stand-in (pass the core checks to see yours)"

model.eval()
bos, eos = 1, 2
ends = torch.tensor([2, 4])                                            # eos as token 2 and token 4
with torch.no_grad():
    memory = model.encode(src)                                         # (b, s, d), computed once
    ys = torch.full((src.size(0), 1), bos)                             # (b, 1)
    finished = torch.zeros(src.size(0), dtype=torch.bool)
    print(source)
    for step in range(1, 8):
        logits = model.generator(model.decode(ys, memory, src)[:, -1])  # (b, V): last position
        logits[:, [pad, bos]] = float("-inf")                           # never generated
        logits[:, eos] = torch.where(step >= ends, float("inf"), float("-inf"))
        token = logits.argmax(-1).masked_fill(finished, model.pad_idx)
        ys = torch.cat([ys, token[:, None]], dim=1)
        finished |= token == eos
        print(f"step {step}: {ys.tolist()}  finished {finished.tolist()}")
        if finished.all():
            break

# %% [markdown]
# ## 6. Training: shift the target, ignore the padding, smooth the labels
#
# Teacher forcing feeds the decoder the target *shifted right* and scores it against the
# target *shifted left*. For a row `[bos, y1, y2, y3, eos]` the decoder input is
# `tgt[:, :-1]` = `[bos, y1, y2, y3]` and the labels are `tgt[:, 1:]` = `[y1, y2, y3, eos]`:
# position i has read bos, y1 … yᵢ (the causal mask stops it there) and must predict
# yᵢ₊₁. Padded labels must not count: `nn.CrossEntropyLoss(ignore_index=pad_idx)` drops
# them from the sum *and* from the count it averages over. Without it, every pad becomes a
# target the model is trained to predict.
#
# The original Transformer also trains with label smoothing, ε = 0.1: PyTorch's
# `label_smoothing=0.1` aims at 1 − ε on the right token plus ε/V on each of the V tokens
# (the right one included). A nearly one-hot prediction is then punished, the model is kept
# from ever more confident logits; the paper reports worse perplexity but better accuracy
# and BLEU.

# %%
import torch.nn.functional as F

bos, eos = 1, 2
batch = torch.tensor([[bos, 9, 4, 5, eos], [bos, 7, eos, pad, pad]])       # (b=2, t+1=5)
decoder_input, labels = batch[:, :-1], batch[:, 1:]                       # (2, 4) each
print("decoder input:", decoder_input.tolist())
print("labels:       ", labels.tolist())
torch.manual_seed(0)
logits = torch.randn(2, 4, tgt_vocab)                                     # (b, t, V): a model's output
flat_logits, flat_labels = logits.reshape(-1, tgt_vocab), labels.reshape(-1)  # the loss wants (N, V), (N,)
per_label = F.cross_entropy(flat_logits, flat_labels, reduction="none")  # (N,)
real = flat_labels != pad
loss = nn.CrossEntropyLoss(ignore_index=pad)(flat_logits, flat_labels)
print(f"ignore_index=pad: {loss:.4f}; mean over the {int(real.sum())} real labels: "
      f"{per_label[real].mean():.4f}")
print(f"without ignore_index (the {int((~real).sum())} pads count as targets): "
      f"{nn.CrossEntropyLoss()(flat_logits, flat_labels):.4f}")

epsilon, right = 0.1, torch.tensor([3])                                  # one label: token 3
smoothed = torch.full((tgt_vocab,), epsilon / tgt_vocab)
smoothed[right] += 1 - epsilon                                           # what label_smoothing aims at
print(f"smoothed target, V = {tgt_vocab}: right token {smoothed[3]:.4f}, every other {smoothed[0]:.4f}")
for name, guess in (("nearly one-hot logits (20 on token 3)", 20 * F.one_hot(right, tgt_vocab).float()),
                    ("logits = log(smoothed target)", smoothed.log()[None])):
    plain = F.cross_entropy(guess, right)
    with_smoothing = F.cross_entropy(guess, right, label_smoothing=epsilon)
    print(f"{name:38}: plain loss {plain:.4f}, label_smoothing=0.1 loss {with_smoothing:.4f}")

# %%
# kata: quiz
