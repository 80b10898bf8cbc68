"""Root causes before symptoms: a run's failures grouped by what caused them.

Rules:
- Built only from the results record (and, before a run, from the raw answers the pre-flight
  collected); it never re-judges an exchange.
- One cause per answer: the same HTTP status and error text on the failing requests of N tests is
  one cause with N, whatever the checks that reported it. What an answer says about the setup is
  read by `classify` (one table, `_SETUP_RULES`): authentication, an unknown model name, a wrong
  base path, a target that is down, a server that is no LLM API. An answer that says nothing about
  the setup is still one cause ("every request got ..."), with the router's log as the place to look.
- One cause per check for the rest: the same check failing on N tests is one line with N, its
  layer the one most of its records name, its fix the registry's likely cause.
- Causes are ordered by how many tests they explain (answer causes first: they explain the
  checks); renderers show at most MAX_SHOWN and say how many more there are.
- Every fix names the option to change by its real name (`--conformance-api-key`, ...).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from conformance.core.registry import lookup
from conformance.core.results import Result

MAX_SHOWN = 10
# Causes of the setup (as opposed to "answer" and "check": findings about the stack itself)
SETUP_KINDS = frozenset({"auth", "unknown model", "base path", "down", "not an LLM API", "same answer"})
FAILING = ("failed", "error")
KEY_FIX = "pass the router's key: --conformance-api-key KEY (or CONFORMANCE_API_KEY)"
MODEL_FIX = ("send a model the target serves: --conformance-model NAME (see GET /v1/models), or map an alias "
             "to the model that answers: --conformance-model-map SENT=SERVED")
PATH_FIX = "give the base URL the clients use, without /v1: --target http://HOST:PORT"
DOWN_FIX = "start the router or engine, or correct --target"
NOT_LLM_FIX = "point --target at the router or engine (its base URL, without /v1), not at another web server"
LOG_FIX = ("the router refuses before it forwards anything: check its key (--conformance-api-key) and read "
           "its log for the configuration error")

# (kind, status codes that qualify or None for any, text pattern or None) -> first match wins.
_SETUP_RULES: tuple[tuple[str, tuple[int, ...] | None, re.Pattern[str] | None], ...] = (
    ("auth", (401, 403), None),  # RFC 9110 §15.5.2 / §15.5.4
    ("auth", None, re.compile(r"api[ _-]?key|unauthori[sz]ed|authenticat|x-api-key|bearer|no connected db", re.I)),
    ("unknown model", (400, 404, 422), re.compile(
        r"model\b.{0,60}(not found|does not exist|not exist|unknown|invalid|no such|not supported|not available)"
        r"|(invalid|unknown|no such) model", re.I)),
    ("base path", (404, 405), None),
    ("not an LLM API", (501,), None),
)
_FIX = {"auth": KEY_FIX, "unknown model": MODEL_FIX, "base path": PATH_FIX, "down": DOWN_FIX,
        "not an LLM API": NOT_LLM_FIX, "same answer": LOG_FIX}
_WHAT = {"auth": "the router refused the credentials", "unknown model": "the target does not know the model name",
         "base path": "the target has no such path", "down": "the target is down",
         "not an LLM API": "the target serves no model API", "same answer": "every request got the same error"}
# "HTTP 500: text" in a violation's `seen` or message: the answer a failing exchange got.
_ANSWER = re.compile(r"HTTP (\d{3})(?::\s*(.*))?")
_DOWN = re.compile(r"target is down|cannot connect|connection refused|refused connections", re.I)


@dataclass
class Cause:
    """One root cause: what happened, what to do, and the tests it explains."""

    kind: str  # auth | unknown model | base path | down | not an LLM API | same answer | answer | check
    what: str  # one line: what happened, with its evidence (the status and text, or the check)
    fix: str  # what to do, naming the option
    tests: list[str] = field(default_factory=list)
    layer: str = ""  # router | engine | both | model | "" (not attributed)
    check_id: str = ""  # for a check cause
    evidence: str = ""  # the engine-direct result, when an attribution made one

    @property
    def count(self) -> int:
        return len(self.tests)

    def line(self) -> str:
        layer = f" [layer: {self.layer}]" if self.layer else ""
        return f"{self.what}{layer} — {short(self.fix, 200)}"


def classify(status: int | None, text: str = "", *, connect_error: bool = False) -> str | None:
    """What one refused answer says about the setup (a kind of `_FIX`), or None when it says nothing."""
    if connect_error:
        return "down"
    if status is None:
        return "down" if _DOWN.search(text or "") else None
    for kind, statuses, pattern in _SETUP_RULES:
        if statuses is not None and status not in statuses:
            continue
        if pattern is not None and not pattern.search(text or ""):
            continue
        return kind
    return None


def setup_cause(kind: str, what: str, tests: list[str] | None = None) -> Cause:
    """A cause of the setup (auth, model, path, down, not an LLM API, the same answer everywhere)."""
    return Cause(kind, f"{_WHAT[kind]}: {what}", _FIX[kind], list(tests or []))


def short(text: str, limit: int = 120) -> str:
    one = " ".join((text or "").split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def error_message(text: str) -> str:
    """The error message of an error body (`{"error": {"message": ...}}`, `{"error": "..."}`,
    `{"detail": ...}`), else the text itself: one answer reads the same however it was quoted."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    err = doc.get("error") if isinstance(doc, dict) else None
    msg = err.get("message") if isinstance(err, dict) else err if isinstance(err, str) else None
    if msg is None and isinstance(doc, dict):
        msg = doc.get("detail") or doc.get("message")
    return str(msg) if msg is not None else text


def _answer_of(r: Result) -> tuple[str, str] | None:
    """The (status, text) a failing record's exchange got, read from its own words."""
    texts = [str(v.get("seen") or "") for v in r.violations] + [str(v.get("message") or "") for v in r.violations]
    texts.append(r.message or "")
    for text in texts:
        if _DOWN.search(text):
            return ("down", "")
        m = _ANSWER.search(text)
        if m and not m.group(1).startswith("2"):
            return (m.group(1), short(error_message((m.group(2) or "").strip()), 100))
    return None


def _layer(records: list[Result]) -> str:
    layers = Counter(r.layer for r in records if r.layer and r.layer != "unknown")
    return layers.most_common(1)[0][0] if layers else ""


def _evidence(records: list[Result]) -> str:
    """The engine-direct result of the first attributed record, in a line."""
    for r in records:
        att = r.details.get("attribution") if isinstance(r.details, dict) else None
        for a in att if isinstance(att, list) else []:
            if isinstance(a, dict) and a.get("explanation"):
                status = a.get("engine_status")
                return short(f"{a['explanation']}" + (f" (engine answered HTTP {status})" if status else ""), 200)
    return ""


def _check_fix(check_ids: list[str]) -> str:
    for check_id in check_ids:
        spec = lookup(check_id)
        if spec is not None and spec.likely_cause:
            return spec.likely_cause
    return "see its failure folder (request, raw response, replay command)"


def _ids(records: list[Result]) -> list[str]:
    """The checks of `records`, the most frequent first (a summary id without violations last)."""
    counts = Counter(r.check_id for r in records if r.violations) or Counter(r.check_id for r in records)
    return [c for c, _ in counts.most_common()]


def from_results(results: list[Result], *, every_request: bool = False) -> list[Cause]:
    """The run's failures as causes, the ones that explain the most tests first. An answer of the
    setup (auth, model, path) is named as such only when it answered every failing test, or when
    the caller knows it answered every request (`every_request`); otherwise it is the answer of
    those tests, with the fix of the checks it broke."""
    failing = [r for r in results if r.outcome in FAILING]
    all_failing_tests = {r.test_id for r in failing}
    tests_of_answer: dict[tuple[str, str], list[Result]] = {}
    for r in failing:
        answer = _answer_of(r)
        if answer is not None:
            tests_of_answer.setdefault(answer, []).append(r)
    explained: set[str] = set()
    causes: list[Cause] = []
    for (status, text), records in tests_of_answer.items():
        tests = sorted({r.test_id for r in records})
        if len(tests) < 2 and status != "down":
            continue  # one test's refusal is that test's finding, not a cause of the setup
        everywhere = every_request or set(tests) == all_failing_tests
        if status == "down":
            cause = setup_cause("down", "its requests were refused or not sent", tests)
        else:
            shown = f"HTTP {status}" + (f" {short(text, 80)!r}" if text else "")
            kind = classify(int(status), text)
            if everywhere or kind in ("auth", "unknown model"):
                cause = setup_cause(kind or "same answer", f"{shown} on the failing requests of {len(tests)} test(s)",
                                    tests)
            else:
                checks = _ids(records)
                cause = Cause("answer", f"{shown} answered {len(tests)} test(s) ({', '.join(checks[:3])})",
                              _check_fix(checks), tests, check_id=checks[0])
        cause.layer, cause.evidence = _layer(records), _evidence(records)
        causes.append(cause)
        explained.update(tests)
    by_check: dict[str, list[Result]] = {}
    for r in failing:
        if r.test_id not in explained:
            by_check.setdefault(r.check_id, []).append(r)
    with_violations = {r.test_id for r in failing if r.violations}
    for check_id, records in by_check.items():
        if not any(r.violations for r in records) and {r.test_id for r in records} <= with_violations:
            continue  # a summary id (suite.stream.wellformed): its tests' own violations say why
        tests = sorted({r.test_id for r in records})
        message = next((r.message for r in records if r.message), "")
        what = f"{check_id} failed on {len(tests)} test(s)" + (f": {short(message, 100)}" if message else "")
        causes.append(Cause("check", what, _check_fix([check_id]), tests, _layer(records), check_id,
                            _evidence(records)))
    causes.sort(key=lambda c: (c.kind in ("check", "answer"), -c.count, c.what))
    return causes


def answered_models(results: list[Result]) -> list[str]:
    """Models that actually answered: the model an identity check saw ("answered by X"), and the
    model of a loop that completed. A record's `model` alone may be the one that was sent, so a
    run where nothing answered names none."""
    out: set[str] = set()
    for r in results:
        if r.outcome != "passed":
            continue
        if r.check_id.startswith("identity."):
            m = re.match(r"answered by (.+)$", r.message or "")
            if m or r.model:
                out.add(m.group(1) if m else r.model)
        elif r.check_id == "loop.completed" and r.model:
            out.add(r.model)
    return sorted(out)


def headline_lines(causes: list[Cause], *, limit: int = MAX_SHOWN) -> list[str]:
    """At most `limit` lines, one per cause, then how many more there are."""
    out = [f"{i}. {c.line()}" for i, c in enumerate(causes[:limit], 1)]
    if len(causes) > limit:
        out.append(f"... and {len(causes) - limit} more cause(s): see summary.md")
    return out


def as_dict(c: Cause) -> dict[str, Any]:
    return {"kind": c.kind, "what": c.what, "fix": c.fix, "tests": c.count, "layer": c.layer,
            "check_id": c.check_id, "evidence": c.evidence}
