"""Kata 20's twin: the sparse MoE layer and its two losses as functions of the weights, in
float64, with one switch per catalogued mistake that changes a number (the dispatch
mistakes — dense compute, an expert called once per token — change none: the checks see them
through hooks on the experts).

``state``: the layer's state dict (``gate.weight`` (N, dim), ``experts.{i}.w1.weight``
(hidden, dim), ``w2`` (dim, hidden), ``w3`` (hidden, dim)); ``x`` (b, n, dim).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from graders.twins import llama

GATE_SWAPPED = llama.Variant(gate_swapped=True)


@dataclass(frozen=True)
class Config:
    dim: int
    hidden_dim: int
    num_experts: int
    top_k: int = 2
    norm_topk_prob: bool = True
    capacity_factor: float | None = None

    def name(self) -> str:
        extra = "" if self.norm_topk_prob else ", norm_topk_prob=False"
        if self.capacity_factor is not None:
            extra += f", capacity_factor={self.capacity_factor:g}"
        return (f"SparseMoeBlock({self.dim}, {self.hidden_dim}, {self.num_experts}, "
                f"top_k={self.top_k}{extra})")


def random_state(cfg: Config, seed: int, scale: float = 0.3) -> dict[str, Tensor]:
    g = torch.Generator().manual_seed(seed)

    def w(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * scale

    state = {"gate.weight": w(cfg.num_experts, cfg.dim) * 3}
    for i in range(cfg.num_experts):
        state[f"experts.{i}.w1.weight"] = w(cfg.hidden_dim, cfg.dim)
        state[f"experts.{i}.w2.weight"] = w(cfg.dim, cfg.hidden_dim)
        state[f"experts.{i}.w3.weight"] = w(cfg.hidden_dim, cfg.dim)
    return state


def expert(state: dict[str, Tensor], i: int, rows: Tensor, mistake: str | None = None) -> Tensor:
    """Expert i on ``rows`` (..., dim): w2(silu(w1 x) * w3 x), kata 15's SwiGLU in Mixtral's
    names."""
    variant = GATE_SWAPPED if mistake == "swiglu-gate-swapped" else llama.RIGHT
    return llama.swiglu(rows, state, variant, prefix=f"experts.{i}.", names=llama.MIXTRAL_EXPERT)


def capacity_of(cfg: Config, tokens: int, mistake: str | None = None) -> int | None:
    if cfg.capacity_factor is None:
        return None
    if mistake == "capacity-formula-wrong:floor":
        return math.floor(tokens * cfg.top_k / cfg.num_experts * cfg.capacity_factor)
    if mistake == "capacity-formula-wrong:tokens":
        return math.ceil(tokens / cfg.num_experts * cfg.capacity_factor)
    return math.ceil(tokens * cfg.top_k / cfg.num_experts * cfg.capacity_factor)


def routing(cfg: Config, logits: Tensor, mistake: str | None = None) -> tuple[Tensor, Tensor]:
    """(weights (T, k), chosen experts (T, k)) from the router's logits (T, N)."""
    if mistake == "router-softmax-missing":  # top-k of the raw logits, used as weights
        probs = logits
    else:
        probs = torch.softmax(logits, dim=0 if mistake == "softmax-wrong-dim" else -1)
    weights, chosen = torch.topk(probs, cfg.top_k, dim=-1)
    renormalise = cfg.norm_topk_prob != (mistake == "topk-renormalisation-wrong")
    if mistake == "softmax-twice":
        weights = torch.softmax(weights, dim=-1)
    elif renormalise:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    if mistake == "routing-weights-not-applied:sum":
        weights = torch.ones_like(weights)
    elif mistake == "routing-weights-not-applied:mean":
        weights = torch.full_like(weights, 1 / cfg.top_k)
    return weights, chosen


def kept_assignments(cfg: Config, chosen: Tensor, b: int, mistake: str | None = None) -> Tensor:
    """A (T, k) bool: which of each token's assignments an expert keeps under capacity."""
    tokens = chosen.shape[0]
    kept = torch.ones_like(chosen, dtype=torch.bool)
    if cfg.capacity_factor is None:
        return kept
    per_row = mistake == "capacity-formula-wrong:per-row"
    capacity = capacity_of(cfg, tokens // b if per_row else tokens, mistake)
    kept[:] = False
    groups = [range(r * (tokens // b), (r + 1) * (tokens // b)) for r in range(b)] if per_row \
        else [range(tokens)]
    for e in range(cfg.num_experts):
        for group in groups:
            if mistake == "capacity-priority-wrong:first-choices-first":
                order = [(t, s) for s in range(cfg.top_k) for t in group if chosen[t, s] == e]
            else:
                order = [(t, s) for t in group for s in range(cfg.top_k) if chosen[t, s] == e]
            if mistake == "capacity-priority-wrong:last":
                order = order[::-1]
            for t, s in order[:capacity]:
                kept[t, s] = True
    return kept


def moe(cfg: Config, state: dict[str, Tensor], x: Tensor, mistake: str | None = None
        ) -> tuple[Tensor, Tensor]:
    """(output (b, n, dim), router_logits (T, N))."""
    b, n, dim = x.shape
    tokens = x.reshape(b * n, dim)
    logits = tokens @ state["gate.weight"].T
    weights, chosen = routing(cfg, logits, mistake)
    if mistake == "capacity-priority-wrong:highest-weights":
        kept = _kept_by_weight(cfg, weights, chosen)
    else:
        kept = kept_assignments(cfg, chosen, b, mistake)
    if mistake == "dropped-weights-renormalised" and cfg.capacity_factor is not None:
        masked = torch.where(kept, weights, torch.zeros_like(weights))
        total = masked.sum(dim=-1, keepdim=True)
        weights = torch.where(total > 0, masked / total.clamp_min(1e-30), masked)
    output = torch.zeros_like(tokens)
    pairs = [(e, s) for e in range(cfg.num_experts) for s in range(cfg.top_k)]
    if mistake == "combine-overwrites:slots":  # slot by slot: the last slot's expert wins
        pairs = sorted(pairs, key=lambda pair: (pair[1], pair[0]))
    for e, s in pairs:
        rows = torch.nonzero((chosen[:, s] == e) & kept[:, s]).flatten()
        if rows.numel() == 0:
            continue
        out = expert(state, e, tokens[rows], mistake) * weights[rows, s, None]
        if slug(mistake or "") == "combine-overwrites":
            output = output.index_copy(0, rows, out)
        else:
            output = output.index_add(0, rows, out)
    if mistake == "dropped-token-passthrough":
        dropped = ~kept.any(dim=-1)
        output = torch.where(dropped[:, None], tokens, output)
    return output.reshape(b, n, dim), logits


def _kept_by_weight(cfg: Config, weights: Tensor, chosen: Tensor) -> Tensor:
    """Megatron-LM's drop_policy="probs": each expert keeps its C highest-weighted assignments."""
    capacity = capacity_of(cfg, chosen.shape[0])
    kept = torch.zeros_like(chosen, dtype=torch.bool)
    for e in range(cfg.num_experts):
        where = torch.nonzero(chosen == e)
        if where.numel() == 0:
            continue
        order = torch.argsort(weights[where[:, 0], where[:, 1]], descending=True)[:capacity]
        for t, s in where[order].tolist():
            kept[t, s] = True
    return kept


def expected_rows(cfg: Config, x: Tensor, state: dict[str, Tensor]) -> list[list[int]]:
    """For each expert, the tokens (row numbers of x.reshape(T, dim)) routed to it and kept."""
    b, n, dim = x.shape
    logits = x.reshape(b * n, dim) @ state["gate.weight"].T
    _, chosen = routing(cfg, logits)
    kept = kept_assignments(cfg, chosen, b)
    return [sorted(int(t) for t, s in torch.nonzero((chosen == e) & kept).tolist())
            for e in range(cfg.num_experts)]


def top_k_margin(cfg: Config, logits: Tensor) -> float:
    """The smallest gap between each token's top_k-th and (top_k+1)-th probability."""
    if cfg.top_k == cfg.num_experts:
        return 1.0
    probs = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True).values
    return float((probs[:, cfg.top_k - 1] - probs[:, cfg.top_k]).min())


def load_balancing_loss(logits: Tensor, top_k: int, mistake: str | None = None) -> Tensor:
    """N * sum_i f_i P_i over the (..., N) logits: a 0-d tensor. f_i (N,) is the fraction of
    the T·top_k assignments going to expert i, P_i (N,) the mean router probability."""
    logits = logits.reshape(-1, logits.shape[-1])
    tokens, experts = logits.shape
    probs = torch.softmax(logits, dim=-1)
    chosen = torch.topk(probs, top_k, dim=-1).indices
    f = torch.zeros(experts, dtype=probs.dtype).index_add(
        0, chosen.reshape(-1), torch.ones(chosen.numel(), dtype=probs.dtype)) / (tokens * top_k)
    if mistake == "aux-loss-f-wrong:soft":  # f_i = mean probability (no counts at all)
        f = probs.mean(dim=0)
    elif mistake == "aux-loss-f-wrong:argmax":  # f_i from each token's first choice alone
        first = probs.argmax(dim=-1)
        f = torch.zeros(experts, dtype=probs.dtype).index_add(
            0, first, torch.ones(tokens, dtype=probs.dtype)) / tokens
    p = probs.mean(dim=0)
    if mistake == "aux-loss-from-topk-weights":
        top = torch.topk(probs, top_k, dim=-1).values
        top = top / top.sum(dim=-1, keepdim=True)
        p = torch.zeros_like(probs).scatter(1, chosen, top).mean(dim=0)
    if mistake == "aux-loss-no-gradient":
        p = p.detach()
    loss = experts * (f * p).sum()
    if mistake == "aux-loss-scale-wrong:no-n":
        loss = loss / experts
    elif mistake == "aux-loss-scale-wrong:per-token-no-n":
        loss = loss * top_k / experts
    elif mistake == "aux-loss-scale-wrong:squared-n":
        loss = loss * experts
    elif mistake == "aux-loss-scale-wrong:mean":  # (f * p).mean(): a mean over experts, no N
        loss = loss / experts ** 2
    return loss


def router_z_loss(logits: Tensor, mistake: str | None = None) -> Tensor:
    logits = logits.reshape(-1, logits.shape[-1])
    if mistake == "z-loss-wrong:logit-squares":
        return logits.square().mean()
    if mistake == "z-loss-wrong:max":
        return logits.max(dim=-1).values.square().mean()
    lse = torch.logsumexp(logits, dim=-1)
    if mistake == "z-loss-wrong:no-square":
        return lse.mean()
    if mistake == "z-loss-wrong:sum":
        return lse.square().sum()
    return lse.square().mean()


FORWARD_MISTAKES = [
    "router-softmax-missing", "topk-renormalisation-wrong", "softmax-twice", "softmax-wrong-dim",
    "routing-weights-not-applied:sum", "routing-weights-not-applied:mean", "combine-overwrites",
    "combine-overwrites:slots", "swiglu-gate-swapped",
]
CAPACITY_MISTAKES = [
    "capacity-formula-wrong:floor", "capacity-formula-wrong:tokens",
    "capacity-formula-wrong:per-row", "capacity-priority-wrong:last",
    "capacity-priority-wrong:highest-weights", "capacity-priority-wrong:first-choices-first",
    "dropped-weights-renormalised", "dropped-token-passthrough",
]
AUX_MISTAKES = ["aux-loss-from-topk-weights", "aux-loss-f-wrong:soft", "aux-loss-f-wrong:argmax",
                "aux-loss-scale-wrong:no-n", "aux-loss-scale-wrong:per-token-no-n",
                "aux-loss-scale-wrong:squared-n", "aux-loss-scale-wrong:mean"]
Z_MISTAKES = ["z-loss-wrong:logit-squares", "z-loss-wrong:max", "z-loss-wrong:no-square",
              "z-loss-wrong:sum"]


def slug(switch: str) -> str:
    """A switch's slug: the part before its variant (``capacity-formula-wrong:floor``)."""
    return switch.split(":")[0]
