"""Kata 06_encoder_layer (A Transformer encoder layer and stack).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import ENCODER_BUILTINS, Kata, Mistake
from graders.core.quizzes import CHOICE, encoder_layer_parameters, INTEGER, Question

KATA = Kata(
    id="06",
    name="06_encoder_layer",
    file="encoder_layer.py",
    title="A Transformer encoder layer and stack",
    track="foundations",
    difficulty="hard",
    target_minutes=30,
    prerequisites=("03", "04"),
    mistakes=(
        "norm-order-swapped",
        "norm-inside-residual",
        "missing-residual",
        "residual-from-normed",
        "shared-layer-weights",
        "activation-misplaced",
        "mask-not-forwarded",
        "final-norm-missing",
        "dropout-in-eval",
    ),
    forbidden=ENCODER_BUILTINS,
    hints=(
        "A layer is two sub-blocks - self-attention, then feed-forward - each wrapped in "
        "a residual connection and a LayerNorm. The only question is where the norm goes: "
        "norm_first decides.",
        "Post-LN (norm_first=False): x = norm1(x + sa(x)); x = norm2(x + ff(x)). Pre-LN: "
        "x = x + sa(norm1(x)); x = x + ff(norm2(x)) - the residual adds the un-normalised "
        "x. Where people stumble: activation is a string (\"relu\", \"gelu\") *or* a "
        "callable - turn it into a function once; self_attn returns a tuple (output, "
        "weights): take [0], and need_weights=False skips the weights; pass src_mask as "
        "attn_mask and src_key_padding_mask as key_padding_mask. The encoder's layers are "
        "copy.deepcopy copies (not [layer] * n), it hands its `mask` to each layer as "
        "src_mask, and applies norm at the end when given.",
        "activation = {'relu': F.relu, 'gelu': F.gelu}[activation] if isinstance(activation, str) else activation\n"
        "def _sa(self, x, attn_mask, key_padding_mask):   # self-attention sub-block\n"
        "    out = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,\n"
        "                         need_weights=False)[0]   # a tuple: (output, weights)\n"
        "    return self.dropout1(out)\n"
        "def _ff(self, x):                                  # feed-forward sub-block\n"
        "    return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))\n"
        "# forward: Pre-LN x = x + self._sa(self.norm1(x), ...); x = x + self._ff(self.norm2(x))\n"
        "#          Post-LN x = self.norm1(x + self._sa(x, ...)); x = self.norm2(x + self._ff(x))\n"
        "layers = nn.ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "In Post-LN (`norm_first=False`, the original Transformer), the attention "
        "sub-layer computes…",
        "A", CHOICE,
        "Post-LN normalises after the residual sum: x = norm1(x + sa(x)). Pre-LN "
        "normalises the sub-layer's input and leaves the residual path untouched: "
        "x = x + sa(norm1(x)).",
        choices=("`x = norm1(x + sa(x))`", "`x = x + sa(norm1(x))`",
                 "`x = norm1(x) + sa(norm1(x))`", "`x = sa(norm1(x + x))`")),
    Question(
        "How many parameters does `nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048)` "
        "have?",
        encoder_layer_parameters(512, 2048), INTEGER,
        "Attention 4·512² + 4·512 = 1,050,624; linear1 512·2048 + 2048 = 1,050,624; "
        "linear2 2048·512 + 512 = 1,049,088; two LayerNorms 2·(512 + 512) = 2,048. "
        "Total 3,152,384."),
    Question(
        "And `nn.TransformerEncoder` of 6 such layers (no final norm)?",
        6 * encoder_layer_parameters(512, 2048), INTEGER,
        "The encoder deep-copies the layer six times, so each layer has its own weights: "
        "6 · 3,152,384 = 18,914,304. If the six entries were the same module, the count "
        "would stay at 3,152,384 and the layers would share (and train) one set of weights."),
    Question(
        "Why do Transformers use LayerNorm rather than BatchNorm?",
        "D", CHOICE,
        "BatchNorm's statistics run over the batch (and the positions): a token's output "
        "would depend on the other sequences, their lengths and padding and the batch size, "
        "and inference would use running averages. LayerNorm normalises each token over its "
        "own d_model features, the same in training and inference.",
        choices=("BatchNorm has no learned parameters", "LayerNorm is cheaper",
                 "BatchNorm cannot be used with dropout",
                 "LayerNorm normalises each token on its own, independent of batch, length "
                 "and padding")),
    Question(
        "What do Llama-style models use in place of the original Post-LN layer with a ReLU "
        "feed-forward?",
        "B", CHOICE,
        "Pre-LN (stable without warm-up, at the price of a residual stream that grows with "
        "depth and needs a final norm), with RMSNorm (x / rms(x) · g: no mean, no bias) and a "
        "gated SwiGLU feed-forward, W₂(silu(W₁x) ⊙ W₃x), of hidden width about 8/3·d.",
        choices=("Post-LN with BatchNorm", "Pre-norm with RMSNorm and a SwiGLU feed-forward",
                 "no normalisation at all", "Post-LN with GELU")),
    Question(
        "Counting only the weight matrices, how many parameters does one encoder layer with "
        "d = 1024 and d_ff = 4d have?",
        12 * 1024 * 1024, INTEGER,
        "Attention: W_q, W_k, W_v, W_o, 4d². Feed-forward: d × 4d and 4d × d, 8d². Total 12d² "
        "= 12,582,912; biases and norms add only O(d). The rule of thumb for sizing a model: "
        "12·d² per layer."),
)
