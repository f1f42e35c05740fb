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
# the difference is ready. Each call holds at most `max_batch_size` segments and
# `max_batch_tokens` tokens, and must be maximal: no unfinished request could have had one more
# token. A long prompt is then chunked, and a finished request's slot is reused at the very next
# call. A segment that covers all of its request's ready tokens yields a token; a prompt chunk
# that does not finish the prompt does not. Prompt chunks and decode tokens in one call under a
# token budget is chunked prefill, from Sarathi and Sarathi-Serve (Agrawal et al. 2023; OSDI
# 2024), which vLLM adopted. Write the scheduler now; the README's example is worked call by
# call after the exercise.

# %%
# kata: exercise

# %% [markdown]
# ## 4. The README's example, call by call
#
# The calls of first come first served (S = 2, C = 16) and of static batching, with the model
# left out (each request gets its max_new_tokens): 10 calls against 14, and the bound on the
# number of calls.

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

# %% [markdown]
# ## 5. Follow-ups
#
# **Is batching decode free?** Only the weight reads are shared. Each step reads every weight
# once whatever the batch, but each sequence's KV cache (128 KiB per token for Llama-3-8B,
# kata 22) is read at every step too: step time = (weights + Σ contexts × 128 KiB) / bandwidth.
# Attention does 4 FLOPs per byte of KV cache it reads (32 query heads share 8 KV heads)
# whatever the batch, far below the ridge point, FLOPs per byte of the H100: batching raises
# throughput, but the KV reads grow with it. With 2,048 tokens of context:

# %%
weights_bytes, bandwidth, flops = 16.06e9, 3.35e12, 989e12
kv_per_token = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads of 128, bfloat16
print(f"reading the weights: {weights_bytes / bandwidth * 1e3:.1f} ms per step")
print(f"ridge point: {flops / bandwidth:.0f} FLOPs per byte")
print(f"Llama-3-8B KV cache: {kv_per_token // 1024} KiB per token")
attention_flops = 2 * 2 * 32 * 128  # per cached token and layer: q · k and p · v, 32 query heads
print(f"attention: {attention_flops / (kv_per_token / 32):.0f} FLOPs per byte of KV cache")
for batch in (1, 32, 64, 160):
    kv = batch * 2048 * kv_per_token
    step = (weights_bytes + kv) / bandwidth
    print(f"B = {batch:3}: KV {kv / 1e9:5.2f} GB, step {step * 1e3:5.2f} ms, "
          f"KV {kv / (weights_bytes + kv):4.0%} of the bytes, {batch / step:,.0f} tokens/s")

# %% [markdown]
# **What does chunking a prefill cost?** Each later chunk reads back the keys and values of all
# earlier chunks from the cache: a prompt of P tokens in chunks of C reads about P²/(2C) cached
# tokens and needs P/C calls, so its time to first token grows, and short query chunks use the
# attention kernel less well. The token budget bounds the stall a long prompt causes to running
# decodes (a call holds at most C tokens): a larger C lowers time to first token and raises time
# per output token; engines pick C so that a mixed call stays near the ridge. For an 8,192-token
# prompt in chunks of 512:

# %%
prompt, chunk = 8192, 512
reread = sum(j * chunk for j in range(prompt // chunk))  # chunk j reads j · C cached tokens
print(f"{prompt // chunk} calls, {reread:,} cached tokens read back (P²/(2C) = "
      f"{prompt ** 2 // (2 * chunk):,}): {reread * kv_per_token / 1e9:.2f} GB, "
      f"{reread * kv_per_token / bandwidth * 1e3:.1f} ms at 3.35 TB/s")

# %% [markdown]
# **What are S and C in vLLM?** `max_num_seqs` and `max_num_batched_tokens`. Its V1 scheduler
# serves the running requests (decodes) first, then fills the remaining token budget with
# (chunked) prefills.
#
# **When KV blocks run out** the scheduler preempts a request and recomputes or swaps its cache,
# the two options of the vLLM paper (Kwon et al. 2023); vLLM's V1 engine recomputes only.
#
# **Why disaggregate prefill and decode?** Prefill is compute-bound and, mixed into a call,
# raises the time per output token (TPOT) of the decodes beside it; decode is memory-bound.
# Serving is judged by time to first token (TTFT), TPOT and goodput, the requests served within
# both targets. DistServe, Splitwise and Mooncake run prefill and decode on separate GPUs and
# ship the KV cache between them, tuning each for its target.
#
# **CUDA graphs when every batch differs?** Engines capture graphs for a set of batch sizes and
# pad a batch up to the next captured size. vLLM V1 captures piecewise graphs that leave
# attention (its varlen metadata) outside, and full graphs for batches of decodes only (its
# `FULL_AND_PIECEWISE` default).
#
# **Prefix caching.** A request's cached prefix blocks count as already seen (`c_i` starts at
# the hit length), so its first call is shorter; a scheduler may order requests by prefix hit
# (SGLang does) at the cost of first come first served fairness.
#
# **Batch invariance.** Engines are not batch-invariant: reduction orders change with the
# batch shape (split-K matmuls, split attention), so greedy outputs can depend on what else is
# in the batch.

# %%
# kata: quiz
