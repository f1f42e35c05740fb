"""Kata 24's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

SCALE = "    scale = (amax / qmax).to(torch.float32)\n"
CODES = "    codes = torch.round(xf / safe).clamp(-qmax, qmax).to(torch.int8)\n"
DEQ = "    return (codes.to(work) * scale.to(work)).to(dtype)\n"
PACK = "    return (c[..., 0::2] | (c[..., 1::2] << 4)).to(torch.uint8)\n"
NIB = "    return torch.where(nib >= 8, nib - 16, nib).to(torch.int8)\n"
SAFE = "    safe = torch.where(scale > 0, scale, torch.ones_like(scale)).to(work)\n"
ATT_K = "        k, v = self.dequantized(q.dtype)\n"
MASK = ("        blocked = torch.ones(t, s, dtype=torch.bool, device=q.device)"
        ".triu(diagonal=s - t + 1)\n")
STORE = "        codes, scale = quantize(x, dim=-1, bits=self.bits)\n"

MUTANTS = [
    Mutant('scale-wrong-range', why='divides amax by 128, the count of negative codes.',
           edits=[(SCALE, SCALE.replace("qmax)", "(qmax + (bits == 8)))"))]),
    Mutant('int8-overflow', why='scale amax/128 for the largest value, no clamp: 128 wraps.',
           edits=[(SCALE, SCALE.replace("qmax)", "(qmax + (bits == 8)))")),
                  (CODES, "    codes = torch.round(xf / safe).to(torch.int32).to(torch.int8)\n")]),
    Mutant('truncation-not-rounding', why='casts x / scale to int8 directly.',
           edits=[(CODES, "    codes = (xf / safe).clamp(-qmax, qmax).to(torch.int8)\n")]),
    Mutant('scale-wrong-axis', why='one scale for the whole tensor.',
           edits=[("    if dim is None:\n", "    if True:\n")]),
    Mutant('dequant-divides', why='divides the codes by the scale.',
           edits=[(DEQ, "    return (codes.to(work) / scale.to(work).clamp_min(1e-30)).to(dtype)\n")]),
    Mutant('nan-on-zero-rows', why='divides by the raw scale: 0/0 on zero rows.',
           edits=[(SAFE, "    safe = scale.to(work)\n")]),
    Mutant('scale-wrong-dtype', why='keeps the scale in float16.',
           edits=[(SCALE, SCALE.replace("torch.float32", "torch.float16"))]),
    Mutant('scale-not-applied', why='attends over the raw codes.',
           edits=[(ATT_K, "        k, v = (self._codes(self.k_codes).to(q.dtype), "
                          "self._codes(self.v_codes).to(q.dtype))\n")]),
    Mutant('key-scale-after-softmax', why='folds the key scale into the probabilities.',
           edits=[(ATT_K, "        k, v = self.dequantized(q.dtype)\n"
                          "        k = self._codes(self.k_codes).to(q.dtype)\n"),
                  ("        return torch.softmax(scores, dim=-1) @ v\n",
                   "        ks = torch.cat(self.k_scales, dim=2).to(q.dtype).transpose(-2, -1)\n"
                   "        return (torch.softmax(scores, dim=-1) * ks) @ v\n")]),
    Mutant('query-quantised', why='rounds the query to the grid too.',
           edits=[(ATT_K, ATT_K + "        q = dequantize(*quantize(q, -1, self.bits), q.dtype)\n")]),
    Mutant('cache-stores-float', why='keeps the float keys and values beside the codes.',
           edits=[("        kc, ks = self._store(k)\n",
                   "        self.raw = (k, v)\n        kc, ks = self._store(k)\n")]),
    Mutant('causal-mask-offset', why='aligns the causal mask top-left.',
           edits=[(MASK, MASK.replace("s - t + 1", "1"))]),
    Mutant('int4-range', why='offsets codes to [0, 2 qmax].',
           edits=[(CODES, CODES.replace(".to(torch.int8)", ".add(qmax + 1 if bits == 4 else 0).to(torch.int8)"))]),
    Mutant('asymmetric-zero-point',
           why='min/max scale over 255 steps and a rounded zero point added to the codes.',
           edits=[("        amax = xf.abs().amax(dim=dim, keepdim=True)\n",
                   "        amax = xf.abs().amax(dim=dim, keepdim=True)\n"
                   "        lo, hi = xf.amin(dim=dim, keepdim=True), xf.amax(dim=dim, keepdim=True)\n"
                   "        scale = ((hi - lo) / (2 * qmax + 1)).to(torch.float32)\n"
                   "        safe = torch.where(scale > 0, scale, torch.ones_like(scale)).to(work)\n"
                   "        zero = -qmax - 1 - torch.round(lo / safe)\n"
                   "        codes = (torch.round(xf / safe) + zero).clamp(-qmax - 1, qmax)\n"
                   "        return codes.to(torch.int8), scale\n")]),
    Mutant('scale-wrong-dtype', variant='cache_half',
           why='the cache keeps its scales in float16 to save bytes (quantize is right).',
           edits=[("        return codes, scale\n\n    def append",
                   "        return codes, scale.half()\n\n    def append")]),
    Mutant('nibbles-swapped', why='puts element 2j in the high nibble.',
           edits=[(PACK, "    return (c[..., 1::2] | (c[..., 0::2] << 4)).to(torch.uint8)\n")]),
    Mutant('nibble-not-sign-extended', why='returns nibbles as unsigned.',
           edits=[(NIB, "    return nib.to(torch.int8)\n")]),
]
