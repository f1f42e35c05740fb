# %% [markdown]
# ## 1. A baseline from the group, not from a value network
#
# PPO subtracts a learned value V(s) from each reward, so that only better-than-expected
# completions are reinforced. GRPO drops the value network: it samples G completions of the
# same prompt and uses their mean reward as the baseline, their std as the scale. The rewards
# arrive flat, `(B·G,)`, each prompt's G completions consecutive, so one `view(B, G)` puts a
# group on each row.
#
# | step | shape |
# |---|---|
# | rewards | (B·G,) |
# | grouped = rewards.view(B, G) | (B, G) |
# | mean, std along dim=1, keepdim | (B, 1) |
# | (grouped − mean) / (std + eps), flattened | (B·G,) |

# %%
import torch

rewards = torch.tensor([1.0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1])
groups = rewards.view(-1, 4)
mean = groups.mean(1, keepdim=True)
print("unbiased:  ", ((groups - mean) / (groups.std(1, keepdim=True) + 1e-6)).flatten())
print("population:", ((groups - mean) / (groups.std(1, unbiased=False, keepdim=True) + 1e-6)).flatten())
print("ratio of the two:", (4 / 3) ** 0.5)

# %% [markdown]
# The third group's rewards are all 1: its std is 0, and without eps 0 / 0 would be NaN. With eps its
# advantages are 0: a group where every completion is right (or every one wrong) carries no
# signal at all. DAPO's dynamic sampling drops such groups and samples more prompts, so that
# the batch keeps its size in useful completions. Dr. GRPO also drops the division by the std
# (`normalize_by_std=False`): dividing gives the questions that are nearly always solved (or
# never) the largest advantages.

# %% [markdown]
# ## 2. The clipped surrogate, token by token
#
# `ratio = exp(logprobs − old_logprobs)` compares the policy being trained with the one that
# sampled the batch, a constant. The surrogate is `min(ratio · A, clamp(ratio, 1 − ε, 1 + ε) · A)`:
# the min keeps the more pessimistic of the two, so the clip acts on one side only, and which side
# depends on A's sign. The cell below prints the four cases and where the gradient survives.

# %%
eps = 0.2
for a in (1.0, -1.0):
    for r in (1.5, 0.5):
        ratio = torch.tensor(r, requires_grad=True)
        surrogate = torch.min(ratio * a, ratio.clamp(1 - eps, 1 + eps) * a)
        surrogate.backward()
        print(f"A={a:+.0f} ratio={r}: surrogate {surrogate.item():+.2f}, "
              f"d/d ratio {ratio.grad.item():+.0f}")

# %% [markdown]
# With A > 0 a ratio above 1.2 stops earning (gradient 0), but a ratio below 0.8 keeps its
# full gradient, so a token made less likely is pulled back. With A < 0 it is the reverse. That
# is the `clip_fraction` stat: the share of tokens where the clip took the gradient away.

# %% [markdown]
# ## 3. k3, not k1
#
# With samples from π, `k1 = log π − log π_ref` is an unbiased estimate of KL(π ‖ π_ref) but
# takes negative values; `k3 = exp(ref − lp) − (ref − lp) − 1` is unbiased too and never
# negative (DeepSeekMath eq. 4, from Schulman's note on KL approximations).

# %%
d = torch.tensor([-1.0, -0.1, 0.0, 0.1, 1.0])  # ref - logprobs on five tokens
print("k1:", [round(v, 4) for v in (-d).tolist()])
print("k3:", [round(v, 4) for v in (d.exp() - d - 1).tolist()])

# %% [markdown]
# ## 4. Aggregation and the length bias
#
# `"sequence"` (DeepSeekMath, TRL's `loss_type="grpo"`) averages each completion over its own
# tokens, then averages completions: a token of a short completion weighs more than one of a
# long completion. For a wrong answer (A < 0) a long rambling completion is therefore punished
# less per token, one source of the length growth Dr. GRPO and DAPO point out. `"token"` (DAPO,
# TRL's `"bnpo"`) divides by the number of tokens of the whole batch.

# %%
lengths = torch.tensor([8, 1, 5, 2])
mask = torch.arange(8) < lengths[:, None]
a = torch.tensor([-1.0, -1.0, 1.0, 1.0])[:, None].expand(4, 8)
for aggregation in ("sequence", "token"):
    lp = torch.zeros(4, 8, requires_grad=True)
    per_token = -(torch.exp(lp - lp.detach()) * a) * mask
    loss = (per_token.sum(1) / mask.sum(1)).mean() if aggregation == "sequence" else per_token.sum() / mask.sum()
    loss.backward()
    print(aggregation, "per-token gradient of each completion:", lp.grad[:, 0].tolist())

# %% [markdown]
# The on-policy case is in the cell above too: with `old_logprobs = logprobs` (one batch used
# once) the ratio is 1 everywhere, nothing is clipped, and the gradient with respect to a token's
# log-prob is −A / (B·G · |o_i|) with `"sequence"`, i.e. the loss is REINFORCE's A ∇ log π with a
# group baseline. The clip only matters from the second optimisation step on the same batch.

# %%
# kata: exercise

# %% [markdown]
# ## 5. Follow-ups
#
# Why no value network: the group mean is a Monte Carlo baseline for the prompt, free for
# verifiable rewards, and one model fewer in memory. What DAPO changes besides the token mean:
# asymmetric bounds (clip-higher, 1 + ε_high > 1 + ε_low, so rare tokens can grow), dynamic
# sampling (drop the groups of equal rewards counted below), and no KL term. What β does: with
# `β = 0` the reference model is not needed at all.

# %%
torch.manual_seed(0)
correct = (torch.rand(64, 8) < torch.rand(64, 1)).float()  # 64 prompts, 8 completions each
equal = (correct.std(dim=1) == 0).sum().item()
print(f"groups with all rewards equal: {equal} of 64 (their advantages are 0)")

# %%
# kata: quiz
