# %% [markdown]
# ## 1. Temperature reshapes the distribution
#
# The model gives logits `l`; the distribution we draw from is `softmax(l / T)`. Dividing
# by `T < 1` stretches the gaps between logits, so the leader takes more of the mass;
# `T > 1` shrinks them towards the uniform distribution. The entropy
# `H = −Σ pᵢ log pᵢ` measures how spread the distribution is: 0 for a single certain
# token, `log V` for the uniform one.

# %%
import math

logits = torch.tensor([2.0, 1.0, 0.0, -1.0, -2.0, -3.0])
for T in (0.1, 0.5, 1.0, 2.0, 10.0):
    probs = torch.softmax(logits / T, dim=-1)
    entropy = -(probs * probs.log()).sum().item()
    print(f"T = {T:4}: p = {probs.numpy().round(3)}, entropy {entropy:.3f} nats")
print(f"uniform over 6 tokens: {math.log(6):.3f} nats")

# %% [markdown]
# As `T → 0⁺`, every weight but the leader's, `exp((lᵢ − l_max) / T)`, goes to 0: the
# distribution becomes a one-hot on the argmax. That limit **is** greedy decoding. `T = 0`
# itself cannot be computed as written — `logits / 0` is `±inf` (or NaN for a logit of
# exactly 0) and the softmax of it is NaN — so `sample` implements the limit directly: the
# argmax, with no draw.

# %%
print(torch.tensor([2.0, 1.0, 0.0]) / 0)
print(torch.softmax(torch.tensor([2.0, 1.0, 0.0]) / 0, dim=-1))

# %% [markdown]
# ## 2. Removing tokens: -inf, not 0
#
# A filter removes a token by setting its logit to `-inf`: `exp(-inf) = 0`, so the softmax
# gives it probability exactly 0 and renormalises the rest. A logit of 0 is an ordinary
# logit, `exp(0) = 1`, and the token stays drawable.

# %%
kept = torch.tensor([3.0, 2.0, float("-inf"), float("-inf")])
zeroed = torch.tensor([3.0, 2.0, 0.0, 0.0])
print(torch.softmax(kept, dim=-1))
print(torch.softmax(zeroed, dim=-1))

# %% [markdown]
# ## 3. Top-k and top-p on a flat and a peaked distribution
#
# **Top-k** keeps the `k` most probable tokens, whatever their probabilities. **Top-p**
# keeps the smallest set of most probable tokens whose probability reaches `p`: token `i`
# stays iff the tokens more probable than it carry `< p` in all. On a flat distribution
# (the model is unsure) top-p keeps many tokens; on a peaked one (the model is sure) very
# few. Top-k cannot tell the two apart. Both filters below are written out in a few lines
# on probabilities (not the exercise's API).

# %%
def top_k_count(probs, k):
    return min(k, probs.numel())


def top_p_count(probs, p):
    ranked = probs.sort(descending=True).values
    mass_before = ranked.cumsum(0) - ranked
    return int((mass_before < p).sum())


vocab = 1000
flat = torch.full((vocab,), 1.0 / vocab, dtype=torch.float64)
peaked = torch.cat([torch.tensor([0.95]), torch.full((vocab - 1,), 0.05 / (vocab - 1))]).double()
for name, probs in (("flat", flat), ("peaked", peaked)):
    print(f"{name:6}: top-k (k = 50) keeps {top_k_count(probs, 50)}, "
          f"top-p (p = 0.9) keeps {top_p_count(probs, 0.9 - 1e-9)}")

# %% [markdown]
# (The `- 1e-9` only moves `p` off the flat distribution's exact tie: the 901st token has
# exactly 0.9 before it, and float rounding of the running sum would decide whether it
# stays — a boundary the grader never uses. In exact arithmetic, 900 tokens.)
#
# Why sort first: the nucleus is the *most probable* tokens. Summed in vocabulary order,
# the running total reaches `p` after whichever tokens happen to have small ids. And why the
# mass *before* the token: the token whose probability carries the total across `p` belongs
# to the nucleus — without it the kept mass is short of `p`, and a single token above `p`
# would leave nothing to sample.

# %%
probs = torch.tensor([0.05, 0.5, 0.1, 0.3, 0.05])
running = probs.cumsum(0)
print("vocabulary order, running total:", running)
print("kept in vocabulary order:", (running - probs < 0.7).nonzero().flatten().tolist())
ranked, order = probs.sort(descending=True)
print("kept by probability:", order[(ranked.cumsum(0) - ranked) < 0.7].tolist())

# %% [markdown]
# ## 4. min-p
#
# **min-p** keeps the tokens whose probability is at least `min_p` times the top token's:
# those whose logit, divided by T, lies within log(1 / min_p) of the top one's. The cut
# is relative to the leader, not a mass. (llama.cpp, vLLM and Hugging Face offer it; it is
# not part of this kata's API.) On a short row that is no tighter than top-p — the 8-token
# row below keeps as many tokens or more at every T ≥ 1. Its case is a long tail: a few
# plausible tokens and tens of thousands of implausible ones, each tiny, together heavy.

# %%
def min_p_count(probs, min_p):
    return int((probs >= min_p * probs.max()).sum())


for name, probs in (("flat", flat), ("peaked", peaked)):
    print(f"{name:6}: min-p (0.1) keeps {min_p_count(probs, 0.1)}")
row = torch.tensor([3.0, 2.5, 2.0, 1.0, 0.0, -1.0, -2.0, -3.0])
for T in (0.7, 1.0, 1.5, 3.0):
    probs = torch.softmax(row / T, dim=-1)
    print(f"8 tokens, T = {T}: top-p (0.9) keeps {top_p_count(probs, 0.9)}, "
          f"min-p (0.1) keeps {min_p_count(probs, 0.1)}")
long_tail = torch.cat((torch.tensor([5.0, 4.5, 4.0, 3.0]), torch.randn(50_000) - 5)).double()
for T in (1.0, 1.5, 2.0):
    probs = torch.softmax(long_tail / T, dim=-1)
    print(f"4 + 50,000 tokens, T = {T}: top-p (0.9) keeps {top_p_count(probs, 0.9):,}, "
          f"min-p (0.1) keeps {min_p_count(probs, 0.1)}, the 4 carry {probs[:4].sum().item():.0%}")

# %% [markdown]
# At T = 1 the tail already holds most of the mass, so a mass cut at 0.9 must take tens of
# thousands of implausible tokens, while min-p keeps the 4 plausible ones. That is why
# servers pair min-p with high temperatures. The order matters again: here, as in Hugging
# Face and vLLM, the temperature comes first, so a high T widens min-p's window;
# llama.cpp's default chain runs min-p (and top-k, top-p) *before* the temperature, so
# there the set it keeps does not depend on T at all — T only reshapes the survivors.

# %% [markdown]
# ## 5. The order of the steps, and the draw
#
# `sample` runs temperature, then top-k, then top-p on the tempered, top-k-filtered logits
# (the order of Hugging Face's `generate` and of vLLM; llama.cpp tempers last, which leaves
# top-k unchanged but moves top-p's and min-p's cut), then one draw per row. Top-k
# renormalises what it keeps, so a top-p after it sees larger probabilities than a top-p on
# the full distribution, and keeps fewer tokens. Any correct way to draw is fine:
# `torch.multinomial(probs, 1)`, Gumbel-max (`argmax(logits + Gumbel noise)`), or one
# uniform number per row against the cumulative distribution. What matters is that every
# random number comes from the `generator` passed in: the same generator state gives the
# same tokens, and the global RNG stays untouched.

# %%
probs = torch.softmax(torch.tensor([2.0, 1.0, 0.0, -1.0]), dim=-1)
g = torch.Generator().manual_seed(0)
by_multinomial = torch.multinomial(probs.expand(20000, 4), 1, generator=g).flatten()
g = torch.Generator().manual_seed(0)
gumbel = -torch.log(-torch.log(torch.rand(20000, 4, generator=g)))
by_gumbel = (probs.log() + gumbel).argmax(-1)
print("softmax:", probs)
print("multinomial:", torch.bincount(by_multinomial, minlength=4) / 20000)
print("Gumbel-max:", torch.bincount(by_gumbel, minlength=4) / 20000)

# %%
# kata: exercise

# %% [markdown]
# ## 6. Your sampler's draws
#
# Ten thousand draws at three temperatures, with `top_k = 4`: your `sample` once it passes
# the core checks, `torch.multinomial` on the exact distribution until then.

# %%
import matplotlib.pyplot as plt

row = torch.tensor([2.0, 1.5, 1.0, 0.5, 0.0, -0.5])
fig, axes = plt.subplots(1, 3, figsize=(9, 2.8), sharey=True)
for axis, T in zip(axes, (0.5, 1.0, 2.0)):
    logits_t = (row / T).masked_fill(torch.arange(6) >= 4, float("-inf"))
    if result.core_passed:
        draws = sample(row.repeat(10000, 1), temperature=T, top_k=4,
                       generator=torch.Generator().manual_seed(1))
    else:
        draws = torch.multinomial(torch.softmax(logits_t, -1).expand(10000, 6), 1).flatten()
    axis.bar(range(6), torch.bincount(draws, minlength=6) / 10000, label="draws")
    axis.plot(range(6), torch.softmax(logits_t, -1), "k_", markersize=14, label="softmax")
    axis.set(title=f"T = {T}, top_k = 4", xlabel="token")
axes[0].legend()
plt.tight_layout()
plt.show()
plt.close(fig)

# %% [markdown]
# ## 7. What an interviewer asks next
#
# **Penalties and logit bias** act on the logits before everything above. CTRL's
# repetition penalty θ > 1 divides the positive logits of tokens already generated by θ and
# multiplies their negative ones by θ (both make the token less likely); OpenAI-style
# frequency and presence penalties subtract `count · frequency_penalty` and
# `presence_penalty` (if the count is above 0); a logit bias is added. Constrained
# decoding (a JSON schema, a grammar) is one more such step: the tokens the grammar
# forbids become `-inf` before the softmax.

# %%
logits = torch.tensor([2.0, -1.0, 0.5, 1.0])
counts = torch.tensor([2, 1, 0, 0])                                 # times each token was generated
seen = counts > 0
ctrl = torch.where(seen, torch.where(logits > 0, logits / 1.3, logits * 1.3), logits)
openai = logits - 0.5 * counts - 0.3 * seen
print("CTRL (theta 1.3):", ctrl)
print("frequency 0.5, presence 0.3:", openai)

# %% [markdown]
# **Speculative decoding** keeps the distribution exact. A draft model proposes x from q;
# the target model accepts it with probability min(1, p(x) / q(x)), and on a rejection
# draws from max(0, p − q), renormalised. Accepted or resampled, the token is distributed
# by p:

# %%
p_target = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)
q_draft = torch.tensor([0.25, 0.5, 0.05, 0.2], dtype=torch.float64)
accepted = q_draft * torch.clamp(p_target / q_draft, max=1.0)        # proposed and kept
residual = torch.clamp(p_target - q_draft, min=0.0)
total = accepted + (1 - accepted.sum()) * residual / residual.sum()
print("accepted + rejected-then-resampled:", total, " equals p:", torch.allclose(total, p_target))

# %% [markdown]
# **At scale on a GPU** (a vocabulary of 128k, a batch with a temperature, k and p per
# request), a full sort per row is the cost. A prefilter avoids it: the softmax needs no
# sort (one pass for the maximum and the sum), and `topk` orders only the k most probable.
# When those k carry at least p, the running total reaches p among them, and top-p keeps
# exactly the tokens a full sort would — provided the probabilities are the whole row's,
# not renormalised over the k. FlashInfer goes further with sorting-free rejection
# sampling. Each request gets its own `torch.Generator`, so that its draws do not depend
# on its neighbours'; bit-for-bit reproducibility across batches also needs batch-invariant
# kernels, since a reduction's order can change with the batch's size.

# %%
big = 3 * torch.randn(128_256, dtype=torch.float64, generator=torch.Generator().manual_seed(0))   # (V,)
probs = torch.softmax(big, dim=-1)                                  # the whole row's, no sort
head = probs.topk(16384).values                                     # only the head sorted
kept = int(((head.cumsum(0) - head) < 0.9).sum())
print(f"the 16384 most probable carry {head.sum().item():.0%}; top-p (0.9) keeps {kept} of them, "
      f"and {top_p_count(probs, 0.9)} with a full sort")

# %% [markdown]
# **What `logprobs` report** depends on the stack, so an interviewer asks. Hugging Face's
# `generate` returns the processed scores (after temperature and filters) with
# `output_scores=True` and the raw logits with `output_logits=True`; vLLM returns the raw
# model's log-probabilities by default (its `logprobs_mode` picks processed ones).

# %%
# kata: quiz
