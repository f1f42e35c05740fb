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
# preempt a sequence and retry. Preempting frees a sequence's blocks; to resume it, the engine
# either swaps them to CPU memory and back (the PagedAttention paper's two options), or recomputes
# them with one prefill. vLLM's V1 engine only recomputes: its tuning guide says preempted
# requests are recomputed when space frees up. Swapping is not slower for one sequence, but it
# needs CPU memory and PCIe bandwidth; a recompute is an ordinary prefill, batched with the other
# requests' work. For 1000 tokens of Llama-3-8B:

# %%
tokens, params = 1000, 8.03e9  # Llama-3-8B
swapped = tokens * per_token
print("swap: MiB each way:", swapped / 2**20, "; ms each way at 25 GB/s:", round(swapped / 25e9 * 1e3, 1))
flops = 2 * params * tokens  # one prefill: 2 FLOPs per weight per token
print("recompute: TFLOPs:", round(flops / 1e12, 1), "; ms at 989 TFLOP/s (an H100's bf16 peak):",
      round(flops / 989e12 * 1e3, 1))

# %% [markdown]
# ## 5. Paged decode attention
#
# `paged_attention` reads each sequence's keys through its table, one sequence at a time (or block
# by block with an online softmax): gathering every sequence into one padded batch would undo the
# memory the pages saved.
#
# ## 6. Writing new keys: the slot mapping
#
# Engines do not loop over tokens to write the cache. Before the layer runs, the scheduler turns
# every new token's position into a slot, `table[p // block_size] * block_size + p % block_size`,
# and one kernel (vLLM's `reshape_and_cache`) scatters all keys and values into the pools viewed
# as `(num_blocks * block_size, num_kv_heads, head_dim)`:

# %%
positions = torch.arange(6)
slots = torch.tensor(table)[positions // size] * size + positions % size
print("slot_mapping:", slots.tolist())
scattered = torch.zeros_like(k_cache)
scattered.view(-1, kv_heads, head_dim)[slots] = keys
print("one scatter equals the loop:", torch.equal(scattered, k_cache))

# %% [markdown]
# ## 7. Prefix caching
#
# Sequences that start with the same tokens (a system prompt, a shared document) can share blocks
# without a fork. vLLM's automatic prefix caching keys each **full** block by a hash of its
# parent's hash and its own tokens, so two blocks match only when everything before them does; a
# partial block is never shared. A block whose count falls to 0 stays cached until it is evicted
# (least recently used). SGLang's RadixAttention keeps a radix tree over the token sequences
# instead (one token a page by default), matches the longest prefix when a request arrives and
# evicts least recently used leaves.

# %%
def block_hashes(tokens, block_size):
    hashes, parent = [], None
    for start in range(0, len(tokens) - block_size + 1, block_size):  # full blocks only
        parent = hash((parent, tuple(tokens[start:start + block_size])))
        hashes.append(parent)
    return hashes


system = list(range(100, 135))  # a 35-token system prompt
first, second = system + [1, 2, 3, 4, 5], system + [7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
h1, h2 = block_hashes(first, 16), block_hashes(second, 16)
print("full blocks:", len(h1), "and", len(h2), "; shared:", sum(a == b for a, b in zip(h1, h2)))

# %% [markdown]
# ## 8. Which block size
#
# vLLM's default on CUDA is 16 tokens. Smaller blocks waste fewer slots but make longer tables and
# shorter, less efficient reads in the kernel; larger ones waste more and share prefixes more
# coarsely (some kernels need them: FlashMLA reads 64-token pages). For an 8192-token sequence of
# Llama-3-8B (128 KiB a token):

# %%
for size_ in (1, 16, 64, 256):
    print(f"block_size {size_:3}: worst waste {size_ - 1:3} slots = "
          f"{(size_ - 1) * per_token / 2**20:6.3f} MiB, table of {8192 // size_} entries")

# %%
# kata: exercise

# %%
# kata: quiz
