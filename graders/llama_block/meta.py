"""Kata 15_llama_block (A Llama decoder block).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, Question

# The RMSNorm builtins (the module, the op behind it, and the functional form; nn.RMSNorm
# calls F.rms_norm, which calls torch.rms_norm).
RMSNORM_BUILTINS = (
    "torch.nn.RMSNorm",
    "torch.rms_norm",
    "torch.nn.functional.rms_norm",
)

KATA = Kata(
    id="15",
    name="15_llama_block",
    file="llama_block.py",
    title="A Llama decoder block",
    track="llm",
    difficulty="medium",
    target_minutes=35,
    prerequisites=("12", "13"),
    mistakes=(
        "rmsnorm-subtracts-mean",
        "rmsnorm-eps-outside-sqrt",
        "rmsnorm-no-upcast",
        "swiglu-gate-swapped",
        "swiglu-wrong-activation",
        "rope-on-values",
        "rope-pairs-mismatch",
        "rope-positions-ignored",
        "causal-mask-missing",
        "kv-heads-tiled",
        "missing-scale",
        "norm-order-swapped",
        "missing-residual",
        "rope-wrong-frequency",
        "rope-rotation-reversed",
        "causal-mask-transposed",
        "causal-diagonal",
        "scale-by-embed-dim",
        "norm-inside-residual",
        "residual-from-normed",
    ),
    forbidden=RMSNORM_BUILTINS,
    hints=(
        "Build it bottom-up and test each piece alone: the norm, the MLP, the attention, "
        "then the block that wires them. Which of kata 12's and kata 13's answers can you "
        "reuse as they are, and what does Llama leave out that kata 06's encoder layer had?",
        "Three places trip people up. The norm: eps goes under the root, no mean is "
        "subtracted, and a half-precision input is normalised in float32 (x² overflows "
        "float16 above |x| = 256), cast back, then scaled. The angles: compute them from "
        "the positions in float32 or better, one row per sequence when positions is "
        "(b, n), and give cos and sin a heads axis so that they broadcast over q's "
        "(b, h, n, d). The heads: kv head g serves the consecutive query heads "
        "g·(h/kv) … (g+1)·(h/kv) − 1 (repeat_interleave, not repeat), and the causal mask "
        "follows the sequence index, never the positions.",
        "cos, sin = cos[:, None], sin[:, None]   # positions (b, n): (b, n, d) -> (b, 1, n, d), every head alike\n"
        "q = q * cos + torch.cat((-q[..., d // 2:], q[..., :d // 2]), -1) * sin   # (b, h, n, d); k alike, v never\n"
        "# cos, sin: the angle of columns i and i + d/2 = position * base ** (-2i / d); from (n,) positions, (n, d) broadcasts as it is",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("rmsnorm-subtracts-mean",
            "The norm centred x (LayerNorm-style: x minus its mean) or divided by its variance; "
            "RMSNorm divides x itself by its root mean square, mean(x²), with no mean taken "
            "out.",
            "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight: no x.mean(), no "
            "x.var()."),
    Mistake("rmsnorm-eps-outside-sqrt",
            "eps was added outside the square root, x / (sqrt(mean(x²)) + eps); RMSNorm adds "
            "it inside, x / sqrt(mean(x²) + eps). The two differ where x is small.",
            "torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps): eps under the root."),
    Mistake("rmsnorm-no-upcast",
            "The norm squared a float16 input in float16: x² overflows to inf once |x| > 256 "
            "(float16's largest number is 65504), the mean of the squares is inf and the "
            "token's output is all zeros. Hugging Face's LlamaRMSNorm computes the norm in "
            "float32 whatever the input's dtype, and casts back.",
            "wide = x.float(); normed = wide * torch.rsqrt(wide.pow(2).mean(-1, "
            "keepdim=True) + eps); cast normed back to x.dtype, then multiply by weight."),
    Mistake("swiglu-wrong-activation",
            "The gate's activation is not SiLU (it looks like GELU, quick-GELU "
            "z · sigmoid(1.702 z), ReLU or a plain sigmoid); Llama's hidden_act is silu, "
            "z · sigmoid(z).",
            "F.silu(gate_proj(x)) (or nn.SiLU()), not F.gelu, F.relu or torch.sigmoid."),
    Mistake("rope-on-values",
            "The values were rotated too: RoPE turns the queries and keys only, so that their "
            "dot products see relative positions; the values carry content unchanged.",
            "Rotate q and k after the head split, and leave v as v_proj made it."),
)


# --- the quiz ---

def swiglu_hidden_dim(dim: int, multiple_of: int = 256) -> int:
    """Llama's MLP width: 2/3 of 4·dim (the SwiGLU MLP has three matrices, not two), rounded
    up to a multiple of ``multiple_of`` (Meta's llama code)."""
    hidden = int(2 * 4 * dim / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def llama_block_parameters(dim: int, num_heads: int, num_kv_heads: int, hidden_dim: int) -> int:
    """LlamaDecoderLayer: q_proj and o_proj dim², k_proj and v_proj dim·kv·head_dim, three
    MLP matrices dim·hidden_dim, two RMSNorm weights; no biases."""
    kv_width = num_kv_heads * (dim // num_heads)
    return 2 * dim * dim + 2 * dim * kv_width + 3 * dim * hidden_dim + 2 * dim



KiB = 2**10

QUESTIONS = (
    Question(
        "What does RMSNorm leave out of LayerNorm?",
        "B", CHOICE,
        "RMSNorm divides by the root mean square, sqrt(mean(x²) + eps), and multiplies by a "
        "weight: no mean is subtracted and there is no bias. Its paper (Zhang and Sennrich, "
        "2019) found that LayerNorm's re-centring contributes little while its re-scaling is "
        "what stabilises training; dropping the mean saves a reduction per token and the bias "
        "saves dim parameters per norm, with the same quality in practice.",
        choices=("the division by a root of a second moment",
                 "the mean subtraction and the bias",
                 "the learned weight",
                 "eps")),
    Question(
        "Llama-2-7B has dim 4096. Its SwiGLU MLP keeps the parameters of a 4·dim MLP with two "
        "matrices, so its hidden width is 2/3 · 4 · dim, rounded up to a multiple of 256. What "
        "is the hidden width?",
        swiglu_hidden_dim(4096), INTEGER,
        "A SwiGLU MLP has three matrices (gate_proj, up_proj, down_proj) where a GELU MLP has "
        "two, so for the same parameters the width shrinks from 4·dim to 2/3 · 4·dim = 8/3 · "
        "dim ≈ 10922.7, which Meta rounds up to a multiple of 256: 43 · 256 = 11008. Llama-3-8B's "
        "14336 is not 3.5 · 4096 by design: Meta's code multiplies int(10922.7) = 10922 by "
        "ffn_dim_multiplier = 1.3 (14198) and rounds up to a multiple of 1024, 14 · 1024."),
    Question(
        "How many parameters has that MLP (dim 4096, hidden width 11008, no biases)?",
        3 * 4096 * swiglu_hidden_dim(4096), INTEGER,
        "Three matrices of 4096 × 11008: 3 · 45,088,768 = 135,266,304, about 2/3 of the "
        "block."),
    Question(
        "How many parameters has one whole Llama-2-7B block (dim 4096, 32 heads, 32 kv heads, "
        "hidden width 11008)?",
        llama_block_parameters(4096, 32, 32, 11008), INTEGER,
        "Attention 4 · 4096² = 67,108,864 (q, k, v and o, no biases), the MLP 135,266,304, two "
        "RMSNorm weights 2 · 4096 = 8,192: 202,383,360. Times 32 blocks is 6,476,267,520; the "
        "embedding and the output layer (2 · 32000 · 4096) and the final norm bring it to "
        "6,738,415,616, the '7B'."),
    Question(
        "And one Llama-3-8B block (dim 4096, 32 heads, 8 kv heads, hidden width 14336)?",
        llama_block_parameters(4096, 32, 8, 14336), INTEGER,
        "q_proj and o_proj 4096² each; k_proj and v_proj only 4096 · 8 · 128 = 4,194,304 each "
        "(GQA); the MLP 3 · 4096 · 14336 = 176,160,768; the norms 8,192: 218,112,000. GQA "
        "saves 25,165,824 parameters per block in the attention, and the wider MLP spends "
        "them."),
    Question(
        "How many KiB of KV cache does Llama-3-8B (32 layers, 8 kv heads of head_dim 128) need "
        "per token in bfloat16?",
        2 * 32 * 8 * 128 * 2 // KiB, INTEGER,
        "Keys and values, for every layer and kv head: 2 · 32 · 8 · 128 values × 2 bytes = "
        "131,072 bytes = 128 KiB per token, so 8192 tokens take 1 GiB. With 32 kv heads "
        "(Llama-2-7B's multi-head attention) it would be 4 times as much, 512 KiB."),
    Question(
        "Why does Hugging Face's LlamaRMSNorm upcast bfloat16 and float16 inputs to float32?",
        "C", CHOICE,
        "In float16, x² overflows to inf once |x| > 256 (256² = 65536 > 65504, float16's "
        "largest number), and activations of hundreds are common in a residual stream. "
        "bfloat16 has float32's range but 8 significant bits (7 stored): each rounding — of "
        "x², of their mean, of x · rsqrt — can be off by 2⁻⁸ ≈ 0.4 %. The sum itself is "
        "not the weak point: PyTorch's reductions on half types accumulate in float32. The "
        "norm is cheap, so LlamaRMSNorm computes it in float32, casts the result back to "
        "the input's dtype, and only then multiplies by the weight; the big matrix products "
        "stay in the half type.",
        choices=("so that the weight can stay float32",
                 "because rsqrt has no half-precision kernel",
                 "x² overflows float16 once |x| > 256, and each bfloat16 rounding keeps only "
                 "8 significant bits",
                 "to make the output float32")),
    Question(
        "A model trained with Hugging Face's pairing (i, i + d/2) is run with Meta's adjacent "
        "pairs (2i, 2i+1) on the same weights. What happens?",
        "D", CHOICE,
        "Both are rotations with the same angles, but of different pairs of features: the "
        "queries and keys the weights produce expect their halves to be paired. Nothing "
        "raises and shapes agree, but every score is wrong and the model outputs garbage. "
        "Converting Meta's checkpoints to Hugging Face's permutes the rows of q_proj and "
        "k_proj instead, so that the rotate-half code turns the same pairs.",
        choices=("nothing: RoPE's dot products depend on m − n either way",
                 "only the first head is affected",
                 "it raises a shape error",
                 "the scores are wrong: the weights must be permuted to match the pairing")),
)
