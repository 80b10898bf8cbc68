"""`CheckOutcome`: what one check decided about one exchange, in one shape for every check.

Rules:
- `outcome` is one of `conformance.core.results.OUTCOMES` (passed / failed / warning /
  unverifiable / info / skipped / error), or None for a check that did not judge the exchange
  and only says why in `note` (recorded as a note, never as a verdict).
- `violations` are the check's own findings, in the order they were found; `note` is why a
  verdict is unverifiable or skipped ("" when there is nothing to say, and then not recorded).
- A check may report several outcomes for one id (one per violation, in arrival order, so a
  report lists findings as they came); they all carry that id's one verdict, and the last one
  recorded wins in `ExchangeVerdict.outcomes`.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.core.failures import Violation
from conformance.core.results import OUTCOMES


@dataclass(frozen=True)
class CheckOutcome:
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
    def of(cls, found: Violation) -> CheckOutcome:
        """One violation as its check's outcome: failed for an error, else a warning."""
        return cls(found.check_id, "failed" if found.is_error else "warning", (found,))
