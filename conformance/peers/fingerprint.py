"""A violation's fingerprint: the few facts that say *why* a check failed, so the peer gate sees a
check that still fails but for another reason ("same check, new reason").

Rules:
- A fingerprint is built from the results record alone (never from free text that names ids or
  timings): per violation, the HTTP status it names (if any), the field it is about (the JSON
  pointer with array indices as `*`, else the event type), the kind of the value seen
  (absent, null, string, number, bool, object, array, keys, status, text), and how many of the
  quoted values the check expected occur in what it saw (`holds 1/2`: a stop sequence the text ran
  past is seen, one the router stopped at but did not report is not). One (test, check) pair
  may fail on several turns or events: its fingerprint is the sorted set of its violations'
  fingerprints, joined with " ; ".
- A fixture entry keeps one fingerprint per check (`fingerprints` beside `checks` in
  known_failures, written by conformance.peers.expect). An entry without one for a check gates
  only the pair (fixtures written before fingerprints existed).
- `changed_reasons` is the gate's comparison: pure, so it is tested without any peer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from conformance.core.results import Result

_FAILING = ("failed", "error")
_STATUS = re.compile(r"\b(?:HTTP|status)[ :]*([1-5]\d\d)\b", re.IGNORECASE)
_INDEX = re.compile(r"/\d+(?=/|$)")
_QUOTED = re.compile(r"'([^']+)'")


def seen_kind(seen: object) -> str:
    """The kind of a violation's `seen` text, which holds a repr or a short description."""
    if seen is None:
        return "absent"
    text = str(seen).strip()
    if not text:
        return "empty"
    if text in ("None", "null"):
        return "null"
    if text in ("True", "False", "true", "false"):
        return "bool"
    if _STATUS.match(text) or re.fullmatch(r"[1-5]\d\d", text):
        return "status"
    if text[0] in "'\"":
        return "string"
    if re.fullmatch(r"-?\d+(\.\d+)?", text):
        return "number"
    if text[0] == "{":
        return "object"
    if text[0] == "[":
        return "array"
    if text.startswith("keys "):
        return "keys"
    if "missing" in text or "absent" in text or "no " in text[:3]:
        return "absent"
    return "text"


def violation_fingerprint(violation: dict) -> str:
    where = violation.get("where") or {}
    pointer = where.get("pointer")
    field = _INDEX.sub("/*", pointer) if pointer else (where.get("event_type") or "-")
    texts = " ".join(str(violation.get(k) or "") for k in ("seen", "message"))
    status = _STATUS.search(texts)
    parts = [f"status {status.group(1)}"] if status else []
    parts += [field, seen_kind(violation.get("seen"))]
    wanted = set(_QUOTED.findall(str(violation.get("expected") or "")))
    if wanted:
        seen = str(violation.get("seen") or "")
        parts.append(f"holds {sum(w in seen for w in wanted)}/{len(wanted)}")
    return " ".join(parts)


def pair_fingerprints(results: Iterable[Result]) -> dict[tuple[str, str], str]:
    """(test, check) -> fingerprint, for every failing pair in a run's results."""
    found: dict[tuple[str, str], set[str]] = {}
    for r in results:
        if r.outcome not in _FAILING:
            continue
        prints = found.setdefault((r.test_id, r.check_id), set())
        prints.update(violation_fingerprint(v) for v in r.violations if isinstance(v, dict))
        if not r.violations:
            prints.add("no violation recorded")
    return {key: " ; ".join(sorted(p)) for key, p in found.items()}


def fixture_fingerprints(known_failures: Iterable[dict]) -> dict[tuple[str, str], str]:
    """(test, check) -> the fingerprint a fixture recorded (pairs without one are left out)."""
    out = {}
    for entry in known_failures:
        for check, fp in (entry.get("fingerprints") or {}).items():
            out[(entry["test"], check)] = fp
    return out


def changed_reasons(recorded: dict[tuple[str, str], str], seen: dict[tuple[str, str], str]) -> list[str]:
    """Lines for each pair that fails in both but whose fingerprint changed: the gate fails on them."""
    lines = []
    for key in sorted(recorded.keys() & seen.keys()):
        if recorded[key] != seen[key]:
            test, check = key
            lines.append(f"  {test}  {check}: same check, new reason: was [{recorded[key]}], now [{seen[key]}]")
    return lines
