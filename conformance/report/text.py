"""Failure text: the one place violations and failures are rendered.

Rules:
- `format_violation` / `format_failure` are the only text renderers. pytest, the CLI, JUnit and
  the Markdown reports all call them. The likely cause is read from the check registry, never
  written at the call site.
- The likely cause is chosen for the layer the failure was attributed to (the `layer` context
  line): a registry cause that names alternatives ("the engine X, or a router Y") keeps those whose
  subject is that layer (or neither); none left, a sentence of that layer's own. Without a layer,
  or with `both` / `unknown`, the registry's words stand as written.
- A block repeated word for word (the same check, message, expected and seen on many turns) is
  printed once, with the count and where it was seen.
- `ConformanceFailure` is an AssertionError so pytest shows it as a test failure, and carries the
  violations as data for the reports.
"""

from __future__ import annotations

import re

from conformance.core.failures import SEVERITIES, Violation
from conformance.core.registry import lookup

# Words that make a layer the subject of one alternative of a likely cause (the first one wins).
LAYER_WORDS = {
    "router": ("router", "proxy", "gateway", "translat"),
    "engine": ("engine", "parser", "chat template", "the model", "llama.cpp", "vllm", "ollama", "sglang", "tokenizer"),
}
# What to say when none of a cause's alternatives is about the attributed layer.
LAYER_CAUSES = {
    "router": "the router changes the request or the answer on the way: the engine passes the same request "
              "directly (the layer line and attribution-N.txt show both sides)",
    "engine": "the engine itself: it fails the same way when asked directly (the layer line shows both sides)",
}
# Where a cause lists alternatives: "; ", or ", or a router ..." / " or the engine ...".
_ALTERNATIVES = re.compile(r";\s+|,?\s+or\s+(?=(?:a|an|the)\s+(?:router|proxy|gateway|engine|server|layer|model)\b)")


def _clip(text: str | None, limit: int = 400) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def _subject(text: str) -> str | None:
    """The layer an alternative is about: the one whose word comes first, or None (neither, or
    both named together as its subject: "the router or engine does not serve ...")."""
    low = text.lower()
    found = {layer: min((i for w in words if (i := low.find(w)) >= 0), default=None)
             for layer, words in LAYER_WORDS.items()}
    placed = sorted((i, layer) for layer, i in found.items() if i is not None)
    if not placed or (len(placed) == 2 and placed[1][0] - placed[0][0] <= 12):
        return None
    return placed[0][1]


def cause_for_layer(cause: str, layer: str | None) -> str:
    """The registry's likely cause, narrowed to the attributed layer (module rules)."""
    if layer not in LAYER_CAUSES or not cause:
        return cause
    parts = [p.strip() for p in _ALTERNATIVES.split(cause) if p.strip()]
    kept = [p for p in parts if _subject(p) in (layer, None)]
    if len(kept) == len(parts):
        return cause
    return "; or ".join(kept) if kept else LAYER_CAUSES[layer]


def format_violation(v: Violation, *, with_cause: bool = True, layer: str | None = None,
                     repeated: list[Violation] | None = None) -> str:
    """One violation as a few indented lines: what, expected, seen, where, likely cause (for
    `layer` when the failure was attributed). `repeated`: the same block seen again elsewhere."""
    lines = [f"[{v.severity}] {v.check_id}: {v.message}"]
    lines.append(f"    where:    {v.where.render()}")
    if repeated:
        wheres = list(dict.fromkeys(r.where.render() for r in repeated))
        shown = ", ".join(wheres[:8]) + (f", … ({len(wheres) - 8} more)" if len(wheres) > 8 else "")
        lines.append(f"    repeated: {len(repeated)} more time(s), the same block: {shown}")
    if v.expected is not None:
        lines.append(f"    expected: {_clip(v.expected)}")
    if v.seen is not None:
        lines.append(f"    seen:     {_clip(v.seen)}")
    if with_cause:
        spec = lookup(v.check_id)
        if spec is not None and spec.likely_cause:
            lines.append(f"    likely cause: {cause_for_layer(spec.likely_cause, layer)}")
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
    layer = str((extra or {}).get("layer", "")).split(" ", 1)[0] or None
    groups: dict[tuple, list[Violation]] = {}
    for v in ordered:  # a block repeated word for word is one block with a count
        groups.setdefault((v.severity, v.check_id, v.message, v.expected, v.seen), []).append(v)
    out = [title]
    for first, *again in groups.values():
        out.append(format_violation(first, layer=layer, repeated=again))
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
