# %% [markdown]
# ## 1. An image as a sequence of patches
#
# A Transformer reads a sequence of vectors. The Vision Transformer makes one out of an
# image by cutting it into p × p patches and projecting each patch (C·p·p numbers) to a
# D-dimensional token with one shared linear map. For an image of H × W pixels that is a
# grid of (H/p) × (W/p) patches:
#
# | step | shape |
# |---|---|
# | image | (B, C, H, W) |
# | patches, each flattened | (B, N, C·p·p), N = (H/p)(W/p) |
# | tokens = patches Wᵀ + b | (B, N, D) |
#
# A convolution whose kernel is p × p and whose stride is p visits each patch exactly once
# and applies the same weights to it: it *is* that linear map, with its weight (D, C, p, p)
# reshaped to (D, C·p·p). Check it on a small non-square image:

# %%
import torch.nn.functional as F
from torch import nn

B, C, H, W, p, D = 2, 3, 8, 12, 4, 6
image = torch.randn(B, C, H, W)
conv = nn.Conv2d(C, D, kernel_size=p, stride=p)
grid = conv(image)                                                    # (B, D, H/p, W/p)
print("conv output", tuple(grid.shape), "-> a", grid.shape[2], "x", grid.shape[3], "grid of patches")

patches = F.unfold(image, kernel_size=p, stride=p).transpose(1, 2)    # (B, N, C*p*p)
by_linear = patches @ conv.weight.reshape(D, -1).T + conv.bias         # (B, N, D)
print("patches", tuple(patches.shape), "-> tokens", tuple(by_linear.shape))
print("conv == one linear map per patch:",
      torch.allclose(by_linear, grid.flatten(2).transpose(1, 2), atol=1e-5))

# %% [markdown]
# ## 2. From the conv's grid to tokens: flatten, then transpose
#
# The conv gives channels first, (B, D, H/p, W/p). `flatten(2)` joins the grid's two axes
# into one of N positions in **row-major** order (patch (i, j) becomes position
# i·(W/p) + j), giving (B, D, N); `transpose(1, 2)` then puts the D features of each patch
# last: (B, N, D). A `reshape(B, N, D)` alone gives the right *shape* but reads the memory
# in the wrong order: its first "token" is the first D numbers of channel 0, i.e. one
# feature of D different patches.

# %%
tokens = grid.flatten(2).transpose(1, 2)                              # (B, N, D)
wrong = grid.reshape(B, -1, D)                                        # (B, N, D) too, but mixed
print("patch (0, 0), its D features:", grid[0, :, 0, 0].detach())
print("token 0 with the transpose:  ", tokens[0, 0].detach())
print("token 0 with a reshape alone:", wrong[0, 0].detach(), "<- feature 0 of patches 0..5")

# %% [markdown]
# ## 3. One fused qkv projection, split into heads
#
# timm's `Attention` projects x once with `qkv = nn.Linear(dim, 3·dim)`. Its output
# features are all of q, then all of k, then all of v (the same stacking as
# `nn.MultiheadAttention`'s `in_proj_weight`), and within each, h heads of d = dim / h.
# So the 3 is the **outer** factor:
#
# | step | shape |
# |---|---|
# | qkv(x) | (B, N, 3·dim) |
# | reshape | (B, N, 3, h, d) |
# | permute(2, 0, 3, 1, 4) | (3, B, h, N, d): q, k, v = its three slices |
# | softmax(q kᵀ · d^-½) | (B, h, N, N) |
# | weights @ v, transpose(1, 2), reshape | (B, N, dim) → proj |
#
# Reading it as (B, N, h, 3, d) instead gives no error, only a mix of q, k and v columns in
# every head. Here is the computation next to `nn.MultiheadAttention` with the same weights:

# %%
dim, heads, n_tokens = 8, 2, 5
head_dim = dim // heads
fused, out_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
x = torch.randn(B, n_tokens, dim)                                     # (B, N, dim)
split = fused(x).reshape(B, n_tokens, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
q, k, v = split[0], split[1], split[2]                                # (B, h, N, d) each
weights = (q @ k.transpose(-2, -1) / head_dim ** 0.5).softmax(dim=-1)  # (B, h, N, N)
mine = out_proj((weights @ v).transpose(1, 2).reshape(B, n_tokens, dim))

mha = nn.MultiheadAttention(dim, heads, batch_first=True)
mha.load_state_dict({"in_proj_weight": fused.weight, "in_proj_bias": fused.bias,
                     "out_proj.weight": out_proj.weight, "out_proj.bias": out_proj.bias})
print("q, k, v", tuple(q.shape), "weights", tuple(weights.shape), "output", tuple(mine.shape))
print("equal to nn.MultiheadAttention:", torch.allclose(mine, mha(x, x, x)[0], atol=1e-6))

# %% [markdown]
# ## 4. GELU: the exact one, not the tanh approximation
#
# The Mlp is fc1 → GELU → fc2 on each token (hidden width 4·dim in ViT). ViT uses the exact
# GELU, x·Φ(x) with Φ the normal CDF (`nn.GELU()`, erf inside). GPT-2 popularised a tanh
# approximation (`nn.GELU(approximate="tanh")`); the two differ by at most 4.7e-4 (near
# |x| = 2.7; on typical N(0, 1) inputs by about 1e-4, 8.5e-5 on average), too
# little to see in a plot of the functions, enough to break a float64 comparison and to
# shift a pretrained model's outputs a little.

# %%
import matplotlib.pyplot as plt

grid_x = torch.linspace(-5, 5, 1001, dtype=torch.float64)
gap = F.gelu(grid_x) - F.gelu(grid_x, approximate="tanh")
print(f"largest |exact - tanh|: {gap.abs().max():.2e} at x = {grid_x[gap.abs().argmax()]:.2f}")
fig, axis = plt.subplots(figsize=(5, 2.5))
axis.plot(grid_x, gap)
axis.set(xlabel="x", ylabel="gelu(x) - gelu_tanh(x)", title="exact GELU minus its tanh approximation")
plt.tight_layout()
plt.show()
plt.close(fig)

# %% [markdown]
# ## 5. DropPath: dropout for whole samples
#
# Stochastic depth drops a residual *branch* at random while training: for a sample whose
# branch is dropped, the block becomes the identity, x + 0. The draw is one per **sample**
# (an index of dim 0), shared by all its tokens and features, so the keep mask has shape
# (B, 1, 1) for a branch of shape (B, N, D). Kept samples are divided by 1 - p, so the
# expected value is unchanged and eval mode (where DropPath is the identity) sees the same
# scale. Ordinary dropout, by contrast, draws one decision per element:

# %%
p_drop, branch = 0.5, torch.ones(6, 4, 3)                             # (B, N, D)
per_sample = (torch.rand(branch.shape[0], 1, 1) >= p_drop).to(branch.dtype) / (1 - p_drop)
print("DropPath-style mask", tuple(per_sample.shape), "->", (branch * per_sample)[:, :, 0])
print("dropout           ", F.dropout(branch, p_drop)[:, :, 0])
many = torch.ones(100_000, 1, 1)
kept = (torch.rand(many.shape) >= p_drop).to(many.dtype) / (1 - p_drop)
print(f"mean over 100,000 samples: {(many * kept).mean():.3f} (expectation preserved)")

# %% [markdown]
# ## 6. The block is a Pre-LN encoder layer
#
# Put together, timm's `Block` is
#
# ```
# x ──┬──► norm1 ──► attn ──► drop_path ──► (+) ──┬──► norm2 ──► mlp ──► drop_path ──► (+) ──► out
#     └────────────────────────────────────────────┘└───────────────────────────────────┘
# ```
#
# with LayerNorm eps 1e-6 and an Mlp of width int(dim · mlp_ratio): kata 06's Pre-LN layer
# (`norm_first=True`, `activation="gelu"`) under other names — `qkv` is `in_proj_weight`,
# `proj` is `out_proj`, `fc1`/`fc2` are `linear1`/`linear2`. The parameter counts agree:

# %%
encoder_twin = nn.TransformerEncoderLayer(768, 12, dim_feedforward=4 * 768, activation="gelu",
                                          layer_norm_eps=1e-6, batch_first=True, norm_first=True)
print("ViT-B/16 block as nn.TransformerEncoderLayer:",
      sum(t.numel() for t in encoder_twin.parameters()), "parameters")
print("its names:", [name for name, _ in encoder_twin.named_parameters()][:4], "...")

# %%
# kata: exercise

# %% [markdown]
# ## 7. A tiny ViT, end to end
#
# Patch embedding, a stack of blocks whose drop-path rate grows linearly with depth (timm's
# `torch.linspace(0, drop_path_rate, depth)`: the deeper the block, the more often it is
# skipped while training), and a final norm. Your classes once they pass the core checks,
# PyTorch's equivalents until then. Shapes at every step:

# %%
depth, embed, n_heads = 4, 16, 2
rates = torch.linspace(0, 0.2, depth).tolist()
print("drop-path rate per block:", [round(r, 3) for r in rates])
torch.manual_seed(0)
if result.core_passed:
    embed_patches = PatchEmbed(img_size=32, patch_size=8, in_chans=3, embed_dim=embed)
    blocks = nn.Sequential(*(Block(embed, n_heads, drop_path=r) for r in rates))
    source = "your modules"
else:
    embed_patches = nn.Sequential(nn.Conv2d(3, embed, 8, stride=8), nn.Flatten(2))
    blocks = nn.Sequential(*(nn.TransformerEncoderLayer(embed, n_heads, 4 * embed, 0.0, "gelu",
                                                        1e-6, batch_first=True, norm_first=True)
                             for _ in rates))
    source = "PyTorch's (pass the core checks to see yours)"
pictures = torch.randn(2, 3, 32, 48)                                  # (B, C, H, W), not square
h = embed_patches(pictures)
h = h if result.core_passed else h.transpose(1, 2)
print(source)
print("image", tuple(pictures.shape), "-> tokens", tuple(h.shape))
with torch.no_grad():
    for i, block in enumerate(blocks.eval()):
        h = block(h)
        print(f"after block {i}: {tuple(h.shape)}, RMS {h.pow(2).mean().sqrt():.3f}")
print("final norm:", tuple(nn.LayerNorm(embed, eps=1e-6)(h).shape))

# %% [markdown]
# ## 8. Where is each patch? The tiny ViT above cannot tell
#
# The tiny ViT of section 7 has neither a class token nor position embeddings. Attention,
# LayerNorm and the MLP treat the tokens as a set, so that model is
# **permutation-equivariant**: shuffle the patches and its outputs come out shuffled the
# same way; their mean, the pooled image feature, does not change at all. It cannot tell an
# image from the same patches rearranged.
#
# ViT adds a **learned** position embedding: a parameter of shape (1, 1 + N, D), one vector
# for the class token and one per patch, added to the tokens before the first block and
# trained like any weight. Fine-tuning at a higher resolution gives more patches than it
# has vectors (224 → 384 with 16-pixel patches: a 14 × 14 grid becomes 24 × 24), so the
# grid part is reshaped to a (D, 14, 14) image, resized by 2-D interpolation (the ViT paper
# does this; timm's `resample_abs_pos_embed` is bicubic by default), flattened again, and the
# class token's vector is kept as it is.

# %%
import torch.nn.functional as F

torch.manual_seed(0)
tokens = embed_patches(pictures)
tokens = tokens if result.core_passed else tokens.transpose(1, 2)          # (B, N, D)
shuffle = torch.randperm(tokens.size(1))
positions = 0.02 * torch.randn(1, tokens.size(1), embed)                  # a learned (1, N, D) table
with torch.no_grad():
    for name, table in (("no position embedding", 0.0), ("with a position embedding", positions)):
        out = blocks(tokens + table)
        out_shuffled = blocks(tokens[:, shuffle] + table)                 # patches shuffled, table not
        print(f"{name:26}: shuffled input gives the shuffled output: "
              f"{torch.allclose(out[:, shuffle], out_shuffled, atol=1e-5)}, same mean over tokens: "
              f"{torch.allclose(out.mean(1), out_shuffled.mean(1), atol=1e-5)}")

pos_embed = 0.02 * torch.randn(1, 1 + 14 * 14, 768)                       # ViT-B/16 at 224: class + 14 x 14
class_pos, grid = pos_embed[:, :1], pos_embed[:, 1:]
grid = grid.reshape(1, 14, 14, 768).permute(0, 3, 1, 2)                    # (1, D, 14, 14): an image
resized = F.interpolate(grid, size=(24, 24), mode="bicubic", align_corners=False)  # (1, D, 24, 24)
at_384 = torch.cat([class_pos, resized.permute(0, 2, 3, 1).reshape(1, 24 * 24, 768)], dim=1)
print("pos_embed", tuple(pos_embed.shape), "-> grid", tuple(grid.shape), "-> resized",
      tuple(resized.shape), "-> pos_embed at 384:", tuple(at_384.shape))

# %%
# kata: quiz
