"""Anthropic Messages wire: a non-stream response, an error answer, and when content started.

Rules:
- `check_response` judges a non-stream Messages response against its schema and the rules of
  `rules.py` that a whole message can break (stop_sequence present, stop_reason valid and
  tool_use exactly when a tool_use block is there, thinking signatures).
- `check_error` judges an error envelope, its error type and the HTTP status that goes with it.
- `content_started` tells a hung target from a slow one: message_start, pings and comments are
  not content.
- Nothing here raises on a target's bytes: bad input is a violation.
"""

from __future__ import annotations

import json

from conformance.core.failures import Violation
from conformance.core.registry import violation
from conformance.wire.anthropic.rules import (
    CUT_STOP_REASONS,
    ENVELOPE,
    ERROR_STATUS,
    RESPONSE,
    RESPONSE_SCHEMA_CHECKS,
)
from conformance.wire.base import (
    answer_object,
    error_envelope_problems,
    load_json,
    schema_violations,
)
from conformance.wire.sse import decode, head_then_whole


def check_response(body, *, request: dict | None = None) -> tuple[dict | None, list[Violation]]:
    """Judge a non-stream Messages response. Returns (the message or None, violations)."""
    data, out = answer_object(body, RESPONSE + "json", "a Messages response object")
    if data is None:
        return None, out
    if data.get("type") == "error":
        out.append(violation(RESPONSE + "schema", "a 2xx response carries an error envelope",
                             expected='"type": "message"', seen=json.dumps(data)[:300], pointer="/type"))
        return None, out
    out += schema_violations("anthropic.message", data, RESPONSE_SCHEMA_CHECKS, "message", RESPONSE + "schema")
    content = data.get("content") if isinstance(data.get("content"), list) else []
    reason = data.get("stop_reason")
    has_tool_use = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
    if reason == "tool_use" and not has_tool_use:
        out.append(violation(RESPONSE + "tool_use_stop_reason", "stop_reason tool_use but no tool_use block",
                             expected="a tool_use block", seen="stop_reason tool_use", pointer="/stop_reason"))
    elif has_tool_use and reason != "tool_use" and reason not in CUT_STOP_REASONS:
        out.append(violation(RESPONSE + "tool_use_stop_reason", f"a tool_use block but stop_reason {reason!r}",
                             expected="stop_reason tool_use", seen=reason, pointer="/stop_reason"))
    for i, b in enumerate(content):
        if isinstance(b, dict) and b.get("type") == "thinking" and not b.get("signature"):
            out.append(violation(RESPONSE + "thinking_signature", f"thinking block {i} has no signature",
                                 expected="a non-empty signature", seen=json.dumps(b.get("signature")),
                                 pointer=f"/content/{i}/signature"))
    return data, out


# ----------------------------------------------------------------------------- errors
def check_error(status: int, body: bytes) -> list[Violation]:
    """Judge an error response: the envelope, a defined error type, and the status that goes with it."""
    cid = ENVELOPE
    data, out = error_envelope_problems(cid, "anthropic.error", status, body,
                                        '{"type":"error","error":{"type":...,"message":...}}', error_status=False)
    if data is None:
        return out
    etype = data.get("error", {}).get("type") if isinstance(data.get("error"), dict) else None
    want = ERROR_STATUS.get(etype) if isinstance(etype, str) else None
    known_statuses = set(ERROR_STATUS.values())
    if want is not None and status != want and status in known_statuses:
        out.append(violation(cid, f"error type {etype!r} comes with HTTP {want}, not {status}",
                             expected=f"HTTP {want}", seen=f"HTTP {status}"))
    elif status not in known_statuses:
        # 5xx from a proxy in front (502/503) is a gateway matter: warn; other codes mislead clients.
        out.append(violation(cid, f"HTTP {status} is not a status the Anthropic API uses"
                             + (f" (error type {etype!r} goes with {want})" if want else ""),
                             expected="one of " + ", ".join(str(s) for s in sorted(known_statuses)),
                             seen=f"HTTP {status}", severity="warning" if status >= 500 else None))
    return out


# ----------------------------------------------------------------------------- first content
_CONTENT_EVENTS = frozenset({"content_block_start", "content_block_delta", "message_delta", "message_stop", "error"})


def content_started(buf: bytes) -> bool:
    """True once `buf` (the bytes so far) holds content: a block, a delta, the end or an error.

    message_start, pings and comments are not content (a target that sends only those is hung).
    A body that is not an event stream (a JSON response or error) is content from its first byte.
    """
    head = buf.lstrip()[:1]
    if not head:
        return False
    if head in (b"{", b"["):
        return True
    if not any(name.encode() in buf for name in _CONTENT_EVENTS):
        return False
    # Content comes early: judge a short head first (events of a prefix are the first events of
    # the whole, so a True there is the answer), the whole buffer only when the head has none.
    return any(_has_content(part) for part in head_then_whole(buf))


def _has_content(buf: bytes) -> bool:
    events, _ = decode(buf)
    for ev in events:
        name = ev.event
        if name is None:
            data, _err = load_json(ev.data)
            name = data.get("type") if isinstance(data, dict) else None
        if name in _CONTENT_EVENTS:
            return True
    return False
