"""Kata 26_cross_entropy (Next-token cross-entropy).

Beside the grader (checks.py) and the twin (twin.py), what the learner does not read: its
registry entry with the hint ladder (KATA), the mistakes only it names (MISTAKES), its own
words for shared ones (WORDINGS) and its quiz (QUESTIONS). Imports nothing heavy: `kata
list` reads every meta.
"""

from __future__ import annotations

import math

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import INTEGER, NUMBER, Question

# Llama-3-8B's vocabulary, and the batch of the follow-up: 8 sequences of 8,192 tokens.
LLAMA3_VOCAB = 128_256
BATCH_TOKENS = 8 * 8192
FLOAT32_BYTES = 4

KATA = Kata(
    id="26",
    name="26_cross_entropy",
    file="cross_entropy.py",
    title="Next-token cross-entropy",
    track="training",
    difficulty="medium",
    target_minutes=20,
    prerequisites=("14",),
    mistakes=(
        "labels-not-shifted",
        "shifted-wrong-way",
        "ignore-index-counted",
        "mean-over-padded-tokens",
        "logsumexp-unstable",
        "no-float32-upcast",
        "mean-of-micro-batch-means",
        "nan-on-empty-batch",
        "smoothing-over-other-classes",
        "smoothing-weight-wrong",
        "z-loss-not-squared",
        "z-loss-on-max-logit",
        "z-loss-on-ignored-tokens",
        "full-logits-materialised",
        "forbidden-builtin",
    ),
    forbidden=("torch.nn.functional.cross_entropy", "torch.nn.functional.nll_loss",
               "torch.nn.CrossEntropyLoss"),
    hints=(
        "Shift first: the logits at position t are scored against labels[:, t + 1], and the "
        "last position predicts nothing. Keep only the targets that count, take -log p_y from "
        "a logsumexp that subtracts the row's maximum, in float32 at least, and decide what "
        "you divide by before you write the sum.",
        "x = logits[:, :-1].reshape(-1, V) in float32 (float64 stays), y = labels[:, 1:]."
        "reshape(-1), keep = y != ignore_index; lse = torch.logsumexp(x[keep], -1); nll = lse - "
        "x[keep] gathered at y[keep]; per target (1 - eps) * nll + eps * (lse - mean_v x) + "
        "z_loss * lse^2; sum them and divide by num_items, or by keep.sum() (at least 1). "
        "Chunked: the same sum over chunk_size targets at a time, each chunk under "
        "torch.utils.checkpoint, so that its logits are recomputed in the backward, not saved.",
        "total = sum(checkpoint(chunk_sum, h[i:i + c], W, y[i:i + c], use_reentrant=False)\n"
        "            for i in range(0, y.numel(), c))   # h = hidden[:, :-1].reshape(-1, d)\n"
        "return total / (keep.sum().clamp_min(1) if num_items is None else num_items)",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue, never
# declared again here).
MISTAKES = (
    Mistake("shifted-wrong-way",
            "The shift went the wrong way: the logits at t + 1 were scored against the label at "
            "t, so each position is asked for the token before it, which it has already seen.",
            "logits[:, :-1] pairs with labels[:, 1:]: drop the last position's logits and the "
            "first label."),
    Mistake("ignore-index-counted",
            "Ignored targets added their loss to the sum: their label was replaced by a valid "
            "class (0, or clamped) and scored like any other, while the count left them out.",
            "Select the counted targets (keep = y != ignore_index) before the sum, or multiply "
            "each term by keep; a replaced label is only there to make gather valid."),
    Mistake("mean-over-padded-tokens",
            "The right sum was divided by every position (b * (n - 1), or b * n), padding "
            "included, instead of by the number of counted targets.",
            "Divide by (labels[:, 1:] != ignore_index).sum(), or by num_items when it is given."),
    Mistake("logsumexp-unstable",
            "log(sum(exp(x))) overflowed: exp(1e4) is inf in float32, so the loss (or its "
            "gradient) came out inf or NaN where the right answer is finite.",
            "Use torch.logsumexp, or subtract each row's maximum before exp: m + log(sum(exp(x "
            "- m)))."),
    Mistake("no-float32-upcast",
            "The loss was computed in float16 or bfloat16: logsumexp and the sum lose most "
            "digits there, and the result must be float32.",
            "Upcast the logits first: x = x.float() unless they are float64; the loss is float32 "
            "for half-precision or float32 logits."),
    Mistake("mean-of-micro-batch-means",
            "num_items was ignored: each micro-batch was divided by its own count, so "
            "accumulating them averages means and weighs a short micro-batch's tokens more "
            "(the gradient-accumulation bug transformers fixed in 2024).",
            "When num_items is given, return sum / num_items: the same divisor for every "
            "micro-batch of the step."),
    Mistake("nan-on-empty-batch",
            "With no counted target the loss (or its gradient) was NaN: 0 / 0. A fully padded "
            "micro-batch happens in training, and one NaN ruins the step.",
            "Divide by count.clamp_min(1): the sum is 0, so the loss is 0 and its gradients "
            "zeros."),
    Mistake("smoothing-over-other-classes",
            "Label smoothing spread eps over the V - 1 other classes (eps / (V - 1) each); "
            "PyTorch's label_smoothing spreads it over all V classes, the target included.",
            "Per target: (1 - eps) * nll + eps * mean over all V classes of -log p_v, i.e. eps * "
            "(lse - x.mean(-1))."),
    Mistake("smoothing-weight-wrong",
            "The smoothing terms were weighted wrongly: the nll kept a weight of 1 instead of "
            "1 - eps, or eps multiplied the sum of -log p_v over the classes instead of their "
            "mean.",
            "(1 - eps) * nll + eps * (lse - x.mean(-1)): the target distribution is (1 - eps) on "
            "y plus eps / V everywhere."),
    Mistake("z-loss-not-squared",
            "The z-loss was z_loss * logsumexp, not squared: it then pushes the log-normaliser "
            "down without bound instead of towards 0.",
            "z_loss * lse.square() per counted target, with lse = torch.logsumexp(x, -1)."),
    Mistake("z-loss-on-max-logit",
            "The z-loss was computed on the largest logit instead of the logsumexp (the "
            "log-normaliser log Z).",
            "z_loss * torch.logsumexp(x, -1) ** 2: PaLM's z is log Z, not max x."),
    Mistake("z-loss-on-ignored-tokens",
            "The z-loss was added for every position, ignored targets included (summed, or as "
            "a separate mean over all positions).",
            "Add z_loss * lse^2 to each counted target's term only, before the one division."),
    Mistake("full-logits-materialised",
            "More than 12 * chunk_size * V elements were alive at once: the full logits were "
            "built, or autograd kept every chunk's logits (or probabilities) for the backward.",
            "Wrap each chunk's loss in torch.utils.checkpoint (its logits are recomputed in the "
            "backward), or compute each chunk's gradients in the forward (a custom "
            "autograd.Function, as `Liger-Kernel` does)."),
)


# Shared mistakes in this kata's terms (graders.core.catalogue.mistake).
WORDINGS = (
    Mistake("forbidden-builtin",
            "next_token_loss called F.cross_entropy, F.nll_loss or nn.CrossEntropyLoss, which do "
            "this kata's work for you.",
            "Write it with torch.logsumexp (or log_softmax) and gather; F.cross_entropy is "
            "allowed in chunked_next_token_loss only."),
)


def logits_bytes(tokens: int, vocab: int = LLAMA3_VOCAB) -> int:
    """The bytes of float32 logits (tokens, vocab)."""
    return tokens * vocab * FLOAT32_BYTES


QUESTIONS = (
    Question("Llama-3-8B (V = 128,256) on a batch of 8 sequences of 8,192 tokens: how many bytes "
             "do its float32 logits take?", logits_bytes(BATCH_TOKENS), INTEGER,
             "8 · 8,192 · 128,256 · 4 = 33,621,540,864 bytes (31.3 GiB); their gradient is as "
             "large again: 62.6 GiB together."),
    Question("The largest chunk_size (targets) whose float32 logits fit in 1 GiB (2^30 bytes) "
             "with V = 128,256?", 2**30 // (LLAMA3_VOCAB * FLOAT32_BYTES), INTEGER,
             "2^30 / (128,256 · 4) = 2,092.97: 2,092 targets, so 32 chunks for the batch's 65,528 "
             "targets (8 · 8,191)."),
    Question("Two micro-batches of one step: the first has 10 counted targets whose losses sum to "
             "30, the second 90 summing to 90. What is the step's loss, per token (1 decimal)?",
             1.2, NUMBER,
             "(30 + 90) / (10 + 90) = 1.2; the mean of the two means, (3 + 1) / 2 = 2.0, weighs "
             "the first micro-batch's 10 tokens like the other 90.", rel_tolerance=0.01),
    Question("The loss of a model that predicts the uniform distribution over Llama-3's "
             "128,256 tokens (nats, 2 decimals)?", round(math.log(LLAMA3_VOCAB), 2), NUMBER,
             "ln(128,256) = 11.76: where the loss of a freshly initialised model starts.",
             rel_tolerance=0.001),
)
