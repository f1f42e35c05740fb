"""Kata 23_mla (Multi-head latent attention).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, Question

KATA = Kata(
    id="23",
    name="23_mla",
    file="mla.py",
    title='Multi-head latent attention',
    track="inference",
    difficulty="hard",
    target_minutes=40,
    prerequisites=("11", "12", "15"),
    mistakes=(
        "rope-on-latent", "rope-on-nope", "rope-key-not-shared", "rope-position-offset",
        "rope-pairs-mismatch", "rope-wrong-frequency", "rope-key-layout", "scale-wrong-dim",
        "missing-scale", "absorption-wrong-transpose", "kv-b-split-order", "q-split-order",
        "kv-a-split-order", "latent-norm-misplaced", "cache-holds-up-projected-kv",
        "cache-holds-unrotated-rope-key",
        "absorbed-path-up-projects", "latent-copied-per-head", "causal-mask-offset",
        "causal-mask-missing", "cache-modified-in-place",
    ),
    forbidden=(),
    hints=(
        "Cache only what every head shares: the normalised latent c_kv (r wide) and one "
        "rotated key k_rope (d_r wide) per token. Everything per head is derived from them.",
        "Naive path: kv_b_proj(c_kv) viewed (b, s + t, h, d_n + d_v) gives k_nope and v per "
        "head; append k_rope to every head's key. Absorbed path: with W = "
        "kv_b_proj.weight.view(h, d_n + d_v, r), turn q_nope into latent space with W[:, :d_n], "
        "score it against c_kv, add q_rope · k_rope, scale by 1/sqrt(d_n + d_r), mask with "
        "the cache offset, average c_kv, and map back with W[:, d_n:]. Score with torch.einsum "
        "or with the heads folded into the query rows, (b, h·t, r) @ (b, r, s + t); never "
        "torch.matmul against c_kv[:, None], which copies the latent once per head.",
        "q_latent = torch.einsum(\"bthn,hnr->bhtr\", q_nope, w_uk)   # W_UK folded into the query\n"
        "scores = (torch.einsum(\"bhtr,bsr->bhts\", q_latent, c_kv)\n"
        "          + torch.einsum(\"bthd,bsd->bhts\", q_rope, k_rope)) / math.sqrt(d_n + d_r)",
    ),
)


def _m(slug: str, what: str, fix: str) -> Mistake:
    return Mistake(slug, what, fix)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    _m("rope-on-latent",
       "RoPE was applied to the latent c_kv (or to all r + d_r outputs of kv_a_proj_with_mqa).",
       "Rotate only the last d_r columns of kv_a_proj_with_mqa(x) (the shared key) and the "
       "last d_r columns of each query head; the latent is never rotated."),
    _m("rope-on-nope",
       "RoPE was applied over whole d_qk-wide query and key heads, k_nope included: exactly "
       "what cannot be absorbed.",
       "Rotate q_rope and k_rope only (d_r wide); q_nope and k_nope carry no position."),
    _m("rope-key-not-shared",
       "The d_r-wide rotary key was split across heads or given to one head only, instead of "
       "the same vector concatenated to every head's key.",
       "Every head's key is [k_nope_i; k_rope]: broadcast k_rope (b, s, d_r) to all h heads."),
    _m("rope-position-offset",
       "The new tokens were rotated at positions 0 ... t-1 instead of s ... s+t-1.",
       "With s cached positions, the new tokens sit at s + arange(t): rotate queries and keys "
       "there."),
    _m("rope-key-layout",
       "The cached k_rope is in Hugging Face's de-interleaved order (all even results, then all "
       "odd), not the layout kv_a_proj_with_mqa produced with each pair rotated in place.",
       "Rotate each adjacent pair (2i, 2i+1) in place and cache that."),
    _m("scale-wrong-dim",
       "The scores were scaled by 1/sqrt(d_n), 1/sqrt(d_v) or 1/sqrt(r + d_r) instead of "
       "1/sqrt(d_n + d_r), the width of the per-head dot product.",
       "Scale by (d_n + d_r) ** -0.5 in both paths; with F.scaled_dot_product_attention in "
       "the absorbed path pass scale= explicitly."),
    _m("absorption-wrong-transpose",
       "W_UK or W_UV was applied transposed, or kv_b_proj.weight viewed as (h, r, d_n + d_v).",
       "W = kv_b_proj.weight.view(h, d_n + d_v, r); W_UK_i = W[i, :d_n] (d_n, r) maps the "
       "latent to k_nope, so q_nope · W_UK_i is the query in latent space; W_UV_i = W[i, d_n:]."),
    _m("kv-b-split-order",
       "kv_b_proj's output was split as all heads' k_nope then all heads' values, instead of "
       "head by head.",
       "View it (…, h, d_n + d_v) first, then split the last axis at d_n."),
    _m("q-split-order",
       "A query head was read as [rope, nope], or the query split as all heads' nope parts then "
       "all heads' rotary parts.",
       "View the query (b, t, h, d_n + d_r): the first d_n columns of each head are q_nope."),
    _m("kv-a-split-order",
       "The rotary key was taken from the first d_r outputs of kv_a_proj_with_mqa and the latent "
       "from the rest.",
       "The first r columns are the latent, the last d_r the rotary key."),
    _m("latent-norm-misplaced",
       "kv_a_layernorm was skipped, applied to the rotary key too, or the cache holds the latent "
       "before the norm; or q_a_layernorm was skipped.",
       "c_kv = kv_a_layernorm(kv_a[..., :r]) is what is cached and up-projected; the query is "
       "q_b_proj(q_a_layernorm(q_a_proj(x)))."),
    _m("cache-holds-up-projected-kv",
       "The cache holds per-head keys and values, as Hugging Face's transformers port does: "
       "the whole saving of MLA lost.",
       "Return (c_kv, k_rope), (b, s + t, r) and (b, s + t, d_r), no head axis."),
    _m("cache-holds-unrotated-rope-key",
       "The cached k_rope is the rotary key before RoPE (rotated on use): the outputs are "
       "right and the shape is (b, s + t, d_r), but the cache the contract returns holds each "
       "key already rotated at its own position.",
       "Rotate the new keys at positions s ... s+t-1 once, before caching them, and return "
       "that; a later call reads the cached keys as they are, never rotating them again."),
    _m("absorbed-path-up-projects",
       "With absorbed=True, per-head keys or values of the cached positions were built.",
       "Fold W_UK into the query and W_UV into the output; attend against c_kv directly."),
    _m("latent-copied-per-head",
       "With absorbed=True, the latent was copied once per head (torch.matmul broadcasting a "
       "(b, 1, s, r) operand, or SDPA's enable_gqa).",
       "Use torch.einsum(\"bhtr,bsr->bhts\", ...) or fold the heads into the query rows: "
       "(b, h·t, r) @ (b, r, s)."),
)


# --- the formulas behind the quiz's numbers (self-tests run them) ---
def mla_cache_bytes(layers: int, r: int, d_r: int, bytes_per: int) -> int:
    return (r + d_r) * layers * bytes_per


def mha_cache_bytes(layers: int, heads: int, head_dim: int, bytes_per: int) -> int:
    return 2 * heads * head_dim * layers * bytes_per


QUESTIONS = (
    Question(
        "How many bytes of KV cache per token does DeepSeek-V2 (60 layers, r = 512, d_r = 64) "
        "keep with MLA in bfloat16?",
        mla_cache_bytes(60, 512, 64, 2), INTEGER,
        "(512 + 64) numbers per layer × 60 layers × 2 bytes = 69,120 bytes (67.5 KiB). "
        "Multi-head attention with 128 heads of 128 keeps 2 · 128 · 128 · 60 · 2 = 3,932,160: "
        "56.9 times more."),
    Question(
        "Why does MLA keep a separate rotary key instead of rotating k_nope?",
        "B", CHOICE,
        "With rotated keys, q^T R_i^T R_j W_UK c_j = q^T R_(j-i) W_UK c_j: a rotation that "
        "depends on j - i sits between the query and W_UK, so no fixed matrix absorbs W_UK.",
        choices=("rotating k_nope would change its norm",
                 "a position-dependent rotation between q and W_UK prevents absorbing W_UK",
                 "RoPE needs an even width", "k_nope is not cached")),
    Question(
        "What is the softmax scale of DeepSeek-V2's attention (d_n = 128, d_r = 64), without "
        "YaRN? Give d such that the scale is 1/sqrt(d).",
        128 + 64, INTEGER,
        "The per-head dot product is d_n + d_r = 192 wide, in both paths; r + d_r = 576 is the "
        "width of the absorbed path's dot product but not its scale."),
)
