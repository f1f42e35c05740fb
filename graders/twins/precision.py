"""Float constants the angle-based katas share (05 sinusoidal encoding, 12 RoPE)."""

from __future__ import annotations

import torch

FLOAT32_EPS = torch.finfo(torch.float32).eps
# A float32 angle p * w carries a relative error of a few eps (about 1 for
# 1 / base ** (arange / d), up to 6 for exp(-log(base) * arange / d), then the product),
# which sin and cos pass on as an absolute error; float32 sin/cos add about an eps more.
# Sound styles measure at most ~3 eps per radian; allow 16.
ANGLE_ERROR = 16.0
