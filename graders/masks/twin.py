"""Kata 04's twin: the three masks and the attention that reads them, in float64, with one
switch per catalogued mistake (the suspects they yield), and PyTorch's own attention.
"""

from __future__ import annotations

import warnings
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graders.twins.reference import additive_mask, attend
from graders.core.inputs import randomize_
from graders.core.mistakes import Suspect


NEG_INF = float("-inf")
# A finite value at or below this where -inf is expected is a "large negative number"
# stand-in for -inf (-1e9, finfo.min, ...): attention barely notices, the contract does.
LARGE_NEGATIVE = -1e4


# --------------------------------------------------------------------------- references


def causal_reference(size: int, device=None, *, offset: int = 0, invert: bool = False,
                     transpose: bool = False) -> Tensor:
    """Float (size, size): -inf where key j > query i + offset, 0 elsewhere.

    offset 0 is correct; -1 also blocks the diagonal, +1 lets each token see the next one
    (the causal-diagonal mistake). invert swaps blocked and allowed (mask-inverted).
    transpose blocks the past instead of the future (tril where triu belongs:
    causal-mask-transposed).
    """
    i = torch.arange(size, device=device)[:, None]
    j = torch.arange(size, device=device)[None, :]
    blocked = j > i + offset
    if invert:
        blocked = ~blocked
    if transpose:
        blocked = blocked.T
    return additive_mask(blocked, torch.get_default_dtype())


def padding_reference(lengths, max_len: int | None = None, *, invert: bool = False) -> Tensor:
    """Bool (b, max_len), True at padded positions (True at the valid ones if invert)."""
    lengths = torch.as_tensor(lengths)
    if max_len is None:
        max_len = int(lengths.max())
    padded = torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]
    return ~padded if invert else padded


# Ways to read a float attn_mask as a yes/no mask (float-mask-as-bool): what is blocked.
FLOAT_AS_BOOL = {
    "nonzero": lambda mask: mask != 0,  # mask.bool(), mask != 0
    "negative": lambda mask: mask < 0,
    "neginf": torch.isneginf,  # keeps the -inf entries, drops the values
}


def merge_reference(
    key_padding_mask: Tensor | None,
    attn_mask: Tensor | None,
    num_heads: int,
    dtype: torch.dtype = torch.float32,
    *,
    invert_padding: bool = False,
    invert_attn: bool = False,
    head_major: bool = False,
    combine: str = "add",
    float_as_bool: str | None = None,
) -> Tensor | None:
    """The merged additive mask, broadcastable to (b*h, n, m), with mistake switches.

    key_padding_mask bool (b, m) becomes (b*h, 1, m) with batch-major rows (row i*h + j is
    batch i, head j; head_major gives row j*b + i instead). attn_mask bool or float,
    (n, m) or (b*h, n, m). combine "add" is correct (-inf + x = -inf: blocked by either);
    "max" blocks only where both block (what &, min or a product of bool masks give);
    "mul" multiplies the additive masks.
    """
    parts = []
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            parts.append(additive_mask(~attn_mask if invert_attn else attn_mask, dtype))
        elif float_as_bool is not None:
            parts.append(additive_mask(FLOAT_AS_BOOL[float_as_bool](attn_mask), dtype))
        else:
            parts.append(attn_mask.to(dtype))
    if key_padding_mask is not None:
        blocked = ~key_padding_mask if invert_padding else key_padding_mask
        if head_major:
            rows = blocked.repeat(num_heads, 1)  # row j*b + i: head-major
        else:
            rows = blocked.repeat_interleave(num_heads, 0)  # row i*h + j: batch-major
        parts.append(additive_mask(rows, dtype).unsqueeze(1))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    attn, padding = parts
    if combine == "max":
        return torch.maximum(attn, padding)
    if combine == "mul":
        return attn * padding
    return attn + padding


def merge_suspects_switches(key_padding_mask, attn_mask) -> list[tuple[str, dict]]:
    """The catalogued merge mistakes that apply to these inputs, as merge_reference switches."""
    switches = []
    attn_is_bool = attn_mask is not None and attn_mask.dtype == torch.bool
    attn_is_float = attn_mask is not None and not attn_is_bool
    if key_padding_mask is not None:
        switches.append(("mask-inverted", {"invert_padding": True}))
    if attn_is_bool:
        switches.append(("mask-inverted", {"invert_attn": True}))
        if key_padding_mask is not None:
            switches.append(("mask-inverted", {"invert_padding": True, "invert_attn": True}))
    if key_padding_mask is not None:
        switches.append(("padding-mask-head-order", {"head_major": True}))
    if key_padding_mask is not None and attn_mask is not None:
        switches.append(("mask-and-instead-of-or", {"combine": "max"}))
        switches.append(("mask-and-instead-of-or", {"combine": "mul"}))
    if attn_is_float:
        for kind in FLOAT_AS_BOOL:
            switches.append(("float-mask-as-bool", {"float_as_bool": kind}))
    return switches


def suspects_from(candidates: list[tuple[str, Callable[[], Tensor]]]) -> list[Suspect]:
    """Suspects from (slug, predict) pairs; graders.core.mistakes.identify names one only when no
    other slug's mistake gives the same result on this input."""
    return [Suspect(slug, predict=predict) for slug, predict in candidates]


def merge_suspects(key_padding_mask, attn_mask, num_heads: int, dtype: torch.dtype,
                   outcome: Callable[[Tensor], Tensor]) -> list[Suspect]:
    """The merge mistakes that apply, each as what ``outcome(its merged mask)`` would be."""
    return suspects_from([
        (slug, lambda flags=flags: outcome(merge_reference(key_padding_mask, attn_mask, num_heads,
                                                           dtype, **flags)))
        for slug, flags in merge_suspects_switches(key_padding_mask, attn_mask)
    ])


def heads_first(x: Tensor, num_heads: int) -> Tensor:
    """(seq, b, E) -> (b*h, seq, head_dim), batch-major: PyTorch's internal layout."""
    seq, batch, embed = x.shape
    return x.reshape(seq, batch * num_heads, embed // num_heads).transpose(0, 1)


def reference_attention(twin: nn.MultiheadAttention, query, key, value,
                        mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """Multi-head attention with ``twin``'s weights and an additive mask on the logits.

    query (n, b, E), key/value (m, b, E); mask broadcastable to (b*h, n, m). Returns the
    output (n, b, E) and per-head weights (b, h, n, m), like nn.MultiheadAttention with
    average_attn_weights=False.
    """
    n, batch, embed = query.shape
    h = twin.num_heads
    w_q, w_k, w_v = twin.in_proj_weight.chunk(3)
    b_q, b_k, b_v = twin.in_proj_bias.chunk(3)
    q = heads_first(F.linear(query, w_q, b_q), h)
    k = heads_first(F.linear(key, w_k, b_k), h)
    v = heads_first(F.linear(value, w_v, b_v), h)
    attended, weights = attend(q, k, v, mask)  # (b*h, n, head_dim), (b*h, n, m)
    attended = attended.transpose(0, 1).reshape(n, batch, embed)
    output = F.linear(attended, twin.out_proj.weight, twin.out_proj.bias)
    return output, weights.reshape(batch, h, n, -1)


def pytorch_attention(twin: nn.MultiheadAttention, query, key, value,
                      key_padding_mask, attn_mask) -> tuple[Tensor, Tensor]:
    """nn.MultiheadAttention given the two original masks (a float one in the query's dtype)."""
    if attn_mask is not None and attn_mask.is_floating_point():
        attn_mask = attn_mask.to(query.dtype)  # PyTorch insists on it
    with warnings.catch_warnings():
        # A bool key_padding_mask with a float attn_mask is "deprecated" but still supported.
        warnings.simplefilter("ignore", UserWarning)
        return twin(query, key, value, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                    need_weights=True, average_attn_weights=False)


def pytorch_twin(embed_dim: int, num_heads: int, seed: int, dtype=torch.float32,
                 device="cpu") -> nn.MultiheadAttention:
    """nn.MultiheadAttention with random weights and biases (no dropout: training mode is
    harmless, and keeps it off the fused fast path)."""
    twin = nn.MultiheadAttention(embed_dim, num_heads, dtype=dtype, device=device)
    return randomize_(twin, seed)
