"""Violations are data: what every check, state machine and probe produces.

Rules:
- A `Violation` is what any check, state machine or probe produces: a registered check id, what
  was expected, what was seen, where (turn, event number, event type, JSON pointer, byte offset)
  and a severity. The likely cause is never written at the call site: it comes from the check
  registry (one table), so every front end explains a failure the same way.
- Nothing here renders text: failure text (`format_violation`, `format_failure`,
  `ConformanceFailure`) lives in `conformance.report.text`, one floor up, so data never imports
  the registry it is explained by.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Where:
    """Location of a violation. Every field is optional; render only what is known."""

    turn: int | None = None  # 1-based agent-loop turn
    event_index: int | None = None  # 1-based number of the SSE event in the stream
    event_type: str | None = None  # SSE event name or JSON `type`
    pointer: str | None = None  # RFC 6901 JSON pointer into the event data / body
    byte_offset: int | None = None  # offset of the event in the raw response bytes
    exchange: str | None = None  # e.g. "claude-code/2.1.197/default#1"

    def render(self) -> str:
        parts = []
        if self.exchange:
            parts.append(self.exchange)
        if self.turn is not None:
            parts.append(f"turn {self.turn}")
        if self.event_index is not None:
            ev = f"event #{self.event_index}"
            if self.event_type:
                ev += f" {self.event_type}"
            parts.append(ev)
        elif self.event_type:
            parts.append(self.event_type)
        if self.pointer:
            parts.append(f"at {self.pointer}")
        if self.byte_offset is not None:
            parts.append(f"byte {self.byte_offset}")
        return ", ".join(parts) or "(whole exchange)"


@dataclass(frozen=True)
class Violation:
    check_id: str
    message: str
    expected: str | None = None
    seen: str | None = None
    where: Where = field(default_factory=Where)
    severity: str = "error"

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["where"] = {k: v for k, v in d["where"].items() if v is not None}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Violation:
        d = dict(d)
        d["where"] = Where(**d.get("where", {}))
        return cls(**d)

    def at(self, **where: Any) -> Violation:
        """The same violation with more location filled in (e.g. the turn, known only later)."""
        merged = {k: v for k, v in asdict(self.where).items() if v is not None}
        merged.update({k: v for k, v in where.items() if v is not None})
        return Violation(self.check_id, self.message, self.expected, self.seen, Where(**merged), self.severity)


def errors(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.is_error]


class HasViolations:
    """Mixin for every report that holds `violations` (stream report, exchange verdict, loop and
    live reports): the error subset and the verdict are derived one way, never stored."""

    violations: list[Violation]

    @property
    def errors(self) -> list[Violation]:
        return errors(self.violations)

    @property
    def ok(self) -> bool:
        return not self.errors

    passed = ok
