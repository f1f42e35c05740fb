"""What a grading run found, as data: one :class:`CheckResult` per check, one
:class:`KataResult` per kata.

The pytest plugin fills these in; ``kata check``, ``kata list`` and the notebooks' grading
cell read them (and :mod:`graders.core.session` renders them), so every front end reports the
same checks, tiers, slugs and verdicts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from graders.core.i18n import N_

PASSED, FAILED, NOT_IMPLEMENTED = "passed", "failed", "not implemented"
# A check pytest skipped, e.g. a CUDA follow-up on a machine without CUDA: not run, so neither
# passed nor failed; its reason is kept (CheckResult.verdict).
SKIPPED = "skipped"
CORE, FOLLOW_UP = "core", "follow-up"

# Statuses of a kata, in the order a learner goes through them.
NOT_STARTED, FAILING, CORE_PASSED, ALL_PASSED = "not started", "failing", "core passed", "all passed"


def shown(word: str) -> str:
    """A stored status, outcome or tier word (``"not started"``, ``"passed"``, ``"core"``) as
    the learner reads it, in their language. The stored words themselves never change: they
    are data (the state file, cached results, the JSON report)."""
    from graders.core.i18n import _

    words = {
        PASSED: _("passed"), FAILED: _("failed"), NOT_IMPLEMENTED: _("not implemented"),
        SKIPPED: _("skipped"),
        CORE: _("core"), FOLLOW_UP: _("follow-up"), "follow-ups": _("follow-ups"),
        NOT_STARTED: _("not started"), FAILING: _("failing"), CORE_PASSED: _("core passed"),
        ALL_PASSED: _("all passed"),
    }
    return words.get(word, word)


def shown_tally(label: str, passed: int, total: int, *, short: bool = False) -> str:
    """One tier's count as the learner reads it: ``core: 3/5 passed`` (the scoreboard), or
    ``core 3/5`` with ``short`` (``kata check``'s count line). ``label`` is a label of
    :attr:`KataResult.tally`. One message per tier: in Chinese the tier's name here (核心检查)
    is not its short form in a table's tier column (核心)."""
    from graders.core.i18n import _

    if short:
        texts = {"core": _("core {passed}/{total}", passed=passed, total=total),
                 "follow-ups": _("follow-ups {passed}/{total}", passed=passed, total=total)}
    else:
        texts = {"core": _("core: {passed}/{total} passed", passed=passed, total=total),
                 "follow-ups": _("follow-ups: {passed}/{total} passed", passed=passed, total=total)}
    return texts[label]


@dataclass(frozen=True)
class CheckResult:
    name: str  # the check's test function, e.g. "test_attention_random_shapes"
    tier: str  # CORE | FOLLOW_UP
    outcome: str  # PASSED | FAILED | NOT_IMPLEMENTED | SKIPPED
    verdict: str = ""  # the failure's full verdict ("" when it passed; why, when skipped)
    slug: str | None = None  # the recognised mistake, if any
    title: str = ""  # the check's title in English (graders.core.report.title); "" if none
    # A failing matrix check's expected and actual (n, m) matrices, for `kata serve`'s
    # heatmaps: {"at": leading index, "expected": rows, "got": rows}; None otherwise.
    pictures: dict | None = None

    @property
    def label(self) -> str:
        """The check's title in the learner's language (its function's words without one)."""
        from graders.core.i18n import translate

        if self.title:
            return translate(self.title)
        return self.name.removeprefix("test_").replace("_", " ")

    @property
    def summary(self) -> str:
        """The verdict's first line: what was checked, on which input."""
        return self.verdict.splitlines()[0] if self.verdict else ""


@dataclass
class KataResult:
    kata: str  # "03_mha"
    checks: list[CheckResult] = field(default_factory=list)
    error: str | None = None  # set when the grader could not run at all
    # A remark that is no verdict, e.g. how much the code printed while graded (the checks
    # judge results alone; what was printed is not shown).
    note: str = ""
    # What the code printed, its first lines only, ready to show on request (kata check
    # --show-prints, pytest -s); "" when it printed nothing.
    printed: str = ""
    # Whether the learner's file failed to import (every check then fails the same way).
    import_failed: bool = False

    @property
    def core(self) -> list[CheckResult]:
        return [c for c in self.checks if c.tier == CORE]

    @property
    def follow_ups(self) -> list[CheckResult]:
        return [c for c in self.checks if c.tier == FOLLOW_UP]

    @property
    def ran(self) -> list[CheckResult]:
        """The checks that ran (all but the skipped ones)."""
        return [c for c in self.checks if c.outcome != SKIPPED]

    @property
    def skipped(self) -> list[CheckResult]:
        """The checks that did not run here (e.g. CUDA follow-ups without CUDA)."""
        return [c for c in self.checks if c.outcome == SKIPPED]

    @property
    def tally(self) -> list[tuple[str, int, int]]:
        """(label, checks passed, checks run) for the core checks and for the follow-ups;
        skipped checks are in neither count (see :attr:`skipped`)."""
        return [(label, sum(c.outcome == PASSED for c in checks),
                 sum(c.outcome != SKIPPED for c in checks))
                for label, checks in (("core", self.core), ("follow-ups", self.follow_ups))]

    @property
    def core_passed(self) -> bool:
        ran = [c for c in self.core if c.outcome != SKIPPED]
        return self.error is None and bool(ran) and all(c.outcome == PASSED for c in ran)

    @property
    def passed(self) -> bool:
        """Every check that ran passed: a follow-up skipped here (no CUDA) does not hold a
        kata back, but is reported as skipped (:func:`skipped_words`)."""
        return self.core_passed and all(c.outcome == PASSED for c in self.ran)

    @property
    def not_implemented(self) -> bool:
        return bool(self.ran) and all(c.outcome == NOT_IMPLEMENTED for c in self.ran)

    @property
    def status(self) -> str:
        if self.passed:
            return ALL_PASSED
        if self.core_passed:
            return CORE_PASSED
        return NOT_STARTED if self.not_implemented else FAILING

    @property
    def failures(self) -> list[CheckResult]:
        """Failed checks, core first (the order to fix them in)."""
        return [c for c in self.core + self.follow_ups if c.outcome not in (PASSED, SKIPPED)]

    @property
    def slugs(self) -> list[str]:
        """Recognised mistakes, most important first, each once."""
        return list(dict.fromkeys(c.slug for c in self.failures if c.slug))

    def to_dict(self) -> dict:
        return {"kata": self.kata, "error": self.error, "note": self.note,
                "printed": self.printed, "import_failed": self.import_failed,
                "checks": [asdict(c) for c in self.checks]}

    @classmethod
    def from_dict(cls, data: dict) -> "KataResult":
        return cls(kata=data["kata"], error=data.get("error"), note=data.get("note", ""),
                   printed=data.get("printed", ""),
                   import_failed=bool(data.get("import_failed", False)),
                   checks=[CheckResult(**c) for c in data.get("checks", [])])


# The reasons the graders give pytest.skip, marked for the catalogs (shown translated).
SKIP_REASONS = (N_("needs a CUDA GPU"),)


def skipped_words(result: KataResult) -> str:
    """The checks not run here, with why, e.g. "1 skipped (needs a CUDA GPU)"; "" when
    every check ran. In the learner's language (the reasons as the graders gave them)."""
    from graders.core.i18n import _, translate

    reasons = list(dict.fromkeys(translate(c.verdict) for c in result.skipped if c.verdict))
    if not result.skipped:
        return ""
    if not reasons:
        return _("{count} skipped", count=len(result.skipped))
    return _("{count} skipped ({reasons})", count=len(result.skipped),
             reasons=_("; ").join(reasons))
