"""Kata 26: what its README, lesson and quiz state, checked by running the reference, and the
memory rule's margins (the correct chunked styles well under 12 * chunk_size * V, the full
logits well over it)."""

from __future__ import annotations

import importlib.util
import math

import torch

from graders.core.memory import LiveTensors
from graders.core.registry import REPO_ROOT, get
from graders.cross_entropy import checks, meta
from tests.mutation import STYLES_DIR


def load(path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference():
    return load(get("26").solution_path, "_reference_26")


def text(relative: str) -> str:
    return " ".join((REPO_ROOT / relative).read_text().split())


def test_readme_example_by_running_the_reference():
    ref = reference()
    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
    labels = torch.tensor([[1, 0]])
    assert f"{ref.next_token_loss(logits, labels).item():.4f}" == "0.2395"
    assert f"{math.log(math.e ** 2 + 2) - 2:.4f}" == "0.2395"
    assert f"{ref.next_token_loss(logits, labels, label_smoothing=0.1).item():.4f}" == "0.3729"
    assert f"{ref.next_token_loss(logits, labels, z_loss=1e-4).item():.4f}" == "0.2400"
    empty = ref.next_token_loss(logits.requires_grad_(True), torch.tensor([[1, -100]]))
    empty.backward()
    assert empty.item() == 0.0 and not logits.grad.any()
    readme = text("katas/26_cross_entropy/README.md")
    assert "0.2395" in readme and "0.3729" in readme and "0.2400" in readme


def test_memory_numbers_of_readme_quiz_and_lesson():
    tokens, vocab = 8 * 8192, meta.LLAMA3_VOCAB
    logits_bytes = tokens * vocab * 4
    assert logits_bytes == 33_621_540_864 == meta.QUESTIONS[0].answer
    assert f"{logits_bytes / 2**30:.1f}" == "31.3" and f"{2 * logits_bytes / 2**30:.1f}" == "62.6"
    assert 1024 * vocab * 4 == 525_336_576 and round(1024 * vocab * 4 / 2**20) == 501
    assert 2**30 // (vocab * 4) == 2092 == meta.QUESTIONS[1].answer
    assert math.ceil(8 * 8191 / 2092) == 32
    assert f"{math.log(vocab):.2f}" == "11.76" and meta.QUESTIONS[3].answer == 11.76
    assert (30 + 90) / (10 + 90) == 1.2 == meta.QUESTIONS[2].answer and (3 + 1) / 2 == 2.0
    readme = text("katas/26_cross_entropy/README.md")
    for number in ("33,621,540,864", "31.3 GiB", "62.6 GiB", "525,336,576", "501 MiB", "2,092",
                   "11.76", "120 / 100 = 1.2", "2.0"):
        assert number in readme, number


def test_float32_exp_overflows_past_88_and_logsumexp_does_not():
    assert torch.isfinite(torch.tensor(88.0).exp()) and torch.isinf(torch.tensor(89.0).exp())
    big = torch.tensor([1e4, 0.0, -1e4])
    assert torch.isinf(big.exp().sum().log()) and torch.logsumexp(big, 0).item() == 1e4


def peak_of(module) -> tuple[int, int]:
    """(peak live elements, the bound) of module's chunked loss on the graded memory input."""
    shape = checks.MEMORY_SHAPE
    b, n, d, vocab, chunk = (shape[k] for k in ("b", "n", "d", "vocab", "chunk_size"))
    hidden, weight = (t.requires_grad_(True)
                      for t in checks.chunked_inputs(b, n, d, vocab, 101, torch.float32))
    labels = checks.labels_of(b, n, vocab, 103, pad_from=(n - 40, n))
    recorder = LiveTensors(ignored=lambda t: t.dim() > 0 and (
        t.shape[-1] == d or tuple(t.shape) in ((vocab, d), (d, vocab))))
    with recorder:
        module.chunked_next_token_loss(hidden, weight, labels, chunk).backward()
    return recorder.peak, checks.MEMORY_FACTOR * chunk * vocab


def test_the_memory_rule_has_room_for_every_correct_style_and_none_for_the_full_logits():
    styles = [reference()] + [load(p, f"_style_26_{p.stem}")
                              for p in sorted((STYLES_DIR / "26_cross_entropy").glob("*.py"))]
    for module in styles:
        peak, bound = peak_of(module)
        assert peak <= 0.6 * bound, (module.__name__, peak, bound)  # 7.2 x chunk_size x V
    shape = checks.MEMORY_SHAPE
    full = shape["b"] * (shape["n"] - 1) * shape["vocab"]
    assert full / bound > 5.3  # the README's "5.3x the bound"
