"""What a kata is: the :class:`Kata` entry each ``graders/<module>/meta.py`` declares, the
:class:`Mistake` entry of the catalogue, and the forbidden-builtin tuples several katas share.

Light on purpose (no torch): ``kata list`` imports every kata's meta through the registry.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from graders.core.i18n import N_

REPO_ROOT = Path(__file__).resolve().parents[2]
KATAS_DIR = REPO_ROOT / "katas"
SOLUTIONS_DIR = REPO_ROOT / "solutions"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
GRADERS_DIR = REPO_ROOT / "graders"
# Each kata's untouched skeleton is shipped beside its grader, graders/<module>/skeleton.py:
# `kata reset` restores from it and `kata list` compares against it, so neither needs git (or
# a pristine checkout). It is data, never imported: no test collects it, and the graders'
# fingerprint leaves it out.
PRISTINE_SKELETON = "skeleton.py"

# How hard a kata is, in the words `kata list` and the notebooks show (translated there).
DIFFICULTIES = (N_("easy"), N_("medium"), N_("hard"))

# A kata's hints form a ladder, revealed one rung per `kata hint`.
HINT_LEVELS = ("nudge", "the key idea", "near-code")

# Forbidden *calls*, detected while learner code runs (see graders.core.guard).
ATTENTION_BUILTINS = (
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.MultiheadAttention",
)
ENCODER_BUILTINS = (
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerEncoder",
)
# Kata 09: building an nn.Transformer (its static generate_square_subsequent_mask is fine;
# PyTorch's encoder and decoder classes and nn.MultiheadAttention are allowed).
TRANSFORMER_BUILTINS = ("torch.nn.Transformer",)
DECODER_BUILTINS = (
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.TransformerDecoder",
)


@dataclass(frozen=True)
class Kata:
    id: str  # "01"
    name: str  # "01_attention": the folder under katas/, solutions/, notebooks/
    file: str  # "attention.py": the file the learner edits
    title: str
    track: str  # a key of graders.core.registry.TRACKS
    difficulty: str  # one of DIFFICULTIES
    target_minutes: int  # a fair time for the kata in a mock interview (`kata mock`)
    prerequisites: tuple[str, ...]
    mistakes: tuple[str, ...]  # the catalogued slugs this kata's grader recognises (at least)
    forbidden: tuple[str, ...]
    hints: tuple[str, str, str]  # one per HINT_LEVELS: nudge, the key idea, near-code

    @property
    def folder(self) -> Path:
        return KATAS_DIR / self.name

    @property
    def skeleton_path(self) -> Path:
        return self.folder / self.file

    @property
    def pristine_skeleton_path(self) -> Path:
        """The skeleton as shipped (katas/NN_name/<file> before the learner edits it), beside
        the kata's grader: graders/<module>/skeleton.py."""
        return GRADERS_DIR / self.module / PRISTINE_SKELETON

    @property
    def public_names(self) -> tuple[str, ...]:
        """The functions and classes the skeleton defines at top level, in order: what the
        learner writes and the grader looks up."""
        tree = ast.parse(self.pristine_skeleton_path.read_text())
        return tuple(node.name for node in tree.body
                     if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                     and not node.name.startswith("_"))

    @property
    def solution_path(self) -> Path:
        return SOLUTIONS_DIR / self.name / self.file

    @property
    def readme_path(self) -> Path:
        return self.folder / "README.md"

    @property
    def notebook_path(self) -> Path:
        return NOTEBOOKS_DIR / f"{self.name}.ipynb"

    @property
    def module(self) -> str:
        """``attention``: the kata's package under graders/ (its file's stem)."""
        return self.file.removesuffix(".py")

    @property
    def grader_module(self) -> str:
        """``graders.attention.checks``: the grader, which the kata's thin test imports."""
        return f"graders.{self.module}.checks"

    @property
    def meta_module(self) -> str:
        """``graders.attention.meta``: the kata's registry entry, own mistakes and quiz."""
        return f"graders.{self.module}.meta"


@dataclass(frozen=True)
class Mistake:
    """A catalogued mistake: its stable slug (CONTRACT.md, section 4), one sentence saying
    what went wrong, and a hint. Shared ones live in graders.core.catalogue, a kata's own in
    its ``meta.MISTAKES``."""

    slug: str
    explanation: str
    hint: str
