"""Kata 26's twin: the reference next-token loss with one switch per catalogued mistake, so
that a check can compute what a mistake gives on its own inputs (value and gradients) and
name it by matching. Per position throughout (every mistake needs the positions the right
loss leaves out).
"""

from __future__ import annotations

import torch
from torch import Tensor

# switch -> slug
MISTAKE_OF: dict[str, str] = {
    "not-shifted": "labels-not-shifted",  # logits t against labels t, every position
    "wrong-way": "shifted-wrong-way",  # logits t + 1 against labels t
    "ignore-counted": "ignore-index-counted",  # ignored targets scored as class 0 and summed
    "mean-over-shifted": "mean-over-padded-tokens",  # divided by b * (n - 1)
    "mean-over-all": "mean-over-padded-tokens",  # divided by b * n
    "smoothing-others": "smoothing-over-other-classes",  # eps / (V - 1) on each non-target
    "smoothing-no-keep": "smoothing-weight-wrong",  # nll + eps * mean (no 1 - eps)
    "smoothing-sum": "smoothing-weight-wrong",  # (1 - eps) nll + eps * sum over classes
    "z-not-squared": "z-loss-not-squared",  # z * lse
    "z-max": "z-loss-on-max-logit",  # z * max(logits)^2
    "z-ignored": "z-loss-on-ignored-tokens",  # z * lse^2 summed over every shifted position
    "z-ignored-mean": "z-loss-on-ignored-tokens",  # + z * mean of lse^2 over every position
    "unstable": "logsumexp-unstable",  # log(sum(exp(x))): inf at logits of 1e4
    "half": "no-float32-upcast",  # computed (and returned) in float16 / bfloat16
    "no-num-items": "mean-of-micro-batch-means",  # num_items ignored: this micro-batch's mean
    "nan-empty": "nan-on-empty-batch",  # sum / count, 0 / 0 with no counted target
}


def work_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def next_token_loss(logits: Tensor, labels: Tensor, ignore_index: int = -100,
                    label_smoothing: float = 0.0, z_loss: float = 0.0,
                    num_items: int | Tensor | None = None, *, mistake: str | None = None) -> Tensor:
    """logits (b, n, V), labels (b, n) unshifted -> the loss (0-d), with ``mistake`` made."""
    b, n, vocab = logits.shape
    if mistake == "not-shifted":
        x, y = logits, labels
    elif mistake == "wrong-way":
        x, y = logits[:, 1:], labels[:, :-1]
    else:
        x, y = logits[:, :-1], labels[:, 1:]
    x = x.reshape(-1, vocab)
    y = y.reshape(-1)
    x = x if mistake == "half" else x.to(work_dtype(logits.dtype))
    counted = y != ignore_index
    safe = torch.where(counted, y, torch.zeros_like(y))
    if mistake == "unstable":
        lse = x.exp().sum(dim=-1).log()
    else:
        lse = torch.logsumexp(x, dim=-1)
    nll = lse - x.gather(-1, safe[:, None]).squeeze(-1)
    eps = label_smoothing
    if mistake == "smoothing-others":
        others = (lse[:, None] - x).sum(dim=-1) - nll
        per = (1 - eps) * nll + eps / (vocab - 1) * others
    elif mistake == "smoothing-no-keep":
        per = nll + eps * (lse - x.mean(dim=-1))
    elif mistake == "smoothing-sum":
        per = (1 - eps) * nll + eps * (lse[:, None] - x).sum(dim=-1)
    else:
        per = (1 - eps) * nll + eps * (lse - x.mean(dim=-1))
    z_term = {"z-not-squared": lse, "z-max": x.amax(dim=-1).square()}.get(mistake, lse.square())
    if mistake == "z-ignored-mean":  # the z-loss averaged apart, over every position
        z_term = torch.zeros_like(z_term)
    if mistake == "ignore-counted":
        total = (per + z_loss * z_term).sum()
    else:
        total = torch.where(counted, per + z_loss * z_term, torch.zeros_like(per)).sum()
    if mistake == "z-ignored":
        total = total + z_loss * torch.where(counted, 0, lse.square()).sum()
    count = counted.sum()
    if mistake == "mean-over-shifted":
        denominator = torch.tensor(b * (n - 1))
    elif mistake == "mean-over-all":
        denominator = torch.tensor(b * n)
    elif mistake == "nan-empty":
        denominator = count
    elif num_items is not None and mistake != "no-num-items":
        denominator = num_items
    else:
        denominator = count.clamp_min(1)
    result = total / denominator
    if mistake == "z-ignored-mean":
        result = result + z_loss * lse.square().mean()
    return result
