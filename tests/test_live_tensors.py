"""graders.core.memory.LiveTensors: the elements alive at once, counted until freed.

Kata 26's memory rule depends on the recorder seeing a freed tensor leave the count and a
tensor autograd saved for the backward pass stay in it; both are checked here by behaviour.
"""

from __future__ import annotations

import torch

from graders.core.memory import LiveTensors


def test_a_freed_tensor_leaves_the_count_and_the_peak_remembers_it():
    recorder = LiveTensors()
    with recorder:
        kept = torch.ones(100)
        temporary = torch.zeros(1000)
        del temporary
        after = recorder.now
    assert after == 100
    assert recorder.peak == 1100
    assert recorder.peak_at == ((1000,), "aten.zeros")
    del kept
    assert recorder.now == 0


def test_views_and_in_place_results_are_not_counted_again():
    recorder = LiveTensors()
    with recorder:
        x = torch.ones(10, 10)
        view = x[2:].t()
        x.mul_(2)
        torch.add(x, 1, out=x)
    assert recorder.now == 100 and recorder.peak == 100
    del x, view


def test_tensors_saved_for_backward_stay_until_the_backward_frees_them():
    leaf = torch.randn(1000, requires_grad=True)
    recorder = LiveTensors()
    with recorder:
        saved = leaf.exp()  # exp saves its output for the backward pass
        loss = (saved * 2).sum()  # the product is freed at once (mul saves its inputs only)
        del saved
        forward = recorder.now
        loss.backward()
        del loss
        after_backward = recorder.now
    assert forward == 1000 + 1  # exp's output, kept by the graph, and the 0-d loss
    assert after_backward == 1000  # the graph gone; leaf.grad remains
    assert recorder.peak >= 3000  # exp's output, the incoming gradient and leaf's gradient
    leaf.grad = None
    assert recorder.now == 0


def test_ignored_tensors_are_left_out():
    recorder = LiveTensors(ignored=lambda t: t.shape[-1] == 7)
    with recorder:
        a = torch.ones(3, 7)
        b = torch.ones(3, 5)
    assert recorder.now == 15
    del a, b
