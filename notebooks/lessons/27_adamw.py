# %% [markdown]
# ## 1. Two running averages and their bias correction
#
# For each parameter p of any shape, AdamW keeps two tensors of p's shape: m, a running
# average of the gradient g, and v, one of g². Both start at zero, so after t steps they
# are too small by the factors 1 − β1^t and 1 − β2^t: dividing by them is the bias
# correction. The cell feeds a constant gradient of 0.5 and prints, step by step, the raw m
# and v, and the corrected m_hat and sqrt(v_hat), which are right from the first step.

# %%
import math

import torch

beta1, beta2, g = 0.9, 0.999, 0.5
m = v = 0.0
for t in range(1, 4):
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
    print(f"t={t}: m={m:.4f} v={v:.6f}  m_hat={m_hat:.4f} sqrt(v_hat)={math.sqrt(v_hat):.4f}")

# %% [markdown]
# The step is lr · m_hat / (sqrt(v_hat) + ε). PyTorch computes it as
# `p.addcdiv_(m, sqrt(v) / sqrt(1 − β2^t) + ε, value=−lr / (1 − β1^t))`: ε is added after
# the correction. Adam's paper (and CS336's pseudo-code) folds both corrections into the step
# size, lr · sqrt(1 − β2^t) / (1 − β1^t), and adds ε to the raw sqrt(v): the same update
# except for ε, which is then larger by 1 / sqrt(1 − β2^t) in the early steps (31.6 times on
# step 1 with β2 = 0.999). The cell compares the two on the first step of a gradient of 1e-6.

# %%
g, eps, t = 1e-6, 1e-8, 1
m, v = (1 - beta1) * g, (1 - beta2) * g * g
pytorch = m / (1 - beta1**t) / (math.sqrt(v) / math.sqrt(1 - beta2**t) + eps)
paper = math.sqrt(1 - beta2**t) / (1 - beta1**t) * m / (math.sqrt(v) + eps)
print(f"step in units of lr: PyTorch {pytorch:.4f}, the paper's form {paper:.4f}")

# %% [markdown]
# ## 2. Decoupled weight decay
#
# Adam with L2 regularisation adds weight_decay · p to the gradient; that term then goes
# through m and v and is divided by sqrt(v) like the rest. AdamW instead shrinks the weights
# directly, p ← p · (1 − lr · weight_decay), before the update: every weight decays at the
# same rate, whatever its gradients. The cell runs both on two weights at 1.0 whose gradient
# noise has scale 0.01 and 1.0, with PyTorch's AdamW (weight_decay=0 for the L2 run, which
# adds the term itself).

# %%
def run(l2: bool) -> list[float]:
    w = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.AdamW([w], lr=1e-2, weight_decay=0.0 if l2 else 0.1)
    for step in range(200):
        torch.manual_seed(step)
        grad = torch.randn(2) * torch.tensor([0.01, 1.0])
        w.grad = grad + 0.1 * w.detach() if l2 else grad
        opt.step()
    return [round(x, 3) for x in w.tolist()]


print("AdamW (decoupled):", run(False))
print("Adam + L2:        ", run(True))

# %% [markdown]
# ## 3. One norm for all gradients, and the schedule
#
# `clip_grad_norm_` treats all gradients as one vector: the total is the norm of the
# per-parameter norms, and every gradient is scaled by the same min(1, max_norm / (total +
# 1e-6)), so the update keeps its direction. Clipping each gradient by its own norm changes
# the direction. `lr_at` warms up linearly from 0 and then follows half a cosine from max_lr
# to min_lr; the cell prints a few points of CS336's schedule (warmup 10, cosine 100).

# %%
grads = [torch.tensor([3.0, 4.0]), torch.tensor([12.0])]
total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(x) for x in grads]))
print("total norm", total.item(), "-> factor for max_norm=1:", (1 / (total + 1e-6)).item())


def lr_cosine(step, max_lr=1e-3, min_lr=1e-4, warmup=10, cosine=100):
    if step < warmup:
        return max_lr * step / warmup
    if step > cosine:
        return min_lr
    return min_lr + 0.5 * (1 + math.cos(math.pi * (step - warmup) / (cosine - warmup))) * (max_lr - min_lr)


print([f"{lr_cosine(s):.2e}" for s in (0, 5, 10, 55, 100, 120)])

# %%
# kata: exercise

# %% [markdown]
# ## 4. Follow-ups
#
# The memory of mixed-precision AdamW, per parameter: bfloat16 weights and gradients, a
# float32 master copy of the weights that the optimizer updates, and float32 m and v. The
# cell counts them for 7B parameters.

# %%
per_param = {"bf16 weights": 2, "bf16 grads": 2, "fp32 master": 4, "exp_avg": 4, "exp_avg_sq": 4}
n = 7e9
for name, size in per_param.items():
    print(f"{name:13s} {size} B -> {size * n / 1e9:5.1f} GB")
total_bytes = sum(per_param.values()) * n
print(f"total {sum(per_param.values())} B per parameter: {total_bytes / 1e9:.0f} GB "
      f"({total_bytes / 2**30:.1f} GiB)")

# %% [markdown]
# What ε does at small gradients: on the first step a weight moves by lr · g / (|g| + ε).
# Above ε that is lr whatever g (a sign step); below ε it is lr · g / ε, plain SGD with a
# learning rate of lr / ε.

# %%
for g in (1.0, 1e-6, 1e-8, 1e-9):
    print(f"g={g:g}: first step {g / (abs(g) + 1e-8):.3f} lr")

# %%
# kata: quiz
