# %% [markdown]
# ## 1. Routing one token
#
# A mixture-of-experts layer replaces the one feed-forward block of a Transformer layer by
# `N` of them, the **experts**, and a **router**: a linear layer that scores every expert
# for every token. Each token is sent to its `top_k` best-scored experts only; their outputs
# are added, weighted by the router.
#
# | step | shape |
# |---|---|
# | x | (b, n, dim) |
# | tokens = x.reshape(T, dim), T = b·n | (T, dim) |
# | router_logits = gate(tokens) | (T, N) |
# | probs = softmax(router_logits) over the experts | (T, N) |
# | weights, chosen = topk(probs, top_k) | (T, top_k) each |
# | weights / weights.sum(-1) (Mixtral's norm_topk_prob) | (T, top_k) |
#
# One token, four experts, top-2:

# %%
import torch
import torch.nn.functional as F

scores = torch.tensor([2.0, 0.5, 1.0, -1.0])                 # the router's scores of 4 experts
p = scores.softmax(-1)
top, picked = p.topk(2)
print("probs  :", [round(v, 3) for v in p.tolist()])
print("chosen :", picked.tolist(), " weights:", [round(w, 3) for w in top.tolist()])
print("renormalised:", [round(w, 3) for w in (top / top.sum()).tolist()])
print("softmax of the two logits:", [round(w, 3) for w in scores[picked].softmax(-1).tolist()])

# %% [markdown]
# Renormalising the top-k probabilities is the same as a softmax over the top-k *logits*
# (Mistral's reference code does that): the denominators cancel. A softmax over the top-k
# *probabilities* is not: it flattens them (`[softmax-twice]`).
#
# ## 2. Dispatch: each expert on its own rows
#
# The point of the layer is that an expert computes only the tokens routed to it: `T · top_k`
# rows in all, not `T · N`. Loop over the experts, not the tokens: `torch.where(chosen == e)`
# lists, in token order, every token (and the top-k slot) that chose expert `e`.

# %%
torch.manual_seed(0)
T, N, top_k = 6, 4, 2
router_logits = torch.randn(T, N)
weights, chosen = torch.topk(torch.softmax(router_logits, dim=-1), top_k)
print("chosen experts per token:", chosen.tolist())
for e in range(N):
    rows, slots = torch.where(chosen == e)                            # in token order
    print(f"expert {e}: tokens {rows.tolist()} (slots {slots.tolist()})")

# %% [markdown]
# Each expert then runs **once**, on `tokens[token_ids]`, and its output, multiplied by each
# row's weight, is **added** back with `index_add_`: a token's second expert adds to its
# first (`out[token_ids] = y` would overwrite it: `[combine-overwrites]`).
#
# ## 3. Capacity: what Switch drops
#
# With a capacity factor each expert keeps at most `C = ceil(T · top_k / N · factor)`
# assignments, the first ones in token order; the rest are dropped, and a token that loses
# every assignment outputs zeros (the residual outside the layer carries it).

# %%
import math

factor = 0.75
capacity = math.ceil(T * top_k / N * factor)
print("capacity C =", capacity)
kept = torch.zeros_like(chosen, dtype=torch.bool)
for e in range(N):
    rows, slots = torch.where(chosen == e)
    kept[rows[:capacity], slots[:capacity]] = True
print("kept assignments per token:", kept.int().tolist())
print("tokens with every assignment dropped:", torch.where(~kept.any(-1))[0].tolist())

# %% [markdown]
# ## 4. The two auxiliary losses
#
# Left alone, a router collapses onto a few experts. Switch Transformer's **load-balancing
# loss** is `N · Σ_i f_i · P_i`: `f_i` the fraction of the `T · top_k` assignments that go to
# expert `i` (counts: no gradient), `P_i` the mean router probability of expert `i` (the
# softmax: the gradient flows through it). Balanced routing gives 1. ST-MoE's **z-loss**,
# the mean of `logsumexp(logits)²`, keeps the router's logits small.

# %%
def balance(scores, k):
    p = scores.softmax(-1)                                            # (T, N)
    f = torch.bincount(p.topk(k, dim=-1).indices.flatten(), minlength=p.shape[-1]) / (p.shape[0] * k)
    return p.shape[-1] * (f * p.mean(0)).sum()


print("balanced :", balance(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), 1).item())
print("collapsed:", round(balance(torch.tensor([[9.0, 0.0], [9.0, 0.0]]), 1).item(), 4))
print("z-loss of zeros over 8 experts:", round(torch.logsumexp(torch.zeros(5, 8), -1).square().mean().item(), 4),
      "= (ln 8)² =", round(math.log(8) ** 2, 4))

# %%
# kata: exercise

# %% [markdown]
# ## 5. Why "8x7B" is 46.7B, and why decoding reads all of it
#
# Mixtral 8x7B's experts are eightfold, its attention and embeddings are not. And a decode
# step with a batch of `B` tokens, each choosing 2 of 8 experts, leaves an expert unused
# with probability `0.75^B`: at moderate batch sizes every expert's weights are read.

# %%
for batch in (1, 4, 8, 16, 32):
    print(f"batch {batch:2d}: an expert is unused with probability {0.75 ** batch:.3f}")

# %% [markdown]
# ## 6. Follow-ups
#
# **Balancing without an aux loss (DeepSeek-V3).** Affinities are sigmoids, not a softmax.
# A per-expert bias is added to them *for selecting* the top-8 only; the gate weights use the
# unbiased affinities, normalised over the selected experts. After each step the bias of an
# overloaded expert drops by γ and that of an underloaded one rises by γ. A tiny
# sequence-wise aux loss (α = 1e-4) remains, and routing is limited to 4 nodes per token.
#
# **Shared and fine-grained experts (DeepSeekMoE).** Split each expert into m smaller ones
# (hidden / m) and route to m · k of them: the same FLOPs, far more combinations of experts
# (below). Always-on shared experts hold what every token needs, so the routed ones
# specialise. DeepSeek-V3: 1 shared and 256 routed experts, top-8.
#
# **Expert parallelism.** With the experts spread over devices, one layer makes two
# all-to-alls, dispatch and combine, each moving `top_k · dim` values per token (below, for
# DeepSeek-V3 in bfloat16). Engines overlap them with compute (two micro-batches; DeepSeek's
# DualPipe) and bound them by node-limited routing.
#
# **Expert-choice routing.** Each expert picks its top-C tokens: perfect balance, and a
# variable number of experts per token. But a token's routing then depends on the other
# tokens of the batch, future ones included: it breaks causality and batch invariance, so it
# cannot serve autoregressive decoding.
#
# **Dropless MoE.** Sort (permute) the tokens by expert, run one grouped GEMM (or
# MegaBlocks' block-sparse GEMM) over groups of any size, un-permute with the weights: no
# padding, no drops. vLLM's and SGLang's `fused_moe` kernels use a `sorted_token_ids` /
# `expert_ids` layout padded to the block size.
#
# **Capacity at inference.** Dropping makes a token's output depend on what else is in the
# batch, and on its size: results change with load. Mixtral-class models are trained and
# served dropless; capacity is a device of training throughput.

# %%
print("top-2 of 16 experts:", math.comb(16, 2), "combinations;",
      "top-8 of 64 quarter-size experts:", f"{math.comb(64, 8):,}")
dim, k_v3 = 7168, 8                                                   # DeepSeek-V3
print(f"DeepSeek-V3, one all-to-all: {k_v3 * dim:,} values per token, "
      f"{k_v3 * dim * 2:,} bytes in bfloat16")

# %%
# kata: quiz
