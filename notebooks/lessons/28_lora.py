# %% [markdown]
# ## 1. Why low-rank adapters
#
# Full fine-tuning trains every weight, and AdamW keeps two float32 moments for each. LoRA
# freezes the model and learns, beside a weight W of shape (out, in), an update B A of rank r:
# A is (r, in), B is (out, r), so a layer trains r · (in + out) numbers instead of out · in.
# The cell counts both for Llama-3-8B (32 layers, hidden 4096, v_proj 4096 → 1024, MLP 14336,
# vocabulary 128256) with r = 16 on q_proj and v_proj.

# %%
import torch
import torch.nn.functional as F

layers, hidden, kv, mlp, vocab = 32, 4096, 1024, 14336, 128256
full = layers * (2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * mlp + 2 * hidden) \
    + 2 * vocab * hidden + hidden
lora = layers * (16 * (hidden + hidden) + 16 * (hidden + kv))
print(f"full fine-tuning: {full:,} parameters, AdamW state {full * 8 / 1e9:.1f} GB")
print(f"LoRA r=16 on q, v: {lora:,} parameters ({lora / full:.3%}), AdamW state "
      f"{lora * 8 / 1e6:.1f} MB")

# %% [markdown]
# ## 2. The layer, and why B starts at zero
#
# | tensor | shape |
# |---|---|
# | x | (..., in) |
# | W (frozen), bias | (out, in), (out,) |
# | A = lora_A.weight | (r, in) |
# | B = lora_B.weight | (out, r) |
# | y = x Wᵀ + bias + (x Aᵀ Bᵀ) · alpha / r | (..., out) |
#
# With B = 0 the output is the base's, so training starts from the pretrained model. The
# gradient of B is (the output's gradient)ᵀ (x Aᵀ), non-zero because A is random; the gradient
# of A goes through B and is zero at the first step only. With both zero, both gradients stay
# zero for ever. This lesson works only the README's formulas on raw tensors; the module,
# its freezing, dropout and the name matching are left to you.

# %%
torch.manual_seed(0)
d_in, d_out, r, alpha = 6, 4, 2, 4.0
W = torch.randn(d_out, d_in)
x = torch.randn(3, d_in)
for name, a_init in (("A random, B = 0", torch.randn(r, d_in) / d_in ** 0.5),
                     ("A = 0, B = 0", torch.zeros(r, d_in))):
    A = a_init.clone().requires_grad_(True)
    B = torch.zeros(d_out, r, requires_grad=True)
    y = x @ W.T + (x @ A.T @ B.T) * alpha / r
    y.square().sum().backward()
    print(f"{name}: output equals the base {torch.equal(y, x @ W.T)}, "
          f"|grad A| {A.grad.norm():.3f}, |grad B| {B.grad.norm():.3f}")

# %% [markdown]
# ## 3. Merging
#
# After training, scaling · B A has W's shape (out, in) and can be folded into W: the merged
# layer computes the same output with one matmul and no extra latency. Unmerging subtracts it
# again; doing either twice would count the update twice, or remove it twice.

# %%
A, B = torch.randn(r, d_in), torch.randn(d_out, r)
adapted = x @ W.T + (x @ A.T @ B.T) * alpha / r
merged = x @ (W + (B @ A) * alpha / r).T
print("largest difference, merged against adapted:", (merged - adapted).abs().max().item())

# %% [markdown]
# ## 4. Which layers: PEFT's name rule
#
# A target matches a module whose qualified name equals it or ends with "." + the target.
# Without the dot, "v_proj" would also match "kv_proj"; a substring test also catches names
# that merely contain it.

# %%
names = ["layers.0.attn.q_proj", "layers.0.attn.v_proj", "layers.0.attn.kv_proj", "v_proj"]
targets = ("q_proj", "v_proj")
print("PEFT's rule:  ", [n for n in names if any(n == t or n.endswith("." + t) for t in targets)])
print("no dot:       ", [n for n in names if any(n.endswith(t) for t in targets)])

# %%
# kata: exercise

# %% [markdown]
# ## 5. Follow-ups
#
# rsLoRA: with alpha / r the update's scale falls as the rank grows, so a larger r learns more
# slowly; alpha / sqrt(r) keeps it stable. The cell prints both scalings for alpha = 16.

# %%
for rank in (8, 64, 256):
    print(f"r={rank}: alpha / r = {16 / rank:.4f}, alpha / sqrt(r) = {16 / rank ** 0.5:.4f}")

# %% [markdown]
# QLoRA stores the frozen base in 4 bits per weight (NF4 codes with one absmax scale per
# block, kata 24's idea on weights) and dequantises it for each matmul, while the adapters
# train in bfloat16. Serving many adapters keeps them unmerged beside one base: each request's
# own B A x is added to the shared base matmul.

# %%
print(f"base weights: bfloat16 {full * 2 / 1e9:.2f} GB, 4-bit codes {full / 2 / 1e9:.2f} GB")
print(f"one r=16 adapter on q, v in bfloat16: {lora * 2 / 1e6:.1f} MB; "
      f"100 adapters {100 * lora * 2 / 1e9:.2f} GB")

# %%
# kata: quiz
