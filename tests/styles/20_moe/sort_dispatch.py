"""Kata 20 with a sort-by-expert dispatch (argsort, bincount, split: the tokens grouped by
expert, as grouped-GEMM kernels take them) and Mistral's top-k-then-softmax routing."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class Expert(nn.Module):
    def __init__(self, dim, hidden_dim):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    def __init__(self, dim, hidden_dim, num_experts, top_k=2, norm_topk_prob=True,
                 capacity_factor=None):
        super().__init__()
        self.n, self.k, self.norm, self.factor = num_experts, top_k, norm_topk_prob, capacity_factor
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(dim, hidden_dim) for _ in range(num_experts))

    def forward(self, x):
        shape = x.shape
        tokens = x.flatten(0, 1)
        logits = self.gate(tokens)
        top_logits, chosen = logits.topk(self.k, dim=-1)
        if self.norm:
            weights = top_logits.softmax(dim=-1)  # = the top-k probabilities renormalised
        else:
            weights = logits.softmax(dim=-1).gather(1, chosen)
        flat_expert = chosen.flatten()  # assignment a = token a // k, slot a % k
        order = torch.argsort(flat_expert, stable=True)  # by expert, token order within
        counts = torch.bincount(flat_expert, minlength=self.n).tolist()
        out = torch.zeros_like(tokens)
        for e, assignments in enumerate(order.split(counts)):
            if self.factor is not None:
                assignments = assignments[:math.ceil(tokens.shape[0] * self.k / self.n * self.factor)]
            if assignments.numel() == 0:
                continue
            rows = assignments // self.k
            w = weights.flatten()[assignments]
            out.index_add_(0, rows, self.experts[e](tokens[rows]) * w[:, None])
        return out.view(shape), logits


def load_balancing_loss(router_logits, top_k):
    logits = router_logits.flatten(0, -2)
    n = logits.shape[-1]
    probs = logits.softmax(-1)
    f = torch.bincount(probs.topk(top_k, dim=-1).indices.flatten(), minlength=n) / (logits.shape[0] * top_k)
    return n * (f.to(probs.dtype) @ probs.mean(0))


def router_z_loss(router_logits):
    return torch.logsumexp(router_logits.flatten(0, -2), dim=-1).pow(2).mean()
