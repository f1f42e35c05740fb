"""Notebooks: built from the katas' sources, shipped clean, and run by a real Jupyter kernel.

- Drift: every committed notebook is exactly what ``notebooks/build.py`` builds.
- Clean: no outputs, no execution counts, the skeleton cell is the skeleton file, no line
  of the reference solution anywhere.
- Quiz: grading right, wrong and unanswered answers (no kernel), and the expected numbers
  against PyTorch's own modules.
- Kernel: each notebook, in each language, runs with nbclient in an ipykernel whose working
  directory is the notebook's folder, (a) as shipped: no cell errors, the grading cell says
  "not implemented yet"; (b) then, in the same kernel, its exercise and every cell after it
  again with the reference solution in the skeleton cell and the quiz answered: every check
  and every quiz answer passes. One kernel per language per test process, shared by the
  notebooks (each starts from a fresh namespace in its own folder): it starts and imports once.
"""

from __future__ import annotations

import copy
import importlib.util
import io
import math
import re
import tokenize

import nbformat
import pytest
import torch
from nbclient import NotebookClient
from torch import nn

from graders.frontends import quiz as quiz_module
from graders.frontends.notebook import check
from graders.frontends.quiz import CHOICE, CORRECT, INTEGER, NUMBER, UNANSWERED, WRONG, Question, quiz
from graders.core import registry
from graders.core import i18n
from graders.core.registry import KATAS, NOTEBOOKS_DIR, Kata


from graders.tools import notebooks as build  # noqa: E402 (what notebooks/build.py runs)
by_name = pytest.mark.parametrize("kata", KATAS, ids=lambda k: k.name)
# Every notebook: each kata in each language (notebooks/NN_name.ipynb, notebooks/zh-CN/...).
by_notebook = pytest.mark.parametrize(
    "kata, language", [(k, lang) for k in KATAS for lang in i18n.languages()],
    ids=lambda v: v.name if isinstance(v, Kata) else v)


def tagged_cell(notebook, tag: str):
    cells = [c for c in notebook.cells if tag in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"expected exactly one cell tagged {tag}"
    return cells[0]


# --- built, not hand-edited ---

@by_notebook
def test_committed_notebook_is_what_the_build_script_builds(kata, language):
    assert build.lesson_path(kata).exists(), f"{kata.name} has no lesson in notebooks/lessons/"
    path = build.notebook_path(kata, language)
    assert path.exists(), "run: python notebooks/build.py"
    assert path.read_text() == build.render(kata, language), (
        f"{path.relative_to(NOTEBOOKS_DIR)} differs from its build: run python notebooks/build.py")


def test_build_check_lists_a_stale_notebook_and_writes_nothing(monkeypatch, capsys):
    kata = KATAS[0]
    committed = kata.notebook_path.read_text()
    fresh_render = build.render
    chinese = build.notebook_path(kata, "zh-CN")
    committed_chinese = chinese.read_text()
    monkeypatch.setattr(build, "render", lambda k, language="en": fresh_render(k, language)
                        + ("\n" if k is kata else ""))
    assert build.main(["--check", kata.id]) == 1
    out = capsys.readouterr().out
    assert f"out of date: notebooks/{kata.notebook_path.name}" in out
    assert f"out of date: notebooks/zh-CN/{kata.notebook_path.name}" in out
    assert kata.notebook_path.read_text() == committed
    assert chinese.read_text() == committed_chinese



def test_the_build_script_is_the_builder_and_leaves_no_copy_in_the_front_ends():
    """``python notebooks/build.py`` runs graders.tools.notebooks; the translators' tools
    live in graders/tools/ alone (``python -m graders.tools.texts``)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "notebooks/build.py", "--check", KATAS[0].id],
                          cwd=NOTEBOOKS_DIR.parent, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    frontends = NOTEBOOKS_DIR.parent / "graders" / "frontends"
    assert not {"texts.py", "lesson_code.py"} & {p.name for p in frontends.iterdir()}


@by_notebook
def test_notebook_ships_clean_with_the_skeleton_and_no_solution(kata, language):
    notebook = nbformat.read(build.notebook_path(kata, language), as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "clear the outputs"
    skeleton = kata.pristine_skeleton_path.read_text()
    shown = tagged_cell(notebook, build.SKELETON_TAG).source
    if language == i18n.ENGLISH:
        assert shown == skeleton.rstrip("\n")
    else:  # its docstrings, NotImplementedError messages and asides translated, its code kept
        assert _code_tokens(shown) == _code_tokens(skeleton)
        assert re.search("[\u4e00-\u9fff]", shown) and "README.md" not in shown
    # No statement of the reference that the skeleton lacks (long enough to be telling, not
    # an import, a comment or a docstring) may appear in any code cell.
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    skeleton_lines = {_code_of(line) for line in skeleton.splitlines()}
    for line in map(_code_of, kata.solution_path.read_text().splitlines()):
        if len(line) >= 30 and line not in skeleton_lines and not line.startswith(("import", "from", '"')):
            assert line not in code, f"solution code in the notebook: {line}"


@by_notebook
def test_problem_statement_speaks_of_the_notebook(kata, language):
    """Inside a notebook the README's "Edit `mha.py` in this folder" and its block of pytest
    commands would contradict the notebook's own introduction: the build rewords them."""
    notebook = nbformat.read(build.notebook_path(kata, language), as_version=4)
    problem = notebook.cells[1].source
    with i18n.speaking(language):
        heading, edit = i18n._("## The problem"), i18n._(build.EDIT_SENTENCE, file=kata.file)
        notebook_edit, notebook_grading = i18n._(build.NOTEBOOK_EDIT), i18n._(build.NOTEBOOK_GRADING)
    assert problem.startswith(heading)
    for folder_words in ("pytest", "in this folder", "Edit `", edit):
        assert folder_words not in problem, f"the problem cell still says {folder_words!r}"
    assert notebook_edit in problem and notebook_grading in problem
    assert "pytest katas/" in kata.readme_path.read_text(), "the README itself keeps them"


def _code_tokens(source: str) -> list[tuple[int, str]]:
    """A source's tokens but its strings and comments: its code."""
    tokens = tokenize.generate_tokens(io.StringIO(source.rstrip("\n") + "\n").readline)
    return [(t.type, t.string) for t in tokens if t.type not in (tokenize.STRING, tokenize.COMMENT)]


def _code_of(line: str) -> str:
    """A source line without indentation or a trailing comment."""
    return line.split("#")[0].strip()


def test_grading_cell_names_every_public_object_of_the_skeleton():
    names = {kata.name: kata.public_names for kata in KATAS}
    assert names["01_attention"] == ("scaled_dot_product_attention", "SingleHeadAttention")
    assert [len(names[k.name]) for k in KATAS[:7]] == [2, 4, 1, 3, 2, 2, 5]
    assert names["10_vit"] == ("PatchEmbed", "Attention", "Mlp", "DropPath", "Block")
    assert build.grading_source(KATAS[2]) == 'result = check("03_mha", MultiheadAttention)'


# --- the quiz, without a kernel ---

def test_quiz_marks_right_wrong_and_unanswered_answers(capsys):
    result = quiz("07", {1: quiz_module.mha_parameters(768), 2: 12, 4: None})
    assert result.outcomes[:4] == (CORRECT, WRONG, UNANSWERED, UNANSWERED)
    assert set(result.outcomes[4:]) == {UNANSWERED}
    assert not result.all_correct and result.score == 1
    out = capsys.readouterr().out
    assert "1. correct" in out and "2. wrong: you said 12" in out and "3. unanswered" in out
    assert "4l²bd > 8lbd²" not in out, "the reasoning of an unanswered question stays hidden"
    assert "2,362,368" in out, "an answered question shows its reasoning"
    assert f"1/{len(result.outcomes)} correct" in out


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
def test_every_kata_has_a_quiz_of_two_to_eight_questions(kata):
    questions = quiz_module.questions(kata.id)
    assert 2 <= len(questions) <= 8
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
        assert key["09_transformer"][1] == parameters(
            nn.Transformer(512, 8, 6, 6, 2048, batch_first=True))
        decoder_layer = nn.TransformerDecoderLayer(512, 8, dim_feedforward=2048)
        assert key["08_decoder_layer"][3] == parameters(decoder_layer)
        assert key["01_attention"][4] == torch.empty(8, 1024, 1024).nbytes // 2**20
        # kata 10: ViT-B/16's block is a Pre-LN encoder layer of width 4 * 768 under timm's
        # names; PatchEmbed's tokens are the positions of its conv's output grid.
        assert key["10_vit"][2] == parameters(nn.TransformerEncoderLayer(768, 12, 3072))
        grid = nn.Conv2d(3, 768, 16, stride=16)(torch.empty(1, 3, 224, 384))
        assert key["10_vit"][1] == grid.flatten(2).shape[-1]

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


def _load_solution(kata: Kata):
    spec = importlib.util.spec_from_file_location(f"_quiz_reference_{kata.id}", kata.solution_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prompt(kata_id: str, words: str) -> int:
    """The number of kata ``kata_id``'s one question whose prompt contains ``words``."""
    numbers = [number for number, q in enumerate(quiz_module.questions(kata_id), start=1)
               if words in q.prompt]
    assert len(numbers) == 1, (kata_id, words, numbers)
    return numbers[0]


def _answer(kata_id: str, words: str):
    question = quiz_module.questions(kata_id)[_prompt(kata_id, words) - 1]
    return question.answer if question.kind != CHOICE else question.choices[ord(question.answer) - ord("A")]


def test_interview_questions_agree_with_pytorch():
    """The questions of issue 13 ("Questions interviewers ask"), each answer checked by
    running PyTorch: softmax stability, the torch.where NaN-gradient trap, W_q = W_k, one head
    vs many, float16 and -1e9, the last frequency, sqrt(d_model), RoPE, LayerNorm vs
    BatchNorm, 12 d² per layer, backward = 2 x forward, 6 N per token."""
    from torch.utils.flop_counter import FlopCounterMode

    # 01: the stable softmax of [1000, 999], and the naive one overflows
    big = torch.tensor([1000.0, 999.0])
    assert (big.exp() / big.exp().sum()).isnan().all()
    assert _answer("01", "[1000, 999]") == pytest.approx(big.softmax(-1)[0].item(), rel=1e-6)
    # 01: torch.where after the softmax gives NaN gradients to the query and every key
    query = torch.randn(3, 4, requires_grad=True)
    key = torch.randn(5, 4, requires_grad=True)
    float_mask = torch.zeros(3, 5)
    float_mask[1] = float("-inf")
    scores = query @ key.mT / 2 + float_mask
    all_blocked = torch.isneginf(scores).all(-1, keepdim=True)
    weights = torch.where(all_blocked, 0.0, scores.softmax(-1))
    assert not weights.isnan().any()
    (weights * torch.randn(3, 5)).sum().backward()
    assert query.grad[1].isnan().all() and key.grad.isnan().any(-1).all()
    assert "every key" in _answer("01", "torch.where(all_blocked")
    # 01: W_q = W_k makes self-attention scores symmetric
    attention = nn.MultiheadAttention(8, 1, batch_first=True)
    with torch.no_grad():
        attention.in_proj_weight[8:16] = attention.in_proj_weight[:8]
        attention.in_proj_bias.zero_()
    x = torch.randn(1, 6, 8)
    q_and_k = x @ attention.in_proj_weight[:8].T
    shared_scores = q_and_k @ q_and_k.mT
    assert torch.allclose(shared_scores, shared_scores.mT, atol=1e-5)
    assert _answer("01", "W_q = W_k") == "it becomes symmetric"
    # 03: one head or eight: the same parameters and FLOPs
    assert "same cost" in _answer("03", "one head of width E")
    counts = []
    for heads in (1, 8):
        with torch.device("meta"):
            module, x = nn.MultiheadAttention(512, heads), torch.empty(64, 2, 512)
            with FlopCounterMode(display=False) as counter:
                module(x, x, x, need_weights=True)
        counts.append((sum(p.numel() for p in module.parameters()), counter.get_total_flops()))
    assert counts[0] == counts[1]
    # 04: masked_fill(-1e9) on float16 raises; a cast gives -inf
    with pytest.raises(RuntimeError):
        torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, False]), -1e9)
    assert torch.tensor(-1e9).half().item() == float("-inf")
    assert _answer("04", "float16") == "raises an error"
    # 05: the last frequency for d_model = 8, read off the reference table: PE[1, 2i] = sin(ω_i)
    reference = _load_solution(registry.get("05"))
    omega = torch.asin(reference.sinusoidal_positional_encoding(2, 8)[1, 6].double()).item()
    assert _answer("05", "last column pair") == pytest.approx(omega, rel=1e-4)
    assert _answer("05", "last column pair") == pytest.approx(0.001)
    embedding = nn.Embedding(4096, 512)
    nn.init.normal_(embedding.weight, std=512 ** -0.5)
    scaled_std = (embedding.weight * math.sqrt(512)).std().item()
    assert abs(scaled_std - _answer("05", "√d_model")) <= 0.02
    # 05: RoPE, a query rotated at m and a key at n, depends on m - n only
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)  # (4,)

    def rotate(v, position):  # v (8,) as 4 pairs (2i, 2i+1)
        pairs = v.view(4, 2)
        cos, sin = torch.cos(position * theta), torch.sin(position * theta)
        return torch.stack([pairs[:, 0] * cos - pairs[:, 1] * sin,
                            pairs[:, 0] * sin + pairs[:, 1] * cos], dim=-1).flatten()

    q, k = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    assert torch.allclose(rotate(q, 7) @ rotate(k, 3), rotate(q, 104) @ rotate(k, 100))
    assert not torch.allclose(rotate(q, 7) @ rotate(k, 3), rotate(q, 8) @ rotate(k, 2))
    assert _answer("05", "RoPE").startswith("m - n only")
    # 06: BatchNorm's output for one sequence depends on another's padding; LayerNorm's does not
    tokens = torch.randn(2, 5, 8)
    other = tokens.clone()
    other[1, 3:] = 100.0
    layer_norm, batch_norm = nn.LayerNorm(8), nn.BatchNorm1d(8)
    assert torch.allclose(layer_norm(tokens)[0], layer_norm(other)[0])
    assert not torch.allclose(batch_norm(tokens.mT)[0], batch_norm(other.mT)[0])
    assert "each token on its own" in _answer("06", "BatchNorm")
    # 06: 12 d² weight-matrix parameters per layer with d_ff = 4d
    with torch.device("meta"):
        layer = nn.TransformerEncoderLayer(1024, 16, dim_feedforward=4096)
    matrices = sum(p.numel() for p in layer.parameters() if p.dim() == 2)
    assert _answer("06", "weight matrices") == matrices
    # 07: backward = 2 x forward for a linear layer, and about 6 N FLOPs per token for a layer
    assert _answer("07", "backward pass of a linear layer") == 2
    with torch.device("meta"):
        linear, x = nn.Linear(256, 512), torch.empty(32, 256, requires_grad=True)
        with FlopCounterMode(display=False) as forward:
            y = linear(x)
        with FlopCounterMode(display=False) as backward:
            y.sum().backward()
    assert backward.get_total_flops() == 2 * forward.get_total_flops()
    with torch.device("meta"):
        layer = nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048)
        x = torch.empty(64, 4, 512, requires_grad=True)  # l = 64 << 6d: attention is small
        with FlopCounterMode(display=False) as counter:
            layer(x).sum().backward()
    per_token = counter.get_total_flops() / (64 * 4)
    assert 6.0 <= per_token / sum(p.numel() for p in layer.parameters()) <= 6.5
    assert _answer("07", "7·10⁹ parameters") == pytest.approx(6 * 7e9 * 1e12)


def test_staple_questions_agree_with_pytorch():
    """The staple follow-ups of 08-14 that the quizzes answer (issue 17), each answer checked
    by running PyTorch or the reference: cross-attention keys and values depend on the
    memory only, a decoder-only block is an encoder layer, greedy vs beam search, ViT's
    attention cost at a higher resolution, RoPE with a cache, why values are not rotated,
    MQA vs GQA under tensor parallelism, what the backward pass of flash attention keeps."""
    # 08: cross-attention over a longer target prefix leaves the earlier rows unchanged:
    # its keys and values come from the memory alone, so they can be computed once
    torch.manual_seed(0)
    cross = nn.MultiheadAttention(16, 2, batch_first=True)
    memory, target = torch.randn(1, 30, 16), torch.randn(1, 50, 16)
    with torch.no_grad():
        whole = cross(target, memory, memory)[0]
        assert torch.allclose(cross(target[:, :7], memory, memory)[0], whole[:, :7], atol=1e-6)
    assert _answer("08", "50 tokens") == "once for the source, then reused at every step"
    # 08: a decoder-only block = the decoder layer minus the cross-attention and its norm
    with torch.device("meta"):
        decoder_layer = nn.TransformerDecoderLayer(512, 8, dim_feedforward=2048)
        encoder_layer = nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048)
    count = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    without_cross = count(decoder_layer) - count(decoder_layer.multihead_attn) - count(decoder_layer.norm2)
    assert _answer("08", "decoder-only") == without_cross == count(encoder_layer) == 3_152_384
    # 09: greedy vs beam search of width 2 on the question's two-step model
    steps = {(): {"A": 0.6, "B": 0.4}, ("A",): {"x": 0.3, "y": 0.25, "z": 0.25, "w": 0.2},
             ("B",): {"x": 0.9, "y": 0.1}}
    greedy, p_greedy = (), 1.0
    for _ in range(2):
        token, p = max(steps[greedy].items(), key=lambda item: item[1])
        greedy, p_greedy = greedy + (token,), p_greedy * p
    beams = [((), 1.0)]
    for _ in range(2):
        extended = [(prefix + (t,), p * q) for prefix, p in beams for t, q in steps[prefix].items()]
        beams = sorted(extended, key=lambda beam: beam[1], reverse=True)[:2]
    assert p_greedy == pytest.approx(0.18) and "0.18" in quiz_module.questions("09")[
        _prompt("09", "beam width 2") - 1].prompt
    assert _answer("09", "beam width 2") == pytest.approx(beams[0][1]) and beams[0][0][0] == "B"
    assert _answer("09", "teacher forcing") == "exposure bias; scheduled sampling"
    # 10: the score matrix at 384 against 224, class token included
    with torch.device("meta"):
        conv = nn.Conv2d(3, 768, 16, stride=16)
        tokens = [conv(torch.empty(1, 3, side, side)).flatten(2).shape[-1] + 1 for side in (224, 384)]
    assert tokens == [197, 577]
    assert _answer("10", "384 × 384") == pytest.approx((tokens[1] / tokens[0]) ** 2)
    assert round(_answer("10", "384 × 384"), 2) == 8.58 and round(tokens[1] / tokens[0], 2) == 2.93
    # 11 and 12: with a cache, the new token is rotated at position past_len and its key
    # stored rotated; rotating it as position 0 gives other scores
    rope = _load_solution(registry.get("12"))
    q, k = torch.randn(1, 1, 6, 8, dtype=torch.float64), torch.randn(1, 1, 6, 8, dtype=torch.float64)
    full = rope.apply_rope(q) @ rope.apply_rope(k).mT                     # (1, 1, 6, 6)
    cache = rope.apply_rope(k[:, :, :5])                                  # positions 0-4, rotated
    for position, agrees in ((5, True), (0, False)):
        at = torch.tensor([position])
        keys = torch.cat([cache, rope.apply_rope(k[:, :, 5:], at)], dim=2)
        step = rope.apply_rope(q[:, :, 5:], at) @ keys.mT
        assert torch.allclose(step[0, 0, 0], full[0, 0, 5]) == agrees
    assert _answer("11", "5 tokens in its cache").startswith("its query and key are rotated as position 5")
    # 12: rotating the values too makes the output depend on absolute positions
    v = torch.randn(1, 1, 6, 8, dtype=torch.float64)

    def attend(offset, rotate_values):
        at = torch.arange(6) + offset
        weights = (rope.apply_rope(q, at) @ rope.apply_rope(k, at).mT / 8 ** 0.5).softmax(-1)
        return weights @ (rope.apply_rope(v, at) if rotate_values else v)

    assert torch.allclose(attend(0, False), attend(100, False))
    assert not torch.allclose(attend(0, True), attend(100, True))
    assert _answer("12", "Why not the values").startswith("position should enter only the scores")
    # 13: per GPU under 8-way tensor parallelism, MQA's replicated head = GQA-8's one head each
    with torch.device("meta"):
        def per_gpu_mib(kv_heads):
            heads_per_gpu = max(1, kv_heads // 8)                         # MQA: a copy on every GPU
            cache = torch.empty(80, 2, 1, heads_per_gpu, 4096, 128, dtype=torch.float16)
            return cache.nbytes / 2**20

        assert _answer("13", "tensor parallelism") == per_gpu_mib(1) == per_gpu_mib(8) == 160
        assert per_gpu_mib(64) == 8 * 160 and 8 * per_gpu_mib(8) / 1024 == 1.25
    # 14: the weights, recomputed from lse, are exactly the softmax
    scores = torch.randn(5, 7, dtype=torch.float64)
    lse = torch.logsumexp(scores, -1)
    assert torch.allclose(torch.exp(scores - lse[:, None]), scores.softmax(-1))
    assert _answer("14", "backward pass") == "the output and lse; each block of the weights is recomputed"


# --- check() without a kernel ---

def test_check_prints_a_plain_table_and_never_raises_on_wrong_code(capsys):
    def mha_param_count(d_model, bias=True):
        return 3 * d_model * d_model  # forgets the output projection and the biases

    result = check("07", mha_param_count)
    out = capsys.readouterr().out
    assert not result.passed and "failed" in out and "\x1b[" not in out
    assert "all checks pass" not in out


# --- in a real kernel ---

# What check() and quiz() found, as data (the same in every language).
RESULT_CELL = 'print("KATA-RESULT", result.status, "|", quiz_result.all_correct)'
SHIPPED_END = "KATA-SHIPPED-END"


# Before each notebook, in the kernel it shares: a fresh namespace, the notebook's folder as
# the working directory, and torch's process-wide switches as a new process has them.
FRESH_START = """\
%reset -f
import os as _os, torch as _torch
_os.chdir({folder!r})
_torch.set_default_dtype(_torch.float32)
_torch.set_grad_enabled(True)
del _os, _torch
"""


@pytest.fixture(scope="session")
def kernels():
    """One live kernel per language for this test process, started when first needed: a
    kernel's start and its imports of torch and the graders cost seconds, paid once here
    instead of once per notebook. A kernel that died is replaced."""
    from jupyter_client.manager import KernelManager

    started: dict[str, KernelManager] = {}

    def kernel(language: str) -> KernelManager:
        manager = started.get(language)
        if manager is None or not manager.is_alive():
            manager = KernelManager(kernel_name="python3")
            manager.start_kernel(cwd=str(NOTEBOOKS_DIR))
            started[language] = manager
        return manager

    yield kernel
    for manager in started.values():
        manager.shutdown_kernel(now=True)


def execute(notebook, folder, kernel) -> str:
    """Run every cell in ``kernel`` (a live kernel manager), from a fresh namespace with
    ``folder`` (where the notebook lies) as the working directory; return the text it printed.

    Fails on the first cell error, with its traceback."""
    fresh = nbformat.v4.new_code_cell(FRESH_START.format(folder=str(folder)))
    fresh.id = "kata-fresh-start"
    notebook.cells.insert(0, fresh)
    NotebookClient(notebook, timeout=180, km=kernel,
                   resources={"metadata": {"path": str(folder)}}).execute()
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            assert output.output_type != "error", "\n".join(output.get("traceback", []))
        # One print may arrive as several stream messages: a cell's text is their sum.
        texts.append("".join(output.get("text", "") or str(output.get("data", {}).get("text/plain", ""))
                             for output in cell.get("outputs", [])))
    return "\n".join(texts)


def shipped_then_reference(kata: Kata, notebook) -> None:
    """The notebook as shipped, then — in the same kernel, so that it starts and imports
    once — its exercise and every cell after it again, with the reference solution in the
    exercise cell and the right answers in the quiz."""
    cells = notebook.cells
    start = cells.index(tagged_cell(notebook, build.SKELETON_TAG))
    again = [nbformat.from_dict(copy.deepcopy(dict(cell))) for cell in cells[start:]]
    for cell in again:
        cell.id = f"{cell.id}-again"
        tags = cell.metadata.get("tags", [])
        if build.SKELETON_TAG in tags:
            cell.source = kata.solution_path.read_text()
        elif build.QUIZ_ANSWERS_TAG in tags:
            cell.source = build.quiz_answers_source(kata, quiz_module.answer_key(kata.id))
    marker = nbformat.v4.new_code_cell(f"{RESULT_CELL}\nprint({SHIPPED_END!r})")
    marker.id = "kata-shipped-end"
    last = nbformat.v4.new_code_cell(RESULT_CELL)
    last.id = "kata-reference-end"
    notebook.cells = cells + [marker] + again + [last]


@by_notebook
def test_notebook_runs_as_shipped_then_with_the_reference(kata: Kata, language, kernels):
    """As shipped: no cell fails and grading says "not implemented yet". Then with the
    reference and the right answers: every check and every quiz answer passes, and the
    lesson cells after the exercise run on the learner's (now correct) code."""
    path = build.notebook_path(kata, language)
    notebook = nbformat.read(path, as_version=4)
    shipped_then_reference(kata, notebook)
    shipped, reference = execute(notebook, path.parent, kernels(language)).split(SHIPPED_END)
    assert "KATA-RESULT not started | False" in shipped, shipped
    assert "KATA-RESULT all passed | True" in reference, reference
    if language == i18n.ENGLISH:
        assert "not implemented yet" in shipped and "all checks pass" not in shipped
        assert "all checks pass" in reference, reference
        count = len(quiz_module.questions(kata.id))
        assert f"{count}/{count} correct: well done" in reference, reference


def test_beam_search_quiz_agrees_with_the_reference():
    """Kata 17's quiz, each number checked by running the reference search: beam size 1 is
    greedy (and loses to a beam of 2 on the README's model), a beam of 85 is exhaustive for
    V = 5 and max_len = 4, the α where the longer hypothesis overtakes, the cache reorder."""
    from graders.beam_search import checks as grader

    search = _load_solution(registry.get("17")).beam_search
    table = grader.README_TABLE

    def step_fn(tokens):
        return torch.stack([table.row(tuple(row)) for row in tokens.tolist()])

    greedy = grader.greedy(table, 0, 1, 4, 1.0)
    assert [(tuple(t), s) for t, s in search(step_fn, 0, 1, 1, 4)] == greedy
    best = search(step_fn, 0, 1, 2, 4)[0][0]
    # greedy loses to a *finished* hypothesis (issue 23, F3), not to a prefix cut by max_len
    assert greedy[0][0] == (0, 2, 1) and best == [0, 3, 1] and best[-1] == 1
    assert _answer("17", "`beam_size = 1`") == "greedy decoding's sequence"
    # early stopping at α = 0: live sums only fall
    assert _answer("17", "stop now without").startswith("yes")
    # every sequence of V = 5, max_len = 4: a beam of 85 returns them all, 84 does not
    random_table = grader.StepTable(5, seed=3, eos_idx=4)

    def random_step(tokens):
        return torch.stack([random_table.row(tuple(row)) for row in tokens.tolist()])

    every = grader.exhaustive(random_table, 0, 4, 4, 1.0)
    assert _answer("17", "exhaustive search") == len(every) == 85
    assert [(tuple(t), pytest.approx(s)) for t, s in search(random_step, 0, 4, 85, 4)] == every
    assert len(search(random_step, 0, 4, 84, 4)) == 84
    # A (n = 2, -1.2) against B (n = 6, -3.0): B ranks first from the answer's α on
    alpha = _answer("17", "From which `length_penalty`")
    for a, b_wins in ((alpha - 0.01, False), (alpha + 0.01, True), (0.0, False), (1.0, True)):
        assert (-3.0 / 6 ** a > -1.2 / 2 ** a) == b_wins
    assert _answer("17", "Google's NMT") == pytest.approx(1.7329, abs=1e-4)
    # the cache of the next step is the parents' rows
    cache = torch.arange(4.0)[:, None].expand(4, 3)
    parents = torch.tensor([2, 0, 0, 3])
    assert cache.index_select(0, parents)[:, 0].tolist() == [2.0, 0.0, 0.0, 3.0]
    assert _answer("17", "[2, 0, 0, 3]").endswith("rows 2, 0, 0, 3")


def test_sliding_window_quiz_agrees_with_the_reference():
    """Kata 18's quiz, each number checked by running the reference: the receptive field of
    stacked windows (by gradients), the cache's bytes (by the storages it keeps), the pairs a
    window scores (by the mask), a sink inside the window counted once, key order."""
    from graders.core.memory import kept_storages
    from graders.core.quizzes import GiB
    from graders.sliding_window import meta

    reference = _load_solution(registry.get("18"))
    # 3 layers of window 4: the last output reads 3 * 3 = 9 positions back, not 10
    x = torch.randn(1, 1, 16, 2, dtype=torch.float64, requires_grad=True)
    y = x
    for _layer in range(3):
        y = reference.sliding_window_attention(y, y, y, 4)
    (grad,) = torch.autograd.grad(y[0, 0, -1].sum(), x)
    reach = meta.sliding_window_reach(3, 4)
    assert grad[0, 0, 15 - reach].abs().sum() > 0 and grad[0, 0, :15 - reach].abs().sum() == 0
    assert _answer("18", "Mistral 7B has 32 layers") == meta.sliding_window_reach(32, 4096)
    # the rolling cache keeps window positions per layer, whatever the length
    cache = reference.RollingKVCache(window=8)
    for _position in range(40):
        cache.append(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4))
    kept = sum(s.elements for s in kept_storages(cache)) * 4  # float32 bytes
    assert kept == meta.kv_cache_bytes(1, 8, 1, 2, 4, 4)
    saved = _answer("18", "rolling cache with a")
    assert saved == (meta.kv_cache_bytes(1, 32768 - 4096, 32, 8, 128, 2)
                     / GiB) == 3.5
    # pairs scored, from the mask itself
    for n, window in ((64, 8), (64, 64), (30, 7)):
        allowed = ~reference.sliding_window_mask(n, window)
        assert int(allowed.sum()) == meta.window_pairs(n, window)
    assert _answer("18", "How many times fewer") == pytest.approx(
        536_887_296 / 125_831_168)
    assert _answer("18", "enter the softmax") == int((~reference.sliding_window_mask(4, 3, 2))[3].sum()) == 4
    # key order: decoding with the keys permuted gives the same output
    q, k, v = (torch.randn(1, 1, n, 4, dtype=torch.float64) for n in (1, 5, 5))
    perm = torch.tensor([3, 0, 4, 1, 2])
    plain = torch.softmax(q @ k.mT, -1) @ v
    permuted = torch.softmax(q @ k[..., perm, :].mT, -1) @ v[..., perm, :]
    assert torch.allclose(plain, permuted)
    assert _answer("18", "slot order").startswith("nothing")
    assert _answer("18", "StreamingLLM's cache holds").startswith("their indices in the cache")
