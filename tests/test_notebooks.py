"""Notebooks: built from the katas' sources, shipped clean, and run by a real Jupyter kernel.

- Drift: every committed notebook is exactly what ``notebooks/build.py`` builds.
- Clean: no outputs, no execution counts, the skeleton cell is the skeleton file, no line
  of the reference solution anywhere.
- Quiz: grading right, wrong and unanswered answers (no kernel), and the expected numbers
  against PyTorch's own modules.
- Kernel: each notebook runs top to bottom with nbclient in an ipykernel whose working
  directory is notebooks/, (a) as shipped: no cell errors, the grading cell says "not
  implemented yet"; (b) with the reference solution in the skeleton cell and the quiz
  answered: every check and every quiz answer passes. One kernel per notebook per case.
"""

from __future__ import annotations

import importlib.util
import math

import nbformat
import pytest
import torch
from nbclient import NotebookClient
from torch import nn

from graders.frontends import quiz as quiz_module
from graders.frontends.notebook import check
from graders.frontends.quiz import CHOICE, CORRECT, INTEGER, NUMBER, UNANSWERED, WRONG, Question, quiz
from graders.core.registry import KATAS, NOTEBOOKS_DIR, Kata


def _load_build_script():
    spec = importlib.util.spec_from_file_location("notebooks_build", NOTEBOOKS_DIR / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _load_build_script()
by_name = pytest.mark.parametrize("kata", KATAS, ids=lambda k: k.name)


def tagged_cell(notebook, tag: str):
    cells = [c for c in notebook.cells if tag in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"expected exactly one cell tagged {tag}"
    return cells[0]


# --- built, not hand-edited ---

@by_name
def test_committed_notebook_is_what_the_build_script_builds(kata):
    assert build.lesson_path(kata).exists(), f"{kata.name} has no lesson in notebooks/lessons/"
    assert kata.notebook_path.exists(), "run: python notebooks/build.py"
    assert kata.notebook_path.read_text() == build.render(kata), (
        f"{kata.notebook_path.name} differs from its build: run python notebooks/build.py")


def test_build_check_lists_a_stale_notebook_and_writes_nothing(monkeypatch, capsys):
    kata = KATAS[0]
    committed = kata.notebook_path.read_text()
    fresh_render = build.render
    monkeypatch.setattr(build, "render", lambda k: fresh_render(k) + ("\n" if k is kata else ""))
    assert build.main(["--check", kata.id]) == 1
    assert f"out of date: notebooks/{kata.notebook_path.name}" in capsys.readouterr().out
    assert kata.notebook_path.read_text() == committed


@by_name
def test_notebook_ships_clean_with_the_skeleton_and_no_solution(kata):
    notebook = nbformat.read(kata.notebook_path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "clear the outputs"
    skeleton = kata.pristine_skeleton_path.read_text()
    assert tagged_cell(notebook, build.SKELETON_TAG).source == skeleton.rstrip("\n")
    # No statement of the reference that the skeleton lacks (long enough to be telling, not
    # an import, a comment or a docstring) may appear in any code cell.
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    skeleton_lines = {_code_of(line) for line in skeleton.splitlines()}
    for line in map(_code_of, kata.solution_path.read_text().splitlines()):
        if len(line) >= 30 and line not in skeleton_lines and not line.startswith(("import", "from", '"')):
            assert line not in code, f"solution code in the notebook: {line}"


def _code_of(line: str) -> str:
    """A source line without indentation or a trailing comment."""
    return line.split("#")[0].strip()


def test_grading_cell_names_every_public_object_of_the_skeleton():
    names = {kata.name: kata.public_names for kata in KATAS}
    assert names["01_attention"] == ("scaled_dot_product_attention", "SingleHeadAttention")
    assert [len(names[k.name]) for k in KATAS] == [2, 4, 1, 3, 2, 2, 5]
    assert build.grading_source(KATAS[2]) == 'result = check("03_mha", MultiheadAttention)'


# --- the quiz, without a kernel ---

def test_quiz_marks_right_wrong_and_unanswered_answers(capsys):
    result = quiz("07", {1: quiz_module.mha_parameters(768), 2: 12, 4: None})
    assert result.outcomes == (CORRECT, WRONG, UNANSWERED, UNANSWERED)
    assert not result.all_correct and result.score == 1
    out = capsys.readouterr().out
    assert "1. correct" in out and "2. wrong: you said 12" in out and "3. unanswered" in out
    assert "4l²bd > 8lbd²" not in out, "the reasoning of an unanswered question stays hidden"
    assert "2,362,368" in out, "an answered question shows its reasoning"
    assert "1/4 correct" in out


def test_quiz_accepts_answers_as_a_learner_types_them():
    integer = Question("?", 1050624, INTEGER, "why")
    assert integer.judge(1050624) == integer.judge("1_050_624") == integer.judge("1,050,624") == CORRECT
    assert integer.judge(1050624.0) == CORRECT and integer.judge(1050625) == WRONG
    assert integer.judge("about a million") == WRONG and integer.judge(True) == WRONG
    number = Question("?", 2 * math.pi, NUMBER, "why", rel_tolerance=0.01)
    assert number.judge(6.28) == number.judge("6.3") == CORRECT and number.judge(6) == WRONG
    choice = Question("?", "B", CHOICE, "why", choices=("x", "y"))
    assert choice.judge("b") == choice.judge(" B ") == CORRECT and choice.judge("A") == WRONG
    assert choice.judge(None) == choice.judge("") == UNANSWERED


@by_name
def test_every_kata_has_a_quiz_of_two_to_four_questions(kata):
    questions = quiz_module.questions(kata.id)
    assert 2 <= len(questions) <= 4
    key = quiz_module.answer_key(kata.id)
    assert quiz(kata.id, key).all_correct


def test_quiz_numbers_agree_with_pytorch():
    def parameters(module: nn.Module) -> int:
        return sum(p.numel() for p in module.parameters())

    key = {kata.name: quiz_module.answer_key(kata.id) for kata in KATAS}
    with torch.device("meta"):  # shapes and counts only: nothing is allocated
        assert key["03_mha"][1] == parameters(nn.MultiheadAttention(512, 8))
        assert key["03_mha"][3] == nn.MultiheadAttention(512, 8).head_dim
        assert key["07_flops"][1] == parameters(nn.MultiheadAttention(768, 12))
        layer = nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048)
        assert key["06_encoder_layer"][2] == parameters(layer)
        stack = nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
        assert key["06_encoder_layer"][3] == parameters(stack)
        decoder_layer = nn.TransformerDecoderLayer(512, 8, dim_feedforward=2048)
        assert key["08_decoder_layer"][3] == parameters(decoder_layer)
        assert key["01_attention"][4] == torch.empty(8, 1024, 1024).nbytes // 2**20

        from torch.utils.flop_counter import FlopCounterMode

        attention, x = nn.MultiheadAttention(512, 8), torch.empty(2048, 1, 512)
        with FlopCounterMode(display=False) as counter:
            attention(x, x, x, need_weights=True)  # the path whose matmuls the counter sees
        assert key["07_flops"][2] == counter.get_total_flops()
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    assert key["04_masks"][1] == int(causal.isinf().sum())
    batch_of_row = torch.arange(2)[:, None]  # (b, 1): each row's batch element
    assert key["04_masks"][2] == batch_of_row.repeat_interleave(3, dim=0)[4].item()
    assert key["04_masks"][3] == batch_of_row.repeat(3, 1)[1].item()
    tgt, memory = torch.zeros(10, 4, 512), torch.zeros(30, 4, 512)
    cross = nn.MultiheadAttention(512, 8)
    out, weights = cross(tgt, memory, memory, attn_mask=torch.zeros(10, 30))
    assert quiz_module.questions("08")[0].choices[ord(key["08_decoder_layer"][1]) - ord("A")] == (
        str(tuple(out.shape)))
    assert weights.shape == (4, 10, 30)
    assert quiz_module.questions("08")[1].choices[ord(key["08_decoder_layer"][2]) - ord("A")] == "(10, 30)"
    causal = nn.Transformer.generate_square_subsequent_mask(6).isinf()
    left_padded = torch.arange(6) < 2
    assert key["08_decoder_layer"][4] == int((causal | left_padded).all(dim=-1).sum())


# --- check() without a kernel ---

def test_check_prints_a_plain_table_and_never_raises_on_wrong_code(capsys):
    def mha_param_count(d_model, bias=True):
        return 3 * d_model * d_model  # forgets the output projection and the biases

    result = check("07", mha_param_count)
    out = capsys.readouterr().out
    assert not result.passed and "failed" in out and "\x1b[" not in out
    assert "all checks pass" not in out


# --- in a real kernel ---

def execute(notebook) -> str:
    """Run every cell in a fresh kernel started in notebooks/; return the text it printed.

    Fails on the first cell error, with its traceback."""
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS_DIR)}}).execute()
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            assert output.output_type != "error", "\n".join(output.get("traceback", []))
            texts.append(output.get("text", "") or str(output.get("data", {}).get("text/plain", "")))
    return "\n".join(texts)


@by_name
def test_shipped_notebook_runs_and_says_not_implemented(kata):
    notebook = nbformat.read(kata.notebook_path, as_version=4)
    output = execute(notebook)
    assert "not implemented yet" in output
    assert "all checks pass" not in output


@by_name
def test_notebook_with_the_reference_and_the_right_answers_passes(kata: Kata):
    notebook = nbformat.read(kata.notebook_path, as_version=4)
    tagged_cell(notebook, build.SKELETON_TAG).source = kata.solution_path.read_text()
    answers = tagged_cell(notebook, build.QUIZ_ANSWERS_TAG)
    answers.source = build.quiz_answers_source(kata, quiz_module.answer_key(kata.id))
    output = execute(notebook)
    assert "all checks pass" in output, output
    count = len(quiz_module.questions(kata.id))
    assert f"{count}/{count} correct: well done" in output, output
