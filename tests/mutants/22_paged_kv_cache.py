"""Kata 22's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

WRITE = ("            self.k_cache[table[p // size], p % size] = k[i]\n"
         "            self.v_cache[table[p // size], p % size] = v[i]")
TAKE = ("            if p % size == 0:\n"
        "                table.append(self._take())")
CHECK = ("        if needed > len(self.free_blocks):\n"
         "            raise OutOfBlocksError(f\"need {needed} blocks, {len(self.free_blocks)} free\")")
NEEDED = "math.ceil(length / size) + int(copy)"
POP = "        block = self.free_blocks.pop(0)\n"
# _take finds the empty free list itself and raises OutOfBlocksError: mid-way, after changes.
TAKE_RAISES = ("        if not self.free_blocks:\n"
               "            raise OutOfBlocksError('no free block')\n" + POP)

MUTANTS = [
    Mutant(
        'slot-off-by-one',
        why='offsets from 1-based positions: position p written at slot (p + 1) % block_size.',
        edits=[(WRITE,
                "            self.k_cache[table[p // size], (p + 1) % size] = k[i]\n"
                "            self.v_cache[table[p // size], (p + 1) % size] = v[i]")],
    ),
    Mutant(
        'no-allocation-when-full',
        why='a block is taken for the first token only: later tokens wrap over the last '
            'block.',
        edits=[(TAKE, "            if not table:\n                table.append(self._take())"),
               (WRITE, "            self.k_cache[table[-1], p % size] = k[i]\n"
                       "            self.v_cache[table[-1], p % size] = v[i]")],
    ),
    Mutant(
        'eager-allocation',
        why='a new block is taken as soon as the last one fills, before a token needs it.',
        edits=[(TAKE, "            if p % size == 0 and len(table) <= p // size:\n"
                      "                table.append(self._take())"),
               ("        self.lengths[seq_id] = length + t\n",
                "        if (length + t) % size == 0 and self.free_blocks:\n"
                "            table.append(self._take())\n"
                "        self.lengths[seq_id] = length + t\n")],
    ),
    Mutant(
        'stale-slots-read',
        why='keys_values and the attention read every slot of the last block.',
        edits=[("        k = self.k_cache[table].flatten(0, 1)[:n]\n"
                "        v = self.v_cache[table].flatten(0, 1)[:n]",
                "        k = self.k_cache[table].flatten(0, 1)\n"
                "        v = self.v_cache[table].flatten(0, 1)"),
               ("        k = k_cache[blocks].flatten(0, 1)[:n].repeat_interleave(group, dim=1)  # (n, h, d)\n"
                "        v = v_cache[blocks].flatten(0, 1)[:n].repeat_interleave(group, dim=1)",
                "        k = k_cache[blocks].flatten(0, 1).repeat_interleave(group, dim=1)  # (n, h, d)\n"
                "        v = v_cache[blocks].flatten(0, 1).repeat_interleave(group, dim=1)")],
    ),
    Mutant(
        'stale-slots-read',
        why='paged_attention reads the longest length for every sequence (padding entries '
            'and stale slots included).',
        variant='one_length',
        edits=[("        n = int(seq_lens[i])\n", "        n = int(seq_lens.max())\n")],
    ),
    Mutant(
        'block-order-wrong',
        why='keys_values reads the blocks in physical order.',
        edits=[("        table, n = self.tables[seq_id], self.lengths[seq_id]\n        k =",
                "        table, n = sorted(self.tables[seq_id]), self.lengths[seq_id]\n        k =")],
    ),
    Mutant(
        'free-shared-block',
        why='free returns every block of the sequence, shared or not.',
        edits=[("        self.ref_counts[block] -= 1\n        if self.ref_counts[block] == 0:",
                "        self.ref_counts[block] -= 1\n        if block not in self.free_blocks:")],
    ),
    Mutant(
        'free-shared-block',
        why='free returns every block of the sequence, ignoring the counts (copy-on-write '
            'still drops its reference right).',
        variant='free_only',
        edits=[("        for block in self.tables.pop(seq_id):\n            self._release(block)\n",
                "        self.free_blocks.extend(self.tables.pop(seq_id))\n")],
    ),
    Mutant(
        'cow-missing',
        why='no copy-on-write: the shared partial block is written in place.',
        edits=[("        copy = filled != 0 and self.ref_counts[table[-1]] > 1",
                "        copy = False")],
    ),
    Mutant(
        'cow-copy-incomplete',
        why='the fresh block gets the new token but not the shared slots before it.',
        edits=[("            self.k_cache[new, :filled] = self.k_cache[old, :filled]\n"
                "            self.v_cache[new, :filled] = self.v_cache[old, :filled]\n", "")],
    ),
    Mutant(
        'fork-needs-free-block',
        why='fork refuses when the pool is full, as if it needed a block of its own.',
        edits=[("    def fork(self, seq_id: int) -> int:\n"
                "        child = self.new_sequence()\n",
                "    def fork(self, seq_id: int) -> int:\n"
                "        if not self.free_blocks:\n"
                "            raise OutOfBlocksError('no free block to fork into')\n"
                "        child = self.new_sequence()\n")],
    ),
    Mutant(
        'unneeded-copy',
        why='fork copies every block of the parent into fresh ones.',
        edits=[("        self.tables[child] = list(self.tables[seq_id])\n"
                "        self.lengths[child] = self.lengths[seq_id]\n"
                "        for block in self.tables[child]:\n"
                "            self.ref_counts[block] += 1\n",
                "        self.lengths[child] = self.lengths[seq_id]\n"
                "        for block in self.tables[seq_id]:\n"
                "            new = self._take()\n"
                "            self.k_cache[new] = self.k_cache[block]\n"
                "            self.v_cache[new] = self.v_cache[block]\n"
                "            self.tables[child].append(new)\n")],
    ),
    Mutant(
        'refcount-leak',
        why='fork counts each shared block twice: they never come back.',
        edits=[("            self.ref_counts[block] += 1\n", "            self.ref_counts[block] += 2\n")],
    ),
    Mutant(
        'out-of-blocks-unchecked',
        why='no check: the empty free list raises IndexError.',
        edits=[(CHECK, "        pass")],
    ),
    Mutant(
        'out-of-blocks-unchecked',
        why='the pre-check forgets the copy-on-write block: the copy pops an empty free list.',
        variant='cow_uncounted',
        edits=[(NEEDED, "math.ceil(length / size)")],
    ),
    Mutant(
        'out-of-blocks-not-atomic',
        why='the check is made token by token, after earlier tokens were written.',
        edits=[(CHECK, "        pass"),
                (TAKE, "            if p % size == 0:\n"
                       "                if not self.free_blocks:\n"
                       "                    self.lengths[seq_id] = p\n"
                       "                    raise OutOfBlocksError('out of blocks')\n"
                       "                table.append(self._take())")],
    ),
    Mutant(
        'out-of-blocks-not-atomic',
        why='no pre-check: taking a block from the empty free list raises OutOfBlocksError, '
            'after the append took its first blocks.',
        variant='take_raises',
        edits=[(CHECK, "        pass"), (POP, TAKE_RAISES)],
    ),
    Mutant(
        'out-of-blocks-not-atomic',
        why='the pre-check forgets the copy-on-write block and the empty free list raises '
            'OutOfBlocksError: after the copy was made.',
        variant='cow_uncounted',
        edits=[(NEEDED, "math.ceil(length / size)"), (POP, TAKE_RAISES)],
    ),
    Mutant(
        'out-of-blocks-not-atomic',
        why='the copy-on-write is made first and the blocks for the tokens checked after it.',
        variant='cow_first',
        edits=[(CHECK, "        pass"),
               ("        for i in range(t):\n",
                "        if needed - int(copy) > len(self.free_blocks):\n"
                "            raise OutOfBlocksError('out of blocks')\n"
                "        for i in range(t):\n")],
    ),
    Mutant(
        'kv-heads-tiled',
        why='query head j reads kv head j % num_kv_heads (repeat instead of repeat_interleave).',
        edits=[("k_cache[blocks].flatten(0, 1)[:n].repeat_interleave(group, dim=1)",
                "k_cache[blocks].flatten(0, 1)[:n].repeat(1, group, 1)"),
               ("v_cache[blocks].flatten(0, 1)[:n].repeat_interleave(group, dim=1)",
                "v_cache[blocks].flatten(0, 1)[:n].repeat(1, group, 1)")],
    ),
    Mutant(
        'kv-heads-tiled',
        why='the keys tiled with repeat, the values still expanded with repeat_interleave.',
        variant='keys_only',
        edits=[("k_cache[blocks].flatten(0, 1)[:n].repeat_interleave(group, dim=1)",
                "k_cache[blocks].flatten(0, 1)[:n].repeat(1, group, 1)")],
    ),
    Mutant(
        'missing-scale',
        why='the scores are not divided by sqrt(head_dim).',
        edits=[(" / math.sqrt(head_dim)\n", "\n")],
    ),
    Mutant(
        'dense-batch-gather',
        why='every sequence gathered into one padded (b, L_max, ...) batch first.',
        edits=[("    out = torch.empty_like(q)\n",
                "    out = torch.empty_like(q)\n"
                "    padded = k_cache[block_tables.clamp(min=0).long()].clone()  # (b, max_blocks, ...)\n")],
    ),
    Mutant(
        'kv-stored-outside-pool',
        why='each sequence also keeps its keys in a tensor of its own.',
        edits=[("        self.lengths[seq_id] = length + t\n",
                "        self.lengths[seq_id] = length + t\n"
                "        self.own = getattr(self, 'own', {})\n"
                "        self.own[seq_id] = k.clone()\n")],
    ),
    Mutant(
        'forbidden-builtin',
        why='paged_attention hands each sequence to flex_attention.',
        edits=[("    out = torch.empty_like(q)\n",
                "    out = torch.empty_like(q)\n"
                "    from torch.nn.attention.flex_attention import flex_attention\n"
                "    flex_attention(q[:1, :, None], k_cache[:1].transpose(1, 2)[:, :q.shape[1]], "
                "v_cache[:1].transpose(1, 2)[:, :q.shape[1]])\n")],
    ),
    Mutant(
        'kv-stored-outside-pool',
        why='a copy of the keys kept in a dict keyed by a handle object (its repr is no '
            'Python literal).',
        variant='keyed_by_object',
        edits=[("class PagedKVCache:",
                "class _Handle:\n"
                "    def __init__(self, seq_id):\n"
                "        self.seq_id = seq_id\n\n"
                "    def __hash__(self):\n"
                "        return hash(self.seq_id)\n\n"
                "    def __eq__(self, other):\n"
                "        return isinstance(other, _Handle) and other.seq_id == self.seq_id\n\n\n"
                "class PagedKVCache:"),
               ("        self.lengths[seq_id] = length + t\n",
                "        self.lengths[seq_id] = length + t\n"
                "        self.shadow = getattr(self, 'shadow', {})\n"
                "        self.shadow[_Handle(seq_id)] = k.clone()\n")],
    ),
]
