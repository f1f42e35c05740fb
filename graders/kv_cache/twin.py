"""Kata 11's twin: the cached attention as a function of its weights (one call of the module,
with a switch per catalogued mistake), and nn.MultiheadAttention with the same weights run
once on the whole sequence (the right answer).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.core.inputs import randomize_
from graders.twins.attention import causal_blocked, dense


PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj")


# --------------------------------------------------------------------------- references


def learner_state(twin: nn.MultiheadAttention) -> dict[str, Tensor]:
    """The twin's weights under the kata's names: q/k/v_proj are the thirds of in_proj."""
    sd = twin.state_dict()
    state = {}
    for i, name in enumerate(PROJECTIONS[:3]):
        state[f"{name}.weight"] = sd["in_proj_weight"].chunk(3)[i]
        if sd.get("in_proj_bias") is not None:
            state[f"{name}.bias"] = sd["in_proj_bias"].chunk(3)[i]
    state["out_proj.weight"] = sd["out_proj.weight"]
    if sd.get("out_proj.bias") is not None:
        state["out_proj.bias"] = sd["out_proj.bias"]
    return state


def twin_params(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """The kata's named weights as nn.MultiheadAttention's, for torch.func.functional_call
    (gradients flow back to the kata's names)."""
    params = {"in_proj_weight": torch.cat([state[f"{p}.weight"] for p in PROJECTIONS[:3]]),
              "out_proj.weight": state["out_proj.weight"]}
    if "q_proj.bias" in state:
        params["in_proj_bias"] = torch.cat([state[f"{p}.bias"] for p in PROJECTIONS[:3]])
        params["out_proj.bias"] = state["out_proj.bias"]
    return params


def causal_mask(length: int, device: torch.device | str) -> Tensor:
    """bool (length, length), True above the diagonal: blocked (PyTorch's convention)."""
    return causal_blocked(length, length, device=device)


def pytorch_full(twin: nn.MultiheadAttention, x: Tensor,
                 state: dict[str, Tensor] | None = None) -> Tensor:
    """nn.MultiheadAttention on the whole sequence x (b, n, E) with a causal mask, with its
    own weights or (for gradients) with ``state``'s."""
    mask = causal_mask(x.size(1), x.device)
    if state is None:
        return twin(x, x, x, attn_mask=mask, need_weights=False)[0]
    return torch.func.functional_call(twin, twin_params(state), (x, x, x),
                                      {"attn_mask": mask, "need_weights": False})[0]


def split_heads(x: Tensor, num_heads: int, reshape_only: bool = False) -> Tensor:
    """(b, n, E) -> (b, h, n, d), head i = columns i*d:(i+1)*d; ``reshape_only``: a
    reshape straight to (b, h, n, d), which mixes positions (reshape-without-transpose)."""
    b, n, embed = x.shape
    if reshape_only:
        return x.reshape(b, num_heads, n, embed // num_heads)
    return x.view(b, n, num_heads, embed // num_heads).transpose(1, 2)


def project(state: dict[str, Tensor], name: str, x: Tensor) -> Tensor:
    return F.linear(x, state[f"{name}.weight"], state.get(f"{name}.bias"))


def keys_values(state: dict[str, Tensor], x: Tensor, num_heads: int) -> tuple[Tensor, Tensor]:
    """The cache of every position of x (b, n, E): k_proj and v_proj outputs split into
    heads, unscaled, each (b, h, n, d)."""
    return (split_heads(project(state, "k_proj", x), num_heads),
            split_heads(project(state, "v_proj", x), num_heads))


def chunk_reference(state: dict[str, Tensor], x: Tensor, start: int, num_heads: int,
                    mask: str = "shifted", heads: str = "") -> Tensor:
    """One call of the module for positions start ... n-1 of x (b, n, E), with positions
    0 ... start-1 in the cache: output (b, n - start, E).

    mask: "shifted" (right: new query i, at position start + i, sees keys 0 ... start + i),
    "top-left" (causal-mask-offset: query i sees keys 0 ... i, as is_causal=True aligns it),
    "none" (causal-mask-missing). heads: "split", "merge" or "both" for the heads split,
    merged or both with a reshape alone (reshape-without-transpose).
    """
    b, n, embed = x.shape
    t = n - start
    wrong_split = heads in ("split", "both")
    q = split_heads(project(state, "q_proj", x[:, start:]), num_heads, wrong_split)
    k = split_heads(project(state, "k_proj", x), num_heads, wrong_split)
    v = split_heads(project(state, "v_proj", x), num_heads, wrong_split)
    attended = dense(q, k, v, causal=mask != "none", offset=0 if mask == "top-left" else start
                     ).to(q.dtype)
    if heads in ("merge", "both"):
        return project(state, "out_proj", attended.reshape(b, t, embed))
    return project(state, "out_proj", attended.transpose(1, 2).reshape(b, t, embed))


# ------------------------------------------------------------------------ the module


def pytorch_twin(embed_dim: int, num_heads: int, *, bias: bool = True, seed: int,
                 dtype=torch.float32, device="cpu") -> nn.MultiheadAttention:
    """nn.MultiheadAttention (batch first) with random weights and nonzero biases of order
    1/sqrt(E), so that scores stay of order 1 whatever E is."""
    twin = nn.MultiheadAttention(embed_dim, num_heads, bias=bias, batch_first=True,
                                 dtype=dtype, device=device)
    return randomize_(twin, seed, scale=1 / math.sqrt(embed_dim))
