# %% [markdown]
# ## 1. Why pages
#
# A plain KV cache (kata 11) gives each sequence one tensor of its maximum length. A server
# does not know how long a reply will be, so it reserves the maximum and wastes the rest. vLLM
# stores keys and values in one pool of fixed-size blocks instead; each sequence owns a block
# table mapping its logical blocks to physical ones, taken on demand. Only its last block can
# be partly empty: at most `block_size - 1` wasted slots.

# %%
import math

max_len, reply, block_size = 8192, 1000, 16
print("reserved at max length, wasted:", f"{1 - reply / max_len:.0%}")
print("paged, wasted slots at most:", block_size - 1, "of", math.ceil(reply / block_size) * block_size)
per_token = 2 * 32 * 8 * 128 * 2  # Llama-3-8B, bfloat16: keys and values, every layer
print("bytes per token:", per_token, "=", per_token // 1024, "KiB")
print("tokens in 40 GiB:", 40 * 2**30 // per_token)

# %% [markdown]
# ## 2. Placement through a table
#
# Position `p` of a sequence with table `T` lives at `k_cache[T[p // block_size], p % block_size]`.
# The pools are `(num_blocks, block_size, num_kv_heads, head_dim)`; gathering a sequence's keys is
# `k_cache[T].flatten(0, 1)[:L]`, in table order, never in physical order.

# %%
import torch

num_blocks, size, kv_heads, head_dim = 8, 4, 1, 2
k_cache = torch.zeros(num_blocks, size, kv_heads, head_dim)
table = [5, 2]  # out of physical order, as after frees
keys = torch.arange(6 * head_dim, dtype=torch.float32).view(6, 1, head_dim)
for p in range(6):
    k_cache[table[p // size], p % size] = keys[p]
gathered = k_cache[table].flatten(0, 1)[:6]
print("gathered keys equal the appended ones:", torch.equal(gathered, keys))
print("physical order would give:", torch.equal(k_cache[sorted(table)].flatten(0, 1)[:6], keys))

# %% [markdown]
# ## 3. Fork and copy-on-write
#
# Parallel sampling forks one prompt into several replies: the forks share every block (a
# reference count per block). The first write into the shared, partly filled last block copies it
# first; full blocks are never copied. For 4 replies to a 1000-token prompt with 16-token blocks:

# %%
prompt, replies = 1000, 4
full, partial = divmod(prompt, block_size)
for generated in (1, 100):
    shared = full + replies * math.ceil((partial + generated) / block_size)
    alone = replies * math.ceil((prompt + generated) / block_size)
    print(f"after {generated} tokens each: {shared} blocks shared, {alone} without sharing")

# %% [markdown]
# ## 4. Out of blocks, atomically
#
# An append counts what it needs first, `ceil((L + t) / block_size) - ceil(L / block_size)`, plus
# one when it must copy, and raises `OutOfBlocksError` before touching anything, so a scheduler can
# preempt a sequence and retry.
#
# ## 5. Paged decode attention
#
# `paged_attention` reads each sequence's keys through its table, one sequence at a time (or block
# by block with an online softmax): gathering every sequence into one padded batch would undo the
# memory the pages saved.

# %%
# kata: exercise

# %%
# kata: quiz
