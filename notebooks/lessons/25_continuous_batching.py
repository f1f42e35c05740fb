# %% [markdown]
# ## 1. Why pack, and why reschedule every step
#
# A static batch pads every request to the longest and keeps its slots until the whole batch is
# done. Orca (OSDI 2022) does two things instead: it lays the tokens of all requests end to end
# (a packed, ragged batch: every layer but attention works on the token axis alone) and it forms
# the batch anew at every model call (iteration-level scheduling). Padding four prompts of 1000,
# 10, 10 and 10 tokens to the longest wastes most of the batch:

# %%
import math

import torch

lengths = [1000, 10, 10, 10]
slots = len(lengths) * max(lengths)
print(f"{sum(lengths):,} tokens in {slots:,} slots: {1 - sum(lengths) / slots:.0%} padding")

# %% [markdown]
# ## 2. Attention over a packed batch
#
# | tensor | shape |
# |---|---|
# | q | (T_q, h, d), segments end to end |
# | k, v | (T_k, h, d) |
# | cu_seqlens_q, cu_seqlens_k | (B + 1,) prefix sums, first 0 |
# | segment j's scores | (h, n_j, m_j) |
# | output | (T_q, h, d) |
#
# Segment j's queries see only segment j's keys. With `causal=True` the n_j queries are the
# *last* n_j of the segment's m_j positions (a chunk after a cache, or one decode token), so the
# mask is aligned bottom-right: query a sees keys 0 … m_j − n_j + a, `tril(m - n)`. A loop over
# segments, or one block-diagonal mask over the pack, creates no padded tensor; padding every
# segment to the longest does. On the grader's skewed batch (a 96-token prefill, 40 decodes of 8
# keys, a 5-token chunk after 15 cached tokens; h = 2, d = 16):

# %%
segments = [(96, 96)] + [(1, 8)] * 40 + [(5, 20)]
h, d = 2, 16
t_q, t_k = sum(n for n, _ in segments), sum(m for _, m in segments)
print("T_q, T_k:", t_q, t_k)
print(f"limit h · max(T_q · T_k, (T_q + T_k) · d) = {h * max(t_q * t_k, (t_q + t_k) * d):,}")
print(f"a loop over segments peaks at {h * 96 * 96:,}")
print(f"padded scores (B, h, 96, 96): {len(segments) * h * 96 * 96:,}")

n, m = 2, 5  # a 2-token chunk after 3 cached tokens
print(torch.ones(n, m, dtype=torch.bool).tril(m - n).int())

# %% [markdown]
# ## 3. The scheduler
#
# Per request keep the known tokens (prompt, then generated) and how many the model has seen;
# the difference is ready. Each call walks the unfinished requests and gives each
# `min(ready, budget left)` tokens, until `max_batch_size` segments or `max_batch_tokens` tokens:
# every call is then maximal, a long prompt is chunked, and a finished request's slot is reused
# at the very next call. A segment that covers all of its request's ready tokens yields a token;
# a prompt chunk that does not finish the prompt does not. The README's example, first come
# first served (S = 2, C = 16), in 10 calls:

# %%
def schedule(requests, S, C, static=False):
    """The calls (request, tokens) of first come first served; static: new requests only when
    the batch has drained. The model is left out: each request gets its max_new_tokens."""
    known = [len(p) for p, _ in requests]
    seen, made, calls, active = [0] * len(requests), [0] * len(requests), [], []
    while any(made[i] < n for i, (_, n) in enumerate(requests)):
        unfinished = [i for i, (_, n) in enumerate(requests) if made[i] < n]
        active = [i for i in active if i in unfinished] or unfinished[:S]
        call, budget = [], C
        for i in (active if static else unfinished):
            if len(call) == S or budget == 0:
                break
            take = min(known[i] - seen[i], budget)
            call.append((i, take))
            budget -= take
        for i, take in call:
            seen[i] += take
            if seen[i] == known[i]:
                known[i] += 1
                made[i] += 1
        calls.append(call)
    return calls


example = [([1, 2, 3], 2), ([4, 5, 6], 8), ([7] * 20, 2), ([8, 9], 5)]
for static in (False, True):
    calls = schedule(example, 2, 16, static)
    print("static" if static else "continuous", len(calls), calls)
W = sum(len(p) + n - 1 for p, n in example)
print("bound ⌊W / min(S, C)⌋ + max n_i =", W // 2 + max(n for _, n in example))

# %%
# kata: exercise

# %% [markdown]
# ## 4. Follow-ups
#
# Batching decode is nearly free: each step reads every weight once whatever the batch, and a
# batch of B decode tokens does about B FLOPs per byte of weights (2 FLOPs and 2 bytes per
# parameter and token). Below the ridge point, FLOPs per byte of the H100, the step is
# memory-bound, and the KV cache (128 KiB per token for Llama-3-8B, kata 22) runs out first.
# The token budget bounds the stall a long prompt causes to running decodes (a call holds at
# most C tokens); a larger C lowers time to first token and raises time per output token.
# Engines are not batch-invariant: reduction orders change with the batch shape.

# %%
weights_bytes, bandwidth, flops = 16.06e9, 3.35e12, 989e12
print(f"reading the weights: {weights_bytes / bandwidth * 1e3:.1f} ms per step")
print(f"ridge point: {flops / bandwidth:.0f} FLOPs per byte")
print(f"Llama-3-8B KV cache: {2 * 32 * 8 * 128 * 2 // 1024} KiB per token")

# %%
# kata: quiz
