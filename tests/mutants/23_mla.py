"""Kata 23's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

LATENT = "        c_kv = self.kv_a_layernorm(kv_a[..., :r])  # (b, t, r)\n"
KROPE = "        k_rope = apply_rope(kv_a[..., r:], s, self.rope_base)  # (b, t, d_r)\n"
QROPE = "        q_rope = apply_rope(q_rope, s, self.rope_base)  # (b, t, h, d_r)\n"
QSPLIT = "        q_nope, q_rope = q[..., :d_n], q[..., d_n:]\n"
KEY = "            k = torch.cat([k_nope, k_rope[:, :, None].expand(b, s + t, h, d_r)], dim=-1)\n"
SCALING = "        self.scaling = qk_head_dim ** -0.5\n"
MASK = ("        blocked = torch.ones(t, s + t, dtype=torch.bool, device=x.device)"
        ".triu(diagonal=s + 1)\n")
RETURN = "        return self.o_proj(o.reshape(b, t, h * d_v)), (c_kv, k_rope)\n"
KV_B = "            kv = self.kv_b_proj(c_kv).view(b, s + t, h, d_n + d_v)\n"
KV_SPLIT = "            k_nope, v = kv[..., :d_n], kv[..., d_n:]  # (b, s + t, h, d_n), (.., d_v)\n"
PAIRS = "    x1, x2 = x[..., 0::2], x[..., 1::2]\n"
PAIRS_OUT = "    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)\n"
INV_FREQ = "    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=x.device) / d)\n"
ROPE_DEF = "def apply_rope(x: torch.Tensor, start: int, base: float) -> torch.Tensor:\n"
W_VIEW = "        w = self.kv_b_proj.weight.view(h, d_n + d_v, r)\n"
W_SPLIT = "        w_uk, w_uv = w[:, :d_n], w[:, d_n:]  # (h, d_n, r), (h, d_v, r)\n"
ABS_SCORES = '            scores = (torch.einsum("bhtr,bsr->bhts", q_latent, c_kv)\n'
CAT = "            c_kv = torch.cat([cache[0], c_kv], dim=1)  # (b, s + t, r)\n"

MUTANTS = [
    Mutant("rope-on-latent", why="rotates the normalised latent as well as the rotary key.",
           edits=[(LATENT, LATENT.replace("self.kv_a_layernorm(kv_a[..., :r])",
                                          "apply_rope(self.kv_a_layernorm(kv_a[..., :r]), s, "
                                          "self.rope_base)"))]),
    Mutant("rope-on-nope", why="rotates whole d_qk-wide query and key heads, k_nope included "
                               "(keys rotated on the fly, the cache holding the raw key).",
           edits=[(KROPE, "        k_rope = kv_a[..., r:]\n"),
                  (QSPLIT, "        q = apply_rope(q, s, self.rope_base)\n" + QSPLIT),
                  (QROPE, ""),
                  (KEY, KEY.replace("torch.cat(", "apply_rope(torch.cat(").replace(
                      "dim=-1)", "dim=-1), 0, self.rope_base)"))]),
    Mutant("rope-key-not-shared", why="gives the rotary key to head 0 only, zeros to the others.",
           edits=[(KEY, KEY.replace("k_rope[:, :, None].expand(b, s + t, h, d_r)",
                                    "torch.cat([k_rope[:, :, None], k_rope.new_zeros(b, s + t, "
                                    "h - 1, d_r)], dim=2)"))]),
    Mutant("rope-position-offset", why="rotates the new tokens at 0 ... t-1, forgetting the cache.",
           edits=[(QROPE, QROPE.replace(", s,", ", 0,")), (KROPE, KROPE.replace(", s,", ", 0,"))]),
    Mutant("rope-pairs-mismatch", why="rotate-half pairs (i, i + d/2) instead of adjacent pairs.",
           edits=[(PAIRS, "    x1, x2 = x[..., : d // 2], x[..., d // 2:]\n"),
                  (PAIRS_OUT, "    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), "
                              "dim=-1)\n")]),
    Mutant("rope-wrong-frequency", why="computes the angles over d_qk instead of d_r.",
           edits=[(ROPE_DEF, ROPE_DEF.replace("base: float)", "base: float, width: int = 0)")),
                  (INV_FREQ, INV_FREQ.replace("/ d)", "/ (width or d))")),
                  (QROPE, QROPE.replace("self.rope_base)", "self.rope_base, d_n + d_r)")),
                  (KROPE, KROPE.replace("self.rope_base)", "self.rope_base, d_n + d_r)"))]),
    Mutant("rope-key-layout", why="caches k_rope de-interleaved, as Hugging Face's "
                                  "apply_rotary_pos_emb_interleave returns it.",
           edits=[(RETURN, RETURN.replace("(c_kv, k_rope)", "(c_kv, torch.cat([k_rope[..., 0::2], "
                                          "k_rope[..., 1::2]], dim=-1))"))]),
    Mutant("scale-wrong-dim", why="scales by 1/sqrt(d_n), the no-RoPE part only.",
           edits=[(SCALING, SCALING.replace("qk_head_dim", "qk_nope_head_dim"))]),
    Mutant("missing-scale", why="forgets the softmax scale.",
           edits=[(SCALING, "        self.scaling = 1.0\n")]),
    Mutant("absorption-wrong-transpose", why="views kv_b_proj.weight as (h, r, d_n + d_v).",
           edits=[(W_VIEW, W_VIEW.replace("d_n + d_v, r)", "r, d_n + d_v)")),
                  (W_SPLIT, "        w_uk, w_uv = w[..., :d_n].transpose(1, 2), "
                            "w[..., d_n:].transpose(1, 2)\n")]),
    Mutant("kv-b-split-order", why="splits kv_b_proj's output as all keys, then all values.",
           edits=[(KV_B, "            kv = self.kv_b_proj(c_kv)\n"),
                  (KV_SPLIT, "            k_nope = kv[..., :h * d_n].reshape(b, s + t, h, d_n)\n"
                             "            v = kv[..., h * d_n:].reshape(b, s + t, h, d_v)\n")]),
    Mutant("q-split-order", why="reads each query head as [rope, nope].",
           edits=[(QSPLIT, "        q_rope, q_nope = q[..., :d_r], q[..., d_r:]\n")]),
    Mutant("kv-a-split-order", why="takes the rotary key from the first d_r outputs.",
           edits=[(LATENT, LATENT.replace("kv_a[..., :r]", "kv_a[..., d_r:]")),
                  (KROPE, KROPE.replace("kv_a[..., r:]", "kv_a[..., :d_r]"))]),
    Mutant("latent-norm-misplaced", why="skips kv_a_layernorm.",
           edits=[(LATENT, LATENT.replace("self.kv_a_layernorm(kv_a[..., :r])", "kv_a[..., :r]"))]),
    Mutant("cache-holds-up-projected-kv", why="returns the per-head keys and values as the cache "
                                              "(naive path), as transformers 4.x did.",
           edits=[(RETURN, RETURN.replace("(c_kv, k_rope)",
                                          "((c_kv, k_rope) if absorbed else (k, v))"))]),
    Mutant("cache-holds-unrotated-rope-key",
           why="caches k_rope before RoPE and rotates the whole cached key on use (positions "
               "0 ... s+t-1): outputs right, cache shape right, cache values unrotated.",
           edits=[(KROPE, "        k_rope = kv_a[..., r:]  # (b, t, d_r), not rotated yet\n"),
                  (MASK, "        k_raw = k_rope  # what is cached\n"
                         "        k_rope = apply_rope(k_raw, 0, self.rope_base)  # rotated on use\n"
                         + MASK),
                  (RETURN, RETURN.replace("(c_kv, k_rope)", "(c_kv, k_raw)"))]),
    Mutant("absorbed-path-up-projects", why="with absorbed=True, up-projects every cached latent.",
           edits=[("        if absorbed:\n", "        if False:\n")]),
    Mutant("latent-copied-per-head", why="torch.matmul against c_kv[:, None], which copies the "
                                         "latent once per head when b > 1.",
           edits=[(ABS_SCORES, "            scores = (q_latent @ c_kv[:, None].transpose(-2, -1)\n")]),
    Mutant("causal-mask-offset", why="aligns the causal mask top-left (diagonal=1).",
           edits=[(MASK, MASK.replace("diagonal=s + 1", "diagonal=1"))]),
    Mutant("causal-mask-missing", why="no causal mask at all.",
           edits=[(MASK, "        blocked = torch.zeros(t, s + t, dtype=torch.bool, "
                         "device=x.device)\n")]),
    Mutant("cache-modified-in-place", why="scales the cached latent in place by one.",
           edits=[(CAT, "            cache[0].mul_(1.0)\n" + CAT)]),
]
