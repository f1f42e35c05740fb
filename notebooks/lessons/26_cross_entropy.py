# %% [markdown]
# ## 1. The shift
#
# A decoder reads tokens 0 … n − 1 and, at every position t, outputs logits for the token at
# t + 1. The labels a training loop hands the loss are the input ids themselves, unshifted
# (Hugging Face's `ForCausalLMLoss` takes them so): the loss pairs `logits[:, :-1]` with
# `labels[:, 1:]`, and the last position predicts nothing.
#
# | tensor | shape |
# |---|---|
# | logits | (b, n, V) |
# | labels | (b, n) |
# | logits[:, :-1], flattened | (b · (n − 1), V) |
# | labels[:, 1:], flattened | (b · (n − 1),) |

# %%
import torch
import torch.nn.functional as F

b, n, V = 2, 5, 7
logits = torch.randn(b, n, V)
labels = torch.randint(0, V, (b, n))
labels[0, 3:] = -100  # padding: these targets do not count
x = logits[:, :-1].reshape(-1, V)
y = labels[:, 1:].reshape(-1)
print("scored", tuple(x.shape), "against", tuple(y.shape), "; counted:", int((y != -100).sum()))

# %% [markdown]
# Hugging Face writes the same shift another way: pad the labels with `ignore_index` on the
# right and drop the first one, so every position keeps its logits and the last one's target
# is ignored. Both give one loss.

# %%
padded = F.pad(labels, (0, 1), value=-100)[:, 1:].reshape(-1)
shifted_loss = F.cross_entropy(x, y, ignore_index=-100)
padded_loss = F.cross_entropy(logits.reshape(-1, V), padded, ignore_index=-100)
print(f"{shifted_loss.item():.6f} {padded_loss.item():.6f}")

# %% [markdown]
# ## 2. A stable logsumexp
#
# `-log p_y = logsumexp(x) − x_y`. Written as `log(sum(exp(x)))` it overflows as soon as a
# logit passes about 88 in float32; subtracting the row's maximum first keeps every exp ≤ 1.

# %%
big = torch.tensor([1e4, 0.0, -1e4])
print("log(sum(exp(x))):", big.exp().sum().log().item())
m = big.max()
print("m + log(sum(exp(x - m))):", (m + (big - m).exp().sum().log()).item(),
      "torch.logsumexp:", torch.logsumexp(big, 0).item())

# %% [markdown]
# ## 3. What to divide by
#
# The loss is a mean over the *counted* targets, never over every position. With gradient
# accumulation a step's micro-batches must share one divisor, the step's whole count
# (`num_items`): averaging each micro-batch's own mean weighs a short one's tokens more.

# %%
sums, counts = torch.tensor([30.0, 90.0]), torch.tensor([10, 90])
print("right:", (sums.sum() / counts.sum()).item(), " mean of means:", (sums / counts).mean().item())

# %% [markdown]
# ## 4. Label smoothing and the z-loss
#
# PyTorch's `label_smoothing = ε` trains against `(1 − ε) · one_hot(y) + ε / V`, the uniform share
# over all V classes: per target `(1 − ε) · nll + ε · (lse − mean_v x_v)`. PaLM's z-loss adds
# `z · lse²`, which pulls the log-normaliser towards 0.

# %%
eps = 0.1
lse = torch.logsumexp(x, -1)
nll = lse - x.gather(-1, y.clamp_min(0)[:, None]).squeeze(-1)
mine = ((1 - eps) * nll + eps * (lse - x.mean(-1)))[y != -100].mean()
print(f"{mine.item():.6f} {F.cross_entropy(x, y, label_smoothing=eps).item():.6f}")

# %%
# kata: exercise

# %% [markdown]
# ## 5. Follow-ups: the logits' memory
#
# The logits are the largest activation of an LLM's training step. Llama-3-8B has V = 128,256:
# for 8 sequences of 8,192 tokens in float32, the logits alone and their gradient take:

# %%
tokens, vocab = 8 * 8192, 128_256
logits_bytes = tokens * vocab * 4
print(f"logits {logits_bytes:,} B = {logits_bytes / 2**30:.1f} GiB; with the gradient "
      f"{2 * logits_bytes / 2**30:.1f} GiB")
print(f"one chunk of 1,024 targets: {1024 * vocab * 4 / 2**20:.0f} MiB; the largest chunk "
      f"under 1 GiB: {2**30 // (vocab * 4):,} targets")

# %% [markdown]
# So the loss is computed chunk by chunk from the hidden states: each chunk's logits are
# built, turned into a loss, and dropped. Autograd would keep every chunk's logits for the
# backward; `torch.utils.checkpoint` recomputes them there instead, and Liger-Kernel computes
# each chunk's gradients in the forward and keeps only those of the hidden states and the weight.
# A uniform prediction, what a freshly initialised model gives, scores `ln V`:

# %%
import math

print(f"ln(128,256) = {math.log(vocab):.2f}")

# %%
# kata: quiz
