"""Kata 26's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

SHIFT = ("    shifted = logits[:, :-1].reshape(-1, vocab)  # position t predicts labels[:, t + 1]\n"
         "    targets = labels[:, 1:].reshape(-1)\n")
SELECT = ("    x = logits[counted].to(_work_dtype(logits.dtype))  # ignored rows never enter the sum\n"
          "    y = targets[counted]\n")
LSE = "    lse = torch.logsumexp(x, dim=-1)  # subtracts the row's max: stable at logits of 1e4\n"
SMOOTH = "    per_target = (1 - label_smoothing) * nll + label_smoothing * (lse - x.mean(dim=-1))\n"
Z = "        per_target = per_target + z_loss * lse.square()\n"
DIVIDE = ("    total = _summed_loss(shifted, targets, ignore_index, label_smoothing, z_loss)\n"
          "    return _divided(total, (targets != ignore_index).sum(), num_items)\n")
DENOMINATOR = "    denominator = counted.clamp_min(1) if num_items is None else num_items\n"

MUTANTS = [
    Mutant("labels-not-shifted", why="scores the logits at t against the label at t.",
           edits=[(SHIFT, "    shifted = logits.reshape(-1, vocab)\n"
                          "    targets = labels.reshape(-1)\n")]),
    Mutant("shifted-wrong-way", why="pairs logits[:, 1:] with labels[:, :-1].",
           edits=[(SHIFT, "    shifted = logits[:, 1:].reshape(-1, vocab)\n"
                          "    targets = labels[:, :-1].reshape(-1)\n")]),
    Mutant("ignore-index-counted",
           why="clamps the ignored labels to class 0 and sums every position's loss.",
           edits=[(SELECT, "    x = logits.to(_work_dtype(logits.dtype))\n"
                           "    y = targets.clamp_min(0)\n")]),
    Mutant("mean-over-padded-tokens", why="divides by every shifted position, b * (n - 1).",
           edits=[(DIVIDE, DIVIDE.replace("(targets != ignore_index).sum()",
                                          "torch.tensor(targets.numel())"))]),
    Mutant("logsumexp-unstable", why="takes log(sum(exp(x))) without subtracting the maximum.",
           edits=[(LSE, "    lse = x.exp().sum(dim=-1).log()\n")]),
    Mutant("no-float32-upcast", why="computes in the logits' own dtype, float16 included.",
           edits=[("    return torch.float64 if dtype == torch.float64 else torch.float32\n",
                   "    return dtype\n")]),
    Mutant("mean-of-micro-batch-means", why="ignores num_items: each micro-batch's own mean.",
           edits=[(DENOMINATOR, "    denominator = counted.clamp_min(1)\n")]),
    Mutant("nan-on-empty-batch", why="divides by the count as it is: 0 / 0 when nothing counts.",
           edits=[(DENOMINATOR, "    denominator = counted if num_items is None else num_items\n")]),
    Mutant("smoothing-over-other-classes", why="spreads eps over the V - 1 other classes.",
           edits=[(SMOOTH, "    others = (lse[:, None] - x).sum(dim=-1) - nll\n"
                           "    per_target = (1 - label_smoothing) * nll + label_smoothing / "
                           "(x.size(-1) - 1) * others\n")]),
    Mutant("smoothing-weight-wrong", why="keeps the nll at weight 1 instead of 1 - eps.",
           edits=[(SMOOTH, "    per_target = nll + label_smoothing * (lse - x.mean(dim=-1))\n")]),
    Mutant("smoothing-weight-wrong", variant="sum",
           why="multiplies eps by the sum of -log p_v over the classes, not their mean.",
           edits=[(SMOOTH, "    per_target = (1 - label_smoothing) * nll + label_smoothing * "
                           "(lse[:, None] - x).sum(dim=-1)\n")]),
    Mutant("z-loss-not-squared", why="adds z_loss * logsumexp.",
           edits=[(Z, "        per_target = per_target + z_loss * lse\n")]),
    Mutant("z-loss-on-max-logit", why="squares the largest logit instead of the logsumexp.",
           edits=[(Z, "        per_target = per_target + z_loss * x.amax(dim=-1).square()\n")]),
    Mutant("z-loss-on-ignored-tokens", why="adds the z-loss of the ignored targets too.",
           edits=[(DIVIDE, DIVIDE.replace(
               "    return", "    ignored = shifted[targets == ignore_index].to(_work_dtype(logits.dtype))\n"
                            "    total = total + z_loss * torch.logsumexp(ignored, dim=-1).square().sum()\n"
                            "    return"))]),
    Mutant("forbidden-builtin",
           why="sums F.cross_entropy over the shifted logits, as Hugging Face's ForCausalLMLoss does.",
           edits=[(DIVIDE, DIVIDE.replace(
               "_summed_loss(shifted, targets, ignore_index, label_smoothing, z_loss)",
               "torch.nn.functional.cross_entropy(\n        shifted.float(), targets, "
               "ignore_index=ignore_index, label_smoothing=label_smoothing, reduction=\"sum\")"))]),
    Mutant("full-logits-materialised", variant="in_forward",
           why="keeps every chunk's logits alive until the forward ends.",
           edits=[("            total = total + loss.detach()\n",
                   "            total = total + loss.detach()\n            ctx.kept = [*getattr(ctx, 'kept', []), h_chunk @ w.T]\n")]),
    Mutant("full-logits-materialised", base="checkpoint_per_chunk",
           why="no checkpoint: autograd keeps every chunk's logits.",
           edits=[("checkpoint(chunk_loss, h[start:stop], lm_head_weight, targets[start:stop],\n"
                   "                                   use_reentrant=False)",
                   "chunk_loss(h[start:stop], lm_head_weight, targets[start:stop])")]),
]
