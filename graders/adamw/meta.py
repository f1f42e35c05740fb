"""Kata 27_adamw (AdamW, gradient clipping and the cosine schedule).

Beside the grader (checks.py) and the twin (twin.py), what the learner does not read: its
registry entry with the hint ladder (KATA), the mistakes only it names (MISTAKES) and its
quiz (QUESTIONS). Imports nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

import math

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import INTEGER, NUMBER, Question

KATA = Kata(
    id="27",
    name="27_adamw",
    file="adamw.py",
    title="AdamW, gradient clipping and the cosine schedule",
    track="training",
    difficulty="medium",
    target_minutes=25,
    prerequisites=(),
    mistakes=(
        "l2-not-decoupled",
        "decay-after-update",
        "decay-not-scaled-by-lr",
        "no-bias-correction",
        "bias-correction-off-by-one",
        "eps-before-bias-correction",
        "eps-inside-sqrt",
        "betas-swapped",
        "gradless-param-updated",
        "state-not-per-parameter",
        "clip-per-parameter",
        "clip-scales-up",
        "clip-norm-wrong",
        "warmup-off-by-one",
        "cosine-wrong-phase",
    ),
    forbidden=(
        "torch.optim.AdamW",
        "torch.optim.Adam",
        "torch.optim.adam.adam",
        "torch._fused_adam_",
        "torch._fused_adamw_",
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.utils.get_total_norm",
        "torch.nn.utils.clip_grads_with_norm_",
    ),
    hints=(
        "AdamW keeps two running averages per parameter, of the gradient and of its square, "
        "corrects both for starting at zero, and steps by their ratio; the weight decay shrinks "
        "the weights directly, outside that ratio. Subclass torch.optim.Optimizer, so that "
        "param_groups, self.state and state_dict() come for free, and skip every parameter "
        "whose .grad is None.",
        "Per parameter with a gradient: state['step'] += 1 (t); p *= 1 - lr * weight_decay; "
        "exp_avg = beta1 * exp_avg + (1 - beta1) * g; exp_avg_sq = beta2 * exp_avg_sq + (1 - "
        "beta2) * g * g; then p -= lr / (1 - beta1**t) * exp_avg / denom, with denom = "
        "sqrt(exp_avg_sq) / sqrt(1 - beta2**t) + eps. The clip: one total norm over every "
        "gradient (the norm of their norms), one factor min(1, max_norm / (total + 1e-6)) for "
        "all. The schedule: step / warmup_steps, then a half cosine from max_lr to min_lr.",
        "p.mul_(1 - group['lr'] * group['weight_decay'])   # decoupled: before the update\n"
        "denom = exp_avg_sq.sqrt() / math.sqrt(1 - beta2 ** t) + eps   # eps after the correction\n"
        "p.addcdiv_(exp_avg, denom, value=-group['lr'] / (1 - beta1 ** t))",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue, never
# declared again here).
MISTAKES: tuple[Mistake, ...] = (
    Mistake("l2-not-decoupled",
            "The weight decay was added to the gradient (weight_decay * p, Adam with L2), so it "
            "goes through the moments and is divided by sqrt(v): AdamW applies it to the weights "
            "directly.",
            "Leave the gradient alone and shrink the weights: p.mul_(1 - lr * weight_decay), "
            "before the Adam update."),
    Mistake("decay-after-update",
            "The weights were decayed after the Adam update (as CS336's pseudo-code writes it), "
            "so the decay also shrinks this step's update; PyTorch decays first.",
            "p.mul_(1 - lr * weight_decay) first, then p.addcdiv_(exp_avg, denom, value=-step_size)."),
    Mistake("decay-not-scaled-by-lr",
            "The weights were multiplied by 1 - weight_decay instead of 1 - lr * weight_decay: "
            "the decay ignores the learning rate and its schedule.",
            "p.mul_(1 - group['lr'] * group['weight_decay']), with the group's current lr."),
    Mistake("no-bias-correction",
            "exp_avg and exp_avg_sq were used without dividing by 1 - beta1^t and 1 - beta2^t: "
            "both start at zero, so the first steps are too small (or too large).",
            "step_size = lr / (1 - beta1**t); denom = sqrt(exp_avg_sq) / sqrt(1 - beta2**t) + eps."),
    Mistake("bias-correction-off-by-one",
            "The bias correction used the wrong step count: t = 0 on the first step (1 - beta^0 "
            "= 0, a division by zero) or t = 2.",
            "Increment state['step'] first, then use it: the first step has t = 1."),
    Mistake("eps-before-bias-correction",
            "eps was added to sqrt(exp_avg_sq) before the bias correction divided it (the "
            "paper's and CS336's step size lr * sqrt(1 - beta2^t) / (1 - beta1^t)): a "
            "larger eps in the early steps than PyTorch's.",
            "denom = exp_avg_sq.sqrt() / math.sqrt(1 - beta2**t) + eps: eps after the correction."),
    Mistake("eps-inside-sqrt",
            "eps was added under the square root, sqrt(v + eps), instead of to sqrt(v): "
            "sqrt(1e-3) is 0.03, thirty times the eps asked for.",
            "sqrt first, then + eps: exp_avg_sq.sqrt() / math.sqrt(1 - beta2**t) + eps."),
    Mistake("betas-swapped",
            "beta1 and beta2 were swapped: the first moment averages over beta2's long window "
            "and the second over beta1's short one.",
            "beta1, beta2 = group['betas']: beta1 (0.9) for exp_avg, beta2 (0.999) for exp_avg_sq."),
    Mistake("gradless-param-updated",
            "A parameter whose .grad is None was decayed or stepped (as if its gradient were "
            "zero); PyTorch leaves it as it is and does not count the step.",
            "if p.grad is None: continue, before the decay and before state['step'] += 1."),
    Mistake("state-not-per-parameter",
            "The step count or the moments do not live per parameter in self.state: one count "
            "on the optimizer for every parameter, or moments in your own attributes, which "
            "state_dict() does not save; a parameter that skips steps gets the wrong count and a "
            "resumed run starts over.",
            "Keep state['step'], state['exp_avg'] and state['exp_avg_sq'] in state = "
            "self.state[p], created on the parameter's first step."),
    Mistake("clip-per-parameter",
            "Each gradient was clipped by its own norm; the clip uses one total norm over all "
            "gradients and one factor for all of them.",
            "total = norm of the per-parameter norms; every grad *= min(1, max_norm / (total + 1e-6))."),
    Mistake("clip-scales-up",
            "Gradients whose total norm is below max_norm were scaled up to it: the factor was "
            "not capped at 1.",
            "coef = min(1, max_norm / (total + 1e-6)), or torch.clamp(coef, max=1.0)."),
    Mistake("clip-norm-wrong",
            "The total norm is wrong: the per-parameter norms were added up, or their squares "
            "were not summed before the root.",
            "total = torch.linalg.vector_norm(torch.stack([vector_norm(g, p) for g in grads]), p)."),
    Mistake("warmup-off-by-one",
            "The warmup is one step off: (step + 1) / warmup_steps or (step + 1) / (warmup_steps "
            "+ 1); CS336's schedule gives 0 at step 0 and max_lr at step warmup_steps.",
            "if step < warmup_steps: return max_lr * step / warmup_steps"),
    Mistake("cosine-wrong-phase",
            "The cosine has the wrong phase: the warmup not subtracted from the step or from "
            "the length, or a quarter or a whole period instead of a half.",
            "progress = (step - warmup_steps) / (cosine_steps - warmup_steps); min_lr + 0.5 * "
            "(1 + math.cos(math.pi * progress)) * (max_lr - min_lr)"),
)


def mixed_precision_bytes_per_parameter() -> int:
    """bfloat16 weights and gradients, a float32 master copy, float32 exp_avg and exp_avg_sq."""
    bf16, fp32 = 2, 4
    return bf16 + bf16 + fp32 + fp32 + fp32


def first_step_in_lr(grad: float, eps: float) -> float:
    """AdamW's first move with no decay, in units of lr: m_hat = g, sqrt(v_hat) = |g|."""
    beta1, beta2 = 0.9, 0.999
    m_hat = (1 - beta1) * grad / (1 - beta1)
    v_hat = (1 - beta2) * grad * grad / (1 - beta2)
    return m_hat / (math.sqrt(v_hat) + eps)


def cosine_lr(step: int, max_lr: float, min_lr: float, warmup_steps: int,
              cosine_steps: int) -> float:
    """CS336 a1's get_lr_cosine_schedule (the reference's lr_at, without torch)."""
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    if step > cosine_steps:
        return min_lr
    progress = (step - warmup_steps) / (cosine_steps - warmup_steps)
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)


BYTES = mixed_precision_bytes_per_parameter()
QUESTIONS = (
    Question("Training a 7B-parameter model with AdamW in mixed precision (bfloat16 weights "
             "and gradients, a float32 master copy, float32 exp_avg and exp_avg_sq): how many "
             "bytes per parameter?", BYTES, INTEGER,
             f"2 (bf16 weights) + 2 (bf16 grads) + 4 (fp32 master) + 4 (m) + 4 (v) = {BYTES} "
             f"bytes: {7 * BYTES} GB for 7B parameters, {7 * 12} GB of it the master weights "
             "and the optimizer state, before a single activation."),
    Question("AdamW's first step on a weight with gradient 0.5 (lr=1e-3, eps=1e-8, "
             "weight_decay=0): how far does it move, in units of lr (3 decimals)?",
             round(first_step_in_lr(0.5, 1e-8), 3), NUMBER,
             "m_hat = g and sqrt(v_hat) = |g| after the bias correction, so the step is lr * g / "
             "(|g| + eps) = 1.000 lr, whatever the size of g: Adam's first steps are sign "
             "steps.", rel_tolerance=5e-4),
    Question("lr_at(55, max_lr=1e-3, min_lr=1e-4, warmup_steps=10, cosine_steps=100): the "
             "learning rate, times 1e4?", round(cosine_lr(55, 1e-3, 1e-4, 10, 100) * 1e4, 6),
             NUMBER,
             "(55 - 10) / (100 - 10) = 0.5 of the cosine: 1e-4 + 0.5 * (1 + cos(pi / 2)) * 9e-4 "
             "= 5.5e-4.", rel_tolerance=1e-3),
)
