# %% [markdown]
# ## 1. A response's log-probability
#
# A causal LM's logits at position t − 1 are its prediction of token t. The log-probability
# of a response y given a prompt x is the sum, over y's tokens, of the log-softmax at the
# position before each token, read at that token's id: drop the last logits and the first
# token, and keep the positions loss_mask marks (the response; never the prompt, never the
# padding).
#
# | step | shape |
# |---|---|
# | logits | (b, n, V) |
# | log_softmax(logits[:, :-1]) | (b, n − 1, V) |
# | gathered at input_ids[:, 1:] | (b, n − 1) |
# | kept where loss_mask[:, 1:], summed | (b,) |
#
# Below, a prompt of 2 tokens, a response of 3 and one padding token, with uniform logits over
# 4 tokens: each response token costs log(1/4), whatever its id.

# %%
import math

import torch
import torch.nn.functional as F

logits = torch.zeros(1, 6, 4)
input_ids = torch.tensor([[3, 1, 0, 2, 2, 0]])
loss_mask = torch.tensor([[False, False, True, True, True, False]])
per_token = torch.log_softmax(logits[:, :-1], -1).gather(-1, input_ids[:, 1:, None]).squeeze(-1)
print("per token:", per_token)
print("summed over the response:", (per_token * loss_mask[:, 1:]).sum(-1).item(),
      "= 3 * log(1/4) =", 3 * math.log(1 / 4))

# %% [markdown]
# ## 2. The loss, and where it starts
#
# Four such numbers make one pair's loss: the policy's and the reference's log-probabilities
# of the chosen and of the rejected response. Their margin logits = (πc − πr) − (refc − refr)
# says how much more the policy prefers the chosen response than the reference does; the loss
# is −logsigmoid(β · logits). At initialisation the policy is the reference, so logits = 0:
# the loss is log 2 for every pair, and autograd gives −β/2 for πc and +β/2 for πr.

# %%
beta = 0.1
ref = torch.tensor([-40.0, -35.0])  # refc, refr
policy = ref.clone().requires_grad_(True)  # πc, πr: the policy is the reference
margin = (policy[0] - policy[1]) - (ref[0] - ref[1])
loss = -F.logsigmoid(beta * margin)
loss.backward()
print("loss:", loss.item(), "log 2:", math.log(2))
print("gradient w.r.t. (πc, πr):", policy.grad.tolist())

# %% [markdown]
# ## 3. Why F.logsigmoid
#
# A margin of 1000 nats is rare but happens (long responses, a policy far from its reference).
# sigmoid(−1000) is 0 in float32 and float64, so log(sigmoid(x)) is −inf and its gradient
# NaN; F.logsigmoid computes −softplus(−x) and never forms sigmoid(x).

# %%
x = torch.tensor([-1000.0, 1000.0], requires_grad=True)
naive = torch.log(torch.sigmoid(x))
naive.sum().backward()
print("log(sigmoid(x)):", naive.tolist(), "gradient:", x.grad.tolist())
x.grad = None
stable = F.logsigmoid(x)
stable.sum().backward()
print("F.logsigmoid(x):", stable.tolist(), "gradient:", x.grad.tolist())

# %%
# kata: exercise

# %% [markdown]
# ## 4. Follow-ups
#
# β is the weight of the KL penalty that keeps the policy near the reference. It also sets
# where the loss stops pushing: the same margin of 20 nats gives a loss of 0.1269 with
# β = 0.1 and about 2e-9 with β = 1.

# %%
for b in (0.1, 1.0):
    print(f"beta {b}: loss at logits = 20 is {-F.logsigmoid(torch.tensor(b * 20.0)).item():.4g}")

# %% [markdown]
# With deterministic preferences the sigmoid loss never stops pushing the margin up, which
# over-optimises. Conservative DPO (label_smoothing ε) believes each label with probability
# 1 − ε, so its loss has a minimum, at logits = log((1 − ε)/ε)/β; IPO regresses the margin to
# the target 1/(2β). The cell finds both minima on a grid.

# %%
grid = torch.linspace(-10.0, 60.0, 70001, dtype=torch.float64)
eps, b = 0.1, 0.1
conservative = -(1 - eps) * F.logsigmoid(b * grid) - eps * F.logsigmoid(-b * grid)
ipo = (grid - 1 / (2 * b)) ** 2
print("conservative DPO smallest at", round(grid[conservative.argmin()].item(), 2),
      "; log(9)/0.1 =", round(math.log(9) / 0.1, 2))
print("IPO smallest at", round(grid[ipo.argmin()].item(), 2), "; 1/(2 beta) =", 1 / (2 * b))

# %%
# kata: quiz
