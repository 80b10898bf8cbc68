"""The one check registry.

Rules:
- Every check id that can appear in a Violation is registered exactly once, in the module that
  owns the rule (protocol state machines register their stream rules; `checks/*.py` register the
  suite-level checks). Ids are stable, dotted, lower_snake: `<area>.<topic>.<rule>`, e.g.
  `anthropic.stream.stop_sequence_present`.
- A check has a one-line title (what `conformance checks` prints), a description (report text),
  a default severity and the likely cause in the harness (the single table the failure formatter
  reads: "tool call in text -> engine tool-parser flag missing", ...).
- `violation(...)` is the only way code makes a Violation for a check: it refuses unknown ids, so
  a typo fails loudly in the self-tests instead of producing an unlisted id.
- Registration happens in the module that owns the rule, above this floor; listing every check
  (`conformance.checks.catalog.load_all`) imports those modules, so this one imports none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.core.failures import Violation, Where

_AREAS = ("sse", "anthropic", "openai", "responses", "suite", "tools", "identity", "loop", "context", "load",
          "translation", "reasoning", "http", "capture")


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    description: str = ""
    severity: str = "error"
    likely_cause: str = ""

    @property
    def area(self) -> str:
        return self.id.split(".", 1)[0]


_REGISTRY: dict[str, CheckSpec] = {}


def register(
    check_id: str,
    title: str,
    *,
    description: str = "",
    severity: str = "error",
    likely_cause: str = "",
) -> CheckSpec:
    """Register a check; re-registering the same id with the same text is a no-op (module reloads)."""
    if check_id.count(".") < 1 or check_id.split(".", 1)[0] not in _AREAS:
        raise ValueError(f"check id {check_id!r} must start with one of the areas {_AREAS}")
    spec = CheckSpec(check_id, title, description or title, severity, likely_cause)
    existing = _REGISTRY.get(check_id)
    if existing is not None and existing != spec:
        raise ValueError(f"check id {check_id!r} registered twice with different definitions")
    _REGISTRY[check_id] = spec
    return spec


def lookup(check_id: str) -> CheckSpec | None:
    return _REGISTRY.get(check_id)


def get(check_id: str) -> CheckSpec:
    spec = _REGISTRY.get(check_id)
    if spec is None:
        raise KeyError(
            f"unknown check id {check_id!r}: register it with conformance.core.registry.register() "
            "in the module that owns the rule"
        )
    return spec


def violation(
    check_id: str,
    message: str,
    *,
    expected: Any = None,
    seen: Any = None,
    severity: str | None = None,
    **where: Any,
) -> Violation:
    """Make a Violation of a registered check. `where` takes the fields of failures.Where."""
    spec = get(check_id)
    return Violation(
        check_id=check_id,
        message=message,
        expected=None if expected is None else str(expected),
        seen=None if seen is None else str(seen),
        where=Where(**where),
        severity=severity or spec.severity,
    )


def registered() -> list[CheckSpec]:
    """Every check registered so far, sorted by id (`conformance.checks.catalog.load_all` first
    imports every registering module, so the list is complete)."""
    return sorted(_REGISTRY.values(), key=lambda s: s.id)
