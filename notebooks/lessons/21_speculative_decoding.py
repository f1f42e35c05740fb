# %% [markdown]
# ## 1. One position: keep, or resample from the residual
#
# The draft proposes a token `d ~ q`; the target's distribution for that position is `p`.
# The token is kept with probability `min(1, p(d) / q(d))`: always when the target likes it
# at least as much as the draft, in proportion otherwise. On a rejection a new token comes
# from the **residual** `max(0, p − q)`, normalised: the tokens the draft proposes too
# rarely.
#
# | quantity | value for p = [0.5, 0.3, 0.2], q = [0.2, 0.6, 0.2] |
# |---|---|
# | acceptance rate α = Σ min(p, q) | 0.7 |
# | keep token 1 | 0.3 / 0.6 = 0.5 |
# | residual max(0, p − q) | [0.3, 0, 0] → [1, 0, 0] |

# %%
import torch

p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
q = torch.tensor([0.2, 0.6, 0.2], dtype=torch.float64)
kept_mass = torch.minimum(p, q)                     # P(token x comes out as an accepted draft)
leftover = (p - q).clamp(min=0)                     # P(x comes out of a rejection), unnormalised
print("alpha            :", kept_mass.sum().item())
print("min(p, q)        :", kept_mass.tolist())
print("max(0, p - q)    :", leftover.tolist())
print("their sum, and p :", (kept_mass + leftover).tolist(), p.tolist())

# %% [markdown]
# A token comes out either accepted, with probability `q(x) · min(1, p(x)/q(x)) = min(p(x),
# q(x))`, or from a rejection, with probability `(1 − α) · max(0, p(x) − q(x)) / (1 − α)`.
# The sum is `p(x)`: whatever the draft, the output follows the target. The draft's quality
# only sets `α`, how often the cheap guess survives.
#
# A simulation of 200,000 draws checks it:

# %%
g = torch.Generator().manual_seed(0)
draws = 200_000
proposal = torch.multinomial(q, draws, replacement=True, generator=g)     # (draws,) d ~ q
survives = torch.rand(draws, generator=g, dtype=torch.float64) < (p / q)[proposal]
fallback = torch.multinomial(leftover / leftover.sum(), draws, replacement=True, generator=g)
emitted = torch.where(survives, proposal, fallback)
print("kept             :", round(survives.double().mean().item(), 4))
print("emitted frequency:", [round(v, 4) for v in (torch.bincount(emitted, minlength=3) / draws).tolist()])

# %% [markdown]
# ## 2. Which row judges which token
#
# A causal model's row `j` is the distribution of the token at position `j + 1`. The step
# calls the target once on `prefix ⧺ d_0 … d_{γ−1}`, `n + γ` tokens, and gets `n + γ` rows.
# Draft token `d_i` sits at position `n + i`, so the row that judges it is `n − 1 + i`, and
# the last row, `n − 1 + γ`, is the distribution after the last draft token: the **bonus**
# token's, free when every draft token is kept.
#
# | row of P | distribution of | used for |
# |---|---|---|
# | P[n − 1] | position n | judging d_0 |
# | P[n − 1 + i] | position n + i | judging d_i |
# | P[n − 1 + γ] | position n + γ | the bonus token |

# %%
n, gamma = 5, 3
for i in range(gamma + 1):
    role = f"judges d_{i}" if i < gamma else "gives the bonus token"
    print(f"P[{n - 1 + i}] (position {n + i}) {role}")

# %% [markdown]
# ## 3. How many tokens per target call
#
# With acceptance i.i.d. at rate `α`, token `i + 1` of a step comes out when the first `i`
# draft tokens are kept: `1 + α + … + α^γ = (1 − α^(γ+1)) / (1 − α)` tokens per target call.
# A draft call costs a fraction `c` of a target call, so a step costs `γc + 1`.

# %%
def per_call(alpha, gamma):
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


alpha, cost = 0.8, 0.05
for gamma in (1, 2, 4, 8, 16):
    print(f"gamma {gamma:2d}: {per_call(alpha, gamma):.4f} tokens per target call, "
          f"gain {per_call(alpha, gamma) / (gamma * cost + 1):.2f}x")

# %%
# kata: exercise

# %% [markdown]
# ## 4. Greedy mode
#
# At temperature 0 every distribution is a one-hot on its argmax: a draft token is kept
# when it equals the target's argmax, and the first mismatch is replaced by the target's
# argmax. The output is then exactly the target's own greedy decoding, a sanity check any
# serving engine runs first.

# %%
one_hot = lambda i: torch.nn.functional.one_hot(torch.tensor(i), 3).double()
p_row, q_row = one_hot(2), one_hot(1)
print("ratio p/q at the draft's token:", (p_row[1] / q_row[1]).item(), "-> always rejected")
print("residual:", (p_row - q_row).clamp(min=0).tolist(), "-> the target's argmax, 2")

# %% [markdown]
# ## 5. Follow-ups
#
# **When does speculation stop paying?** When the target is compute-bound. At batch `B` the
# verify pass processes `B · (γ + 1)` tokens; in bfloat16 each token does 2 FLOPs per weight
# and the pass reads 2 bytes per weight, so it does about `B · (γ + 1)` FLOPs per byte. Past
# the ridge (below, for an H100) every rejected token is paid in FLOPs: engines lower `γ` or
# turn speculation off at high load.
#
# **Is Medusa's "typical acceptance" lossless?** No: it keeps a candidate whose target
# probability is above an entropy-dependent threshold, trading exactness for length. Medusa
# with this kata's rejection rule, and EAGLE's tree verification, are lossless.
#
# **Draft trees in one pass.** Flatten the tree into one sequence with a tree attention mask
# (each node sees its ancestors only) and position ids by depth, then accept the longest
# path by the same rule along it (SpecInfer, Medusa, EAGLE-2).
#
# **Must draft and target share a tokenizer?** For this rule, yes: it compares `p` and `q`
# over one vocabulary. HF's universal assisted generation re-tokenises text between the two
# models, and is no longer exactly this rule.
#
# **How do engines choose `γ`?** Fixed per deployment (vLLM's `num_speculative_tokens`), or
# adaptively: HF's assisted generation raises the number of assistant tokens by 2 after a
# fully accepted step and lowers it by 1 otherwise.

# %%
flops, bandwidth = 989.4e12, 3.35e12                                  # H100 SXM, bfloat16
ridge = flops / bandwidth
print(f"ridge: {ridge:.0f} FLOPs per byte, i.e. about {ridge:.0f} tokens per verify pass")
for gamma in (2, 4, 8):
    print(f"gamma {gamma}: compute-bound from a batch of about {ridge / (gamma + 1):.0f}")

# %%
# kata: quiz
