# %% [markdown]
# ## 1. Greedy decoding commits too early
#
# The README's model has four tokens — 0 = bos, 1 = eos, 2 = "a", 3 = "b" — and the next
# token depends on the last one only. Greedy decoding takes the most probable token at every
# step: "a" (0.5) first, then eos (0.35). But "a" is a poor start: everything after it is
# uncertain. "b" (0.4) is followed by "b" with probability 0.85.

# %%
import math

P = torch.tensor([[0.05, 0.05, 0.50, 0.40],    # after bos
                  [0.10, 0.20, 0.30, 0.40],    # after eos (never asked)
                  [0.05, 0.35, 0.30, 0.30],    # after "a"
                  [0.05, 0.05, 0.05, 0.85]],   # after "b"
                 dtype=torch.float64).log()


def step_fn(tokens):                           # (k, t) prefixes -> (k, 4) log-probabilities
    return P[tokens[:, -1]]


tokens, total = [0], 0.0
while len(tokens) < 4 and tokens[-1] != 1:
    log_probs = step_fn(torch.tensor([tokens]))[0]
    token = int(log_probs.argmax())
    tokens, total = tokens + [token], total + float(log_probs[token])
print("greedy:", tokens, "probability", round(math.exp(total), 4))
print("[0, 3, 3, 3] has probability", round(0.4 * 0.85 * 0.85, 4))

# %% [markdown]
# Greedy never reconsiders its first token. Beam search keeps the `beam_size` best
# prefixes at every step, so a prefix that starts worse but continues better survives long
# enough to win.
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
# Both winners could come from the same parent: here one extends `[0, 3]` with "b", the
# other `[0, 2]` with eos. A top-k **per hypothesis** would instead give every parent its
# own slot, and keep a weak prefix alive at the cost of a strong one's second continuation.
#
# ## 3. Finished hypotheses leave the beam
#
# `[0, 2, 1]` ends in eos: it moves to `finished` with its score, and the live beam shrinks
# to `beam_size − len(finished)` = 1 slot. The search stops when `beam_size` hypotheses
# have finished, or when the prefixes reach `max_len` tokens; the ones still live finish as
# they stand. A finished hypothesis left in the beam would either be extended past its eos
# or hold a slot that a live candidate deserves.
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
# curse*: past a width of about 5, output quality drops, because the most probable sequence
# is short or empty.

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

# %%
# kata: quiz
