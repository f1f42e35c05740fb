# %% [markdown]
# ## 1. The idea
#
# The lesson derives the kata's idea step by step, with the shape of every tensor.

# %%
import torch

x = torch.arange(6.0).view(2, 3)
print("x has shape", tuple(x.shape))

# %%
# kata: exercise

# %%
# kata: quiz
