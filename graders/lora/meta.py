"""Kata 28_lora (LoRA adapters).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import INTEGER, NUMBER, Question

KATA = Kata(
    id="28",
    name="28_lora",
    file="lora.py",
    title="LoRA adapters",
    track="training",
    difficulty="medium",
    target_minutes=20,
    prerequisites=("15",),
    mistakes=(
        "b-not-zero-initialised",
        "both-factors-zero",
        "scaling-inverted",
        "scaling-missing",
        "base-not-frozen",
        "base-bias-not-frozen",
        "dropout-on-output",
        "merge-without-scaling",
        "merge-transposed",
        "merge-twice-applied",
        "unmerge-wrong",
        "targets-every-linear",
        "other-params-trainable",
    ),
    forbidden=(),
    hints=(
        "Wrap, do not replace: keep the base layer frozen and add a path x -> A -> B beside it, "
        "scaled. Ask what the model must compute right after wrapping, which factor may start "
        "at zero so that the other still gets a gradient, and what shape B @ A has next to "
        "base.weight (out, in).",
        "__init__: base.weight and base.bias requires_grad_(False); lora_A = nn.Linear(in, r, "
        "bias=False) with kaiming_uniform_(a=sqrt(5)), lora_B = nn.Linear(r, out, bias=False) "
        "with zeros, both in the base's dtype; scaling = alpha / r (alpha / sqrt(r) with "
        "rsLoRA). forward: base(x) + lora_B(lora_A(dropout(x))) * scaling, the base path "
        "untouched by dropout. merge: under no_grad, add scaling * B @ A to base.weight once "
        "and remember it. apply_lora: freeze every parameter, list the nn.Linear names that "
        "equal a target or end with '.' + target, then replace each on its parent.",
        "self.base.weight += (self.lora_B.weight @ self.lora_A.weight) * self.scaling   # merge\n"
        "parent, _, child = name.rpartition('.')\n"
        "setattr(model.get_submodule(parent), child, LoRALinear(module, r, alpha, dropout))",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("b-not-zero-initialised",
            "lora_B was left with nn.Linear's random initialisation, so the wrapped model "
            "differs from the base model before any training.",
            "nn.init.zeros_(self.lora_B.weight): with B = 0 the update B A is zero at the start "
            "and A still gets its random kaiming_uniform_ draw."),
    Mistake("both-factors-zero",
            "lora_A and lora_B both start at zero: the gradient of A is Bᵀ(...) = 0 and the "
            "gradient of B is (...)Aᵀ = 0, so neither factor ever moves.",
            "Only B starts at zero; A = nn.Linear(in, r, bias=False) keeps its "
            "kaiming_uniform_(a=sqrt(5)) draw (nn.Linear's default)."),
    Mistake("scaling-inverted",
            "The adapter's output was scaled by r / alpha instead of alpha / r (sqrt(r) / alpha "
            "instead of alpha / sqrt(r) with rsLoRA).",
            "scaling = alpha / r: alpha is the knob, r the rank it is divided by."),
    Mistake("scaling-missing",
            "The adapter's output was added without the factor alpha / r.",
            "base(x) + lora_B(lora_A(dropout(x))) * self.scaling, with scaling = alpha / r."),
    Mistake("base-not-frozen",
            "The wrapped layer's weight still requires a gradient: fine-tuning would update the "
            "full matrix, and the optimizer would keep state for it.",
            "self.base.weight.requires_grad_(False) in LoRALinear's __init__."),
    Mistake("base-bias-not-frozen",
            "The wrapped layer's weight is frozen but its bias still requires a gradient.",
            "if base.bias is not None: base.bias.requires_grad_(False)"),
    Mistake("dropout-on-output",
            "Dropout was applied to the output (the sum, the base path, or the adapter's result "
            "after lora_B) instead of the adapter's input, so the frozen path is randomised too "
            "or the dropped units are outputs.",
            "Drop the input of the adapter only: self.lora_B(self.lora_A(self.dropout(x))) * "
            "self.scaling, added to an untouched self.base(x)."),
    Mistake("merge-without-scaling",
            "merge() added B @ A to base.weight without the factor alpha / r, so the merged "
            "layer computes another function than the adapted one.",
            "base.weight += (B.weight @ A.weight) * self.scaling"),
    Mistake("merge-transposed",
            "merge() added the transposed update (A.weight.T @ B.weight.T, or (B @ A).T): an "
            "nn.Linear's weight is (out, in), and B @ A already is.",
            "lora_B.weight is (out, r) and lora_A.weight (r, in): B @ A is (out, in), like "
            "base.weight."),
    Mistake("merge-twice-applied",
            "The update was counted twice: a second merge() folded it in again, or the merged "
            "layer's forward still adds the adapter's term.",
            "Keep a merged flag: merge() and the forward both check it (warn and return on a "
            "second merge(); base(x) alone once merged)."),
    Mistake("unmerge-wrong",
            "unmerge() did not restore the base weight (no scaling, the update added again, or "
            "nothing taken out), or left the layer treated as merged.",
            "base.weight -= (B.weight @ A.weight) * self.scaling, then merged = False; on a "
            "layer that is not merged, warn and change nothing."),
    Mistake("targets-every-linear",
            "More layers were wrapped than the targets name: every nn.Linear, or names matched "
            "by substring or by a suffix without the dot (kv_proj ends with v_proj).",
            "PEFT's rule: name == target or name.endswith('.' + target), on the qualified names "
            "of model.named_modules()."),
    Mistake("other-params-trainable",
            "Parameters outside the adapters (norms, embeddings, the layers not targeted) still "
            "require gradients.",
            "Freeze the whole model first (for p in model.parameters(): p.requires_grad_(False)), "
            "then wrap: the new lora_A and lora_B are trainable."),
)


# Llama-3-8B: 32 layers, hidden 4096, q_proj 4096 -> 4096, v_proj 4096 -> 1024 (8 kv heads
# of 128), MLP 14336, vocabulary 128256, untied embeddings.
LAYERS, HIDDEN, KV, MLP, VOCAB = 32, 4096, 1024, 14336, 128256


def llama3_8b_parameters() -> int:
    per_layer = 2 * HIDDEN * HIDDEN + 2 * HIDDEN * KV + 3 * HIDDEN * MLP + 2 * HIDDEN
    return LAYERS * per_layer + 2 * VOCAB * HIDDEN + HIDDEN


def lora_parameters(r: int) -> int:
    """LoRA on q_proj and v_proj of every layer: r · (in + out) each."""
    return LAYERS * (r * (HIDDEN + HIDDEN) + r * (HIDDEN + KV))


ADAM_BYTES = 8  # AdamW keeps two float32 moments per trainable parameter
FULL = llama3_8b_parameters()
LORA16 = lora_parameters(16)

QUESTIONS = (
    Question("LoRA with r = 16 on q_proj and v_proj of Llama-3-8B (32 layers, hidden 4096, "
             "v_proj 4096 -> 1024): how many trainable parameters?",
             LORA16, INTEGER,
             f"32 · 16 · ((4096 + 4096) + (4096 + 1024)) = {LORA16:,}: "
             f"{100 * LORA16 / FULL:.3f}% of the model's {FULL:,}."),
    Question("AdamW keeps two float32 moments per trainable parameter. How many GB (1e9 bytes, "
             "1 decimal) of optimizer state does full fine-tuning of Llama-3-8B need?",
             round(FULL * ADAM_BYTES / 1e9, 1), NUMBER,
             f"{FULL:,} · 8 bytes = {FULL * ADAM_BYTES / 1e9:.1f} GB; the LoRA above needs "
             f"{LORA16 * ADAM_BYTES / 1e6:.1f} MB, {FULL // LORA16:,} times less.", rel_tolerance=0.01),
    Question("LoRALinear(base, r=64, alpha=16, use_rslora=True): what is the scaling "
             "(2 decimals)?",
             round(16 / 64 ** 0.5, 2), NUMBER,
             f"alpha / sqrt(r) = 16 / 8 = {16 / 64 ** 0.5:.2f}; plain LoRA would use "
             f"16 / 64 = {16 / 64:.2f}, which shrinks the update as r grows.", rel_tolerance=0.01),
)
