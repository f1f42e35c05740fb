"""What the room's page is given for a verdict (graders.frontends.serve.verdicts), without a
browser: which failing matrices are drawn, their captions, and a skipped check's reason in
the learner's language."""

from __future__ import annotations

from graders.core import i18n
from graders.core.results import FAILED, SKIPPED, CheckResult, KataResult
from graders.frontends.serve import verdicts

WEIGHTS = [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]
MASK = [[0.0, "-inf", "-inf"], [0.0, 0.0, "-inf"], [0.0, 0.0, 0.0]]
OUTPUT = [[0.39, 0.09, -0.38], [0.15, 0.05, -0.72], [1.2, -0.3, 0.4]]


def pictures(expected, at=(0,), of="the attention weights (batch, n, m)"):
    return {"at": list(at), "of": of, "expected": expected, "got": expected}


def test_masks_weights_and_0_1_matrices_are_drawn_outputs_are_not():
    assert verdicts.drawn(pictures(WEIGHTS))
    assert verdicts.drawn(pictures(MASK))
    assert verdicts.drawn(pictures([[1, 0], [1, 1]]))
    assert verdicts.drawn(pictures([[0.0, 0.0], [0.5, 0.5]]))  # a fully masked row: all zero
    assert not verdicts.drawn(pictures(OUTPUT))
    assert not verdicts.drawn(None)


def test_a_caption_says_which_tensor_and_which_slice():
    assert verdicts.picture_caption(pictures(WEIGHTS, at=(1, 2)), "label") == \
        "the attention weights (batch, n, m) [1, 2, :, :]"
    assert verdicts.picture_caption(pictures(MASK, at=(), of=""), "causal mask") == "causal mask [:, :]"


def test_an_output_check_has_no_pictures_and_a_skip_reason_is_translated():
    result = KataResult("01_attention", checks=[
        CheckResult("test_output", "core", FAILED, "checked the output", pictures=pictures(OUTPUT)),
        CheckResult("test_weights", "core", FAILED, "checked the weights", pictures=pictures(WEIGHTS)),
        CheckResult("test_cuda", "follow-up", SKIPPED, "needs a CUDA GPU")])
    with i18n.speaking("zh-CN"):
        shown = verdicts.verdict(result)
    output, weights, cuda = shown["checks"]
    assert output["pictures"] is None
    assert weights["pictures"]["caption"] == "the attention weights (batch, n, m) [0, :, :]"
    assert cuda["verdict"] == "需要 CUDA GPU"
