"""Kata 22_paged_kv_cache (A paged KV cache).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

import math

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, Question

KATA = Kata(
    id="22",
    name="22_paged_kv_cache",
    file="paged_kv_cache.py",
    title='A paged KV cache',
    track="inference",
    difficulty="hard",
    target_minutes=35,
    prerequisites=("11", "13", "14"),
    mistakes=(
        "slot-off-by-one",
        "no-allocation-when-full",
        "eager-allocation",
        "stale-slots-read",
        "block-order-wrong",
        "free-shared-block",
        "cow-missing",
        "cow-copy-incomplete",
        "unneeded-copy",
        "fork-needs-free-block",
        "refcount-leak",
        "out-of-blocks-unchecked",
        "out-of-blocks-not-atomic",
        "kv-heads-tiled",
        "missing-scale",
        "dense-batch-gather",
        "kv-stored-outside-pool",
        "forbidden-builtin",
    ),
    forbidden=("torch.nn.attention.flex_attention.flex_attention",),
    hints=(
        "Keep the bookkeeping in Python: a free list, a reference count per block, and per "
        "sequence its block table and length. Position p lives in block table[p // "
        "block_size] at slot p % block_size. Before an append touches anything, count the "
        "blocks it will need.",
        "An append of t tokens to a sequence of length L needs ceil((L + t) / block_size) - "
        "ceil(L / block_size) new blocks, plus one when L % block_size != 0 and its last "
        "block is shared (refcount > 1): copy the L % block_size filled slots into a fresh "
        "block, put it at the end of the table, drop one reference to the old one. Raise "
        "OutOfBlocksError first if that is more than are free. fork copies the table and "
        "adds one to each block's count; free subtracts one and returns blocks at zero. In "
        "paged_attention, one sequence at a time (the memory rule): gather only its first "
        "ceil(n / block_size) table entries, flatten them to positions and keep the first n "
        "= seq_lens[i]; query head j reads kv head j // (num_heads // num_kv_heads).",
        "copy = L % block_size != 0 and self.ref_counts[table[-1]] > 1\n"
        "needed = math.ceil((L + t) / block_size) - math.ceil(L / block_size) + int(copy)\n"
        "blocks = block_tables[i, :math.ceil(n / block_size)].long()  # sequence i's blocks only\n"
        "k = k_cache[blocks].flatten(0, 1)[:n].repeat_interleave(num_heads // num_kv_heads, dim=1)"
        "  # (n, num_heads, head_dim)",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES: tuple[Mistake, ...] = (
    Mistake("slot-off-by-one",
            "A position was written or read at another slot than k_cache[table[p // "
            "block_size], p % block_size]: (p + 1) // block_size, offsets from 1-based "
            "positions, or block and offset swapped.",
            "Position p (0-based, counted from the start of the sequence) is block table[p // "
            "block_size], slot p % block_size."),
    Mistake("no-allocation-when-full",
            "The token at a multiple of block_size was written without a new block: over "
            "slot 0 of the full block, or an IndexError.",
            "Take a block from the free list exactly when p % block_size == 0, then write."),
    Mistake("eager-allocation",
            "A block was taken before a token needed it: as soon as the last one filled, or "
            "the maximum length reserved up front.",
            "len(block_table) must equal ceil(seq_len / block_size) after every call: take a "
            "block only when a token lands at p % block_size == 0."),
    Mistake("stale-slots-read",
            "Attention or keys_values read past the sequence: slots beyond its length in the "
            "last block, padding entries of the table used as blocks, or one length (the "
            "longest) used for every sequence.",
            "Gather ceil(L / block_size) blocks, flatten them to positions and keep the first "
            "L; ignore the table's entries after them."),
    Mistake("block-order-wrong",
            "Blocks were read in physical or sorted order instead of table order.",
            "Read the blocks in the order of the block table (k_cache[table]), never sorted: "
            "after frees the free list hands blocks out in any order."),
    Mistake("free-shared-block",
            "free returned a block another sequence still holds (too many blocks free after "
            "it), so the next allocation can overwrite that sequence's keys.",
            "free subtracts one from each block's reference count and returns a block to the "
            "free list only when its count reaches zero."),
    Mistake("cow-missing",
            "An append wrote into a block shared with another sequence (after fork) instead of "
            "copying it: no fresh block was taken (one more block free than expected), and the "
            "sibling's keys change as soon as either of them writes that slot.",
            "Before writing into a partly filled last block whose reference count is above "
            "one, copy it into a fresh block and write there (copy-on-write)."),
    Mistake("cow-copy-incomplete",
            "The copy-on-write block got the new token but not the shared block's earlier "
            "slots.",
            "Copy the L % block_size filled slots of the shared block, keys and values, into "
            "the fresh one before appending."),
    Mistake("unneeded-copy",
            "Blocks were copied that need not be: at fork, full shared blocks, or a block no "
            "longer shared; too few blocks stay free.",
            "fork copies the table only (counts + 1). Copy only the partly filled last block, "
            "only when its count is above one."),
    Mistake("fork-needs-free-block",
            "fork raised OutOfBlocksError when no block was free, yet a fork allocates "
            "nothing: the child shares every block of its parent.",
            "fork copies the table and adds one to each block's count; it never takes a "
            "block, so it never runs out. The copy comes later, at the child's first append."),
    Mistake("refcount-leak",
            "Blocks never came back: after every sequence is freed, num_free_blocks() < "
            "num_blocks.",
            "Each reference taken (allocation, fork, copy) is dropped exactly once (free, "
            "copy-on-write); a block returns to the free list when its count reaches zero."),
    Mistake("out-of-blocks-unchecked",
            "An append with no free block left did not raise OutOfBlocksError: an IndexError "
            "from an empty free list, or a block still in use handed out again.",
            "Count the blocks the append needs (the copy included) and raise "
            "OutOfBlocksError when more are needed than are free."),
    Mistake("out-of-blocks-not-atomic",
            "OutOfBlocksError was raised after some tokens, blocks or copies were already "
            "written or taken: a check made after the copy-on-write, or a shortfall found "
            "only when the free list ran empty mid-way.",
            "Check before changing anything: compute the blocks needed for all t tokens (and "
            "the copy) first, raise, and only then allocate and write."),
    Mistake("dense-batch-gather",
            "paged_attention created a tensor larger than one sequence's keys for every "
            "query head: every sequence gathered into one padded batch, or the whole pool "
            "copied or cast.",
            "Loop over the sequences: gather one sequence's blocks with k_cache[table_i], "
            "attend, write its row of the output."),
    Mistake("kv-stored-outside-pool",
            "Keys or values were also kept outside k_cache and v_cache (in per-sequence "
            "tensors).",
            "Write keys and values into the pools only; keep only integers (tables, counts, "
            "lengths) as bookkeeping."),
)


# --- the formulas behind this quiz's numbers (the self-tests check them) ---
def bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_value: int) -> int:
    """Keys and values of one token in every layer."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value


def blocks_for_parallel_sampling(prompt: int, replies: int, block_size: int,
                                 generated: int) -> int:
    """Blocks held by `replies` forks of one prompt after each generated `generated` tokens
    (copy-on-write on the shared partial block)."""
    full, partial = divmod(prompt, block_size)
    if partial == 0:
        return full + replies * math.ceil(generated / block_size)
    # Every reply ends up with its own copy of the partial block (the last writer keeps it).
    return full + replies * math.ceil((partial + generated) / block_size)


QUESTIONS = (
    Question(
        "Llama-3-8B has 32 layers, 8 kv heads and head dim 128. How many KiB of keys and "
        "values does one token take in bfloat16 (2 bytes a value)?",
        bytes_per_token(32, 8, 128, 2) // 1024, INTEGER,
        "2 (keys and values) · 32 layers · 8 kv heads · 128 · 2 bytes = 131,072 bytes = 128 "
        "KiB a token; a 16-token block across all layers is 2 MiB, an 8k-token sequence 1 "
        "GiB. Llama-2-7B, with 32 kv heads, takes 512 KiB a token."),
    Question(
        "Four replies are sampled from one 1000-token prompt with 16-token blocks (fork, "
        "then copy-on-write). How many blocks are held after each reply's first token?",
        blocks_for_parallel_sampling(1000, 4, 16, 1), INTEGER,
        "The prompt fills 62 blocks and 8 slots of a 63rd. The four forks share all 63. The "
        "first token of each of three replies copies the partial block (the fourth writer "
        "owns it by then): 63 + 3 = 66 blocks, against 4 · 63 = 252 without sharing; 90 "
        "after 100 tokens each."),
    Question(
        "A 16-token block size: at most how many slots does a sequence waste (internal "
        "fragmentation)?",
        15, INTEGER,
        "Only its last block can be partly filled: at most block_size - 1 = 15 slots, half a "
        "block on average. A cache reserved at the maximum length wastes max_len - L: a "
        "1000-token reply in 8192 slots wastes 88 %."),
    Question(
        "An append needs one more block than is free. What must the cache do?",
        "B", CHOICE,
        "Raise OutOfBlocksError before changing anything, so the scheduler can preempt a "
        "sequence (recompute it later or swap its blocks to CPU; vLLM's V1 engine only "
        "recomputes) and retry; a half-written append would leave a sequence whose length and "
        "keys disagree.",
        choices=("write the tokens that fit, then raise",
                 "raise OutOfBlocksError with nothing changed",
                 "evict the oldest sequence's blocks",
                 "reallocate larger pools")),
)
