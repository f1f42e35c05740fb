"""The texts ``kata dev new`` writes: one stub per file a kata needs (graders.tools.scaffold
decides where they go and what else runs).

A kata's public API is a list of :class:`Api` items, read from a signature such as
``next_token_loss(logits, labels, ignore_index=-100) -> 0-d tensor`` (the form CONTRACT.md's
sections start their bullets with) or ``class AdamW(params, lr=1e-3)``. Every stub is named
after them: the skeleton's functions and classes, the reference's, the twin's (each with a
``mistake`` switch), and one core check per item. Without an API the kata gets the
placeholder task ``NAME(x) -> x`` (the identity), whose stubs grade as they stand.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass


class ApiError(ValueError):
    """A signature that is not one a stub can be written for."""


@dataclass(frozen=True)
class Api:
    """One public function or class of a kata: ``kind`` "def" or "class", its ``name``, its
    parameters as Python source (``"logits, labels, ignore_index=-100"``) and the contract's
    words for what it returns (``"0-d tensor"``, or "")."""

    kind: str
    name: str
    params: str
    returns: str = ""

    @property
    def required(self) -> list[str]:
        """The parameters without a default (not ``*args``/``**kwargs``), in order."""
        arguments = _arguments(self.params)
        positional = arguments.posonlyargs + arguments.args
        without = positional[:len(positional) - len(arguments.defaults)]
        return [a.arg for a in without] + [a.arg for a, d in zip(arguments.kwonlyargs,
                                                                 arguments.kw_defaults) if d is None]

    def with_switch(self) -> str:
        """The parameters with ``mistake: str | None = None`` added, keyword-only (the twin's
        form of the item)."""
        arguments = _arguments(self.params)
        arguments.kwonlyargs.append(ast.arg("mistake", ast.parse("str | None", mode="eval").body))
        arguments.kw_defaults.append(ast.Constant(None))
        return ast.unparse(arguments)


def _arguments(params: str) -> ast.arguments:
    try:
        tree = ast.parse(f"def f({params}): pass")
    except SyntaxError as error:
        raise ApiError(f"not a Python parameter list: ({params})") from error
    return tree.body[0].args


def _closing(text: str, opening: int) -> int:
    """The index of the parenthesis that closes the one at ``opening``."""
    depth = 0
    for index in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    raise ApiError(f"unbalanced parentheses in {text!r}")


def parse_api(signature: str) -> Api:
    """``"def f(a, b=1)"``, ``"class C(x)"`` or the contract's ``"f(a, b=1) -> tensor"``; a
    name starting with a capital is a class. The contract's prose inside a parameter list
    (``**same options``) becomes ``**kwargs``."""
    text = " ".join(signature.split())
    found = re.match(r"(?:(def|class)\s+)?([A-Za-z_]\w*)\s*\(", text)
    if not found:
        raise ApiError(f"not a signature: {signature!r} (e.g. 'f(x, dim=-1)' or 'class C(n)')")
    kind = found.group(1) or ("class" if found.group(2)[0].isupper() else "def")
    end = _closing(text, found.end() - 1)
    params = text[found.end():end].strip()
    params = re.sub(r"\*\*[^,]*$", "**kwargs", params)  # "**same options"
    _arguments(params)  # raises on what is still not Python
    returns = text[end + 1:].strip()
    returns = returns[2:].strip() if returns.startswith("->") else ""
    return Api(kind, found.group(2), params, returns)


def contract_api(contract: str, name: str) -> tuple[Api, ...]:
    """The API of kata ``name`` ("26_cross_entropy") from CONTRACT.md's section for it: the
    first code span of each top-level bullet that is a signature (``- `f(x) -> y`: ...``)."""
    parts = contract.split(f"\n### {name} — ")
    if len(parts) < 2:
        raise ApiError(f"CONTRACT.md has no section '### {name} — `file.py`'")
    section = re.split(r"\n##+ ", parts[1], maxsplit=1)[0]
    found = []
    for bullet in re.findall(r"^- `([^`]+)`", section.replace("\n  ", " "), re.M):
        try:
            found.append(parse_api(bullet))
        except ApiError:
            continue  # a bullet that starts with a code span that is no signature
    if not found:
        raise ApiError(f"CONTRACT.md's section for {name} starts no bullet with a signature "
                       "such as - `f(x, dim=-1) -> (b, n)`: write the section first")
    return tuple(found)


def _uses_nn(api: tuple[Api, ...]) -> bool:
    return any(item.kind == "class" or "nn." in item.params for item in api)


def _imports(api: tuple[Api, ...]) -> str:
    return "import torch\n" + ("from torch import nn  # noqa: F401\n" if _uses_nn(api) else "")


def _stub_body(item: Api, message: str, indent: str) -> str:
    said = (f"returns {item.returns}" if item.returns else "returns what the README says") \
        if item.kind == "def" else "its attributes and what its methods compute"
    return (f'{indent}"""TODO: what it computes, with every shape, e.g. (batch, seq, dim);\n'
            f'{indent}{said}."""\n{indent}raise NotImplementedError({json.dumps(message)})\n')


def _item(item: Api, params: str, message: str) -> str:
    if item.kind == "def":
        return f"def {item.name}({params}):\n" + _stub_body(item, message, "    ")
    self_params = f"self, {params}" if params else "self"
    return (f"class {item.name}:  # TODO: the base class the contract names (nn.Module, ...)\n"
            f"    def __init__({self_params}):\n"
            + _stub_body(item, message, "        "))


def skeleton(kata, api: tuple[Api, ...]) -> str:
    what = "the functions and classes below" if len(api) > 1 or api[0].kind == "class" else \
        "the function below"
    if not kata.api:  # the placeholder task
        return f'''"""Kata {kata.id}: {kata.title}.

Read README.md in this folder, fill in the function below, then run
    pytest katas/{kata.name}
"""

from __future__ import annotations

import torch


def {kata.function}(x: torch.Tensor) -> torch.Tensor:
    """Return a tensor of the shape of x (the stub's placeholder task: replace it)."""
    raise NotImplementedError("see katas/{kata.name}/README.md")
'''
    items = "\n\n".join(_item(i, i.params, f"see katas/{kata.name}/README.md") for i in api)
    return (f'"""Kata {kata.id}: {kata.title}.\n\nRead README.md in this folder, fill in {what}, '
            f'then run\n    pytest katas/{kata.name}\n"""\n\nfrom __future__ import annotations\n\n'
            f"{_imports(api)}\n\n{items}")


def solution(kata, api: tuple[Api, ...]) -> str:
    head = f'"""Reference solution for kata {kata.id}: {kata.title}."""\n\nfrom __future__ import annotations\n\n'
    if not kata.api:
        return head + f'''import torch


def {kata.function}(x: torch.Tensor) -> torch.Tensor:
    return x.clone()  # the stub's placeholder: replace with the reference
'''
    items = "\n\n".join(_item(i, i.params, "the reference solution: write it") for i in api)
    return head + f"{_imports(api)}\n\n{items}"


def twin(kata, api: tuple[Api, ...]) -> str:
    head = (f'"""Kata {kata.id}\'s twin: the reference with one switch per catalogued mistake, '
            'so that a\ncheck computes what a mistake produces on its own inputs and names it by '
            'matching\n(graders.core.mistakes.Suspect).\n"""\n\nfrom __future__ import annotations\n\n')
    if not kata.api:
        return head + '''import torch

# A switch of the reference -> the catalogued mistake it reproduces.
MISTAKE_OF: dict[str, str] = {}


def reference(x: torch.Tensor, mistake: str | None = None) -> torch.Tensor:
    """The stub's placeholder task (the identity): replace it with the kata's reference."""
    return x.clone()
'''
    items = "\n\n".join(_item(i, i.with_switch(), f"graders/{kata.module}/twin.py: write "
                              f"{i.name}, with a branch per switch") for i in api)
    return head + (f"{_imports(api)}\n# A switch of the reference -> the catalogued mistake it "
                   f"reproduces.\nMISTAKE_OF: dict[str, str] = {{}}\n\n\n{items}")


def _placeholder_arguments(item: Api) -> str:
    return "".join(f"\n        {name!r}: torch.randn(2, 3, dtype=torch.float64),"
                   for name in item.required if name != "self")


def checks(kata, api: tuple[Api, ...]) -> str:
    head = f'''"""Grader for kata {kata.id}: {kata.title}.

Each check calls the learner's code on inputs the contract allows, compares it with the twin
(graders/{kata.module}/twin.py) and, on a mismatch, tries each mistake's switch to name the
one the learner made.
"""

from __future__ import annotations

import pytest
import torch

from graders.core.compare import expect_close
from graders.core.i18n import N_, _
from graders.core.implementation import Implementation
from graders.core.mistakes import Suspect
from graders.core.report import describe_inputs, title
from graders.{kata.module} import twin

'''
    if not kata.api:
        return head + f'''__all__ = ["test_{kata.function}"]


def suspects(x: torch.Tensor) -> list[Suspect]:
    return [Suspect(slug, lambda switch=switch: twin.reference(x, switch))
            for switch, slug in twin.MISTAKE_OF.items()]


@pytest.mark.core
@title(N_("{kata.function} against its reference"))
def test_{kata.function}(impl: Implementation) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, dtype=torch.float64)
    on = describe_inputs(x=x)
    got = impl.call(impl.attr("{kata.function}"), x.clone(), what="{kata.function}", on=on)
    expect_close(got, twin.reference(x), _("{{function}} against its reference", function="{kata.function}"),
                 on, suspects(x))
'''
    tests = []
    for item in api:
        check = f"test_{re.sub(r'(?<!^)(?=[A-Z])', '_', item.name).lower()}"
        compared = (f'    expect_close(got, twin.{item.name}(**arguments), _("{{function}} against its '
                    f'reference", function="{item.name}"),\n                 on, [])\n'
                    if item.kind == "def" else
                    "    assert got is not None  # TODO: call its methods, compare each with the "
                    "twin's\n")
        tests.append((check, f'''@pytest.mark.core
@title(N_("{item.name} against its reference"))
def {check}(impl: Implementation) -> None:
    torch.manual_seed(0)
    arguments = {{  # TODO: inputs the contract allows, several shapes (placeholders){_placeholder_arguments(item)}
    }}
    on = describe_inputs(**{{k: v for k, v in arguments.items() if isinstance(v, torch.Tensor)}})
    got = impl.call(impl.attr("{item.name}"), what="{item.name}", on=on,
                    **{{k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in arguments.items()}})
{compared}'''))
    names = ", ".join(f'"{check}"' for check, _ in tests)
    return head + f"__all__ = [{names}]\n\n\n" + "\n\n".join(text for _, text in tests)


def meta(kata, api: tuple[Api, ...]) -> str:
    first = api[0]
    call = f"{first.name}({first.params})"
    hints = ((
        "Look at the shape of x.",
        "The output has the shape of x: the placeholder task returns x itself.",
        f"def {kata.function}(x):\n    return x.clone()") if not kata.api else (
        f"TODO: the first rung: the idea of {first.name}, no code.",
        "TODO: the second rung: the steps, with shapes.",
        f"TODO: the third rung, the one tricky line as near-code on two lines or more:\n{call}"))
    rungs = "".join(f"\n        {json.dumps(rung, ensure_ascii=False)}," for rung in hints)
    return f'''"""Kata {kata.name} ({kata.title}).

Beside the grader (checks.py) and the twin (twin.py), what the learner does not read: its
registry entry with the hint ladder (KATA), the mistakes only it names (MISTAKES) and its
quiz (QUESTIONS). Imports nothing heavy: `kata list` reads every meta.
"""

from __future__ import annotations

from graders.core.kata import Kata, Mistake  # noqa: F401 (Mistake: for MISTAKES)
from graders.core.quizzes import CHOICE, INTEGER, Question

KATA = Kata(
    id="{kata.id}",
    name="{kata.name}",
    file="{kata.file}",
    title={json.dumps(kata.title)},
    track="{kata.track}",
    difficulty="{kata.difficulty}",
    target_minutes={kata.minutes},
    prerequisites=(),
    mistakes=(),
    forbidden=(),
    hints=({rungs}
    ),
)


# The mistakes only this kata's grader names (shared ones: graders.core.catalogue, never
# declared again here).
MISTAKES: tuple[Mistake, ...] = ()


QUESTIONS = (
    Question("How many elements has a tensor of shape (2, 3)?", 6, INTEGER,
             "2 rows of 3: 2 * 3 = 6."),
    Question("Which shape does the placeholder task return for x of shape (2, 3)?", "A", CHOICE,
             "It returns x itself.", choices=("(2, 3)", "(3, 2)")),
)
'''


def readme(kata, api: tuple[Api, ...], chinese: bool = False) -> str:
    if not kata.api:
        task = (f"编辑本文件夹中的 `{kata.file}`：函数 `{kata.function}(x)` 返回一个与 `x` 形状相同的张量。"
                if chinese else f"Edit `{kata.file}` in this folder: the function `{kata.function}(x)` "
                "returns a tensor of the\nshape of `x`.")
    else:
        names = ", ".join(f"`{i.name}`" for i in api)
        task = (f"编辑本文件夹中的 `{kata.file}`：{names}（待写：题目）。" if chinese else
                f"Edit `{kata.file}` in this folder: {names} (TODO: the problem).")
    other = "[English](README.md)" if chinese else "[简体中文](README.zh-CN.md)"
    heading = "检查你的答案" if chinese else "Check your work"
    here = (f"为本文件夹中的 {kata.file} 评分", "为任意其他文件评分（或者用 KATA_IMPL=my.py）") if chinese \
        else (f"grades {kata.file} in this folder", "grades any other file (or KATA_IMPL=my.py)")
    return f"""# Kata {kata.id} — {kata.title}

{other}

{task}

## {heading}

```bash
pytest katas/{kata.name}                 # {here[0]}
pytest katas/{kata.name} --impl my.py    # {here[1]}
```
"""


def package_init(kata) -> str:
    return f'''"""Kata {kata.name} ({kata.title}).

``checks`` is its grader (what katas/{kata.name}/test_{kata.file} imports); ``twin`` the reference
with a switch per mistake; ``meta`` its registry entry, hint ladder, own mistakes and quiz;
``skeleton.py`` the pristine skeleton (data, never imported). Nothing is imported here:
reading ``meta`` must stay cheap (no torch).
"""
'''


def thin_test(kata) -> str:
    return (f'"""Grades {kata.file}. Run: pytest katas/{kata.name}  (--impl PATH grades another '
            f'file)."""\n\nfrom graders.{kata.module}.checks import *  # noqa: F401,F403  '
            "(the grading checks)\n")


def lesson(kata) -> str:
    return """# %% [markdown]
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
"""


def mutants(kata) -> str:
    return f'''"""Kata {kata.id}'s mutants: each catalogued mistake as one edit of a correct file.

See tests/mutation.py for how they are stated and graded.
"""

from tests.mutation import Mutant  # noqa: F401 (one Mutant per catalogued mistake)

MUTANTS: list = []
'''


def styles_readme(kata) -> str:
    return (f"Correct solutions of kata {kata.name} written in other styles: each `*.py` here "
            "must pass\nwith no mistake named (tests/test_katas.py).\n")
