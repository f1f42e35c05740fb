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


def test_a_kata_with_no_follow_ups_shows_no_zero_tier_in_the_room_or_the_cli():
    """The room trial (2026-12-01): kata 24's scoreboard read "follow-ups: 0/0 passed"."""
    import io

    from rich.console import Console

    from graders.frontends import rendering
    from graders.core.results import CheckResult, KataResult

    result = KataResult("24_kv_quant", [CheckResult("test_codes", "core", "passed", "")])
    board = verdicts.verdict(result)["scoreboard"]
    assert board == ["core: 1/1 passed"], board
    out = io.StringIO()
    rendering.render(result, Console(file=out, width=120, color_system=None), plain=True)
    assert "follow-ups" not in out.getvalue() and "0/0" not in out.getvalue(), out.getvalue()


def test_a_file_that_does_not_import_is_named_from_the_repository(tmp_path):
    """The room trial: "/…/katas/05_positional_encoding/positional_encoding.py does not import"."""
    from graders.core import loader, registry

    kata = registry.get("05")
    path = tmp_path / "copy" / "katas" / kata.name / kata.file
    path.parent.mkdir(parents=True)
    path.write_text("def broken(:\n")
    try:
        loader.load(path, kata)
    except loader.ImplementationLoadError as error:
        said = str(error)
    assert said.startswith(f"katas/{kata.name}/{kata.file} does not import: syntax error on line 1"), said
