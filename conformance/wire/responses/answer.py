"""OpenAI Responses API wire: a non-stream Response, an error answer, and when content started.

Rules:
- `check_response` judges a non-stream Response against its schema, its status and its usage,
  and normalises it into the message shape the stream judge accumulates.
- `check_error` judges the `{"error": {"message": ...}}` envelope with a 4xx / 5xx status.
- `content_started`: the lifecycle events and an item's added event are not content.
- Nothing here raises on a target's bytes: bad input is a violation.
"""

from __future__ import annotations

import json

from conformance.core.failures import Violation
from conformance.core.registry import violation
from conformance.wire.base import (
    answer_object,
    error_envelope_problems,
    load_json,
    schema_violations,
)
from conformance.wire.responses.rules import (
    ENVELOPE,
    RESPONSE_SCHEMA,
    RESPONSE_USAGE,
    TERMINALS,
    normalised,
    usage_problems,
)
from conformance.wire.sse import decode


def check_response(body, *, request: dict | None = None) -> tuple[dict | None, list[Violation]]:
    """Judge a non-stream Response object. Returns (the normalised message or None, violations)."""
    data, out = answer_object(body, RESPONSE_SCHEMA, "a Response object")
    if data is None:
        return None, out
    out += schema_violations("responses.response", data, [], "", RESPONSE_SCHEMA, prefix="response: ")
    status = data.get("status")
    if status not in ("completed", "incomplete", "failed", "in_progress", "queued", "cancelled", None):
        out.append(violation(RESPONSE_SCHEMA, f"unknown status {status!r}", expected="completed | incomplete | "
                             "failed", seen=repr(status), pointer="/status"))
    usage = data.get("usage")
    if status in ("completed", "incomplete") and not isinstance(usage, dict):
        out.append(violation(RESPONSE_USAGE, "the response carries no usage", severity="warning",
                             expected="usage", seen=json.dumps(usage), pointer="/usage"))
    out.extend(usage_problems(usage, RESPONSE_USAGE, "/usage"))
    output = data.get("output") if isinstance(data.get("output"), list) else []
    return normalised(data, [i for i in output if isinstance(i, dict)], None), out


# ----------------------------------------------------------------------------- errors
def check_error(status: int, body: bytes) -> list[Violation]:
    """Judge an error response: `{"error": {"message": str, "type": ..., "code": ...}}`."""
    return error_envelope_problems(ENVELOPE, "responses.error", status, body, '{"error": {"message": ...}}')[1]


# ----------------------------------------------------------------------------- first content
_CONTENT_EVENTS = frozenset({"response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta",
                             "response.reasoning_summary_text.delta", "response.function_call_arguments.delta",
                             "response.custom_tool_call_input.delta", "response.output_item.done", "error",
                             *TERMINALS})


def content_started(buf: bytes) -> bool:
    """True once `buf` holds content: a text / reasoning / tool delta, a finished item, a terminal
    or error event. The lifecycle events and an item's added event are not content. A body that is
    not an event stream (JSON response or error) is content from its first byte."""
    head = buf.lstrip()[:1]
    if not head:
        return False
    if head in (b"{", b"["):
        return True
    events, _ = decode(buf)
    for ev in events:
        data, _err = load_json(ev.data)
        if not isinstance(data, dict):
            return True  # garbage is an answer too: let the judge see it
        kind = data.get("type")
        if (isinstance(kind, str) and kind in _CONTENT_EVENTS) or ev.event in _CONTENT_EVENTS:
            return True
    return False
