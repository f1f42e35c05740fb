"""Kata 11_kv_cache (Causal self-attention with a key/value cache).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import ATTENTION_BUILTINS, Kata, Mistake
from graders.core.quizzes import CHOICE, INTEGER, MiB, Question

KATA = Kata(
    id="11",
    name="11_kv_cache",
    file="kv_cache.py",
    title="Causal self-attention with a key/value cache",
    track="models",
    difficulty="medium",
    target_minutes=25,
    prerequisites=("03", "04"),
    mistakes=(
        "cache-not-updated",
        "cache-wrong-dim",
        "causal-mask-offset",
        "causal-mask-missing",
        "cache-modified-in-place",
        "reshape-without-transpose",
    ),
    forbidden=ATTENTION_BUILTINS,
    hints=(
        "Write down which position each of the t new queries sits at when s positions "
        "are already in the cache, and which keys it may see. Then ask what the next call "
        "needs from this one.",
        "Project x into q, k, v and split them into heads (b, h, t, d). Append the new k "
        "and v to the cached ones along the positions axis (dim 2) with torch.cat - a new "
        "tensor, never a write into the cache you were given. The scores are (b, h, t, "
        "s + t): new query i is position s + i, so it sees every cached key and the new "
        "keys up to its own - the causal mask is shifted right by s. Return the "
        "concatenated (k, v), unscaled, as the new cache.",
        "if cache is not None:   # k, v: (b, h, t, d), the new positions only\n"
        "    k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)   # (b, h, s + t, d)\n"
        "s = k.size(2) - t   # positions cached before this call\n"
        "blocked = torch.ones(t, s + t, dtype=torch.bool, device=x.device).triu(diagonal=s + 1)   # (t, s + t)",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("cache-not-updated",
            "The returned cache was not extended with the new positions: it is the cache "
            "that came in (or None), or only the new positions' keys and values.",
            "Return (torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)): every "
            "position so far, s + t of them; with no cache, the new k and v."),
    Mistake("cache-wrong-dim",
            "The new keys and values were appended along the wrong axis of the cache (heads, "
            "batch or features instead of positions).",
            "The cache is (b, h, s, head_dim): positions are dim 2, so torch.cat(..., dim=2) "
            "(or dim=-2)."),
    Mistake("cache-modified-in-place",
            "A cache was modified in place: the one passed in (its values, its shape, or the "
            "storage behind it), or one returned earlier, overwritten by a later call; a "
            "caller may branch from one cache twice, as beam search does.",
            "Build the new cache with torch.cat, which returns a new tensor, under "
            "torch.no_grad() too; never write into (or resize, or .data-assign) the tensors "
            "you were given, nor into a buffer behind a cache you returned."),
)


# --- the formulas behind this quiz's numbers (the self-tests check them against PyTorch) ---

def kv_cache_bytes(num_layers: int, batch_size: int, seq_len: int, d_model: int,
                   bytes_per_value: int) -> int:
    """Keys and values of every layer and position: 2 * L * b * n * d values."""
    return 2 * num_layers * batch_size * seq_len * d_model * bytes_per_value


# The interviewer's follow-up questions: the notebook's quiz and `kata quiz`.
QUESTIONS = (
    Question(
        "How many MiB does the key/value cache of a 32-layer model with d = 4096 take for "
        "one sequence of 4096 tokens in bfloat16 (2 bytes a value)?",
        kv_cache_bytes(32, 1, 4096, 4096, 2) // MiB, INTEGER,
        "Every layer keeps a key and a value of width d for every position: 2 · 32 · 4096 "
        "· 4096 values × 2 bytes = 2,147,483,648 bytes = 2048 MiB, for a single sequence. "
        "It grows linearly with the context and the batch; grouped-query attention (kata "
        "13) shrinks it by sharing keys and values between heads."),
    Question(
        "After a prefill of s = 5 tokens, a chunk of t = 3 new tokens arrives. How many "
        "entries of its (t, s + t) causal mask are blocked?",
        3 * (3 - 1) // 2, INTEGER,
        "New query i is position 5 + i and sees keys 0 … 5 + i: query 0 is blocked from "
        "keys 6 and 7, query 1 from key 7, query 2 from none. 2 + 1 + 0 = 3 = t(t - 1)/2: "
        "every cached key is visible to every new query."),
    Question(
        "Decoding one new token with 5 tokens in the cache, someone calls "
        "`F.scaled_dot_product_attention(q, k, v, is_causal=True)` with q of length 1 and "
        "k, v of length 6. Which keys does the new token attend to?",
        "B", CHOICE,
        "For a non-square score matrix PyTorch aligns the causal mask top-left: query i "
        "sees keys 0 … i. The one new query (i = 0) sees only key 0. The right mask is "
        "shifted by the cache length (bottom-right aligned): the new token sees all 6. "
        "For a single new token no mask is needed at all.",
        choices=("all 6", "only key 0", "only the last key (itself)", "none: the row is NaN")),
    Question(
        "Why do we cache the keys and values of past tokens, but not their queries?",
        "C", CHOICE,
        "A past token's query was used once, to compute that token's own output, which is "
        "already done. Every later token needs the past keys (to score against) and values "
        "(to average), so those are kept.",
        choices=("queries are larger than keys", "queries change at every step",
                 "past queries are never used again", "queries are recomputed from the values")),
    Question(
        "A model with RoPE (kata 12) has 5 tokens in its cache and decodes the next one. "
        "Which is right?",
        "C", CHOICE,
        "A token's position is the number of tokens before it, the cache length: "
        "positions = past_len + arange(t), here 5. Its key is rotated once, by its own "
        "position, and stored rotated: every later query, rotated by its own position, "
        "meets it at the right relative angle, so nothing in the cache is ever touched "
        "again. Rotating the new token as position 0 gives wrong scores without any "
        "error; storing keys unrotated works but rotates the whole cache again at every "
        "step. Kata 12's lesson shows both.",
        choices=("its query and key are rotated as position 0, the first of this step",
                 "its key is stored unrotated, and the cache is rotated once more at every step",
                 "its query and key are rotated as position 5, and its key is stored rotated",
                 "only its query is rotated: cached keys carry no position")),
)
