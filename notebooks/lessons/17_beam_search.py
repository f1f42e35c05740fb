# %% [markdown]
# ## 1. Greedy decoding commits too early
#
# The README's model has four tokens — 0 = bos, 1 = eos, 2 = "a", 3 = "b" — and the next
# token depends on the last one only. Greedy decoding takes the most probable token at every
# step: "a" (0.5) first, then eos (0.35). But "a" is a poor start: everything after it is
# uncertain. "b" (0.4) is followed by eos with probability 0.85.

# %%
import math

P = torch.tensor([[0.05, 0.05, 0.50, 0.40],    # after bos
                  [0.10, 0.20, 0.30, 0.40],    # after eos (never asked)
                  [0.05, 0.35, 0.30, 0.30],    # after "a"
                  [0.04, 0.85, 0.05, 0.06]],   # after "b"
                 dtype=torch.float64).log()


def step_fn(tokens):                           # (k, t) prefixes -> (k, 4) log-probabilities
    return P[tokens[:, -1]]


tokens, total = [0], 0.0
while len(tokens) < 4 and tokens[-1] != 1:
    log_probs = step_fn(torch.tensor([tokens]))[0]
    token = int(log_probs.argmax())
    tokens, total = tokens + [token], total + float(log_probs[token])
print("greedy:", tokens, "probability", round(math.exp(total), 4))
print("[0, 3, 1] has probability", round(0.4 * 0.85, 4))

# %% [markdown]
# Both sequences are finished: each ends in eos. The one greedy misses is twice as
# probable. Greedy never reconsiders its first token. Beam search keeps the `beam_size`
# best prefixes at every step, so a prefix that starts worse but continues better survives
# long enough to win.
#
# ## 2. One step: k · V candidates, one top-k over all of them
#
# Each live hypothesis carries its **cumulative log-probability** (a sum of logs, never a
# product of probabilities: a product of 50 numbers below 1 underflows). One step:
#
# | step | shape |
# |---|---|
# | live prefixes, stacked | `(k, t)` |
# | `log_probs = step_fn(prefixes)` — one call for the whole beam | `(k, V)` |
# | `scores[:, None] + log_probs`: parent's sum + token's log-probability | `(k, V)` |
# | flattened, top `beam_size − len(finished)` | `(k · V,)` → `(keep,)` |
# | flat index `f` → parent `f // V`, token `f % V` (row-major) | `(keep,)` each |
#
# The second step of the README's example, with the live prefixes `[0, 2]` and `[0, 3]`:

# %%
prefixes = torch.tensor([[0, 2], [0, 3]])                        # (k, t) = (2, 2)
scores = torch.tensor([0.5, 0.4], dtype=torch.float64).log()     # (k,) running sums
candidates = scores[:, None] + step_fn(prefixes)                 # (k, V) = (2, 4)
print(candidates.exp())                                          # each candidate's probability
top, flat = candidates.flatten().topk(2)                         # over all k * V = 8
print("kept:", [(divmod(f, 4), round(math.exp(s), 4)) for f, s in zip(flat.tolist(), top.tolist())])

# %% [markdown]
# The winners are `[0, 3, 1]` (0.34) and `[0, 2, 1]` (0.175), one from each parent here,
# but nothing forces that: two winners may share a parent and another parent get none. A
# top-k **per hypothesis** would instead give every parent its own slot, and keep a weak
# prefix alive at the cost of a strong one's second continuation.
#
# ## 3. Finished hypotheses leave the beam
#
# Both winners end in eos: they move to `finished` with their scores, `beam_size`
# hypotheses have finished, and the search stops, `[0, 3, 1]` first. Had only one of them
# ended in eos, the live beam would shrink to `beam_size − len(finished)` = 1 slot. The
# search stops when `beam_size` hypotheses have finished, or when the prefixes reach
# `max_len` tokens; the ones still live finish as they stand. A finished hypothesis left
# in the beam would either be extended past its eos or hold a slot that a live candidate
# deserves.
#
# ## 4. Why a length penalty
#
# Every log-probability is negative, so every extra token lowers the sum: raw sums prefer
# short hypotheses. The final score divides by `n ** length_penalty` (`n` = tokens after
# bos): at 1 it is the average log-probability per token, at 0 the raw sum. Two finished
# hypotheses of different lengths, ranked for a few values of the penalty:

# %%
short, long = (2, math.log(0.2)), (5, math.log(0.05))            # (n, cumulative log-probability)
for alpha in (0.0, 0.5, 1.0):
    s, l = short[1] / short[0] ** alpha, long[1] / long[0] ** alpha
    print(f"alpha {alpha}: short {s:.3f}, long {l:.3f} ->", "short wins" if s > l else "long wins")

# %% [markdown]
# The penalty serves the **final ranking only**. During the search, all candidates of one
# step have the same length, so dividing them by a common factor would change nothing;
# carrying divided scores forward, though, mixes factors of different lengths into every
# later sum and changes which prefixes survive. Google's NMT system divides by
# `((5 + n) / 6) ** α` instead, a softer penalty; fairseq and Hugging Face use `n ** α`, as
# this kata does.

# %%
# kata: exercise

# %% [markdown]
# ## 5. Two properties to trust it by
#
# `beam_size = 1` keeps one hypothesis, the argmax: greedy decoding. And a beam at least as
# wide as the number of possible sequences never prunes anything: it ranks every sequence,
# which is exhaustive search. Both are graded as follow-ups. On the README's model, once
# your search passes the core checks:

# %%
if result.core_passed:
    for width in (1, 2, 3):
        print("beam", width, "->", beam_search(step_fn, 0, 1, width, 4))
else:
    print("pass the core checks to run your beam_search here")

# %% [markdown]
# ## 6. Wider is not always better: why chat models sample
#
# A random model over 8 tokens whose eos is moderately likely, searched with raw sums
# (`length_penalty = 0`) and beams of growing width: the best hypothesis gets more probable,
# as search should, and often shorter. Translation researchers call this the *beam search
# curse*: past a modest width, output quality drops, because the most probable sequence is
# short or empty. Where the drop starts depends on the language pair and on length
# normalisation (Koehn and Knowles, *Six Challenges for Neural Machine Translation*, 2017).

# %%
def random_model(vocab=8, eos=1, seed=0, eos_bias=1.0):
    """A deterministic step_fn: each prefix seeds its own random log-softmax row."""
    def step(tokens):
        rows = []
        for prefix in tokens.tolist():
            generator = torch.Generator().manual_seed(hash((seed, tuple(prefix))) % 2**31)
            logits = torch.randn(vocab, generator=generator, dtype=torch.float64) * 1.5
            logits[eos] += eos_bias
            rows.append(logits.log_softmax(-1))
        return torch.stack(rows)
    return step


if result.core_passed:
    model = random_model()
    for width in (1, 2, 4, 8, 16):
        best_tokens, best_score = beam_search(model, 0, 1, width, 12, length_penalty=0.0)[0]
        print(f"beam {width:2d}: log-probability {best_score:7.3f}, {len(best_tokens) - 1} tokens")
else:
    print("pass the core checks to run your beam_search here")

# %% [markdown]
# Beyond length, the most probable text is not the best text. Maximising likelihood gives
# generic, repetitive continuations that can loop for ever (Holtzman et al., *The Curious
# Case of Neural Text Degeneration*, 2020), and a beam's hypotheses tend to differ by a
# token or two. Chat models therefore **sample** (kata 16: temperature, top-k, top-p), which
# gives varied, human-like text; beam search stays where one right answer exists:
# translation, speech recognition, constrained outputs.
#
# Cost matters too: a beam of k runs the model on k rows per step and keeps k KV caches.
# After each step the caches are reordered by parent (`cache.index_select(0, parents)`),
# since a kept candidate continues its parent's prefix, not the row it sat in.
#
# ## 7. What an interviewer asks next
#
# **Stopping early without changing the result.** With `length_penalty = 0` a live sum can
# only fall (every log-probability is ≤ 0): once the best finished score is at least the
# best live score, no live hypothesis can overtake it. With α > 0 the division by `n ** α`
# can lift a longer hypothesis, so the bound must cover every length still reachable: the
# best live sum divided by `(max_len − 1) ** α`. On the random model above, how many of the
# steps a beam of 4 runs could this bound have saved, with α = 0?

# %%
def steps_saved(model, width, max_len):
    """Run the contract's search by hand with α = 0, and report at which step the best
    finished score first bounds every live one, against the step it actually stops."""
    live, finished, stop_at = [([0], 0.0)], [], None
    for step in range(1, max_len):
        rows = model(torch.tensor([p for p, _s in live]))
        pool = sorted(((s + lp, p + [tok]) for (p, s), row in zip(live, rows.tolist())
                       for tok, lp in enumerate(row)), reverse=True)[:width - len(finished)]
        finished += [(p, s) for s, p in pool if p[-1] == 1]
        live = [(p, s) for s, p in pool if p[-1] != 1]
        if stop_at is None and finished and live and max(s for _p, s in finished) >= max(s for _p, s in live):
            stop_at = step
        if len(finished) >= width or not live:
            return stop_at, step
    return stop_at, max_len - 1


for seed in range(4):
    bound, ran = steps_saved(random_model(seed=seed), 4, 12)
    print(f"seed {seed}: best answer certain after step {bound}, the search ran {ran} steps")

# %% [markdown]
# **Hugging Face's variant.** `generate(num_beams=k)` keeps the beam full instead of
# shrinking it: it takes the top `2 · k` candidates, so that even if `k` of them end in
# eos, `k` live ones remain; finished hypotheses go to a separate pool of the best `k`
# (ranked with the length penalty). `early_stopping=True` stops once `k` have finished
# (this kata's rule); `False` stops when a heuristic says no live hypothesis is likely to
# do better; `"never"` applies the exact bound above.
#
# **Serving.** Beam output cannot be streamed token by token: the best hypothesis can
# change until the end (only the prefix that every live hypothesis shares is final). The k
# caches share their common prefix: vLLM's PagedAttention stores it once, in shared
# blocks, and copies a block only when a hypothesis writes into it (copy-on-write).
#
# **Variants.** *Diverse beam search* splits the beam into groups penalised for choosing
# what other groups chose; *n-gram blocking* (`no_repeat_ngram_size`) sets to −∞ every
# token that would repeat an n-gram; *constrained beam search* forces given words or
# phrases into the output (grid beam search; `force_words_ids` in Hugging Face).
#
# **Why the length penalty is a patch.** Exact search over an NMT model often finds the
# *empty* translation most probable (Stahlberg and Byrne, *On NMT Search Errors and Model
# Errors: Cat Got Your Tongue?*, 2019): the model, not the search, prefers short outputs,
# and beam search works partly because it fails to find them. Meister, Cotterell and
# Vieira (*If beam search is the answer, what was the question?*, 2020) read beam search's
# success as an implicit bias towards evenly spread surprisal, which a length penalty
# only approximates. Today's "test-time compute" revisits the idea: best-of-N samples N
# answers and keeps the one a verifier scores highest; step-level search keeps a beam of
# partial reasoning chains ranked by a process reward model instead of by likelihood.

# %%
# kata: quiz
