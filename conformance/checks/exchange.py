"""Judge one exchange with every applicable check: the function replay, the loop driver,
attribution and the probes all call.

Rules:
- `check_exchange(raw, request, wire=..., expect_model=..., turn=...)` never raises on a target's
  behaviour; it returns an `ExchangeVerdict`: the violations (errors and warnings), the
  accumulated message (via `dialect(api)`), and `outcomes`, the verdict per check
  id that applied (passed / failed / warning / unverifiable / skipped) — what the results record
  stores, so a pass is recorded as a pass, not as silence.
- Judging is an ordered list of stages (`STAGES`), each a small function of one shared
  `ExchangeState` returning `Verdict`s (checks/outcome.py); the verdict folds them in
  order: every violation in order, the last outcome per check id, every non-empty note. A stage
  that ends judging sets `state.ended_by`, and no later stage runs. The stages call the small
  check functions of their area (tools, tool_choice, stop_reason, identity) and ask the wire
  through `dialect(api)`, never by the wire's name.
- The order, and what stops judging:
  transport: connect -> `suite.target.reachable`; no status -> `suite.transport.complete`;
  deadlines -> `suite.deadline.*`; size caps -> `suite.limits.*`; each ends judging (a stream cut by a deadline is not judged
  further, so a hang is reported as a hang, not as a truncated stream).
  deadline: between any two stages, judging stops with `suite.deadline.total` once the time the
  transfer left of the total deadline (`RawExchange.judging_budget`) is spent.
  status: a non-2xx -> `suite.request.accepted` with the target's error text and the request
  field it names (count_tokens 404/405/501 -> `suite.count_tokens.available`; /responses 404/405 ->
  `suite.responses.available`), and ends judging;
  a connection broken after a 2xx is `suite.transport.complete` on top.
  endpoint: count_tokens is judged by its body and ends judging; a path other than the
  generation ones ends judging with a note.
  grammar: the wire grammar (stream or not, decided by the request's `stream`), which yields the
  accumulated message the later stages read.
  cap: an output cap used up but reported as a natural end (a warning).
  structured, choice, arguments: tools (text-shaped calls, a forced or forbidden tool_choice,
  names and arguments against the schema).
  model_identity: the answering model, whenever a message arrived.
- A tool call cut by the output cap (the last call of a turn whose stop reason is a cut one) is
  `tools.call_cut`, a warning; `tools.arguments_schema` stays passed when the cut was the only
  problem.
- The stream grammar itself is the wire core's (`check_stream` / `check_response`); this module
  adds only suite-level rules on top.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from conformance.checks import identity, limits, stop_reason, tool_choice, tools
from conformance.checks import suite as suite_checks
from conformance.core.failures import HasViolations, Violation
from conformance.core.registry import violation
from conformance.core.verdict import Verdict
from conformance.net.transport import RawExchange
from conformance.wire.dialect import Dialect, dialect, is_generation_path

_DEADLINE_CHECK = {
    "deadline_total": suite_checks.DEADLINE_TOTAL,
    "deadline_first_content": suite_checks.DEADLINE_FIRST_CONTENT,
    "deadline_first_byte": suite_checks.DEADLINE_FIRST_CONTENT,
}


@dataclass
class ExchangeVerdict(HasViolations):
    violations: list[Violation]
    message: dict[str, Any] | None
    api: str
    stream: bool
    outcomes: dict[str, str] = field(default_factory=dict)  # check id -> outcome (results.OUTCOMES)
    notes: dict[str, str] = field(default_factory=dict)  # check id -> why unverifiable / skipped
    events: list = field(default_factory=list)  # SSE events (stream) with arrival times
    status: int | None = None
    error_text: str | None = None  # the target's error message on a non-2xx answer

    @property
    def failed_checks(self) -> list[str]:
        return sorted({v.check_id for v in self.errors})

    @property
    def answered_model(self) -> str | None:
        m = self.message
        if isinstance(m, dict):
            return m.get("model") or None
        return None


# ----------------------------------------------------------------------------- error text
def error_text(body: bytes) -> str:
    """The target's error message from any common envelope, else the body text (clipped)."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text[:600]
    parts: list[str] = []

    def walk(node: Any, depth: int = 0) -> None:
        if depth > 4:
            return
        if isinstance(node, dict):
            for key in ("message", "msg", "detail", "error"):
                val = node.get(key)
                if isinstance(val, str) and val:
                    parts.append(val)
                elif isinstance(val, (dict, list)):
                    walk(val, depth + 1)
            loc = node.get("loc")
            if isinstance(loc, list) and loc:
                parts.append("at " + ".".join(str(x) for x in loc))
        elif isinstance(node, list):
            for item in node[:5]:
                walk(item, depth + 1)

    walk(doc)
    return ("; ".join(dict.fromkeys(parts)) or text)[:600]


def _field_paths(body: Any, prefix: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """(name, JSON pointer) of request fields worth naming: top-level keys and their sub-keys."""
    out: list[tuple[str, str]] = []
    if not isinstance(body, dict) or depth > 1:
        return out
    for key, val in body.items():
        ptr = f"{prefix}/{key}"
        out.append((key, ptr))
        if isinstance(val, dict):
            out.extend(_field_paths(val, ptr, depth + 1))
    return out


_PROSE_WORDS = frozenset({"model", "stream", "type", "messages", "content", "system", "tools", "input", "text"})


def named_field(message: str, body: Any) -> str | None:
    """The JSON pointer of the request field an error message complains about, if it names one.

    Prefers the most specific match (a sub-key like `output_config/effort` over `output_config`),
    then top-level keys the error names; `role: system` inside messages is recognised by wording.
    """
    if not message or not isinstance(body, dict):
        return None
    low = message.lower()
    hits: list[tuple[int, int, str]] = []
    for name, ptr in _field_paths(body):
        word = re.escape(name.lower())
        if name.lower() in _PROSE_WORDS:
            # Words error prose uses anyway ("LiteLLM: model group 'x' failed", "the stream
            # ended") count only when written as a field: quoted, `body.x`, `x:` or `x=`.
            m = re.search(r"(['\"`])" + word + r"\1|\bbody\." + word + r"\b|(?<![a-z0-9_.])" + word + r"\s*[:=]", low)
        else:
            m = re.search(r"(?<![a-z0-9_])" + word + r"(?![a-z0-9_])", low)
        if m:
            hits.append((ptr.count("/"), -m.start(), ptr))
    if re.search(r"\brole\b", low) and "system" in low and isinstance(body.get("messages"), list):
        for i, msg in enumerate(body["messages"]):
            if isinstance(msg, dict) and msg.get("role") == "system":
                hits.append((3, 0, f"/messages/{i}/role"))
                break
    if not hits:
        return None
    hits.sort(reverse=True)
    return hits[0][2]


# ----------------------------------------------------------------------------- the stages
@dataclass
class ExchangeState:
    """What the stages share while judging one exchange: the inputs, what earlier stages read
    (the error text, the accumulated message, the events), and whether judging has ended."""

    raw: RawExchange
    request: dict
    api: str
    expect_model: str | None
    turn: int | None
    stream: bool
    path: str
    error_text: str | None = None
    message: dict[str, Any] | None = None
    events: list = field(default_factory=list)
    unparsed_input: dict[str, str] = field(default_factory=dict)
    ended_by: str | None = None  # the stage after which nothing more is judged
    ran: list[str] = field(default_factory=list)  # the stages that ran, in order

    @classmethod
    def start(cls, raw: RawExchange, request: Any, *, api: str, expect_model: str | None = None,
              turn: int | None = None) -> ExchangeState:
        """The state before the first stage (a request that is not an object reads as {})."""
        request = request if isinstance(request, dict) else {}
        return cls(raw, request, api, expect_model, turn, stream=request.get("stream") is True,
                   path=urlsplit(raw.url).path.rstrip("/"))

    @property
    def wire(self) -> Dialect:
        """The api's Dialect, asked for only by the stages that read the answer: an exchange
        that ends before them is judged whatever its api names."""
        return dialect(self.api)

    def fail(self, check_id: str, message: str, **kw: Any) -> Verdict:
        return Verdict.of(violation(check_id, message, turn=self.turn, **kw))

    @property
    def is_count_tokens(self) -> bool:
        return self.path.endswith("/messages/count_tokens")


Stage = Callable[[ExchangeState], list[Verdict]]


def _end(state: ExchangeState, stage: str, *outcomes: Verdict) -> list[Verdict]:
    state.ended_by = stage
    return list(outcomes)


def transport(state: ExchangeState) -> list[Verdict]:
    """No answer, or a deadline: nothing after it is judged (a hang is a hang, not a truncated
    stream)."""
    raw = state.raw
    if raw.error_kind == "connect" or (raw.status is None and raw.error_kind in ("read", "protocol")):
        return _end(state, "transport", state.fail(
            suite_checks.TARGET_REACHABLE if raw.error_kind == "connect" else suite_checks.TRANSPORT_COMPLETE,
            raw.error or "no answer", expected="an HTTP answer", seen=raw.error_kind))
    if raw.error_kind in _DEADLINE_CHECK:
        return _end(state, "transport", state.fail(
            _DEADLINE_CHECK[raw.error_kind], raw.error or raw.error_kind,
            expected="the exchange to finish within its deadlines",
            seen=f"{len(raw.chunks)} chunks ({len(raw.body())} bytes) in {raw.elapsed:.1f}s, status {raw.status}"))
    if raw.error_kind in limits.LIMIT_CHECK:
        return _end(state, "transport", state.fail(
            limits.LIMIT_CHECK[raw.error_kind], raw.error or raw.error_kind,
            expected="a response within the suite's size limits",
            seen=f"status {raw.status}, {len(raw.chunks)} chunks kept ({len(raw.body())} bytes) of a longer body"))
    if raw.status is None:
        return _end(state, "transport", state.fail(
            suite_checks.TRANSPORT_COMPLETE, raw.error or "no status", expected="an HTTP answer",
            seen=raw.error_kind))
    return []


def status(state: ExchangeState) -> list[Verdict]:
    """A non-2xx ends judging with the target's error text (and the request field it names);
    a 2xx is accepted, and a connection broken after it is reported on top."""
    raw = state.raw
    if not 200 <= raw.status < 300:
        text = error_text(raw.body())
        state.error_text = text
        if state.is_count_tokens and raw.status in (404, 405, 501):
            return _end(state, "status", state.fail(
                suite_checks.COUNT_TOKENS, f"count_tokens is not served: HTTP {raw.status}",
                expected="200 with {input_tokens}", seen=f"HTTP {raw.status}: {text}"))
        unserved = suite_checks.unserved_endpoint(state.path, raw.status)
        if unserved is not None:
            return _end(state, "status", state.fail(
                unserved, f"{state.path} is not served: HTTP {raw.status}", expected="2xx",
                seen=f"HTTP {raw.status}: {text}"))
        ptr = named_field(text, state.request)
        field_note = f" — the error names the request field {ptr}" if ptr else ""
        return _end(state, "status", state.fail(
            suite_checks.REQUEST_ACCEPTED, f"the target refused the request: HTTP {raw.status}{field_note}",
            expected="2xx", seen=f"HTTP {raw.status}: {text}", pointer=ptr))
    out = [Verdict(suite_checks.REQUEST_ACCEPTED, "passed")]
    if raw.error_kind in ("read", "protocol"):
        out.append(state.fail(suite_checks.TRANSPORT_COMPLETE, raw.error or raw.error_kind,
                              expected="the whole response", seen=f"{len(raw.body())} bytes before the break"))
    return out


def endpoint(state: ExchangeState) -> list[Verdict]:
    """count_tokens is judged by its body and ends judging; other paths than generation are not
    judged beyond acceptance (a note says so)."""
    if state.is_count_tokens:
        doc = _body_json(state.raw)
        if isinstance(doc, dict) and isinstance(doc.get("input_tokens"), int) and doc["input_tokens"] >= 0:
            return _end(state, "endpoint", Verdict(suite_checks.COUNT_TOKENS, "passed"))
        return _end(state, "endpoint", state.fail(
            suite_checks.COUNT_TOKENS, "count_tokens answered without an integer input_tokens",
            expected='{"input_tokens": N}', seen=state.raw.body()[:300].decode("utf-8", "replace"),
            pointer="/input_tokens"))
    if not is_generation_path(state.path):
        return _end(state, "endpoint", Verdict(
            suite_checks.STREAM_WELLFORMED, None, note=f"{state.path} is not judged beyond acceptance by this release"))
    return []


def grammar(state: ExchangeState) -> list[Verdict]:
    """The wire core's grammar (stream or not, decided by the request's `stream`), and the
    accumulated message every later stage reads. Each rule's violations keep their order; a rule
    is failed when any of its violations is an error."""
    raw, turn = state.raw, state.turn
    out: list[Verdict] = []
    is_sse = "text/event-stream" in raw.content_type.lower()
    if state.stream and not is_sse:
        out.append(state.fail(suite_checks.STREAM_CONTENT_TYPE,
                              "a stream:true request was answered without an event stream",
                              expected="content-type: text/event-stream",
                              seen=f"content-type: {raw.content_type or '(none)'}"))
    if state.stream and is_sse:
        report = state.wire.check_stream(raw.chunks, request=state.request)
        found = [x.at(turn=turn) for x in report.violations]
        state.message = report.message
        state.events = list(report.events)
        state.unparsed_input = report.unparsed_tool_input
        summary_id = suite_checks.STREAM_WELLFORMED
    else:
        message, found = state.wire.check_response(raw.body(), request=state.request)
        found = [x.at(turn=turn) for x in found]
        state.message = message
        summary_id = suite_checks.RESPONSE_WELLFORMED
    verdict: dict[str, str] = {}
    for g in found:  # an error fails its rule; otherwise the rule's first finding says warning or info
        if g.is_error:
            verdict[g.check_id] = "failed"
        else:
            verdict.setdefault(g.check_id, "warning" if g.severity == "warning" else "info")
    out.extend(Verdict(g.check_id, verdict[g.check_id], (g,)) for g in found)
    out.append(Verdict(summary_id, "failed" if any(g.is_error for g in found) else "passed"))
    return out


def cap(state: ExchangeState) -> list[Verdict]:
    """An answer that used the whole output cap but says it finished (a warning)."""
    judged = stop_reason.cap_outcome(state.message, state.request, state.api, turn=state.turn)
    return [] if judged is None else [judged]


def structured(state: ExchangeState) -> list[Verdict]:
    """Tools offered: calls arrive structured, not as text that looks like a call."""
    judged = tools.structured_outcome(state.message, state.request, state.api, turn=state.turn)
    return [] if judged is None else [judged]


def choice(state: ExchangeState) -> list[Verdict]:
    """A forced or forbidden tool_choice is honoured."""
    judged = tool_choice.choice_outcome(state.message, state.request, state.api, turn=state.turn)
    return [] if judged is None else [judged]


def arguments(state: ExchangeState) -> list[Verdict]:
    """Every structured call names an offered tool and fits its schema (or was cut by the cap)."""
    return tools.arguments_outcomes(state.message, state.request, state.api, turn=state.turn,
                                    unparsed_input=state.unparsed_input)


def model_identity(state: ExchangeState) -> list[Verdict]:
    """The model that answered is the one asked for (judged whenever a message arrived)."""
    if state.message is None:
        return []
    seen = state.message.get("model") or None if isinstance(state.message, dict) else None
    return [identity.model_outcome(seen, state.request.get("model"), state.expect_model, turn=state.turn,
                                   echoes_alias=identity.echoes_alias(state.raw.response_headers))]


# The order is the module rules' order; a stage that ends judging sets `ended_by`.
STAGES: tuple[Stage, ...] = (transport, status, endpoint, grammar, cap, structured, choice, arguments,
                             model_identity)


# ----------------------------------------------------------------------------- the judge
def _body_json(raw: RawExchange) -> Any:
    try:
        return json.loads(raw.body().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError):
        return None


def judge_stages(
    raw: RawExchange,
    request: dict,
    *,
    wire: Dialect | str,
    expect_model: str | None = None,
    turn: int | None = None,
) -> tuple[ExchangeState, list[Verdict]]:
    """Run STAGES in order until one ends judging: the shared state and every outcome, in order."""
    state = ExchangeState.start(raw, request, api=dialect(wire).name, expect_model=expect_model, turn=turn)
    outcomes: list[Verdict] = []
    budget = raw.judging_budget()  # the total deadline bounds judging too (net.transport rules)
    started = time.monotonic()
    for stage in STAGES:
        spent = time.monotonic() - started
        if budget is not None and spent > budget:
            outcomes.extend(_end(state, "deadline", state.fail(
                suite_checks.DEADLINE_TOTAL,
                f"decoding and judging passed the total deadline of {raw.deadline_total:g}s: stopped before "
                f"the {stage.__name__} stage after {spent:.1f}s of judging (the transfer took {raw.elapsed:.1f}s)",
                expected="the exchange, judging included, to finish within its total deadline",
                seen=f"{len(raw.chunks)} chunks ({raw.bytes_read or len(raw.body())} bytes)")))
            break
        state.ran.append(stage.__name__)
        outcomes.extend(stage(state))
        if state.ended_by is not None:
            break
    return state, outcomes


def check_exchange(
    raw: RawExchange,
    request: dict,
    *,
    wire: Dialect | str,
    expect_model: str | None = None,
    turn: int | None = None,
) -> ExchangeVerdict:
    """Judge one exchange with every applicable check (see the module rules)."""
    state, outcomes = judge_stages(raw, request, wire=wire, expect_model=expect_model, turn=turn)
    verdict = ExchangeVerdict([], state.message, state.api, state.stream, events=state.events, status=raw.status,
                              error_text=state.error_text)
    for judged in outcomes:
        verdict.violations.extend(judged.violations)
        if judged.outcome is not None:
            verdict.outcomes[judged.check_id] = judged.outcome
        if judged.note:
            verdict.notes[judged.check_id] = judged.note
    return verdict
