"""Kata 20: a sparse mixture-of-experts layer, in Mixtral's names.

Read README.md in this folder, fill in the two classes and two functions below, then run
    pytest katas/20_moe
"""

from __future__ import annotations

import math  # noqa: F401  (you will want math.ceil for the capacity)

import torch  # noqa: F401
import torch.nn.functional as F  # noqa: F401
from torch import Tensor, nn


class Expert(nn.Module):
    """One SwiGLU expert: w2(silu(w1(x)) * w3(x)).

    w1, w3: nn.Linear(dim, hidden_dim, bias=False) (w1 is the gate, under SiLU);
    w2: nn.Linear(hidden_dim, dim, bias=False). No other parameters.
    """

    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        raise NotImplementedError("see katas/20_moe/README.md")

    def forward(self, x: Tensor) -> Tensor:
        """x (..., dim) -> (..., dim)."""
        raise NotImplementedError("see katas/20_moe/README.md")


class SparseMoeBlock(nn.Module):
    """A router (gate: nn.Linear(dim, num_experts, bias=False)) and experts (an nn.ModuleList
    of num_experts Expert(dim, hidden_dim)); each token runs through its top_k experts only.

    capacity_factor None: dropless. Otherwise each expert keeps at most
    C = ceil(T * top_k / num_experts * capacity_factor) tokens, the first ones in token order.
    """

    def __init__(self, dim: int, hidden_dim: int, num_experts: int, top_k: int = 2,
                 norm_topk_prob: bool = True, capacity_factor: float | None = None):
        super().__init__()
        raise NotImplementedError("see katas/20_moe/README.md")

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """x (b, n, dim) -> (output (b, n, dim), router_logits (b*n, num_experts)).

        Call each expert once, as a module (self.experts[i](rows)), on exactly the rows of
        x.reshape(b*n, dim) routed to it (and kept).
        """
        raise NotImplementedError("see katas/20_moe/README.md")


def load_balancing_loss(router_logits: Tensor, top_k: int) -> Tensor:
    """N * sum_i f_i * P_i over router_logits (..., N): f_i the fraction of the T * top_k
    assignments that go to expert i, P_i the mean router probability of expert i. A 0-d
    tensor."""
    raise NotImplementedError("see katas/20_moe/README.md")


def router_z_loss(router_logits: Tensor) -> Tensor:
    """The mean over tokens of logsumexp(router_logits)², a 0-d tensor."""
    raise NotImplementedError("see katas/20_moe/README.md")
