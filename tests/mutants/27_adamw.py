"""Kata 27's mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant

DECAY = "                p.mul_(1 - lr * weight_decay)  # decoupled: not through the moments\n"
UPDATE = "                p.addcdiv_(exp_avg, denom, value=-step_size)\n"
STEP_SIZE = "                step_size = lr / (1 - beta1 ** t)\n"
DENOM = "                denom = exp_avg_sq.sqrt() / math.sqrt(1 - beta2 ** t) + eps\n"
T = "                t = float(state[\"step\"])  # a 0-d tensor after loading PyTorch's state\n"
GRADLESS = ("                if p.grad is None:  # no gradient this step: no decay, no count\n"
            "                    continue\n")
BETAS = "            lr, (beta1, beta2) = group[\"lr\"], group[\"betas\"]\n"
COEF = "    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)  # never scaled up\n"
TOTAL = "    total = torch.linalg.vector_norm(torch.stack(norms), norm_type)\n"
WARMUP = "        return max_lr * step / warmup_steps\n"
PROGRESS = "        progress = (step - warmup_steps) / (cosine_steps - warmup_steps)\n"

MUTANTS = [
    Mutant("l2-not-decoupled", why="adds weight_decay * p to the gradient (Adam with L2).",
           edits=[(DECAY, "                grad = grad.add(p, alpha=weight_decay)\n")]),
    Mutant("decay-after-update", why="decays the weights after the update, CS336's order.",
           edits=[(DECAY, ""), (UPDATE, UPDATE + "                p.mul_(1 - lr * weight_decay)\n")]),
    Mutant("decay-not-scaled-by-lr", why="multiplies the weights by 1 - weight_decay.",
           edits=[(DECAY, "                p.mul_(1 - weight_decay)\n")]),
    Mutant("no-bias-correction", why="steps by lr * m / (sqrt(v) + eps).",
           edits=[(STEP_SIZE, "                step_size = lr\n"),
                  (DENOM, "                denom = exp_avg_sq.sqrt() + eps\n")]),
    Mutant("bias-correction-off-by-one", why="uses the count before the increment: t = 0 first.",
           edits=[(T, "                t = float(state[\"step\"]) - 1\n")]),
    Mutant("eps-before-bias-correction", why="adds eps to sqrt(v) before dividing by sqrt(1 - beta2^t).",
           edits=[(DENOM, "                denom = (exp_avg_sq.sqrt() + eps) / math.sqrt(1 - beta2 ** t)\n")]),
    Mutant("eps-inside-sqrt", why="takes sqrt(v_hat + eps).",
           edits=[(DENOM, "                denom = (exp_avg_sq / (1 - beta2 ** t) + eps).sqrt()\n")]),
    Mutant("betas-swapped", why="unpacks the betas the other way round.",
           edits=[(BETAS, "            lr, (beta2, beta1) = group[\"lr\"], group[\"betas\"]\n")]),
    Mutant("gradless-param-updated", why="decays a parameter without a gradient before skipping it.",
           edits=[(GRADLESS, "                if p.grad is None:\n"
                             "                    p.mul_(1 - lr * weight_decay)\n"
                             "                    continue\n")]),
    Mutant("state-not-per-parameter", why="counts steps once per step() call, on the optimizer.",
           edits=[(BETAS, BETAS + "            self.t = getattr(self, \"t\", 0) + (group is self.param_groups[0])\n"),
                  (T, "                t = float(self.t)\n")]),
    Mutant("clip-per-parameter", why="clips each gradient by its own norm.",
           edits=[("    for g in grads:\n        g.detach().mul_(coef.to(g.dtype))\n",
                   "    for g, own in zip(grads, norms):\n"
                   "        g.detach().mul_(torch.clamp(max_norm / (own + 1e-6), max=1.0).to(g.dtype))\n")]),
    Mutant("clip-scales-up", why="scales by max_norm / total even when the total is smaller.",
           edits=[(COEF, "    coef = max_norm / (total + 1e-6)\n")]),
    Mutant("clip-norm-wrong", why="adds up the per-parameter norms.",
           edits=[(TOTAL, "    total = torch.stack(norms).sum()\n")]),
    Mutant("warmup-off-by-one", why="warms up with (step + 1) / warmup_steps.",
           edits=[(WARMUP, "        return max_lr * (step + 1) / warmup_steps\n")]),
    Mutant("cosine-wrong-phase", why="forgets to subtract the warmup from the step.",
           edits=[(PROGRESS, "        progress = step / (cosine_steps - warmup_steps)\n")]),
    Mutant("forbidden-builtin", why="calls torch.nn.utils.clip_grad_norm_.",
           edits=[("    if isinstance(parameters, Tensor):\n        parameters = [parameters]\n",
                   "    return torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type,\n"
                   "                                          error_if_nonfinite)\n")]),
]
