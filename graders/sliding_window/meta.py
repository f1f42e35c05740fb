"""Kata 18_sliding_window (Sliding-window attention, attention sinks and a rolling KV cache).

Beside the grader (checks.py), what the learner does not read: its registry entry with the
hint ladder (KATA), the mistakes only it names (MISTAKES) and its quiz (QUESTIONS). Imports
nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake
from graders.core.quizzes import CHOICE, GiB, INTEGER, NUMBER, Question

KATA = Kata(
    id="18",
    name="18_sliding_window",
    file="sliding_window.py",
    title="Sliding-window attention, attention sinks and a rolling KV cache",
    track="llm",
    difficulty="medium",
    target_minutes=30,
    prerequisites=("11", "14"),
    mistakes=(
        "window-off-by-one",
        "window-not-causal",
        "sinks-dropped",
        "sinks-ignore-causality",
        "sinks-counted-twice",
        "full-score-matrix",
        "missing-scale",
        "mask-inverted",
        "cache-evicts-sinks",
        "cache-unbounded",
        "cache-out-of-order",
    ),
    forbidden=("torch.nn.attention.flex_attention.flex_attention",),
    hints=(
        "Write the rule for one (query i, key j) pair first, on paper, for window = 3 and "
        "num_sinks = 2 with n = 8: which keys does query 6 see, and query 1? Then ask what "
        "each query needs to look at, so that nothing of size (n, n) is ever built, and "
        "what a decoder at position p must still hold in its cache.",
        "Query i sees key j iff j <= i and (i - j < window or j < num_sinks): window counts "
        "the query itself, and a sink inside the window is still one key. For the attention, "
        "take the queries in blocks of window rows: the block start ... end needs only the "
        "keys start - window + 1 ... end plus the sinks that lie before them, so score it "
        "against those (num_sinks + 2 * window - 1 keys at most), -inf where the rule blocks "
        "a pair, and every other key block is never touched. The cache keeps the "
        "first num_sinks positions forever and only the last window ones of the rest, as "
        "clones, and returns sinks then window, in position order.",
        "idx = i[:, None] - window + 1 + torch.arange(window)      # (n, W): i-W+1 .. i, < 0 is padding\n"
        "keep_sink = i[:, None] - torch.arange(num_sinks) >= window  # (n, S): a sink before the window",
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue).
MISTAKES = (
    Mistake("window-off-by-one",
            "The window holds one key too many or too few: in this kata window counts the query "
            "itself, so query i sees keys i - window + 1 ... i (i - j < window, not <=), as "
            "Hugging Face counts it. Mistral's paper and reference code count the other way, "
            "i - window ... i (window + 1 keys, triu(diagonal=-window)): a different "
            "convention, not this kata's. A cache must keep exactly the last window positions.",
            "allowed = (j <= i) & ((i - j < window) | (j < num_sinks)); a cache keeps "
            "positions p - window + 1 ... p."),
    Mistake("window-not-causal",
            "Future keys are visible: the window was taken on both sides of the query (a "
            "symmetric band |i - j| < window) or the j <= i condition was lost.",
            "Keep j <= i for every key, the window's and the sinks' alike."),
    Mistake("sinks-dropped",
            "The sink keys 0 ... num_sinks - 1 are never seen once they leave the window: "
            "plain sliding-window attention was computed.",
            "Allow key j when it is in the window or j < num_sinks (still with j <= i)."),
    Mistake("sinks-ignore-causality",
            "Queries before a sink see it: query 0 attends to sink 1, which comes after it.",
            "A sink is still a key: allowed only when j <= i. Combine as (j <= i) & (in_window "
            "| is_sink)."),
    Mistake("sinks-counted-twice",
            "A sink key that is also inside the window entered the softmax twice (once as a "
            "sink, once as a window key), so it weighs double.",
            "Take the union of the two sets of keys: a sink inside the window is one key. With "
            "gathered keys, keep a sink column only where i - j >= window."),
    Mistake("cache-evicts-sinks",
            "The cache lost sink positions (they were evicted with the window, or taken from the "
            "first append only, which may hold fewer than num_sinks positions).",
            "Collect positions 0 ... num_sinks - 1 from whichever appends bring them, and never "
            "evict them."),
    Mistake("cache-unbounded",
            "The cache holds more than num_sinks + window positions (plus the last append's): "
            "every position kept, or views that keep the caller's appended chunks alive.",
            "Drop positions that left the window, and store clones of what you keep: a slice of "
            "the appended k is a view of its whole storage."),
    Mistake("cache-out-of-order",
            "keys_values() holds the right positions but not in position order (e.g. a ring "
            "buffer read in slot order). Decoding cannot see it (softmax ignores key order), "
            "but anything that relies on position order breaks.",
            "Read a ring buffer from its oldest slot: torch.roll or index with (start + "
            "arange(window)) % window, the sinks first."),
)


# --- the quiz, and the small formulas its numbers come from ---

def kv_cache_bytes(batch_size: int, seq_len: int, num_layers: int, num_kv_heads: int,
                   head_dim: int, itemsize: int) -> int:
    """Keys and values of every layer: 2 * b * seq * layers * kv_heads * head_dim * bytes."""
    return 2 * batch_size * seq_len * num_layers * num_kv_heads * head_dim * itemsize


def sliding_window_reach(num_layers: int, window: int) -> int:
    """How many positions back the last of num_layers sliding-window layers can draw on:
    each layer reaches window - 1 positions further (window counts the query itself)."""
    return num_layers * (window - 1)


def keys_seen(position: int, window: int, num_sinks: int) -> int:
    """How many keys the query at ``position`` attends to: the window and the sinks, once each."""
    return len([j for j in range(position + 1) if j < num_sinks or position - j < window])


def window_pairs(n: int, window: int) -> int:
    """(query, key) pairs a causal sliding window allows over n tokens (no sinks)."""
    return sum(min(i + 1, window) for i in range(n))



QUESTIONS = (
    Question(
        "Mistral 7B has 32 layers and a window of 4096 (the query included). A token's output "
        "at the last layer can depend on input tokens how many positions back, at most?",
        sliding_window_reach(32, 4096), NUMBER,
        "With the window counting the query (this kata's and Hugging Face's convention), each "
        "layer moves information at most window − 1 = 4095 positions forward: position i of "
        "layer 1 reads positions i − 4095 … i of the input, and layer 2 reads layer 1's "
        "outputs there, which read 4095 further back. After 32 layers: 32 × 4095 = 131,040 "
        "positions. Mistral's paper counts the window the other way, positions i − W … i "
        "(W + 1 keys): each layer then reaches W = 4096 back, and 32 × 4096 = 131,072 is its "
        "'about 131K tokens', exactly. Either way the receptive field is about layers × "
        "window, although each layer scores only about 4096 keys per query.",
        rel_tolerance=0.01),
    Question(
        "Why do the first tokens of a sequence end up as attention sinks?",
        "B", CHOICE,
        "The softmax weights of a query must sum to 1, even when nothing in context is "
        "relevant to it. A trained model parks that unneeded weight on keys whose values add "
        "little, and the first tokens are the ones every later query can see, from the very "
        "first step of training on: they become the sink. Evict them and that weight lands on "
        "the other keys, shifting every output; keeping 4 of them (StreamingLLM, which also "
        "numbers the cached positions by their index in the cache) restores the model. Their "
        "meaning does not matter: a learned placeholder token works as well.",
        choices=("they carry the prompt's most important meaning",
                 "softmax must put weight somewhere, and they are visible to every later query",
                 "positional encodings give them the largest norm",
                 "the tokenizer puts special tokens there")),
    Question(
        "Mistral-7B's cache per token: 32 layers, 8 key/value heads of width 128, keys and "
        "values in float16. At 32k (32768) tokens, how many GiB does a rolling cache with a "
        "4k (4096) window save over the full cache, for one sequence?",
        (kv_cache_bytes(1, 32768, 32, 8, 128, 2) - kv_cache_bytes(1, 4096, 32, 8, 128, 2))
        / GiB, NUMBER,
        "2 (k and v) × 32 layers × 8 heads × 128 × 2 bytes = 128 KiB per token. The full cache "
        "holds 32768 tokens: 4 GiB; the rolling cache 4096: 0.5 GiB. It saves 3.5 GiB (7/8), "
        "and stays at 0.5 GiB however long the generation runs.",
        rel_tolerance=0.01),
    Question(
        "How many times fewer (query, key) pairs does a 4096 window score than full causal "
        "attention, over n = 32768 tokens?",
        window_pairs(32768, 4096 + 32768) / window_pairs(32768, 4096), NUMBER,
        "Causal: n(n + 1)/2 = 536,887,296 pairs. The window: 4096 · 4097/2 for the first 4096 "
        "queries, then 4096 each for the other 28672: 125,831,168. The ratio is about 4.27; it "
        "grows like n / (2 · window), since the window's cost is linear in n.",
        rel_tolerance=0.02),
    Question(
        "window = 3, num_sinks = 2. How many keys enter the softmax of the query at position 3?",
        keys_seen(3, 3, 2), INTEGER,
        "The window is positions 1, 2, 3; the sinks are 0 and 1. Sink 1 is already inside the "
        "window: it is one key, not two. So 4 keys: 0, 1, 2, 3 (s = min(p + 1, num_sinks + "
        "window) = 4)."),
    Question(
        "A ring-buffer cache returns the right keys and values, but in slot order rather than "
        "position order. What happens to the decoded outputs?",
        "A", CHOICE,
        "Nothing: softmax attention sums over keys and is blind to their order (positions live "
        "in the keys already, rotated by RoPE). The kata still asks for position order, because "
        "whatever reads the cache by index (a sink/window split, re-rotating keys by slot, "
        "debugging) breaks.",
        choices=("nothing: attention does not depend on the order of its keys",
                 "the outputs are permuted", "the sinks lose their weight",
                 "the softmax overflows")),
    Question(
        "StreamingLLM's cache holds the tokens at text positions [0, 1, 2, 3, 6, 7, 8] (4 "
        "sinks and a window) while it decodes the next token, text position 9. Which RoPE "
        "positions does that step use for the cached keys and the new query?",
        "C", CHOICE,
        "StreamingLLM numbers positions by index inside the cache, in logical order: the "
        "cached keys get 0 … 6 and the query 7 (the paper's own example, §3.2; the paper "
        "calls it crucial). It caches keys before RoPE and rotates them again at every step. "
        "So the query–sink distance never exceeds the cache size, a distance the model saw "
        "in training. This kata's cache keeps the original positions (keys arrive rotated): "
        "at token 10⁶ the query is 10⁶ positions from its sinks, a RoPE distance far past "
        "any training length. A pure window needs no re-numbering: every distance in it is "
        "below window.",
        choices=("their text positions: 0, 1, 2, 3, 6, 7, 8, and 9 for the query",
                 "their ring-buffer slots, in slot order",
                 "their indices in the cache: 0 … 6, and 7 for the query",
                 "none: sinks and window keys are not rotated")),
)
