"""Kata 20 in the style of transformers 4.x's MixtralSparseMoeBlock: the router's softmax in
float32, a one-hot expert mask, index_add_, and Hugging Face's load_balancing_loss_func
normalisation (f counted per token: top_k times the contract's value, also accepted)."""

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
        self.act_fn = nn.SiLU()

    def forward(self, hidden_states):
        return self.w2(self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states))


class SparseMoeBlock(nn.Module):
    def __init__(self, dim, hidden_dim, num_experts, top_k=2, norm_topk_prob=True,
                 capacity_factor=None):
        super().__init__()
        self.hidden_dim, self.num_experts, self.top_k = dim, num_experts, top_k
        self.norm_topk_prob, self.capacity_factor = norm_topk_prob, capacity_factor
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden_dim) for _ in range(num_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        capacity = None
        if self.capacity_factor is not None:
            capacity = math.ceil(hidden_states.shape[0] * self.top_k / self.num_experts
                                 * self.capacity_factor)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            order = torch.argsort(top_x, stable=True)  # token order, for the capacity
            idx, top_x = idx[order], top_x[order]
            if capacity is not None:
                idx, top_x = idx[:capacity], top_x[:capacity]
            if top_x.numel() == 0:
                continue
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = (self.experts[expert_idx](current_state)
                                     * routing_weights[top_x, idx, None])
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim), router_logits


def load_balancing_loss(router_logits, top_k):
    logits = router_logits.reshape(-1, router_logits.shape[-1])
    num_experts = logits.shape[-1]
    routing_weights = torch.softmax(logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.to(routing_weights.dtype), dim=0)  # (k, N)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts


def router_z_loss(router_logits):
    logits = router_logits.reshape(-1, router_logits.shape[-1])
    z = torch.logsumexp(logits, dim=-1)
    return (z * z).sum() / logits.shape[0]
