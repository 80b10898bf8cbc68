"""A Verdict: what one check decided, in one shape for every check, and the one ranking of outcomes.

Rules:
- `outcome` is one of OUTCOMES (passed / failed / warning / unverifiable / info / skipped /
  error), or None for a check that did not judge and only says why in `note` (recorded as a
  note, never as a verdict).
- `violations` are the check's own findings, in the order they were found; `note` is why a
  verdict is unverifiable or skipped ("" when there is nothing to say, and then not recorded).
- One rule turns findings into an outcome (`outcome_of`): any error fails the check, anything
  else found is a warning, nothing found is a pass. One ranking says which outcome is worse
  (RANK, `worst`): the summary, the report, the comparison and the suite all use it.
- A check may report several verdicts for one id (one per violation, in arrival order, so a
  report lists findings as they came); they all carry that id's one outcome, and the last one
  recorded wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from conformance.core.failures import Violation

OUTCOMES = ("passed", "failed", "warning", "unverifiable", "info", "skipped", "error")
# Worst first when sorted by rank, descending: a cell shows its worst outcome.
RANK = {"failed": 6, "error": 5, "warning": 4, "unverifiable": 3, "passed": 2, "info": 1, "skipped": 0}


def outcome_of(violations: Iterable[Violation], *, clean: str = "passed") -> str:
    """failed when any finding is an error, warning when there are other findings, else `clean`."""
    found = list(violations)
    if any(v.is_error for v in found):
        return "failed"
    return "warning" if found else clean


def worst(outcomes: Iterable[str | None]) -> str | None:
    """The worst of some outcomes by RANK (None when there are none)."""
    best: str | None = None
    for o in outcomes:
        if o is not None and (best is None or RANK[o] > RANK[best]):
            best = o
    return best


@dataclass(frozen=True)
class Verdict:
    check_id: str
    outcome: str | None
    violations: tuple[Violation, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if self.outcome is not None and self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES} or None, got {self.outcome!r}")
        if not isinstance(self.violations, tuple):
            object.__setattr__(self, "violations", tuple(self.violations))

    @classmethod
    def of(cls, found: Violation) -> Verdict:
        """One violation as its check's verdict: failed for an error, else a warning."""
        return cls(found.check_id, outcome_of([found]), (found,))

    @classmethod
    def from_violations(cls, check_id: str, violations: Iterable[Violation], note: str = "") -> Verdict:
        """The verdict of a check from everything it found (`outcome_of`)."""
        found = tuple(violations)
        return cls(check_id, outcome_of(found), found, note)
