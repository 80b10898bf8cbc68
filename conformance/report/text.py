"""Failure text: the one place violations and failures are rendered.

Rules:
- `format_violation` / `format_failure` are the only text renderers. pytest, the CLI, JUnit and
  the Markdown reports all call them. The likely cause is read from the check registry, never
  written at the call site.
- `ConformanceFailure` is an AssertionError so pytest shows it as a test failure, and carries the
  violations as data for the reports.
"""

from __future__ import annotations

from conformance.core.failures import SEVERITIES, Violation
from conformance.core.registry import lookup


def _clip(text: str | None, limit: int = 400) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def format_violation(v: Violation, *, with_cause: bool = True) -> str:
    """One violation as a few indented lines: what, expected, seen, where, likely cause."""
    lines = [f"[{v.severity}] {v.check_id}: {v.message}"]
    lines.append(f"    where:    {v.where.render()}")
    if v.expected is not None:
        lines.append(f"    expected: {_clip(v.expected)}")
    if v.seen is not None:
        lines.append(f"    seen:     {_clip(v.seen)}")
    if with_cause:
        spec = lookup(v.check_id)
        if spec is not None and spec.likely_cause:
            lines.append(f"    likely cause: {spec.likely_cause}")
    return "\n".join(lines)


def format_failure(
    title: str,
    violations: list[Violation],
    *,
    reproduce: list[str] | None = None,
    extra: dict[str, str] | None = None,
) -> str:
    """A whole failure: a title, every violation (errors first), context lines, repro commands."""
    ordered = sorted(violations, key=lambda v: SEVERITIES.index(v.severity))
    out = [title]
    for v in ordered:
        out.append(format_violation(v))
    for key, value in (extra or {}).items():
        out.append(f"{key}: {value}")
    if reproduce:
        out.append("reproduce:")
        out.extend(f"    {cmd}" for cmd in reproduce)
    return "\n".join(out)


class ConformanceFailure(AssertionError):
    """A test failure carrying its violations as data."""

    def __init__(
        self,
        title: str,
        violations: list[Violation],
        *,
        reproduce: list[str] | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.title = title
        self.violations = list(violations)
        self.reproduce = list(reproduce or [])
        self.extra = dict(extra or {})
        super().__init__(format_failure(title, self.violations, reproduce=self.reproduce, extra=self.extra))

    @property
    def check_ids(self) -> list[str]:
        return sorted({v.check_id for v in self.violations})
