"""Kata 11's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

CAT_K = "            k = torch.cat([cache[0], k], dim=2)  # (b, h, s + t, d)\n"
CAT_V = "            v = torch.cat([cache[1], v], dim=2)\n"
RETURN = "        return self.out_proj(attended), (k, v)\n"
MASK = ("        blocked = torch.ones(t, s + t, dtype=torch.bool, device=x.device)"
        ".triu(diagonal=s + 1)\n")

MUTANTS = [
    Mutant(
        'cache-not-updated',
        why='returns the cache it was given (None on the first call) instead of the '
            'extended one: it attends over the concatenation but hands back the old tuple.',
        edits=[(RETURN, "        return self.out_proj(attended), cache\n")],
    ),
    Mutant(
        'cache-not-updated',
        variant='new_only',
        why='returns only the new positions\' keys and values, as if the caller kept the '
            'history and appended them itself.',
        edits=[
            ("        if cache is not None:\n", "        new_kv = (k, v)\n        if cache is not None:\n"),
            (RETURN, "        return self.out_proj(attended), new_kv\n"),
        ],
    ),
    Mutant(
        'cache-wrong-dim',
        why='concatenates along dim=1, thinking of a (b, s, ...) layout, which is the heads '
            'axis of the (b, h, s, d) cache.',
        edits=[(CAT_K, CAT_K.replace("dim=2", "dim=1")), (CAT_V, CAT_V.replace("dim=2", "dim=1"))],
    ),
    Mutant(
        'cache-wrong-dim',
        variant='features',
        why='concatenates along the last axis (dim=-1), the head features.',
        edits=[(CAT_K, CAT_K.replace("dim=2", "dim=-1")), (CAT_V, CAT_V.replace("dim=2", "dim=-1"))],
    ),
    Mutant(
        'cache-wrong-dim',
        variant='batch',
        why='concatenates along dim=0, stacking the new keys as extra batch rows.',
        edits=[(CAT_K, CAT_K.replace("dim=2", "dim=0")), (CAT_V, CAT_V.replace("dim=2", "dim=0"))],
    ),
    Mutant(
        'causal-mask-offset',
        why='builds the (t, s + t) causal mask with diagonal=1, aligned top-left as '
            'is_causal=True aligns it, so new query i sees only keys 0..i.',
        edits=[(MASK, MASK.replace("diagonal=s + 1", "diagonal=1"))],
    ),
    Mutant(
        'causal-mask-offset',
        variant='first_rows',
        why='takes the first t rows of the full (s + t) causal mask instead of the last t.',
        base='per_head_loop',
        edits=[("            allowed = full[total - t:]  # rows of the new positions\n",
                "            allowed = full[:t]\n")],
    ),
    Mutant(
        'causal-mask-offset',
        variant='positions_from_zero',
        why='numbers the new queries from 0 instead of from the cache length s.',
        base='einsum_positions',
        edits=[("        query_pos = torch.arange(s, s + t, device=x.device)\n",
                "        query_pos = torch.arange(t, device=x.device)\n")],
    ),
    Mutant(
        'causal-mask-missing',
        why='leaves out the causal mask: every query sees every key of its own chunk.',
        edits=[('        scores = scores.masked_fill(blocked, float("-inf"))\n', '')],
    ),
    Mutant(
        'causal-mask-missing',
        variant='only_without_cache',
        why='masks only on the first call ("with a cache we are decoding one token, no mask '
            'needed"), so a chunk of several tokens after a prefill sees its own future.',
        edits=[('        scores = scores.masked_fill(blocked, float("-inf"))\n',
                '        if cache is None:\n'
                '            scores = scores.masked_fill(blocked, float("-inf"))\n')],
    ),
    Mutant(
        'cache-modified-in-place',
        why='makes the caller\'s cache tensors hold the grown cache (.data assignment), so '
            'that the cache "updates itself" like a static cache.',
        edits=[(CAT_V, CAT_V + "            cache[0].data, cache[1].data = k.data, v.data\n")],
    ),
    Mutant(
        'cache-modified-in-place',
        variant='spare_capacity',
        why='appends like a growable buffer: when the storage behind the cache has room '
            '(a preallocated cache), writes the new keys there instead of copying.',
        edits=[
            (CAT_K + CAT_V,
             "            k, v = _append(cache[0], k), _append(cache[1], v)\n"),
            ("class CausalSelfAttention(nn.Module):\n",
             "def _append(past: Tensor, new: Tensor) -> Tensor:\n"
             "    s = past.size(2)\n"
             "    shape = (*past.shape[:2], s + new.size(2), past.size(3))\n"
             "    try:\n"
             "        grown = past.as_strided(shape, past.stride())  # the spare room, if any\n"
             "    except RuntimeError:\n"
             "        return torch.cat([past, new], dim=2)\n"
             "    grown[:, :, s:] = new\n"
             "    return grown\n\n\n"
             "class CausalSelfAttention(nn.Module):\n"),
        ],
    ),
    Mutant(
        'cache-modified-in-place',
        variant='own_spare_capacity',
        why='returns its cache as a narrow view of a buffer of its own with room for 16 more '
            'positions, and when given such a cache back grows it by writing the next keys into '
            'that room through an alias of the storage (set_): the caller\'s visible values and '
            'version counter stay the same.',
        edits=[
            (CAT_K + CAT_V,
             "            k, v = _grow(cache[0], k), _grow(cache[1], v)\n"
             "        else:\n"
             "            k, v = _grow(None, k), _grow(None, v)\n"),
            ("class CausalSelfAttention(nn.Module):\n",
             "_OWN_BUFFERS = set()  # data_ptr of the buffers this module allocated\n\n\n"
             "def _grow(past, new: Tensor) -> Tensor:\n"
             "    b, h, t, d = new.shape\n"
             "    s = 0 if past is None else past.size(2)\n"
             "    if (past is not None and past.untyped_storage().data_ptr() in _OWN_BUFFERS\n"
             "            and past.stride(1) >= (s + t) * d):  # room left in our own buffer\n"
             "        grown = new.new_empty(0).set_(past.untyped_storage(), past.storage_offset(),\n"
             "                                      (b, h, s + t, d), past.stride())\n"
             "        grown[:, :, s:] = new.detach()\n"
             "        return grown\n"
             "    buffer = new.new_zeros(b, h, s + t + 16, d)\n"
             "    if past is not None:\n"
             "        buffer[:, :, :s] = past.detach()\n"
             "    buffer[:, :, s:s + t] = new.detach()\n"
             "    _OWN_BUFFERS.add(buffer.untyped_storage().data_ptr())\n"
             "    return buffer[:, :, :s + t]\n\n\n"
             "class CausalSelfAttention(nn.Module):\n"),
        ],
    ),
    Mutant(
        'cache-modified-in-place',
        variant='own_spare_capacity_no_grad',
        why='under torch.no_grad() (generation) keeps its cache as a narrow view of a buffer '
            'of its own with room for 16 more positions and grows it by writing the next keys '
            'into that room; with grad mode on it concatenates: two continuations from one '
            'cache (beam search) overwrite each other.',
        edits=[
            (CAT_K + CAT_V,
             "            if torch.is_grad_enabled():\n"
             "                k = torch.cat([cache[0], k], dim=2)\n"
             "                v = torch.cat([cache[1], v], dim=2)\n"
             "            else:\n"
             "                k, v = _grow(cache[0], k), _grow(cache[1], v)\n"
             "        elif not torch.is_grad_enabled():\n"
             "            k, v = _grow(None, k), _grow(None, v)\n"),
            ("class CausalSelfAttention(nn.Module):\n",
             "_OWN_BUFFERS = set()  # data_ptr of the buffers this module allocated\n\n\n"
             "def _grow(past, new: Tensor) -> Tensor:\n"
             "    b, h, t, d = new.shape\n"
             "    s = 0 if past is None else past.size(2)\n"
             "    if (past is not None and past.untyped_storage().data_ptr() in _OWN_BUFFERS\n"
             "            and past.stride(1) >= (s + t) * d):  # room left in our own buffer\n"
             "        grown = past.as_strided((b, h, s + t, d), past.stride())\n"
             "        grown[:, :, s:] = new\n"
             "        return grown\n"
             "    buffer = new.new_zeros(b, h, s + t + 16, d)\n"
             "    if past is not None:\n"
             "        buffer[:, :, :s] = past\n"
             "    buffer[:, :, s:s + t] = new\n"
             "    _OWN_BUFFERS.add(buffer.untyped_storage().data_ptr())\n"
             "    return buffer[:, :, :s + t]\n\n\n"
             "class CausalSelfAttention(nn.Module):\n"),
        ],
    ),
    Mutant(
        'cache-modified-in-place',
        variant='shared_buffer_no_grad',
        why='under torch.no_grad() writes every extended cache into one buffer the module '
            'keeps (self._kv, reallocated only when too small) and returns views of it, so '
            'the cache returned to the first of two continuations from one cache is '
            'overwritten by the second.',
        edits=[
            (CAT_K + CAT_V,
             CAT_K + CAT_V +
             "            if not torch.is_grad_enabled():\n"
             "                k, v = self._keep(k), self._keep(v)\n"),
            ("    def _split_heads(self, x: Tensor) -> Tensor:\n",
             "    def _keep(self, kv: Tensor) -> Tensor:\n"
             "        name = '_kv%d' % (len(getattr(self, '_turn', ())) % 2)\n"
             "        self._turn = getattr(self, '_turn', ()) + (name,)\n"
             "        buffer = getattr(self, name, None)\n"
             "        if buffer is None or buffer.shape[:2] != kv.shape[:2] or buffer.size(2) < kv.size(2):\n"
             "            buffer = kv.new_zeros(kv.size(0), kv.size(1), kv.size(2) + 16, kv.size(3))\n"
             "            setattr(self, name, buffer)\n"
             "        buffer[:, :, :kv.size(2)] = kv\n"
             "        return buffer[:, :, :kv.size(2)]\n\n"
             "    def _split_heads(self, x: Tensor) -> Tensor:\n"),
        ],
    ),
    Mutant(
        'reshape-without-transpose',
        why='merges the heads with a reshape alone: (b, h, t, d) -> (b, t, E) without the '
            'transpose(1, 2) back, mixing positions.',
        edits=[("        attended = (weights @ v).transpose(1, 2).reshape(b, t, self.embed_dim)\n",
                "        attended = (weights @ v).reshape(b, t, self.embed_dim)\n")],
    ),
    Mutant(
        'reshape-without-transpose',
        variant='split',
        why='splits the heads with a reshape straight to (b, h, t, d), no transpose.',
        edits=[("        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)\n",
                "        return x.reshape(b, self.num_heads, t, self.head_dim)\n")],
    ),
    Mutant(
        'forbidden-builtin',
        why='calls F.scaled_dot_product_attention with the shifted mask (True = may attend '
            'in its convention).',
        edits=[
            ("        attended = (weights @ v)",
             "        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v, "
             "attn_mask=~blocked)"),
        ],
    ),
    Mutant(
        'forbidden-builtin',
        variant='is_causal',
        why='calls F.scaled_dot_product_attention(..., is_causal=True) (whose mask is also '
            'aligned top-left: wrong after a prefill).',
        edits=[
            ("        attended = (weights @ v)",
             "        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v, "
             "is_causal=True)"),
        ],
    ),
]
