"""Kata 13_gqa (Grouped-query and multi-query attention).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import ATTENTION_BUILTINS, Kata, Mistake
from graders.core.quizzes import CHOICE, GiB, INTEGER, MiB, NUMBER, Question

KATA = Kata(
    id="13",
    name="13_gqa",
    file="gqa.py",
    title="Grouped-query and multi-query attention",
    track="models",
    difficulty="medium",
    target_minutes=25,
    prerequisites=("03", "04"),
    mistakes=(
        "kv-heads-tiled",
        "kv-proj-full-width",
        "missing-scale",
        "mask-inverted",
        "kv-cache-missing-values",
        "kv-cache-per-query-head",
        "kv-cache-dtype-ignored",
        "scale-by-embed-dim",
        "causal-diagonal",
        "nan-on-fully-masked",
        "finite-mask-fill",
    ),
    forbidden=ATTENTION_BUILTINS,
    hints=(
        "Start from kata 03's multi-head attention and ask what changes when there are "
        "fewer key/value heads than query heads: which parameters shrink, and which key/"
        "value head does each query head read?",
        "k_proj and v_proj project to num_kv_heads * head_dim (head_dim = E // num_heads). "
        "Split k and v into (b, num_kv_heads, n, d) and give every kv head to group = "
        "num_heads // num_kv_heads *consecutive* query heads (query head j reads kv head "
        "j // group): repeat_interleave on the head axis, not repeat. The rest is kata 01 "
        "attention: scale 1/sqrt(head_dim), bool mask True = blocked, is_causal blocks "
        "keys after the query, a fully blocked row gets zero weights. For the cache, count "
        "what is stored per layer and per token: keys and values, for the kv heads only, "
        "in the dtype's bytes - exact Python ints.",
        "# k, v: (b, kv, n, d); query head j reads kv head j // (h // kv)\n"
        "k, v = k.repeat_interleave(h // kv, dim=1), v.repeat_interleave(h // kv, dim=1)  # (b, h, n, d)\n"
        "# kv_cache_bytes: 2 * b * seq * layers * kv * (E // h) * dtype.itemsize",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("kv-proj-full-width",
            "k_proj and v_proj project to the full width E; in GQA they project to "
            "num_kv_heads * head_dim, which is the whole point (fewer kv heads to cache).",
            "nn.Linear(embed_dim, num_kv_heads * head_dim) for k_proj and v_proj, "
            "head_dim = embed_dim // num_heads."),
    Mistake("kv-cache-missing-values",
            "Only the keys were counted: the cache holds the values too (twice as many bytes).",
            "Multiply by 2: keys and values, each (batch, num_kv_heads, seq_len, head_dim) per "
            "layer."),
    Mistake("kv-cache-per-query-head",
            "The cache was sized with num_heads key/value heads; only num_kv_heads are stored.",
            "Query heads share kv heads: 2 * batch * seq_len * layers * num_kv_heads * head_dim "
            "* bytes per element."),
    Mistake("kv-cache-dtype-ignored",
            "The bytes per element were not taken from dtype (e.g. 2 assumed whatever the "
            "dtype): float16 and bfloat16 take 2 bytes, float32 4, float64 8.",
            "torch.empty((), dtype=dtype).element_size(), or dtype.itemsize."),
)


# --- the formulas behind this quiz's numbers (the self-tests check them against PyTorch) ---

def gqa_kv_cache_bytes(batch_size: int, seq_len: int, num_layers: int, num_kv_heads: int,
                       head_dim: int, itemsize: int) -> int:
    """Keys and values of every layer: 2 * b * seq * layers * kv_heads * head_dim * bytes."""
    return 2 * batch_size * seq_len * num_layers * num_kv_heads * head_dim * itemsize


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "GQA with num_heads = 8 and num_kv_heads = 2: which key/value head does query "
        "head 5 read?",
        5 // (8 // 2), INTEGER,
        "Each kv head serves a group of 8 / 2 = 4 consecutive query heads: heads 0-3 read "
        "kv head 0, heads 4-7 kv head 1, so head 5 reads kv head 5 // 4 = 1. (Tiling with "
        "repeat gives head j the kv head j % 2: head 5 would get the right one by luck, "
        "head 1 the wrong one.)"),
    Question(
        "Llama-2-70B: 80 layers, E = 8192, 64 query heads, 8 kv heads. How many GiB does "
        "the float16 KV cache of one 4096-token sequence take?",
        gqa_kv_cache_bytes(1, 4096, 80, 8, 8192 // 64, 2) / GiB, NUMBER,
        "head_dim = 8192 / 64 = 128. Per layer and token: keys and values, 8 kv heads × 128 "
        "numbers each, 2 × 8 × 128 × 2 bytes = 4 KiB; × 80 layers × 4096 tokens = 1.25 GiB. "
        "With 64 kv heads (plain multi-head attention) it would be 8 times as much, 10 GiB.",
        rel_tolerance=0.01),
    Question(
        "Going from multi-head attention to GQA with the same num_heads (num_kv_heads < "
        "num_heads), the FLOPs of the two attention matmuls (scores and weights @ V)…",
        "C", CHOICE,
        "Every query head still computes its own n × n scores and its own weighted sum; the "
        "shared keys and values are only read by more heads. What shrinks is the K and V "
        "projections (their parameters and FLOPs) and, above all, the cache that decoding "
        "has to read for every new token.",
        choices=("shrink by num_heads / num_kv_heads", "shrink by half", "stay the same",
                 "grow, because k and v are copied")),
    Question(
        "Which of these is multi-query attention?",
        "A", CHOICE,
        "Multi-query attention (Shazeer, 2019) shares a single key/value head among all "
        "query heads: num_kv_heads = 1. num_kv_heads = num_heads is ordinary multi-head "
        "attention; GQA is everything in between.",
        choices=("num_kv_heads = 1", "num_kv_heads = num_heads",
                 "num_kv_heads = num_heads / 2", "num_heads = 1")),
    Question(
        "Llama-2-70B (80 layers, 64 query heads of width 128, float16) is served on 8 GPUs "
        "with tensor parallelism, 8 query heads per GPU. With multi-query attention, the "
        "single key/value head is needed by every GPU, so each holds a copy. How many MiB "
        "of KV cache does each GPU hold for one 4096-token sequence?",
        gqa_kv_cache_bytes(1, 4096, 80, 1, 128, 2) / MiB, NUMBER,
        "One kv head: 2 × 4096 × 80 × 128 × 2 bytes = 160 MiB, on every GPU. With 8 kv "
        "heads (GQA-8), the cache is 1.25 GiB in all but splits evenly, one kv head per "
        "GPU: 160 MiB each as well (multi-head attention: 1.25 GiB each). So under 8-way "
        "tensor parallelism MQA saves no memory per GPU over GQA-8, while it costs "
        "quality: Ainslie et al. (2023) report that MQA can degrade quality and make "
        "training unstable, and that GQA-8 comes close to multi-head quality at close to "
        "MQA's speed. That is the usual answer to \"why 8 kv heads\"; the Llama 2 paper "
        "itself only says GQA improves inference scalability.",
        rel_tolerance=0.01),
)
