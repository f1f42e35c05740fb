"""Kata 19's twin: the forward and the gradients in float64 (PyTorch's attention and
autograd), and the backward by hand with one switch per catalogued mistake (the suspects
it yields).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import Tensor

from graders.core.compare import lse_dtype
from graders.core.mistakes import Suspect


NEG_INF = float("-inf")
GRADS = ("dq", "dk", "dv")
# Block sizes a learner's own tiling may use where the grader passes none.
USUAL_BLOCKS = (16, 32, 64)


# --------------------------------------------------------------------------- references


def blocked(n: int, m: int, device, causal: bool, tiles: int | None = None) -> Tensor:
    """(n, m) bool, True where query i may not see key j: causal blocks j > i; with
    ``tiles`` B, keys in query i's own B x B diagonal tile stay visible (a tile on the
    diagonal left unmasked)."""
    i = torch.arange(n, device=device)[:, None]
    j = torch.arange(m, device=device)[None, :]
    hidden = (j > i) if causal else torch.zeros(n, m, dtype=torch.bool, device=device)
    if tiles is not None:
        hidden = hidden & (j // tiles != i // tiles)
    return hidden


def scores_of(q: Tensor, k: Tensor, causal: bool, scale: float | None = None,
              tiles: int | None = None) -> Tensor:
    """(b, h, n, m) scaled scores, -inf where blocked."""
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale
    return s.masked_fill(blocked(q.size(-2), k.size(-2), q.device, causal, tiles), NEG_INF)


def expected_forward(q: Tensor, k: Tensor, v: Tensor, causal: bool, lse: str = "ok"
                     ) -> tuple[Tensor, Tensor]:
    """(out, lse) from PyTorch in float64, out cast to q's dtype, lse to float32 for half
    inputs (FlashAttention's) and to q's dtype otherwise; ``lse`` names a lse-wrong
    variant: "log-sum" (max not added back), "max", "log2", "unscaled", "all-keys"."""
    q64, k64, v64 = (t.detach().double() for t in (q, k, v))
    out = F.scaled_dot_product_attention(q64, k64, v64, is_causal=causal)
    s = scores_of(q64, k64, causal)
    value = {
        "ok": lambda: torch.logsumexp(s, -1),
        "log-sum": lambda: torch.logsumexp(s, -1) - s.amax(-1),
        "max": lambda: s.amax(-1),
        "log2": lambda: torch.logsumexp(s, -1) / math.log(2),
        "unscaled": lambda: torch.logsumexp(scores_of(q64, k64, causal, scale=1.0), -1),
        "all-keys": lambda: torch.logsumexp(scores_of(q64, k64, False), -1),
    }[lse]()
    return out.to(q.dtype), value.to(lse_dtype(q.dtype))


def expected_grads(q: Tensor, k: Tensor, v: Tensor, grad_out: Tensor, causal: bool
                   ) -> tuple[Tensor, Tensor, Tensor]:
    """(dq, dk, dv) by autograd through F.scaled_dot_product_attention, float64, cast."""
    leaves = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
    # A scalar loss: passing grad_outputs makes autograd import sympy (a second import torch).
    grads = torch.autograd.grad((out * grad_out.detach().double()).sum(), leaves)
    return tuple(g.to(q.dtype) for g in grads)


def by_hand(q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, grad_out: Tensor,
            causal: bool, *, p: str = "lse", d: str = "o", tiles: int | None = None,
            block: int | None = None, scale: float | None = None, dq_scaled: bool = True,
            dk_scaled: bool = True, dk: str = "ok", dv: str = "ok") -> tuple[Tensor, ...]:
    """The backward by the formulas in float64, cast to q's dtype, with the mistakes' switches.

    ``p``: "lse" P = exp(S - lse), "softmax" a fresh softmax, "exp" P = exp(S) and "max"
    P = exp(S - rowmax(S)) (lse-not-subtracted: unnormalised). ``d``: "o" rowsum(dO ∘ O), "p" rowsum(P ∘ dP), "zero" (dS = P ∘ dP:
    softmax-jacobian-missing-d), "dp" rowsum(dP), "do" rowsum(dO), "block" rowsum(P ∘ dP)
    over the key block of ``block`` keys only (d-from-wrong-terms). ``tiles`` B: the
    diagonal B x B tiles left unmasked; with causal False as well as ``p`` "lse", the
    causal mask forgotten (causal-mask-missing-in-backward). ``scale`` 1.0: the recomputed
    scores unscaled (missing-scale). ``dq_scaled`` / ``dk_scaled`` False: missing-scale-in-grad.
    ``dk`` "dS": s dS Q (dk-not-transposed, n == m); ``dv`` "P": P dO (dv-not-transposed).
    """
    q64, k64, v64, o64, lse64, do64 = (t.detach().double() for t in (q, k, v, out, lse, grad_out))
    s = 1 / math.sqrt(q.size(-1))
    scores = scores_of(q64, k64, causal, scale, tiles)
    probs = {"lse": lambda: torch.exp(scores - lse64[..., None]),
             "softmax": lambda: torch.softmax(scores, -1),
             "exp": lambda: torch.exp(scores),
             "max": lambda: torch.exp(scores - scores.amax(-1, keepdim=True))}[p]()
    dp = do64 @ v64.transpose(-2, -1)
    if d in ("block", "dp-block"):
        keys = torch.arange(k.size(-2))
        same = (keys[:, None] // block == keys[None, :] // block).double()  # (m, m)
        delta = (probs * dp if d == "block" else dp) @ same  # each key's own block's row sum
    elif d == "o-keys":  # rowsum(dO ∘ O) without keepdim: D_j broadcast along the keys
        delta = (do64 * o64).sum(-1)[..., None, :]
    else:
        delta = {"o": lambda: (do64 * o64).sum(-1, keepdim=True),
                 "p": lambda: (probs * dp).sum(-1, keepdim=True),
                 "zero": lambda: torch.zeros(()),
                 "dp": lambda: dp.sum(-1, keepdim=True),
                 "do": lambda: do64.sum(-1, keepdim=True)}[d]()
    ds = probs * (dp - delta)
    dq = ds @ k64 * (s if dq_scaled else 1)
    dk_ = (ds if dk == "dS" else ds.transpose(-2, -1)) @ q64 * (s if dk_scaled else 1)
    dv_ = (probs if dv == "P" else probs.transpose(-2, -1)) @ do64
    return tuple(g.to(q.dtype) for g in (dq, dk_, dv_))


def mistake_variants(causal: bool, m: int, block_size: int | None,
                     k_equals_q: bool = False) -> list[tuple[str, dict]]:
    """(slug, by_hand switches) for every catalogued backward mistake on this input
    (``k_equals_q``: n == m, where a D broadcast along the keys still fits)."""
    blocks = sorted({b for b in (block_size, *USUAL_BLOCKS) if b is not None and b < m})
    either_d = [{"d": "o"}, {"d": "p"}]
    variants: list[tuple[str, dict]] = [("softmax-jacobian-missing-d", {"d": "zero"})]
    for extra in either_d:
        variants += [
            ("missing-scale-in-grad", {"dq_scaled": False, **extra}),
            ("missing-scale-in-grad", {"dk_scaled": False, **extra}),
            ("missing-scale-in-grad", {"dq_scaled": False, "dk_scaled": False, **extra}),
            ("dk-not-transposed", {"dk": "dS", **extra}),
            ("dv-not-transposed", {"dv": "P", **extra}),
            ("lse-not-subtracted", {"p": "exp", **extra}),
            ("lse-not-subtracted", {"p": "max", **extra}),
            ("missing-scale", {"scale": 1.0, **extra}),
        ]
        if causal:
            variants += [("causal-mask-missing-in-backward", {"tiles": m, **extra}),
                         ("causal-mask-missing-in-backward", {"tiles": m, "p": "softmax", **extra})]
            variants += [("causal-mask-missing-in-backward", {"tiles": b, **extra}) for b in blocks]
    variants += [("d-from-wrong-terms", {"d": d}) for d in ("dp", "do")]
    if k_equals_q:
        variants.append(("d-from-wrong-terms", {"d": "o-keys"}))
    variants += [("d-from-wrong-terms", {"d": d, "block": b}) for b in blocks
                 for d in ("block", "dp-block")]
    return variants


def grad_suspects(q, k, v, out, lse, grad_out, causal: bool, block_size: int | None,
                  lse_wrong: bool = False) -> list[list[Suspect]]:
    """For dq, dk and dv: what each catalogued mistake would give on this input. With
    ``lse_wrong``, also the backward run from the forward's lse-wrong variants."""
    variants = mistake_variants(causal, k.size(-2), block_size, q.size(-2) == k.size(-2))

    @functools.cache
    def run(i: int) -> tuple[Tensor, ...]:
        return by_hand(q, k, v, out, lse, grad_out, causal, **variants[i][1])

    def predict(run_one, index: int):
        return lambda: run_one()[index]

    suspects: list[list[Suspect]] = [[], [], []]
    for index in range(3):
        for i, (slug, _switches) in enumerate(variants):
            suspects[index].append(Suspect(slug, predict=predict(functools.partial(run, i), index)))
    if lse_wrong:
        for kind in ("log-sum", "max", "log2", "unscaled", "all-keys"):
            for d in ("o", "p"):
                wrong = functools.cache(lambda kind=kind, d=d: by_hand(
                    q, k, v, out, expected_forward(q, k, v, causal, kind)[1], grad_out, causal, d=d))
                for index in range(3):
                    suspects[index].append(Suspect("lse-wrong", predict=predict(wrong, index)))
    return suspects


def forward_suspects(q, k, v, causal: bool) -> tuple[list[Suspect], list[Suspect]]:
    """What missing-scale and lse-wrong give: for out, for lse."""
    def unscaled():
        return (torch.softmax(scores_of(q.double(), k.double(), causal, 1.0), -1)
                @ v.double()).to(q.dtype)

    out_suspects = [Suspect("missing-scale", predict=unscaled)]
    # lse is compared once out is right: an unscaled lse alone is lse-wrong.
    lse_suspects = [Suspect("lse-wrong", predict=functools.partial(
        lambda kind: expected_forward(q, k, v, causal, kind)[1], kind))
        for kind in ("log-sum", "max", "log2", "unscaled", "all-keys")]
    return out_suspects, lse_suspects
