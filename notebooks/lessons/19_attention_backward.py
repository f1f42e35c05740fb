# %% [markdown]
# ## 1. What autograd keeps for attention
#
# Autograd records, for every operation, the tensors its backward will need. For attention
# that includes the softmax's output, the probabilities P, an `(n, m)` matrix per head. A
# `saved_tensors_hooks` context shows every tensor saved for the backward as it is saved:

# %%
import math

import torch.nn.functional as F

b, h, n, m, d = 1, 2, 6, 9, 4
q, k, v = (torch.randn(b, h, length, d, requires_grad=True) for length in (n, m, m))
saved = []


storages = {}


def keep(tensor):
    saved.append(tuple(tensor.shape))                               # what autograd keeps
    storages.setdefault(tensor.untyped_storage().data_ptr(), []).append(tuple(tensor.shape))
    return tensor


with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), dim=-1)   # (b, h, n, m)
    out = weights @ v                                                         # (b, h, n, d)
print("saved for the backward:", saved)
print("one memory, several shapes:", [shapes for shapes in storages.values() if len(shapes) > 1])

# %% [markdown]
# The `(1, 2, 6, 9)` entry is P, saved by the softmax; the `(2, 6, 9)` one is the same
# memory seen by the batched matmul with v: P is kept **once**, `n · m` numbers per head.
# At 32k tokens, 32 heads and float16 that is 64 GiB for one layer. This is autograd through
# the formula; `F.scaled_dot_product_attention`'s flash and memory-efficient backends keep
# lse instead. FlashAttention keeps `q, k, v`, the output `O` and one number per query, the
# log-sum-exp `lse`, and rebuilds P in the backward. To do that you need the backward
# written out.
#
# ## 2. The backward, one step at a time
#
# Walk the forward backwards, with `s = 1/√d`, `dO = ∂L/∂O` the gradient that arrives:
#
# | forward | backward | shape per (batch, head) |
# |---|---|---|
# | `O = P V` | `dV = Pᵀ dO`, `dP = dO Vᵀ` | `(m, d)`, `(n, m)` |
# | `P = softmax(S)` row by row | `dS = P ∘ (dP − D)`, `D = rowsum(P ∘ dP)` | `(n, m)` |
# | `S = s · Q Kᵀ` | `dQ = s · dS K`, `dK = s · dSᵀ Q` | `(n, d)`, `(m, d)` |
#
# A matmul's backward is two matmuls with a transpose each: the transposes make the shapes
# fit (`dV` has one row per key, so it is `Pᵀ dO`, not `P dO`). Against autograd:

# %%
grad_out = torch.randn(b, h, n, d)
dq_auto, dk_auto, dv_auto = torch.autograd.grad(out, (q, k, v), grad_out)

with torch.no_grad():
    s = 1 / math.sqrt(d)
    p = torch.softmax(q @ k.transpose(-2, -1) * s, dim=-1)          # (b, h, n, m)
    dv = p.transpose(-2, -1) @ grad_out                             # (b, h, m, d)
    dp = grad_out @ v.transpose(-2, -1)                             # (b, h, n, m)
    D = (p * dp).sum(-1, keepdim=True)                              # (b, h, n, 1)
    ds = p * (dp - D)                                               # (b, h, n, m)
    dq = s * ds @ k                                                 # (b, h, n, d)
    dk = s * ds.transpose(-2, -1) @ q                               # (b, h, m, d)
for name, mine, auto in (("dq", dq, dq_auto), ("dk", dk, dk_auto), ("dv", dv, dv_auto)):
    print(f"{name} by hand equals autograd's: {torch.allclose(mine, auto, atol=1e-6)}")

# %% [markdown]
# ## 3. The softmax's backward and D
#
# Each row `p = softmax(s)` has the Jacobian `∂p_j/∂s_k = p_j (δ_jk − p_k)`. Multiplied by
# the incoming row `dp`:
#
# $$ds_k = \sum_j dp_j \, p_j (\delta_{jk} - p_k) = p_k \Big(dp_k - \sum_j p_j dp_j\Big) = p_k (dp_k - D)$$
#
# The second term is what `dS = P ∘ dP` forgets: every weight depends on every score of its
# row, through the normalisation. And D needs no `(n, m)` matrix: `dP_ij = dO_i · V_j`, so
#
# $$D_i = \sum_j P_{ij}\, dO_i \cdot V_j = dO_i \cdot \sum_j P_{ij} V_j = dO_i \cdot O_i$$
#
# one dot product of length d per query. And since the softmax ignores a constant added to
# a row of scores, each row of dS sums to 0:

# %%
with torch.no_grad():
    D_from_o = (grad_out * out).sum(-1, keepdim=True)               # (b, h, n, 1): rowsum(dO ∘ O)
print("rowsum(P ∘ dP) equals rowsum(dO ∘ O):", torch.allclose(D, D_from_o, atol=1e-6))
print("row sums of dS:", ds.sum(-1).abs().max().item(), "(zero up to rounding)")
print("row sums of P ∘ dP (D forgotten):", (p * dp).sum(-1)[0, 0].tolist()[:3])

# %% [markdown]
# ## 4. P from lse, exactly
#
# The forward's `lse_i = log Σ_j exp(S_ij)` is the softmax's normaliser in log space, so
# `P = exp(S − lse)`: no maximum, no sum, nothing to accumulate. Any block of P comes back
# from a block of Q, a block of K and the block's lse. What it costs: the forward does two
# matmuls (`S = Q Kᵀ`, `O = P V`), the backward four (`dV`, `dP`, `dQ`, `dK`) plus `S`
# again, five: 2.5 times the forward's FLOPs (2 times if P were stored). What it saves:
# P's `n · m` numbers, written to GPU memory (HBM) and read back. Attention is
# memory-bound, so the recomputed backward is faster, not only smaller.

# %%
with torch.no_grad():
    scores = q @ k.transpose(-2, -1) * s                            # (b, h, n, m)
    row_lse = scores.logsumexp(-1, keepdim=True)                    # (b, h, n, 1): what is kept
print("exp(S - lse) equals the softmax:", torch.allclose(torch.exp(scores - row_lse), p))
for length in (4096, 32768):
    forward = 2 * 2 * length * length * 128                         # 2 matmuls, 2 FLOPs per multiply-add
    print(f"n = m = {length}, d = 128: forward {forward:.2e} FLOPs per head, backward "
          f"{2.5 * forward:.2e}; P {length * length * 2 / 2**20:.0f} MiB per head in float16, "
          f"lse {length * 4 / 2**10:.0f} KiB")

# %% [markdown]
# "Exactly" needs an exact lse. Rounded to bfloat16 (8 significant bits), an lse between 16
# and 32 is off by up to 0.0625, and every P of its row by the factor `exp(±0.0625)`: the
# rows of the recomputed P sum to 1 ± 6 %, in float16 to 1 ± 0.8 %. That is why
# FlashAttention returns lse in float32 whatever the input's dtype (and why this kata's
# `lse` is float32 for half inputs):

# %%
torch.manual_seed(0)
with torch.no_grad():
    wide_q, wide_k = (torch.randn(1, 1, 256, 64) * 2.2 for _ in range(2))  # causal, d = 64, lse up to about 24
    wide_scores = (wide_q @ wide_k.mT / 8).masked_fill(torch.ones(256, 256, dtype=torch.bool).triu(1), float("-inf"))
    wide_lse = wide_scores.logsumexp(-1, keepdim=True)
print(f"largest lse: {wide_lse.max().item():.1f}")
for dtype in (torch.bfloat16, torch.float16, torch.float32):
    rows = torch.exp(wide_scores - wide_lse.to(dtype).float()).sum(-1)
    print(f"lse in {str(dtype):15} rows of P sum to 1 ± {(rows - 1).abs().max().item():.4f}")

# %% [markdown]
# ## 5. Tiling the backward: FlashAttention-2's loops
#
# With `P` recomputed per tile, no `(n, m)` tensor ever exists. FlashAttention-2's backward
# puts key blocks outside: for key block j, `dK_j` and `dV_j` sum over every query block i
# and stay on chip until written once; `dQ_i` gets a contribution from every key block
# (atomic adds on the GPU). D is computed once, before the loops, from dO and O.
#
# | per tile (i, j) | shape |
# |---|---|
# | `S_ij = s · Q_i K_jᵀ`, causal mask from the tile's indices | `(B_q, B_k)` |
# | `P_ij = exp(S_ij − lse_i)` | `(B_q, B_k)` |
# | `dV_j += P_ijᵀ dO_i`, `dP_ij = dO_i V_jᵀ` | `(B_k, d)`, `(B_q, B_k)` |
# | `dS_ij = P_ij ∘ (dP_ij − D_i)` | `(B_q, B_k)` |
# | `dQ_i += s · dS_ij K_j`, `dK_j += s · dS_ijᵀ Q_i` | `(B_q, d)`, `(B_k, d)` |
#
# With causal attention a tile whose keys all come after its queries is skipped, and only
# the tiles on the diagonal need a mask: for n = m = 1024 in 128 × 128 tiles, 36 of the 64
# tiles are computed, 8 of them masked.

# %%
tile = 128
blocks = 1024 // tile
# F: every key visible, M: on the diagonal (masked), .: skipped; rows are query blocks
grid = ["".join("." if j > i else "M" if j == i else "F" for j in range(blocks)) for i in range(blocks)]
print("\n".join(grid))
computed = sum(len(row) - row.count(".") for row in grid)
print("tiles computed:", computed, "of", blocks * blocks, "; masked:", sum(row.count("M") for row in grid))

# %% [markdown]
# ## 6. The autograd Function
#
# `torch.autograd.Function` connects a forward to a hand-written backward. `forward(ctx,
# ...)` runs without recording a graph and keeps what the backward needs with
# `ctx.save_for_backward(...)` (tensors) or as attributes (a flag such as `causal`).
# `backward(ctx, grad_out)` returns one gradient per input of forward, `None` for one that
# needs none (the flag). `Function.apply` takes positional arguments only, and
# `torch.autograd.gradcheck` compares the backward with finite differences, in float64:

# %%
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)                                    # kept for the backward
        ctx.scale = scale                                           # a Python number: an attribute
        return scale * x * x

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * 2 * ctx.scale * x, None                   # no gradient for scale


x = torch.randn(5, dtype=torch.float64, requires_grad=True)
print("graph node:", type(Square.apply(x, 3.0).grad_fn).__name__)
print("gradcheck:", torch.autograd.gradcheck(lambda t: Square.apply(t, 3.0), (x,)))

# %%
# kata: exercise

# %% [markdown]
# ## 7. What your Function keeps
#
# The saved-tensors hook from section 1, around your `attention` and around autograd
# through plain attention, at n = m = 512: once your code passes the core checks, the
# largest saved tensor of each.

# %%
length = 512
big = [torch.randn(1, 2, length, 16) for _ in range(3)]


def largest_saved(run):
    """The shape of the largest tensor autograd keeps while run(q, k, v) is recorded."""
    saved.clear()
    with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
        run(*(t.clone().requires_grad_() for t in big))
    return max(saved, key=math.prod)


shape = largest_saved(lambda q, k, v: torch.softmax(q @ k.mT / 4, -1) @ v)
print(f"autograd: largest saved tensor {shape}, {math.prod(shape) * 4 / 2**20:.2f} MiB")
if result.core_passed:
    shape = largest_saved(attention)
    print(f"your Attention: largest saved tensor {shape}, {math.prod(shape) * 4 / 2**20:.2f} MiB")
else:
    print("your Attention: pass the core checks to see what it keeps")

# %% [markdown]
# ## 8. What an interviewer asks next
#
# **When lse is an output too.** Ring attention and split-K decoding merge partial
# attentions with their lse, so the loss also depends on lse. Since `∂lse_i/∂S_ij = P_ij`,
# dS gains `dlse_i · P_ij`: `dS = P ∘ (dP − D + dlse)`, the same kernel with `D − dlse`.

# %%
qa, ka, va = (torch.randn(1, 2, 6, 4, dtype=torch.float64, requires_grad=True) for _ in range(3))
sa = qa @ ka.mT / 2
lse_a = sa.logsumexp(-1)
out_a = torch.exp(sa - lse_a[..., None]) @ va
d_out, d_lse = torch.randn_like(out_a), torch.randn_like(lse_a)
dq_auto = torch.autograd.grad((out_a * d_out).sum() + (lse_a * d_lse).sum(), qa)[0]
with torch.no_grad():
    pa = torch.exp(sa - lse_a[..., None])
    dpa = d_out @ va.mT
    Da = (d_out * out_a).sum(-1, keepdim=True)
    dq_hand = (pa * (dpa - Da + d_lse[..., None])) @ ka / 2
    dq_without = (pa * (dpa - Da)) @ ka / 2
print("with the dlse term:", torch.allclose(dq_hand, dq_auto), "| without it:", torch.allclose(dq_without, dq_auto))

# %% [markdown]
# **Dropout.** FlashAttention drops entries of P in the forward and must drop the same ones
# in the backward. It never stores the mask (an `(n, m)` tensor per head: 32 GiB per layer
# at 32k tokens, 32 heads, one byte each): it draws it from a counter-based generator
# (Philox) and keeps the seed and offset, then regenerates the very same bits tile by tile.
# A seeded generator shows the idea:

# %%
seed = 1234
masks = [torch.rand(6, 9, generator=torch.Generator().manual_seed(seed)) > 0.1 for _ in range(2)]
print("the same mask, drawn twice from one seed:", torch.equal(*masks))
print(f"a byte mask at 32k tokens, 32 heads: {32768 * 32768 * 32 / 2**30:.0f} GiB per layer")

# %% [markdown]
# **Precision and determinism.** lse, D and every accumulator stay float32 (section 4).
# On the GPU, with key blocks outside, each key block adds its share into the same dQ_i
# with float32 atomic adds, in whatever order the blocks finish. Float addition is not
# associative, so the bits of dQ change from run to run. A deterministic backward (the
# `deterministic=True` flag of flash-attn 2, and PyTorch's deterministic mode) fixes the
# order of those additions, paying in speed:

# %%
parts = torch.randn(64, 1000) * torch.logspace(-3, 3, 64)[:, None]   # 64 key blocks' shares of dQ
sums = {tuple(parts[torch.randperm(64)].sum(0).tolist()[:4]) for _ in range(20)}
print("distinct float32 results from 20 orders of the same 64 additions:", len(sums))

# %% [markdown]
# **Grouped-query attention.** When 8 query heads read one key/value head, that K and V are
# used 8 times: their gradients are the **sums** of the 8 heads' dK and dV. Kernels compute
# per query head and reduce over the group, as autograd does through `expand`:

# %%
qg = torch.randn(1, 8, 6, 4, dtype=torch.float64)
kg = torch.randn(1, 1, 9, 4, dtype=torch.float64, requires_grad=True)
vg = torch.randn(1, 1, 9, 4, dtype=torch.float64)
og = torch.softmax(qg @ kg.expand(1, 8, 9, 4).mT / 2, -1) @ vg.expand(1, 8, 9, 4)
dog = torch.randn_like(og)
dk_shared = torch.autograd.grad((og * dog).sum(), kg)[0]
with torch.no_grad():
    pg = torch.softmax(qg @ kg.mT / 2, -1)
    dsg = pg * (dog @ vg.mT - (dog * og).sum(-1, keepdim=True))
    dk_per_head = dsg.mT @ qg / 2                                   # (1, 8, 9, 4): one per query head
print("dK of the shared head = sum over its 8 query heads:", torch.allclose(dk_per_head.sum(1, keepdim=True), dk_shared))

# %% [markdown]
# **A layer's activation memory.** Korthikanti et al. (2022) count a Transformer layer's
# activations, 16-bit, no recomputation, as `s·b·h·34 + 5·a·s²·b` bytes (sequence s, batch
# b, hidden h, a heads): the second term is the attention matrices (scores, softmax,
# dropout mask). Their *selective recomputation* drops exactly that term by recomputing it
# in the backward, which is what FlashAttention does inside its kernel. For GPT-3 175B
# (s = 2048, h = 12288, a = 96, b = 1):

# %%
s_len, hidden, heads_a = 2048, 12288, 96
linear_part = s_len * hidden * 34                                  # bytes per layer, b = 1
attention_part = 5 * heads_a * s_len ** 2
print(f"per layer: {linear_part / 2**20:.0f} MiB + {attention_part / 2**20:.0f} MiB of attention "
      f"matrices ({attention_part / (linear_part + attention_part):.0%} of it), which recomputation removes")

# %% [markdown]
# Why the backward reaches a lower fraction of the GPU's peak than the forward: five
# matmuls instead of two, more values read and written per FLOP (dO, D and lse in, dQ, dK,
# dV out), dQ combined across key blocks by atomics or a second pass, and less work to
# spread when the sequence is short — FlashAttention-2's paper measures its backward below
# its forward on the same GPU.

# %%
# kata: quiz
