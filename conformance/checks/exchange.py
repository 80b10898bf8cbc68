"""Judge one exchange with every applicable check: the function replay, the loop driver,
attribution and the probes all call.

Rules:
- `check_exchange(raw, request, api=..., expect_model=..., turn=...)` never raises on a target's
  behaviour; it returns an `ExchangeVerdict`: the violations (errors and warnings), the
  accumulated message (via `conformance.wire.<api>`), and `outcomes`, the verdict per check
  id that applied (passed / failed / warning / unverifiable / skipped) — what the results record
  stores, so a pass is recorded as a pass, not as silence.
- Order, and what stops judging: transport errors first (connect → `suite.target.reachable`;
  deadlines → `suite.deadline.*`, and a stream cut by a deadline is not judged further, so a hang
  is reported as a hang, not as a truncated stream); then the status (non-2xx →
  `suite.request.accepted` with the target's error text and the request field it names;
  count_tokens → `suite.count_tokens.available`); then the wire grammar (stream or not, decided
  by the request's `stream`), an output cap used up but reported as a natural end (a warning),
  tools (text-shaped calls, a forced or forbidden tool_choice,
  arguments against the schema) and model identity on the accumulated message.
- A tool call cut by the output cap (the last call of a turn whose stop reason is a cut one) is
  `tools.call_cut`, a warning; `tools.arguments_schema` stays passed when the cut was the only
  problem.
- The stream grammar itself is the wire core's (`check_stream` / `check_response`); this module
  adds only suite-level rules on top.
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from conformance.checks import identity, stop_reason, tool_choice, tools
from conformance.checks import suite as S
from conformance.core.failures import HasViolations, Violation
from conformance.core.registry import violation
from conformance.net.transport import RawExchange

_DEADLINE_CHECK = {
    "deadline_total": S.DEADLINE_TOTAL,
    "deadline_first_content": S.DEADLINE_FIRST_CONTENT,
    "deadline_first_byte": S.DEADLINE_FIRST_CONTENT,
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


def protocol(api: str):
    """The wire-core module for an API (`conformance.wire.anthropic` / `.openai`)."""
    if api not in ("anthropic", "openai"):
        raise ValueError(f"unknown api {api!r}: expected 'anthropic' or 'openai'")
    return importlib.import_module(f"conformance.wire.{api}")


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


# ----------------------------------------------------------------------------- the judge
def _body_json(raw: RawExchange) -> Any:
    try:
        return json.loads(raw.body().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError):
        return None


def check_exchange(
    raw: RawExchange,
    request: dict,
    *,
    api: str,
    expect_model: str | None = None,
    turn: int | None = None,
) -> ExchangeVerdict:
    """Judge one exchange with every applicable check (see the module rules)."""
    request = request if isinstance(request, dict) else {}
    stream = request.get("stream") is True
    path = urlsplit(raw.url).path.rstrip("/")
    v = ExchangeVerdict([], None, api, stream, status=raw.status)

    def fail(check_id: str, message: str, **kw: Any) -> None:
        viol = violation(check_id, message, turn=turn, **kw)
        v.violations.append(viol)
        v.outcomes[check_id] = "failed" if viol.is_error else "warning"

    # 1. transport
    if raw.error_kind == "connect" or (raw.status is None and raw.error_kind in ("read", "protocol")):
        fail(S.TARGET_REACHABLE if raw.error_kind == "connect" else S.TRANSPORT_COMPLETE,
             raw.error or "no answer", expected="an HTTP answer", seen=raw.error_kind)
        return v
    if raw.error_kind in _DEADLINE_CHECK:
        cid = _DEADLINE_CHECK[raw.error_kind]
        fail(cid, raw.error or raw.error_kind,
             expected="the exchange to finish within its deadlines",
             seen=f"{len(raw.chunks)} chunks ({len(raw.body())} bytes) in {raw.elapsed:.1f}s, status {raw.status}")
        return v
    if raw.status is None:
        fail(S.TRANSPORT_COMPLETE, raw.error or "no status", expected="an HTTP answer", seen=raw.error_kind)
        return v

    # 2. status
    is_count_tokens = path.endswith("/messages/count_tokens")
    if not 200 <= raw.status < 300:
        text = error_text(raw.body())
        v.error_text = text
        if is_count_tokens and raw.status in (404, 405, 501):
            fail(S.COUNT_TOKENS, f"count_tokens is not served: HTTP {raw.status}",
                 expected="200 with {input_tokens}", seen=f"HTTP {raw.status}: {text}")
            return v
        ptr = named_field(text, request)
        field_note = f" — the error names the request field {ptr}" if ptr else ""
        fail(S.REQUEST_ACCEPTED, f"the target refused the request: HTTP {raw.status}{field_note}",
             expected="2xx", seen=f"HTTP {raw.status}: {text}", pointer=ptr)
        return v
    v.outcomes[S.REQUEST_ACCEPTED] = "passed"
    if raw.error_kind in ("read", "protocol"):
        fail(S.TRANSPORT_COMPLETE, raw.error or raw.error_kind, expected="the whole response",
             seen=f"{len(raw.body())} bytes before the break")

    if is_count_tokens:
        doc = _body_json(raw)
        if isinstance(doc, dict) and isinstance(doc.get("input_tokens"), int) and doc["input_tokens"] >= 0:
            v.outcomes[S.COUNT_TOKENS] = "passed"
        else:
            fail(S.COUNT_TOKENS, "count_tokens answered without an integer input_tokens",
                 expected='{"input_tokens": N}', seen=raw.body()[:300].decode("utf-8", "replace"),
                 pointer="/input_tokens")
        return v
    if not (path.endswith("/messages") or path.endswith("/chat/completions")):
        v.notes[S.STREAM_WELLFORMED] = f"{path} is not judged beyond acceptance by this release"
        return v

    # 3. wire grammar
    proto = protocol(api)
    is_sse = "text/event-stream" in raw.content_type.lower()
    if stream and not is_sse:
        fail(S.STREAM_CONTENT_TYPE, "a stream:true request was answered without an event stream",
             expected="content-type: text/event-stream", seen=f"content-type: {raw.content_type or '(none)'}")
    unparsed_input: dict[str, str] = {}
    if stream and is_sse:
        report = proto.check_stream(raw.chunks, request=request)
        grammar = [x.at(turn=turn) for x in report.violations]
        v.message = report.message
        v.events = list(report.events)
        unparsed_input = report.unparsed_tool_input
        summary_id = S.STREAM_WELLFORMED
    else:
        message, grammar = proto.check_response(raw.body(), request=request)
        grammar = [x.at(turn=turn) for x in grammar]
        v.message = message
        summary_id = S.RESPONSE_WELLFORMED
    for g in grammar:
        v.violations.append(g)
        if g.is_error:
            v.outcomes[g.check_id] = "failed"
        else:
            v.outcomes.setdefault(g.check_id, "warning" if g.severity == "warning" else "info")
    v.outcomes[summary_id] = "failed" if any(g.is_error for g in grammar) else "passed"

    # 3b. an answer that used the whole output cap but says it finished (a warning)
    capped = stop_reason.check_cap_reported(v.message, request, api, turn=turn)
    if capped is not None:
        v.outcomes[stop_reason.CAP_REPORTED] = capped[0]
        v.violations.extend(capped[1])

    # 4. tools
    message = v.message
    if tools.offered_tools(request, api):
        structured = tools.check_call_structured(message, request, api, turn=turn)
        for x in structured:
            v.violations.append(x)
        v.outcomes[tools.CALL_STRUCTURED] = "failed" if structured else "passed"
    choice = tool_choice.check_choice(message, request, api, turn=turn)
    if choice is not None:
        outcome, choice_violations, note = choice
        v.violations.extend(choice_violations)
        v.outcomes[tool_choice.CHOICE_HONOURED] = outcome
        if note:
            v.notes[tool_choice.CHOICE_HONOURED] = note
    calls = tools.tool_calls(message, api, unparsed_input)
    if calls:
        arg_violations, notes = tools.check_arguments(message, request, api, turn=turn,
                                                      unparsed_input=unparsed_input)
        v.violations.extend(arg_violations)
        ids = {x.check_id for x in arg_violations}
        v.outcomes[tools.NAME_OFFERED] = "failed" if tools.NAME_OFFERED in ids else "passed"
        v.outcomes[tools.CALL_CUT] = "warning" if tools.CALL_CUT in ids else "passed"
        v.outcomes[tools.ARGUMENTS_SCHEMA] = "failed" if tools.ARGUMENTS_SCHEMA in ids else (
            "unverifiable" if notes and len(notes) >= len(calls) else "passed")
        if notes:
            v.notes[tools.ARGUMENTS_SCHEMA] = "; ".join(notes)

    # 5. model identity
    if message is not None:
        outcome, viol, note = identity.judge_model(
            v.answered_model, request.get("model"), expect_model, turn=turn,
            echoes_alias=identity.echoes_alias(raw.response_headers))
        if viol is not None:
            v.violations.append(viol)
        v.outcomes[identity.MODEL_MATCHES] = outcome
        if note:
            v.notes[identity.MODEL_MATCHES] = note
    return v
