"""Kata 10_vit (The Vision Transformer's block (timm)).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import ATTENTION_BUILTINS, Kata, Mistake
from graders.core.quizzes import CHOICE, encoder_layer_parameters, INTEGER, NUMBER, Question

KATA = Kata(
    id="10",
    name="10_vit",
    file="vit.py",
    title="The Vision Transformer's block (timm)",
    track="models",
    difficulty="hard",
    target_minutes=35,
    prerequisites=("03", "06"),
    mistakes=(
        "patch-flatten-without-transpose",
        "qkv-reshape-order",
        "missing-scale",
        "scale-by-embed-dim",
        "reshape-without-transpose",
        "norm-order-swapped",
        "missing-residual",
        "residual-from-normed",
        "gelu-tanh-approximation",
        "drop-path-not-rescaled",
        "drop-path-in-eval",
        "drop-path-per-element",
    ),
    forbidden=ATTENTION_BUILTINS,
    hints=(
        "Follow one image through the model and write the shape after every step: "
        "(B, C, H, W) -> patches -> tokens -> heads -> back. Which axis must move at each "
        "reshape, and which random draw covers a whole sample?",
        "PatchEmbed: the conv gives (B, D, H/p, W/p); flatten(2) then transpose(1, 2) makes "
        "(B, N, D) - a reshape alone mixes channels into tokens. Attention: qkv(x) is "
        "(B, N, 3*dim) with q, k, v outermost, so reshape to (B, N, 3, h, d) and permute to "
        "(3, B, h, N, d); scale by head_dim ** -0.5; merge with transpose(1, 2) before the "
        "reshape. Mlp uses the exact GELU. DropPath draws one keep/drop per sample, shape "
        "(B, 1, 1, ...), divides the kept ones by 1 - p, and does nothing in eval mode. "
        "Block is Pre-LN: x = x + drop_path(attn(norm1(x))).",
        "qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)   # q, k, v outermost\n"
        "q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)                             # (B, h, N, d) each\n"
        "# DropPath in training: one draw per sample, then x * keep / (1 - p)\n"
        "keep = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(1 - p)  # (B, 1, 1)",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("patch-flatten-without-transpose",
            "The conv's grid (B, D, H/p, W/p) became tokens without moving D last: flattened "
            "and left (B, D, N), or reshaped straight to (B, N, D), which mixes one channel of "
            "several patches into each token.",
            "self.proj(x).flatten(2).transpose(1, 2): (B, D, N) first, then move D last."),
    Mistake("qkv-reshape-order",
            "qkv(x) was read as (B, N, h, 3, d) instead of (B, N, 3, h, d): its output "
            "features are all of q, then all of k, then all of v.",
            "reshape(B, N, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4): the 3 is the outer "
            "factor."),
    Mistake("gelu-tanh-approximation",
            "The MLP used the tanh approximation of GELU; the ViT block uses the exact (erf) "
            "GELU, nn.GELU() with its default approximate='none'.",
            "self.act = nn.GELU(), or F.gelu(x) without approximate='tanh'."),
    Mistake("drop-path-not-rescaled",
            "DropPath zeroed samples but did not divide the kept ones by 1 - p, so the "
            "branch's expected value shrinks in training.",
            "keep = keep / (1 - p) when scale_by_keep (and p < 1), then return x * keep."),
    Mistake("drop-path-in-eval",
            "DropPath dropped samples in eval mode; stochastic depth acts only while training.",
            "if self.drop_prob == 0.0 or not self.training: return x."),
    Mistake("drop-path-per-element",
            "DropPath drew its keep/drop decision per element (or per token); it must keep or "
            "drop each sample's whole residual branch.",
            "Draw a mask of shape (B, 1, 1, ...): x.new_empty((x.shape[0],) + (1,) * (x.ndim - "
            "1)).bernoulli_(1 - p)."),
)


# --- the formulas behind this quiz's numbers (the self-tests check them against PyTorch) ---

def vit_block_parameters(dim: int, mlp_ratio: float = 4.0) -> int:
    """timm's ViT Block with qkv_bias=True: a Pre-LN encoder layer of width int(dim * mlp_ratio)."""
    return encoder_layer_parameters(dim, int(dim * mlp_ratio))


def patch_count(height: int, width: int, patch_size: int) -> int:
    """Tokens from PatchEmbed: (H / p) * (W / p)."""
    return (height // patch_size) * (width // patch_size)


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "How many tokens does `PatchEmbed(patch_size=16)` make of one 224 × 384 image?",
        patch_count(224, 384, 16), INTEGER,
        "The conv with kernel = stride = 16 gives a 14 × 24 grid of patches (224/16 = 14 "
        "rows, 384/16 = 24 columns): N = 14 · 24 = 336 tokens, in row-major order. A "
        "square 224 × 224 image gives the familiar 196."),
    Question(
        "How many parameters does ViT-B/16's `Block(768, 12, mlp_ratio=4.0, "
        "qkv_bias=True)` have?",
        vit_block_parameters(768), INTEGER,
        "qkv 768·2304 + 2304 = 1,771,776; proj 768·768 + 768 = 590,592; fc1 768·3072 + "
        "3072 = 2,362,368; fc2 3072·768 + 768 = 2,360,064; two LayerNorms 2·(768 + 768) = "
        "3,072. Total 7,087,872: exactly nn.TransformerEncoderLayer(768, 12, 3072)'s count, "
        "since the block is a Pre-LN encoder layer under other names."),
    Question(
        "`qkv(x)` has shape (B, N, 3·dim). Which reshape gives q, k and v their own heads "
        "correctly, before permuting to (3, B, h, N, d)?",
        "B", CHOICE,
        "qkv's output features are all of q, then all of k, then all of v, each split into "
        "h heads of d: the 3 is the outer factor, (B, N, 3, h, d). Reading them as "
        "(B, N, h, 3, d) hands each head a mix of q, k and v columns (the "
        "qkv-reshape-order mistake); the other two put the token axis in the wrong place.",
        choices=("`(B, N, h, 3, d)`", "`(B, N, 3, h, d)`", "`(B, 3, h, N, d)`",
                 "`(3, B, h, N, d)` directly")),
    Question(
        "`DropPath(0.25)` in training mode on x of shape (B, N, D). What happens to a "
        "sample x[i] that is kept?",
        "A", CHOICE,
        "One draw per sample: x[i] is either all zeros (probability 0.25) or all of it "
        "divided by 1 - p = 0.75, so that E[DropPath(x)] = x and eval mode (the identity) "
        "sees the same scale. Zeroing single elements or tokens is ordinary dropout, not "
        "stochastic depth.",
        choices=("it becomes x[i] / 0.75, every element", "it stays x[i]",
                 "it becomes 0.75 · x[i]",
                 "each of its elements is zeroed or divided by 0.75 on its own draw")),
    Question(
        "ViT prepends a learned class token to the patch tokens and feeds its final state "
        "to the classification head. Why, and what is the usual alternative?",
        "B", CHOICE,
        "The class token is the same learned vector for every image (BERT's [CLS]): "
        "through attention it reads every patch, and its output after the final norm is "
        "the image's feature. It carries no label and is not needed for attention. The "
        "alternative is global average pooling of the patch tokens' outputs: the ViT "
        "paper finds both work about equally well once the learning rate is tuned for "
        "each, and timm offers both (global_pool='token' or 'avg'). With average pooling "
        "and no position embeddings, the model's prediction would not change at all if the "
        "patches were shuffled (lesson section 8).",
        choices=("it carries the image's label into the encoder",
                 "it gives the head one token that gathers the whole image by attention; "
                 "averaging the patch tokens works about as well",
                 "attention cannot be computed without it",
                 "it stores the image's size, so that any resolution works")),
    Question(
        "Trained from scratch on ImageNet-1k (1.3 M images) without strong regularisation, "
        "ViT-B/16 ends a few points below a ResNet of similar size. Why, and what closed "
        "the gap?",
        "C", CHOICE,
        "A convolution builds locality and translation equivariance in. ViT's only 2-D "
        "priors are cutting the image into patches and resizing the position embeddings "
        "for a new resolution: it must learn spatial structure from data. In the ViT paper, "
        "pre-training on ImageNet-21k (14 M images) makes it comparable to ResNets and "
        "JFT-300M makes it better. DeiT (Touvron et al., 2021) is competitive with convnets "
        "on ImageNet-1k alone, with strong augmentation (RandAugment, Mixup, CutMix, random "
        "erasing), stochastic depth (this kata's DropPath) and distillation from a convnet "
        "teacher through an extra distillation token.",
        choices=("attention is numerically unstable on pixels; float64 fixes it",
                 "its patches lose the colour information",
                 "it lacks a convolution's locality and translation equivariance and "
                 "learns them from data: more pre-training data, or DeiT's augmentation "
                 "and distillation",
                 "it has far fewer parameters than the ResNet")),
    Question(
        "ViT-B/16 is fine-tuned at 384 × 384 instead of 224 × 224. By what factor grows "
        "each layer's attention score matrix, the class token included?",
        ((patch_count(384, 384, 16) + 1) / (patch_count(224, 224, 16) + 1)) ** 2, NUMBER,
        "Tokens: 24 · 24 + 1 = 577 instead of 14 · 14 + 1 = 197. The scores are tokens × "
        "tokens, so they grow by (577 / 197)² ≈ 8.58, while the linear layers and the "
        "activations grow with the token count only, ≈ 2.93. Halving the patch size does "
        "the same as doubling the side of the image: 4 times the tokens, 16 times the "
        "scores. That is why high-resolution ViTs turn to windowed attention (Swin) or "
        "memory-efficient kernels.",
        rel_tolerance=0.01),
)
