"""Kata 24_kv_quant (A quantised KV cache).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import INTEGER, Question

KATA = Kata(
    id="24",
    name="24_kv_quant",
    file="kv_quant.py",
    title="A quantised KV cache",
    track="inference",
    difficulty="medium",
    target_minutes=30,
    prerequisites=("11",),
    mistakes=(
        "scale-wrong-range",
        "int8-overflow",
        "truncation-not-rounding",
        "scale-wrong-axis",
        "dequant-divides",
        "nan-on-zero-rows",
        "scale-wrong-dtype",
        "scale-not-applied",
        "key-scale-after-softmax",
        "query-quantised",
        "cache-stores-float",
        "causal-mask-offset",
        "int4-range",
        "nibbles-swapped",
        "nibble-not-sign-extended",
        "asymmetric-zero-point",
    ),
    forbidden=(),
    hints=(
        "One scale per slice: the largest magnitude along dim must land exactly on code "
        "+-qmax, every other value on the nearest code. Ask what happens to a slice of zeros, "
        "what a nibble >= 8 means when you unpack, and which position each query sits at.",
        "quantize: amax = x.abs().amax(dim, keepdim=True), scale = amax / qmax in float32; "
        "divide where the scale is non-zero (0/0 must never happen), round, clamp to "
        "[-qmax, qmax], cast to int8. unpack_int4: take both nibbles of an int16 copy, then "
        "sign-extend them (two's complement). The cache keeps only codes (packed with bits=4) "
        "and float32 scales and dequantises when attending; the t_q queries are the last t_q "
        "positions, so query a sees keys 0 ... s - t_q + a.",
        "nib = torch.where(nib >= 8, nib - 16, nib)   # unpack_int4: a nibble >= 8 is negative\n"
        "blocked = torch.ones(t_q, s, dtype=torch.bool).triu(diagonal=s - t_q + 1)   # kata 11's offset",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("scale-wrong-range",
            "The scale does not map the slice's largest magnitude to +-qmax (amax/128, /255, "
            "/256 or 2*amax/255): part of the code range is wasted or overflows.",
            "scale = amax / qmax with qmax = 2**(bits - 1) - 1: 127 for int8, 7 for int4."),
    Mistake("int8-overflow",
            "Codes outside [-qmax, qmax] or wrapped modulo 256: no clamp, -128 used, or a float "
            "128.0 cast to int8 (it becomes -128).",
            "Clamp round(x / scale) to [-qmax, qmax] before casting to int8."),
    Mistake("truncation-not-rounding",
            "x / scale was cast to int8 directly, which truncates towards zero: errors up to a "
            "whole step instead of half of one.",
            "Round first: torch.round(x / scale), then clamp and cast."),
    Mistake("scale-wrong-axis",
            "The scale is shared along the wrong axis: one per tensor or per channel where one "
            "per token was asked, or the reverse.",
            "amax = x.abs().amax(dim=dim, keepdim=True); dim=None: the whole tensor, every axis of "
            "size 1."),
    Mistake("dequant-divides",
            "dequantize divided the codes by the scale instead of multiplying.",
            "x_hat = codes * scale: the scale is the size of one step of the grid."),
    Mistake("nan-on-zero-rows",
            "An all-zero slice was divided by a zero scale: 0/0 is NaN, and casting NaN to an "
            "integer is undefined behaviour.",
            "Divide by torch.where(scale > 0, scale, 1) (or a tiny floor): the codes are 0 anyway."),
    Mistake("scale-wrong-dtype",
            "The scales are stored in an integer type (rounded to 0 or 1) or in half precision "
            "(by quantize, or by the cache to save bytes), which breaks the error bound.",
            "Keep the scales in float32 whatever x's dtype, in quantize's result and in the "
            "cache: 4 bytes per token and head is what the memory bound allows."),
    Mistake("scale-not-applied",
            "Attention ran on the raw codes, or a key or value scale was dropped.",
            "Attend over codes * scale (or fold each per-token scale into its score or "
            "probability column)."),
    Mistake("key-scale-after-softmax",
            "The per-token key scale was folded into the probabilities instead of the scores.",
            "A key scale multiplies score column j before the softmax; only the value scale may "
            "multiply probability column j."),
    Mistake("query-quantised",
            "The query was rounded to the int8 grid too.",
            "Only the cache is quantised: the query stays in floating point."),
    Mistake("cache-stores-float",
            "The cache keeps floating-point keys or values (beside the codes, instead of them, or "
            "as a view of what append received).",
            "Store only int8/uint8 codes and float32 scales; dequantise when attending."),
    Mistake("int4-range",
            "int4 codes were computed with amax/8 (reaching -8 and 8) or offset to [0, 15].",
            "bits=4 is symmetric too: qmax = 7, codes in [-7, 7], 0 maps to 0."),
    Mistake("asymmetric-zero-point",
            "The codes are asymmetric: a min/max scale (max - min) / (2^bits - 1) and a rounded "
            "zero point added to every code, instead of the symmetric absmax scheme, where 0 "
            "maps to code 0 and no zero point is stored.",
            "scale = amax / qmax with amax = x.abs().amax(dim, keepdim=True); codes = "
            "clamp(round(x / scale), -qmax, qmax), and dequantize is codes * scale with no "
            "offset."),
    Mistake("nibbles-swapped",
            "Element 2j went into the high nibble and 2j+1 into the low one.",
            "byte j = (c[2j] & 0xF) | (c[2j+1] & 0xF) << 4: [1, 2, 3, 4] packs to [0x21, 0x43]."),
    Mistake("nibble-not-sign-extended",
            "Unpacked nibbles were not sign-extended: -1 came back as 15.",
            "A nibble >= 8 is nibble - 16 (two's complement)."),
)


QUESTIONS = (
    Question("Llama-3-8B's cache (32 layers, 8 kv heads of 128): how many bytes per token does "
             "it take in int8 with one float32 scale per token and head, keys and values?",
             67584, INTEGER,
             "2 * 32 * 8 * (128 + 4) = 67,584 bytes: 51.6% of float16's 131,072."),
    Question("The same cache with int4 codes packed two to a byte and float32 scales: bytes per "
             "token?", 34816, INTEGER,
             "2 * 32 * 8 * (64 + 4) = 34,816 bytes: 26.6% of float16's."),
    Question("What byte (as an unsigned integer) does pack_int4 make of the codes [-1, 7]?",
             127, INTEGER,
             "-1 & 0xF = 0xF in the low nibble, 7 in the high one: 0x7F = 127."),
)
