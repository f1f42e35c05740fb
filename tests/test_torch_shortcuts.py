"""graders.core.torch_shortcuts: grading skips two of PyTorch's costly lazy imports, and
PyTorch behaves the same without them."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from graders.core import registry, torch_shortcuts

ORIGINAL_CHECK = F._check_key_padding_mask


@pytest.mark.parametrize("shape, bsz, src_len", [((2, 5), 2, 5), ((3, 5), 2, 5), ((2, 4), 2, 5)])
def test_key_padding_check_agrees_with_pytorch(shape, bsz, src_len):
    mask = torch.zeros(shape, dtype=torch.bool)

    def outcome(check):
        try:
            check(mask, src_len, bsz)
        except AssertionError as exc:
            return str(exc)
        return None

    assert outcome(torch_shortcuts._check_key_padding_mask) == outcome(ORIGINAL_CHECK)


@pytest.mark.parametrize("kata_key, heavy", [("04", "torch.fx.experimental.symbolic_shapes"),
                                             ("06", "torch.fx.experimental.symbolic_shapes"),
                                             ("07", "torch._dynamo"),
                                             # a kata's own subclass of a shared mode
                                             ("23", "torch._dynamo")])
def test_grading_run_skips_the_import(kata_key, heavy):
    """A grading run passes without ever importing the heavy module."""
    kata = registry.get(kata_key)
    code = (f"import sys, pytest; status = pytest.main([{str(kata.folder)!r}, '--solutions', '-q']);"
            f"sys.exit(status or ({heavy!r} in sys.modules and 99))")
    result = subprocess.run([sys.executable, "-c", code], cwd=registry.REPO_ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:] + (" imported " + heavy
                                                            if result.returncode == 99 else "")
