"""The one check registry: every check's id, words, scope, what it judges, and its code.

Rules:
- Every check id that can appear in a Violation is registered exactly once, in the module that
  owns the rule (a wire's grammar registers its stream rules; `checks/*.py` the suite-level
  checks). Ids are stable, dotted, lower_snake: `<area>.<topic>.<rule>`, e.g.
  `anthropic.stream.stop_sequence_present`.
- A check has a one-line title (what `conformance checks` prints), a description (report text),
  a default severity, the likely cause in the harness (the single table the failure formatter
  reads), a scope (which runner runs it: SCOPES) and what it judges (JUDGES): `stack` — the
  wire and the protocol, which may fail the gate — or `model` — the model's choices, a metric
  that becomes an error only with evidence that the stack lost something.
- A check carries its code: `@check(id, title, scope=..., applies=...)` registers the callable,
  with one signature per scope (an exchange check takes the exchange state, a hop check the hop,
  a loop check the loop's record; each returns what its runner folds). Each runner iterates
  `checks_for(scope)`, in `order`; no list of checks sits beside it. A rule the wire grammar or a
  suite test reports itself is registered with `register()` and no code.
- The registry loads its catalog itself: the first question about every check (`registered`,
  `checks_for`, an unknown id in `get`/`lookup`) imports every module of the catalog packages
  (CATALOG, by name, as pytest finds plugins: data, not an import of a higher floor), so a fresh
  process never sees an empty registry.
- `violation(...)` is the only way code makes a Violation for a check: it refuses unknown ids, so
  a typo fails loudly in the self-tests instead of producing an unlisted id.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.core.failures import SEVERITIES, Violation, Where

_AREAS = ["sse", "anthropic", "openai", "responses", "suite", "tools", "identity", "loop", "context", "load",
          "translation", "reasoning", "http", "capture", "client_wire"]
# Which runner runs a check: a wire grammar's rule (reported by the state machine), a stage of the
# exchange judge, a translation rule over one router hop, a rule over a whole agent loop, a probe's
# verdict, a suite test's own verdict, a live client's run, a capture's self-check.
SCOPES = ("wire", "exchange", "hop", "loop", "probe", "suite", "live", "capture")
JUDGES = ("stack", "model")
# The packages whose modules register checks (imported by name on the first full question).
CATALOG = ("conformance.wire", "conformance.checks")


@dataclass(frozen=True)
class CheckSpec:
    id: str
    title: str
    description: str = ""
    severity: str = "error"
    likely_cause: str = ""
    scope: str = "suite"
    judges: str = "stack"
    order: int = 0  # runners run a scope's checks by (order, registration)
    run: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    applies: Callable[..., bool] | None = field(default=None, compare=False, repr=False)

    @property
    def area(self) -> str:
        return self.id.split(".", 1)[0]

    def applies_to(self, subject: Any) -> bool:
        return self.applies is None or bool(self.applies(subject))


_REGISTRY: dict[str, CheckSpec] = {}
_SEQUENCE: dict[str, int] = {}
_loaded = False


def add_area(area: str) -> None:
    """Let check ids start with `area`: a wire's grammar rules are named after their wire, and a
    wire may be defined outside this package (conformance.wire.base.register_rule adds it)."""
    if area not in _AREAS:
        _AREAS.append(area)


def register(
    check_id: str,
    title: str,
    *,
    description: str = "",
    severity: str = "error",
    likely_cause: str = "",
    scope: str = "suite",
    judges: str = "stack",
    order: int = 0,
    run: Callable[..., Any] | None = None,
    applies: Callable[..., bool] | None = None,
) -> CheckSpec:
    """Register a check; re-registering the same id with the same words is a no-op (a module
    reload), and keeps the newest code."""
    if check_id.count(".") < 1 or check_id.split(".", 1)[0] not in _AREAS:
        raise ValueError(f"check id {check_id!r} must start with one of the areas {_AREAS}")
    if scope not in SCOPES:
        raise ValueError(f"check {check_id!r}: scope must be one of {SCOPES}, got {scope!r}")
    if judges not in JUDGES:
        raise ValueError(f"check {check_id!r}: judges must be one of {JUDGES}, got {judges!r}")
    if severity not in SEVERITIES:
        raise ValueError(f"check {check_id!r}: severity must be one of {SEVERITIES}, got {severity!r}")
    spec = CheckSpec(check_id, title, description or title, severity, likely_cause, scope, judges, order, run,
                     applies)
    existing = _REGISTRY.get(check_id)
    if existing is not None and existing != spec:
        raise ValueError(f"check id {check_id!r} registered twice with different definitions")
    _REGISTRY[check_id] = spec
    _SEQUENCE.setdefault(check_id, len(_SEQUENCE))
    return spec


def check(check_id: str, title: str, **kw: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the code of check `check_id` (see `register`)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        register(check_id, title, run=fn, **kw)
        fn.check_id = check_id  # type: ignore[attr-defined]
        return fn

    return decorate


def load_catalog() -> None:
    """Import every module of the catalog packages once (they register their checks)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in CATALOG:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            importlib.import_module(info.name)


def lookup(check_id: str) -> CheckSpec | None:
    spec = _REGISTRY.get(check_id)
    if spec is None and not _loaded:
        load_catalog()
        spec = _REGISTRY.get(check_id)
    return spec


def get(check_id: str) -> CheckSpec:
    spec = lookup(check_id)
    if spec is None:
        raise KeyError(
            f"unknown check id {check_id!r}: register it with conformance.core.registry.register() "
            "(or @check) in the module that owns the rule"
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
    """Every check, sorted by id (the catalog is loaded first, so the list is complete)."""
    load_catalog()
    return sorted(_REGISTRY.values(), key=lambda s: s.id)


def checks_for(scope: str) -> list[CheckSpec]:
    """The checks with code of one scope, in the order their runner runs them."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    load_catalog()
    return sorted((s for s in _REGISTRY.values() if s.scope == scope and s.run is not None),
                  key=lambda s: (s.order, _SEQUENCE[s.id]))
