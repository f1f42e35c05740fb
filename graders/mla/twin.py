"""Kata 23's twin: one call of multi-head latent attention as a function of its weights, in
float64, with one switch per catalogued mistake (the cache of s positions is rebuilt from
the whole prefix x, so a call is fully described by (state, cfg, x, s)).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from graders.core.inputs import generator
from graders.twins.attention import dense
from graders.twins.rope import inv_frequencies


@dataclass(frozen=True)
class Config:
    hidden_size: int
    num_heads: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None
    rope_base: float = 10000.0
    eps: float = 1e-6

    @property
    def args(self) -> tuple:
        return (self.hidden_size, self.num_heads, self.kv_lora_rank, self.qk_nope_head_dim,
                self.qk_rope_head_dim, self.v_head_dim)

    @property
    def kwargs(self) -> dict:
        return {"q_lora_rank": self.q_lora_rank, "rope_base": self.rope_base, "eps": self.eps}

    def name(self) -> str:
        extra = "" if self.q_lora_rank is None else f", q_lora_rank={self.q_lora_rank}"
        if self.eps != 1e-6:
            extra += f", eps={self.eps:g}"
        return f"MultiHeadLatentAttention{self.args}"[:-1] + extra + ")"


def shapes(cfg: Config) -> dict[str, tuple[int, ...]]:
    h, r = cfg.num_heads, cfg.kv_lora_rank
    d_qk = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim
    out: dict[str, tuple[int, ...]] = {}
    if cfg.q_lora_rank is None:
        out["q_proj.weight"] = (h * d_qk, cfg.hidden_size)
    else:
        out["q_a_proj.weight"] = (cfg.q_lora_rank, cfg.hidden_size)
        out["q_a_layernorm.weight"] = (cfg.q_lora_rank,)
        out["q_b_proj.weight"] = (h * d_qk, cfg.q_lora_rank)
    out["kv_a_proj_with_mqa.weight"] = (r + cfg.qk_rope_head_dim, cfg.hidden_size)
    out["kv_a_layernorm.weight"] = (r,)
    out["kv_b_proj.weight"] = (h * (cfg.qk_nope_head_dim + cfg.v_head_dim), r)
    out["o_proj.weight"] = (cfg.hidden_size, h * cfg.v_head_dim)
    return out


def random_state(cfg: Config, seed: int, dtype=torch.float64, scale: float = 0.3
                 ) -> dict[str, Tensor]:
    """Random weights of scale 0.3 (norm gains 1 + 0.3 noise, so a misplaced norm shows)."""
    g = generator(seed)
    state = {}
    for name, shape in shapes(cfg).items():
        w = torch.randn(shape, generator=g, dtype=torch.float64) * scale
        state[name] = (w + 1.0 if len(shape) == 1 else w).to(dtype)
    return state


def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope(x: Tensor, start: int, base: float, pairs: str = "adjacent", width: int | None = None
         ) -> Tensor:
    """x (b, t, ..., d) rotated at positions start ... start+t-1 (differentiable, float64);
    ``pairs`` "adjacent" (2i, 2i+1) or "half" (i, i + d/2); ``width``: the dimension the
    frequencies are computed over (d when right)."""
    t, d = x.shape[1], x.shape[-1]
    inv = inv_frequencies(width or d, base)[: d // 2]
    angles = torch.arange(start, start + t, dtype=torch.float64)[:, None] * inv  # (t, d/2)
    angles = angles.view(t, *([1] * (x.dim() - 3)), d // 2).to(x.device)
    cos, sin = angles.cos(), angles.sin()
    if pairs == "adjacent":
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def deinterleave(k: Tensor) -> Tensor:
    return torch.cat([k[..., 0::2], k[..., 1::2]], dim=-1)


def forward(state: dict[str, Tensor], cfg: Config, x: Tensor, s: int, absorbed: bool = False,
            mistake: str = "") -> tuple[Tensor, Tensor, Tensor]:
    """Positions s ... n-1 of x (b, n, E) with positions 0 ... s-1 cached:
    (output (b, n-s, E), c_kv (b, n, r), k_rope (b, n, d_r)), float64.

    mistake: one of MISTAKE_OF's switches (its variants separated by ':')."""
    st = {k: v.to(torch.float64) for k, v in state.items()}
    x = x.to(torch.float64)
    b, n, _ = x.shape
    t = n - s
    h, r = cfg.num_heads, cfg.kv_lora_rank
    d_n, d_r, d_v = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim
    d_qk = d_n + d_r
    base, eps = cfg.rope_base, cfg.eps
    pairs = "half" if mistake == "rope-pairs" else "adjacent"
    width = {"freq-dqk": d_qk, "freq-hidden": cfg.hidden_size}.get(mistake)
    q_start = 0 if mistake == "rope-offset" else s

    xq = x[:, s:]
    if cfg.q_lora_rank is None:
        q = xq @ st["q_proj.weight"].T
    else:
        qa = xq @ st["q_a_proj.weight"].T
        if mistake != "q-norm-skipped":
            qa = rms_norm(qa, st["q_a_layernorm.weight"], eps)
        q = qa @ st["q_b_proj.weight"].T
    if mistake == "q-split-all-nope":
        q_nope = q[..., :h * d_n].reshape(b, t, h, d_n)
        q_rope = q[..., h * d_n:].reshape(b, t, h, d_r)
    else:
        q = q.view(b, t, h, d_qk)
        if mistake == "q-rope-first":
            q_rope, q_nope = q[..., :d_r], q[..., d_r:]
        else:
            q_nope, q_rope = q[..., :d_n], q[..., d_n:]

    kv_a = x @ st["kv_a_proj_with_mqa.weight"].T  # (b, n, r + d_r)
    if mistake == "kv-a-rope-first":
        latent, rot = kv_a[..., d_r:], kv_a[..., :d_r]
    else:
        latent, rot = kv_a[..., :r], kv_a[..., r:]
    # positions of each token: 0 ... n-1, or each call's tokens from 0 (rope-offset)
    if mistake == "rope-on-all":
        kv_a = rope(kv_a, 0, base)
        latent, rot = kv_a[..., :r], kv_a[..., r:]
    c_kv = latent if mistake == "kv-norm-skipped" else rms_norm(latent, st["kv_a_layernorm.weight"], eps)
    if mistake == "rope-on-latent":
        c_kv = rope(c_kv, 0, base)
    if mistake == "norm-on-rope-too":
        normed = rms_norm(kv_a, torch.cat([st["kv_a_layernorm.weight"], torch.ones(d_r, dtype=x.dtype)]), eps)
        c_kv, rot = normed[..., :r], normed[..., r:]
    if mistake == "rope-offset":
        k_rope = torch.cat([rope(rot[:, :s], 0, base), rope(rot[:, s:], 0, base)], dim=1) \
            if s else rope(rot, 0, base)
    elif mistake == "rope-on-all":
        k_rope = rot
    else:
        k_rope = rope(rot, 0, base, pairs, width)
    q_rope = rope(q_rope, q_start, base, pairs, width)

    w = st["kv_b_proj.weight"]
    kv = c_kv @ w.T  # (b, n, h (d_n + d_v))
    if mistake == "kv-b-all-keys-first":
        k_nope = kv[..., :h * d_n].reshape(b, n, h, d_n)
        v = kv[..., h * d_n:].reshape(b, n, h, d_v)
    else:
        kv = kv.view(b, n, h, d_n + d_v)
        k_nope, v = kv[..., :d_n], kv[..., d_n:]
    if absorbed and mistake.startswith("absorb-"):
        if mistake == "absorb-view-r-first":
            wv = w.view(h, r, d_n + d_v)
            w_uk, w_uv = wv[..., :d_n].transpose(1, 2), wv[..., d_n:].transpose(1, 2)
        else:
            wv = w.view(h, d_n + d_v, r)
            w_uk, w_uv = wv[:, :d_n], wv[:, d_n:]
            if mistake == "absorb-uk-transposed":
                w_uk = w_uk.transpose(1, 2)
            if mistake == "absorb-uv-transposed":
                w_uv = w_uv.transpose(1, 2)
        k_nope = torch.einsum("hnr,bsr->bshn", w_uk, c_kv)
        v = torch.einsum("hvr,bsr->bshv", w_uv, c_kv)

    k_r = k_rope[:, :, None].expand(b, n, h, d_r)
    if mistake == "rope-key-one-head":
        k_r = torch.cat([k_r[:, :, :1], torch.zeros_like(k_r[:, :, 1:])], dim=2)
    if mistake == "rope-on-nope":
        q_all = rope(q.view(b, t, h, d_qk), s, base)  # RoPE over whole d_qk-wide heads
        k_all = rope(torch.cat([k_nope, rot[:, :, None].expand(b, n, h, d_r)], -1), 0, base)
    else:
        q_all = torch.cat([q_nope, q_rope], -1)
        k_all = torch.cat([k_nope, k_r], -1)
    scale = {"scale-dn": d_n, "scale-dv": d_v, "scale-latent": r + d_r, "no-scale": 1}.get(
        mistake, d_qk) ** -0.5
    o = dense(q_all.transpose(1, 2), k_all.transpose(1, 2), v.transpose(1, 2), scale=scale,
              causal=mistake != "mask-none", offset=0 if mistake == "mask-top-left" else s)
    o = o.transpose(1, 2).reshape(b, t, h * d_v)
    out = o @ st["o_proj.weight"].T
    if mistake == "kv-norm-before-cache":
        c_kv = latent
    if mistake == "rope-key-layout":
        k_rope = deinterleave(k_rope)
    if mistake == "rope-key-unrotated":  # cached as kv_a_proj_with_mqa made it, rotated on use
        k_rope = rot
    return out.to(x.device), c_kv, k_rope


# The twin's switch -> the slug it reproduces; which switches change the output (rather than
# only the cache) and which only the absorbed path can make.
MISTAKE_OF: dict[str, str] = {
    "rope-on-latent": "rope-on-latent",
    "rope-on-all": "rope-on-latent",
    "rope-on-nope": "rope-on-nope",
    "rope-key-one-head": "rope-key-not-shared",
    "rope-offset": "rope-position-offset",
    "rope-pairs": "rope-pairs-mismatch",
    "freq-dqk": "rope-wrong-frequency",
    "freq-hidden": "rope-wrong-frequency",
    "scale-dn": "scale-wrong-dim",
    "scale-dv": "scale-wrong-dim",
    "scale-latent": "scale-wrong-dim",
    "no-scale": "missing-scale",
    "absorb-view-r-first": "absorption-wrong-transpose",
    "absorb-uk-transposed": "absorption-wrong-transpose",
    "absorb-uv-transposed": "absorption-wrong-transpose",
    "kv-b-all-keys-first": "kv-b-split-order",
    "q-rope-first": "q-split-order",
    "q-split-all-nope": "q-split-order",
    "kv-a-rope-first": "kv-a-split-order",
    "kv-norm-skipped": "latent-norm-misplaced",
    "norm-on-rope-too": "latent-norm-misplaced",
    "q-norm-skipped": "latent-norm-misplaced",
    "mask-top-left": "causal-mask-offset",
    "mask-none": "causal-mask-missing",
}
# Switches that change only the returned cache, not the output.
CACHE_ONLY = {"kv-norm-before-cache": "latent-norm-misplaced",
              "rope-key-layout": "rope-key-layout",
              "rope-key-unrotated": "cache-holds-unrotated-rope-key"}
