"""Kata 20 with Hugging Face's load-balancing loss as transformers writes it (float32 counts,
f per token: top_k times the contract's value, which the README accepts); the layer as the
reference's."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Expert(nn.Module):
    """One SwiGLU expert: w2(silu(w1(x)) * w3(x)); w1 is the gate (under SiLU), w3 the up
    projection, w2 the down projection. x (..., dim) -> (..., dim)."""

    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    """A router (``gate``) and ``num_experts`` experts; each token runs through its ``top_k``
    experts only, their outputs summed with the router's weights."""

    def __init__(self, dim: int, hidden_dim: int, num_experts: int, top_k: int = 2,
                 norm_topk_prob: bool = True, capacity_factor: float | None = None):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.norm_topk_prob, self.capacity_factor = norm_topk_prob, capacity_factor
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(dim, hidden_dim) for _ in range(num_experts))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x (b, n, dim) -> (output (b, n, dim), router_logits (b*n, num_experts))."""
        b, n, dim = x.shape
        tokens = x.reshape(b * n, dim)
        router_logits = self.gate(tokens)
        probs = torch.softmax(router_logits, dim=-1)
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)  # (T, k) each
        if self.norm_topk_prob:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        output = torch.zeros_like(tokens)
        capacity = (None if self.capacity_factor is None else
                    math.ceil(b * n * self.top_k / self.num_experts * self.capacity_factor))
        for e, expert in enumerate(self.experts):
            token_ids, slot = torch.where(chosen == e)  # token order: rows ascend
            if capacity is not None:
                token_ids, slot = token_ids[:capacity], slot[:capacity]
            if token_ids.numel() == 0:
                continue
            out = expert(tokens[token_ids])
            output.index_add_(0, token_ids, out * weights[token_ids, slot, None])
        return output.reshape(b, n, dim), router_logits


def load_balancing_loss(router_logits: Tensor, top_k: int) -> Tensor:
    """Hugging Face's load_balancing_loss_func (transformers' Mixtral modeling file, also
    DeepSeek's ports): a one-hot (T, top_k, N) mask of the chosen experts, averaged over the
    tokens *in float32* (``.float()``), times the mean probabilities, summed, times N. That is
    top_k times the contract's value, with f_i float32-precise (a few 1e-8 off)."""
    gate_logits = router_logits.reshape(-1, router_logits.shape[-1])
    num_experts = gate_logits.shape[-1]
    routing_weights = torch.nn.functional.softmax(gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = torch.nn.functional.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)  # (top_k, N), float32
    router_prob_per_expert = torch.mean(routing_weights, dim=0)  # (N,)
    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts


def router_z_loss(router_logits: Tensor) -> Tensor:
    """ST-MoE's z-loss: the mean over tokens of logsumexp(logits)^2."""
    logits = router_logits.reshape(-1, router_logits.shape[-1])
    return torch.logsumexp(logits, dim=-1).square().mean()
