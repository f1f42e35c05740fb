# %% [markdown]
# ## 1. Rotating a pair of numbers
#
# Kata 05 adds a table to the embeddings. RoPE instead takes the queries and keys of every
# head, groups their d features into d/2 **pairs**, reads each pair (x1, x2) as a point in
# the plane, and turns it by an angle θ:
#
# ```
# x1' = x1 cos θ − x2 sin θ
# x2' = x1 sin θ + x2 cos θ
# ```
#
# A rotation keeps lengths, and rotating two vectors changes their dot product only
# through the **difference** of their angles: ⟨R(α) q, R(β) k⟩ = ⟨q, R(β − α) k⟩.

# %%
import math


def rotate(pair, theta):                              # pair (..., 2), theta (...)
    x1, x2 = pair[..., 0], pair[..., 1]
    return torch.stack((x1 * math.cos(theta) - x2 * math.sin(theta),
                        x1 * math.sin(theta) + x2 * math.cos(theta)), dim=-1)


q2, k2 = torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0])
print("length kept:", q2.norm().item(), "->", rotate(q2, 0.7).norm().item())
for alpha, beta in ((0.3, 1.0), (2.3, 3.0), (10.3, 11.0)):             # beta - alpha = 0.7 each time
    print(f"angles {alpha:4.1f} and {beta:4.1f}: dot = {(rotate(q2, alpha) @ rotate(k2, beta)).item():.4f}")

# %% [markdown]
# ## 2. Angles from positions
#
# Token at position p turns pair i by θ = p · w_i with the same geometric frequencies as
# kata 05: w_i = base^(−2i/d), i = 0 … d/2 − 1. Pair 0 turns one radian per position (it
# tells neighbours apart), the last pair almost not at all (it tells far-away positions
# apart without wrapping around).
#
# | tensor | shape |
# |---|---|
# | positions | (n,) or (b, n) |
# | w | (d/2,) |
# | angles = positions[..., None] · w | (n, d/2) or (b, n, d/2) |
#
# Computed in float64 and rounded once: a float32 angle at position 10⁶ is already off by
# a float32 step (0.0625 rad there), and long-context models reach such positions.

# %%
d, base = 8, 10000.0
pair = torch.arange(d // 2, dtype=torch.float64)
w = base ** (-2 * pair / d)                                              # (d/2,)
positions = torch.arange(6)
angles = positions.to(torch.float64)[:, None] * w                        # (n, d/2)
print("w:", w.tolist())
print("angles (n, d/2):", tuple(angles.shape))
print(angles.to(torch.float32))

far = torch.tensor([999_999, 1_000_000])
exact = far.to(torch.float64)[:, None] * w
in_float32 = far.to(torch.float32)[:, None] * (1.0 / base ** (torch.arange(0, d, 2).float() / d))
print("float32 angle error at 10^6, in float32 steps:",
      ((in_float32.double() - exact).abs() / (torch.nextafter(exact.float(), exact.float() + 1).double()
                                               - exact.float().double())).max().item())

# %% [markdown]
# ## 3. Which features form a pair
#
# Two conventions, both in wide use (rotate-half in Hugging Face checkpoints; interleaved
# in Meta's original Llama code and GPT-J):
#
# | convention | pair i | code |
# |---|---|---|
# | rotate half (default) | (x[i], x[i + d/2]) | GPT-NeoX, Hugging Face: `x * cos + rotate_half(x) * sin` |
# | interleaved | (x[2i], x[2i + 1]) | RoFormer, Meta's Llama: pairs as complex numbers |
#
# With `rotate_half(x) = cat(−x2, x1)` (x1, x2 the two halves) and full-width tables
# `cos = cat(cos θ, cos θ)`, `x * cos + rotate_half(x) * sin` is exactly the pair rotation
# above for pairs (i, i + d/2). The two conventions differ by a fixed permutation of the
# features: `perm = cat(arange(0, d, 2), arange(1, d, 2))` moves each interleaved pair
# into the two halves.

# %%
x = torch.randn(1, 1, 6, d, dtype=torch.float64)                         # (b, h, n, d)
cos, sin = angles.cos(), angles.sin()                                     # (n, d/2)


def rope_halves(x):
    x1, x2 = x.chunk(2, dim=-1)                                          # the two halves
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def rope_interleaved(x):
    even, odd = x[..., 0::2], x[..., 1::2]                               # pair i = (x[2i], x[2i+1])
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)                                          # the two halves
    return torch.cat((-x2, x1), dim=-1)


hf = x * torch.cat((cos, cos), -1) + rotate_half(x) * torch.cat((sin, sin), -1)
print("rotate_half form == pair rotation on halves:", torch.allclose(hf, rope_halves(x)))
perm = torch.cat((torch.arange(0, d, 2), torch.arange(1, d, 2)))
print("perm:", perm.tolist())
print("interleaved, then permuted == permuted, then halves:",
      torch.allclose(rope_interleaved(x)[..., perm], rope_halves(x[..., perm])))
print("norms kept:", torch.allclose(rope_halves(x).norm(dim=-1), x.norm(dim=-1)))

# %% [markdown]
# ## 4. Positions per batch row, and the relative-position property
#
# Positions need not be 0 … n − 1: with a key/value cache the new tokens start at the cache
# length, and in a left-padded batch each row starts elsewhere. Positions (b, n) give angles
# (b, n, d/2), which broadcast against x (b, h, n, d) once a heads axis is added:
# (b, 1, n, d/2) — every head of a token turns by the same angles.
#
# Rotate a query at position m and a key at position n: their dot product depends on
# m − n only. Below, the same q and k are placed at (m, n) = (7, 3), (107, 103) and
# (1007, 1003).

# %%
def rope_at(x, positions):                                               # x (b, h, n, d), positions (b, n)
    theta = (positions.to(torch.float64)[..., None] * w)[:, None]        # (b, 1, n, d/2)
    x1, x2 = x.chunk(2, dim=-1)                                          # the two halves
    return torch.cat((x1 * theta.cos() - x2 * theta.sin(), x1 * theta.sin() + x2 * theta.cos()), dim=-1)


qv, kv = torch.randn(1, 1, 1, d, dtype=torch.float64), torch.randn(1, 1, 1, d, dtype=torch.float64)
for m, n_ in ((7, 3), (107, 103), (1007, 1003)):
    score = (rope_at(qv, torch.tensor([[m]])) * rope_at(kv, torch.tensor([[n_]]))).sum().item()
    print(f"q at {m:4d}, k at {n_:4d}: score {score:.6f}")
rows = torch.tensor([[0, 1, 2, 3], [5, 6, 7, 8]])                        # two rows, different starts
print("(b, n) positions -> angles", tuple((rows[..., None] * w).shape), "-> broadcast as",
      tuple((rows[..., None] * w)[:, None].shape))

# %%
# kata: exercise

# %% [markdown]
# ## 5. Scores against distance
#
# The score between a fixed q and k, rotated to positions m and n, as a function of the
# distance m − n: your `apply_rope` once it passes the core checks, the lesson's
# `rope_at` until then. For q = k the score is largest at distance 0 and wobbles down as
# the pairs turn out of phase — a built-in, if gentle, bias towards nearby tokens.

# %%
import matplotlib.pyplot as plt

d = 64
w = base ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)
vec = torch.ones(1, 1, 1, d, dtype=torch.float64)                        # q = k = all ones
distances = torch.arange(0, 200)
if result.core_passed:
    rotate_at = lambda t, p: apply_rope(t.expand(1, 1, len(p), d), p)    # noqa: E731
    source = "your apply_rope"
else:
    rotate_at = lambda t, p: rope_at(t.expand(1, 1, len(p), d), p[None])  # noqa: E731
    source = "the lesson's rope_at (pass the core checks to use yours)"
queries = rotate_at(vec, distances + 500)                                 # q at 500 + distance
keys = rotate_at(vec, torch.full_like(distances, 500))                   # k at 500
scores = (queries * keys).sum(-1)[0, 0]
fig, axis = plt.subplots(figsize=(6, 2.8))
axis.plot(distances, scores / d)
axis.set(xlabel="m − n", ylabel="score / d", title=f"q = k = ones, d = {d}: {source}")
plt.tight_layout()
plt.show()
plt.close(fig)

# %% [markdown]
# ## 6. RoPE with a key/value cache: rotate once, then store
#
# While decoding, the new token's position is the number of tokens before it — the cache
# length — not 0: positions = past_len + arange(t). Its query and key are rotated by that
# position, and the key goes into the cache **already rotated**. A later query, rotated by
# its own position, then meets every cached key at the right relative angle, and no cached
# key is ever touched again. Caching the keys before rotation would work too, but every
# step would rotate the whole cache again (n rotations per new token instead of one).
# Forgetting the offset (rotating the new token as position 0) gives wrong scores without
# any error.

# %%
torch.manual_seed(0)
n_tokens = 6
queries_all = torch.randn(1, 1, n_tokens, d, dtype=torch.float64)            # (b, h, n, d)
keys_all = torch.randn(1, 1, n_tokens, d, dtype=torch.float64)
every_position = torch.arange(n_tokens)[None]                              # (1, n)
full_scores = rope_at(queries_all, every_position) @ rope_at(keys_all, every_position).mT  # (1, 1, n, n)

cache = rope_at(keys_all[:, :, :5], every_position[:, :5])                # prefill: keys 0-4, rotated
new_query, new_key = queries_all[:, :, 5:], keys_all[:, :, 5:]            # the token at position 5
past_len = cache.size(2)
for name, position in (("position = past_len", past_len), ("position 0 (offset forgotten)", 0)):
    at = torch.tensor([[position]])
    step_keys = torch.cat([cache, rope_at(new_key, at)], dim=2)           # append the rotated key
    step_scores = rope_at(new_query, at) @ step_keys.mT                   # (1, 1, 1, 6)
    print(f"{name:30}: scores equal the full sequence's last row: "
          f"{torch.allclose(step_scores[0, 0, 0], full_scores[0, 0, 5])}")

# %% [markdown]
# ## 7. Longer than trained: interpolation, NTK-aware scaling, a larger base
#
# A model trained on sequences of L = 4096 tokens has seen each pair's angles only up to
# 4096 · wᵢ. The fast pairs have turned many times and have seen every angle; the slow
# pairs, whose wavelength 2π / wᵢ exceeds L, have not completed one turn, so beyond L they
# reach angles never seen in training and the scores built from them are out of
# distribution: without a fix, quality collapses past the training length. The fixes,
# for a target length s · L:
#
# - **position interpolation** (Chen et al., 2023): divide every position by s, so that
#   every angle stays in the trained range; the price is that neighbours are s times
#   closer in angle (pair 0 turns 1/s radian per position), which a short fine-tune repairs;
# - **NTK-aware scaling**: raise the base to base · s^(d/(d−2)) — pair 0 is unchanged,
#   the slowest pair is slowed by exactly s, the pairs in between by less (YaRN refines
#   this per frequency band and adds a temperature to the scores);
# - **a larger base**: Code Llama fine-tunes on long sequences with base 1,000,000; Llama 3
#   pre-trains with base 500,000, a value found effective for contexts up to 32,768. A
#   larger base slows every pair but pair 0; it is no extrapolation trick by itself, since
#   its slow pairs too meet new angles beyond the training length: it goes with training on
#   long sequences.
#
# For head_dim 128, a training length of 4096 and a target of 8 × 4096: pair 0's angle per
# position, the slowest pair's largest angle in training and at the target, and how many
# pairs reach angles at the target that they never reached in training, and by how much
# (the first three rows are the same base-10000 model, changed at inference; the last is
# a model trained with base 500,000):

# %%
head_dim, trained, scale = 128, 4096, 8
target = scale * trained
pairs = torch.arange(head_dim // 2, dtype=torch.float64)


def frequencies(base):                                                    # w_i = base^(-2i/d), (d/2,)
    return base ** (-2 * pairs / head_dim)


ntk_base = 10000.0 * scale ** (head_dim / (head_dim - 2))
schemes = {  # name: (angle per position while training, angle per position at the target)
    "base 10000, unchanged": (frequencies(10000.0), frequencies(10000.0)),
    f"interpolation, positions / {scale}": (frequencies(10000.0), frequencies(10000.0) / scale),
    f"NTK-aware, base {ntk_base:,.0f}": (frequencies(10000.0), frequencies(ntk_base)),
    "trained with base 500,000": (frequencies(500000.0), frequencies(500000.0)),
}
for name, (w_trained, w_target) in schemes.items():
    reached = trained * w_trained                                       # the largest angle in training
    seen = torch.where(reached < 2 * math.pi, reached, math.inf)         # a full turn: every angle seen
    overshoot = target * w_target / seen                                  # > 1: beyond anything seen
    unseen = int((overshoot > 1 + 1e-9).sum())
    print(f"{name:35}: pair 0 {w_target[0]:.3f} rad per position; slowest pair "
          f"{trained * w_trained[-1]:.3f} rad in training, {target * w_target[-1]:.3f} at {target}; "
          f"{unseen:2d} pairs reach unseen angles, up to {overshoot.max():.2f} x the trained one")

# %%
# kata: quiz
