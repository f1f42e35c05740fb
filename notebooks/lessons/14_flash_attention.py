# %% [markdown]
# ## 1. The matrix we want to avoid
#
# Ordinary attention computes every score before the softmax:
#
# | step | shape |
# |---|---|
# | q, k, v | (b, h, n, d), (b, h, m, d), (b, h, m, d) |
# | scores = q kᵀ / √d | **(b, h, n, m)** |
# | weights = softmax(scores) | (b, h, n, m) |
# | output = weights v | (b, h, n, d) |
#
# The output is as small as q, but on the way there is an n × m matrix per head. Its size
# for one layer, 32 heads, float16, one sequence, on the meta device (shapes only):

# %%
import math

import torch.nn.functional as F

for length in (1024, 8192, 32768):
    with torch.device("meta"):
        scores = torch.empty(1, 32, length, length, dtype=torch.float16)   # (b, h, n, m)
    print(f"n = m = {length:6d}: {scores.nbytes / 2**30:8.3f} GiB of scores")

# %% [markdown]
# ## 2. Softmax in one pass: the running maximum
#
# `softmax(s)_j = exp(s_j) / Σ exp(s_k)` overflows for large scores: `exp(100)` is already
# inf in float32. The safe softmax subtracts the maximum first, `exp(s_j − max s)` — which
# needs to see every score before it can start. The **online** softmax removes that
# second pass: keep a running maximum `m` and a running sum `l = Σ exp(s − m)` of what has
# been seen; when a larger score arrives, multiply `l` by `exp(m_old − m_new)` to move every
# old term to the new maximum.

# %%
s = torch.tensor([1.0, 2.0, 3.0, 4.0, 1000.0, 999.0])                    # one query's scores
print("naive sum of exp:", torch.exp(s).sum().item())                  # inf: overflow

running_max, running_sum = -math.inf, 0.0
for block in s.split(2):                                               # blocks of 2 scores
    new_max = max(running_max, block.max().item())
    running_sum = running_sum * math.exp(running_max - new_max) + torch.exp(block - new_max).sum().item()
    running_max = new_max
    print(f"block {block.tolist()}: m = {running_max:7.1f}, l = {running_sum:.6f}")
print("m + log l =", running_max + math.log(running_sum), " torch.logsumexp:", torch.logsumexp(s, 0).item())

# %% [markdown]
# `m + log l` is the log-sum-exp, the normaliser of the softmax in log space; flash
# attention returns it as `lse`. Note the start: `m = −inf`, so the first rescaling is
# `exp(−inf) = 0` and the empty start vanishes. Starting at `m = 0` instead breaks a row
# whose scores are all far below 0: every `exp(s − 0)` underflows to 0, and 0 / 0 is NaN.

# %%
low = torch.tensor([-1e4, -1e4 + 1.0], dtype=torch.float64)
print("exp(s - 0):", torch.exp(low - 0).tolist(), "-> the output would be 0 / 0")
print("exp(s - max):", torch.exp(low - low.max()).tolist())

# %% [markdown]
# ## 3. Adding the values: the accumulator
#
# The output of a query is `Σ_j exp(s_j − m) v_j / l`. Keep the numerator as an
# accumulator `acc` (shape `(d,)` per query) and rescale it with the same factor
# `α = exp(m_old − m_new)` as `l`. Divide once at the end. Block by block, for a whole batch:
#
# | tensor | shape |
# |---|---|
# | running max `m`, running sum `l` | (b, h, n, 1) |
# | accumulator `acc` | (b, h, n, d) |
# | one key block, one value block | (b, h, B, d) |
# | block scores `s = q k_blockᵀ / √d` | (b, h, n, B) — the only scores that exist |
# | `p = exp(s − m_new)`, `p @ v_block` | (b, h, n, B), (b, h, n, d) |

# %%
b, h, n, m, d, B = 1, 2, 5, 11, 4, 4
q, k, v = torch.randn(b, h, n, d), torch.randn(b, h, m, d), torch.randn(b, h, m, d)
running_max = torch.full((b, h, n, 1), -math.inf)                           # (b, h, n, 1)
running_sum = torch.zeros(b, h, n, 1)                                       # (b, h, n, 1)
acc = torch.zeros(b, h, n, d)                                               # (b, h, n, d)
for start in range(0, m, B):                                                # blocks of 4, 4, 3 keys
    s = q @ k[..., start:start + B, :].transpose(-2, -1) / math.sqrt(d)     # (b, h, n, ≤B)
    new_max = torch.maximum(running_max, s.amax(-1, keepdim=True))
    alpha = torch.exp(running_max - new_max)
    p = torch.exp(s - new_max)
    running_sum = alpha * running_sum + p.sum(-1, keepdim=True)
    acc = alpha * acc + p @ v[..., start:start + B, :]
    running_max = new_max
    print(f"keys {start:2d}..{min(start + B, m) - 1:2d}: scores {tuple(s.shape)}, acc {tuple(acc.shape)}")
print("equals PyTorch:", torch.allclose(acc / running_sum, F.scaled_dot_product_attention(q, k, v), atol=1e-6))

# %% [markdown]
# ## 4. Causal attention, block by block
#
# With `causal=True` (n = m), query i sees keys 0 … i. Inside a block starting at key
# `start`, key `start + t` is blocked for query i when `start + t > i`: compare **global**
# indices, not the index inside the block. Blocks fall into three kinds for a tile of
# queries: entirely visible, on the diagonal (partly masked), and entirely in the future
# (a GPU kernel skips those: half the work). Block 0 always holds key 0, which every query
# sees, so after the first block every running maximum is finite.

# %%
import matplotlib.pyplot as plt

size, block_size = 12, 4
visible = torch.ones(size, size).tril()                                    # 1 where query i sees key j
fig, axis = plt.subplots(figsize=(3.6, 3.4))
axis.imshow(visible, cmap="Blues", vmin=0, vmax=1.4)
for edge in range(block_size, size, block_size):
    axis.axvline(edge - 0.5, color="black", linewidth=1)
    axis.axhline(edge - 0.5, color="black", linewidth=1, linestyle=":")
axis.set(xlabel="key (blocks of 4)", ylabel="query", title="causal: visible keys")
plt.tight_layout()
plt.show()
plt.close(fig)

# %% [markdown]
# ## 5. How the grader measures memory
#
# A `TorchDispatchMode` sees every operation PyTorch runs below autograd, with its
# outputs. Recording the largest tensor created (views such as slices and transposes
# share memory and are left out) shows the `(b, h, n, m)` scores of ordinary attention:

# %%
from torch.utils._python_dispatch import TorchDispatchMode


class LargestTensor(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.largest = (0, ())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and not func.is_view and out.numel() > self.largest[0]:
            self.largest = (out.numel(), tuple(out.shape))
        return out


q, k, v = torch.randn(1, 2, 64, 8), torch.randn(1, 2, 64, 8), torch.randn(1, 2, 64, 8)
with LargestTensor() as recorder:
    torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1) @ v
print("ordinary attention, largest tensor:", recorder.largest[1])

# %%
# kata: exercise

# %% [markdown]
# ## 6. Memory against sequence length
#
# The largest tensor created during one call, for n = m from 64 to 1024, d = 16,
# block_size = 64: ordinary attention grows as n², flash attention as n · block_size. Your
# `flash_attention` is measured once it passes the core checks.

# %%
lengths = [64, 128, 256, 512, 1024]
ordinary, flash = [], []
for length in lengths:
    q, k, v = (torch.randn(1, 1, length, 16) for _ in range(3))
    with LargestTensor() as recorder:
        torch.softmax(q @ k.transpose(-2, -1) / 4, dim=-1) @ v
    ordinary.append(recorder.largest[0])
    if result.core_passed:
        with LargestTensor() as recorder:
            flash_attention(q, k, v, block_size=64)
        flash.append(recorder.largest[0])
fig, axis = plt.subplots(figsize=(5.5, 3.5))
axis.loglog(lengths, ordinary, marker="o", label="ordinary attention")
if result.core_passed:
    axis.loglog(lengths, flash, marker="o", label="your flash_attention")
else:
    print("Pass the core checks to see your flash_attention on this plot.")
axis.loglog(lengths, [length * 64 for length in lengths], "k:", label="n · block_size")
axis.set(xlabel="sequence length n = m", ylabel="elements in the largest tensor")
axis.set_xticks(lengths, [str(length) for length in lengths])
axis.minorticks_off()
axis.legend(fontsize=8)
plt.tight_layout()
plt.show()
plt.close(fig)

# %% [markdown]
# ## 7. On a GPU: tiles in SRAM, and why memory traffic sets the speed
#
# This kata's loop holds all n queries against one key block: an (n, B) block of scores. A
# GPU kernel tiles the queries too. A GPU has a large, slow memory (HBM) and, on each
# streaming multiprocessor, a small fast one (SRAM, about 192 KB on an A100). FlashAttention
# loads a B_r × d tile of Q and a B_c × d tile of K and V into SRAM, computes the B_r × B_c
# scores there, updates the running maximum, sum and accumulator of those B_r queries, and
# never writes a score to HBM. The tiles are sized from the SRAM size M (in numbers): FA1
# takes B_c = ⌈M / 4d⌉ and B_r = min(⌈M / 4d⌉, d), so that the tiles of Q, K, V, O and the
# scores fit together.
#
# Counting reads and writes of HBM (in numbers), as the FlashAttention paper does: ordinary
# attention writes S, reads it, writes P, reads it: Θ(N·d + N²). FA1's outer loop runs over
# K/V blocks and its inner loop over Q blocks, so K and V are read once while Q and O are
# read and written once per K/V block, N / B_c times: Θ(N² d² / M). The matmul FLOPs are the
# same, 4·N²·d; the paper nevertheless measures FlashAttention several times faster than
# ordinary attention. Ordinary attention is memory-bound: the softmax (and any masking or
# dropout) does a few FLOPs per score it reads and writes in HBM, so the GPU waits for
# memory, as in kata 11's decode step, and the time follows the bytes moved, not the FLOPs.
# FA2 swaps the loops: the outer loop runs over query
# blocks, each an independent job for its own thread block (FA1 parallelised over batch and
# heads only, which leaves most of the GPU idle for long sequences in small batches), and
# Q and O move once while K and V are re-read per query block.

# %%
sram = 192 * 1024 // 2                                                  # A100: 192 KB per SM, as float16s
head_d = 64
block_c = math.ceil(sram / (4 * head_d))                                # FA1's B_c = ceil(M / 4d)
block_r = min(block_c, head_d)                                          # B_r = min(ceil(M / 4d), d)
tiles = block_r * head_d * 2 + block_c * head_d * 2 + block_r * block_c  # Q_i, O_i, K_j, V_j, S_ij
print(f"M = {sram} numbers, d = {head_d}: B_c = {block_c}, B_r = {block_r}; "
      f"tiles {tiles} numbers, fit in SRAM: {tiles <= sram}")
for length in (1024, 4096, 16384):
    standard = 4 * length * head_d + 4 * length * length               # Q, K, V, O; S and P, each twice
    key_blocks = math.ceil(length / block_c)
    fa1 = 2 * length * head_d + key_blocks * length * (3 * head_d + 4)  # K, V once; Q, O, l, m per K/V block
    print(f"N = {length:5d}: matmul FLOPs {4 * length * length * head_d:.3e} for both; HBM numbers moved: "
          f"ordinary {standard:.3e}, FA1 {fa1:.3e} ({standard / fa1:.1f}x fewer)")

# %% [markdown]
# ## 8. The backward pass: recompute the weights from lse
#
# The gradients need the weights P = softmax(S), an n × m matrix per head: storing it for
# the backward pass would bring back exactly what the forward pass avoided. FlashAttention
# stores only the output O and `lse` (n numbers per head). In the backward pass it
# recomputes each block of P exactly as exp(S − lse) from Q, a block of K and `lse` — no
# running maximum needed, since `lse` is already the final normaliser — and forms the
# gradients block by block:
#
# ```
# dV_j = P_jᵀ dO        dP_j = dO V_jᵀ        dS_j = P_j ∘ (dP_j − D),  D = rowsum(dO ∘ O)
# dQ  += dS_j K_j / √d   dK_j = dS_jᵀ Q / √d
# ```
#
# Since every recomputed weight is divided by `exp(lse)`, lse must be exact: FlashAttention
# returns it in float32 whatever the input's dtype (rounded to bfloat16, it would make the
# rows of P sum to 1 ± 7 %), and so does this kata for float16 and bfloat16 inputs.
#
# More FLOPs (the scores are computed twice), far less memory traffic: the paper finds the
# backward pass faster too. Below, in float64, against autograd on ordinary attention:

# %%
torch.manual_seed(0)
n_q, d_head, block = 256, 16, 64
q, k, v = (torch.randn(n_q, d_head, dtype=torch.float64, requires_grad=True) for _ in range(3))
scale = d_head ** -0.5
scores = q @ k.mT * scale                                               # (n, n): autograd keeps the weights
out = scores.softmax(-1) @ v
lse = torch.logsumexp(scores, -1)                                       # (n,): what flash attention keeps
grad_out = torch.randn(n_q, d_head, dtype=torch.float64)
out.backward(grad_out)
with torch.no_grad():
    row_dot = (grad_out * out).sum(-1, keepdim=True)                    # D = rowsum(dO * O), (n, 1)
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for start in range(0, n_q, block):                                  # one key block at a time
        k_block, v_block = k[start:start + block], v[start:start + block]   # (B, d)
        p = torch.exp(q @ k_block.mT * scale - lse[:, None])            # (n, B): recomputed, exact
        dv[start:start + block] = p.mT @ grad_out
        ds = p * (grad_out @ v_block.mT - row_dot)                      # the softmax's backward
        dq += ds @ k_block * scale
        dk[start:start + block] = ds.mT @ q * scale
for name, mine, autograd in (("dQ", dq, q.grad), ("dK", dk, k.grad), ("dV", dv, v.grad)):
    print(f"{name} from lse, block by block, equals autograd's: {torch.allclose(mine, autograd)}")
print(f"kept for the backward pass: {lse.numel()} numbers (lse) instead of {n_q * n_q} (the weights)")

# %%
# kata: quiz
