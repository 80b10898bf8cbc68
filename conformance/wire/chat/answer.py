"""OpenAI chat-completions wire: a non-stream response, an error answer, and when content started.

Rules:
- `check_response` judges a non-stream chat.completion against its schema and the rules of
  `rules.py` a whole message can break (arguments a JSON-object string, finish_reason tool_calls
  exactly when calls were made, usage sums), and normalises choice 0 into the message shape the
  stream judge accumulates.
- `check_error` judges the `{"error": {...}}` envelope.
- `content_started`: a role-only first chunk, empty chunks and comments are not content.
- Nothing here raises on a target's bytes: bad input is a violation.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.core.failures import Violation
from conformance.core.registry import violation
from conformance.wire.base import (
    answer_object,
    error_envelope_problems,
    json_check,
    load_json,
    parse_json,
    schema_violations,
)
from conformance.wire.chat.rules import (
    CUT_FINISH_REASONS,
    ENVELOPE,
    RESPONSE,
    RESPONSE_SCHEMA_CHECKS,
    is_cut,
    named_tool_choice,
    usage_problems,
)
from conformance.wire.sse import decode, head_then_whole


def check_response(body, *, request: dict | None = None) -> tuple[dict | None, list[Violation]]:
    """Judge a non-stream chat.completion. Returns (the normalised message or None, violations)."""
    request = request or {}
    data, out = answer_object(body, RESPONSE + "json", "a chat.completion object")
    if data is None:
        return None, out
    out += schema_violations("openai.chat_completion", data, RESPONSE_SCHEMA_CHECKS, "response", RESPONSE + "schema")
    choices = data.get("choices") if isinstance(data.get("choices"), list) else []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    m = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    calls_in = m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else []
    reason = choice.get("finish_reason")
    # the last call of a turn cut by the cap may be cut too: tools.call_cut judges it, not this rule
    last = max((i for i, c in enumerate(calls_in) if isinstance(c, dict)), default=None)
    calls = []
    for i, c in enumerate(calls_in):
        if not isinstance(c, dict):
            continue
        fn = c.get("function") if isinstance(c.get("function"), dict) else {}
        args = fn.get("arguments")
        if isinstance(args, str) and not (i == last and is_cut(reason)):
            try:
                value = parse_json(args)
                if not isinstance(value, dict):
                    raise ValueError(f"parses to a {type(value).__name__}, not an object")
            except ValueError as exc:
                out.append(violation(json_check(str(exc), RESPONSE + "tool_arguments_json"), f"tool call {i} arguments do not parse: {exc}",
                                     expected="one JSON object", seen=args[:300],
                                     pointer=f"/choices/0/message/tool_calls/{i}/function/arguments"))
        elif args is not None and not isinstance(args, str):
            args = json.dumps(args)
        calls.append({"id": c.get("id"), "type": c.get("type", "function"),
                      "function": {"name": fn.get("name"), "arguments": args if args is not None else ""}})
    if calls:
        allowed = {"tool_calls"} | CUT_FINISH_REASONS | ({"stop"} if named_tool_choice(request) else set())
        if reason not in allowed:
            out.append(violation(RESPONSE + "finish_reason_tool_calls", f"{len(calls)} tool call(s) but finish_reason "
                                 f"{reason!r}", expected=" or ".join(sorted(allowed)), seen=reason,
                                 pointer="/choices/0/finish_reason"))
    elif reason == "tool_calls":
        out.append(violation(RESPONSE + "finish_reason_tool_calls", "finish_reason tool_calls but no tool calls",
                             expected="stop (or length)", seen=reason, pointer="/choices/0/finish_reason"))
    out.extend(usage_problems(data.get("usage"), RESPONSE + "usage_consistent"))
    message: dict[str, Any] = {"id": data.get("id"), "model": data.get("model"), "role": m.get("role", "assistant"),
                               "content": m.get("content")}
    for key in ("reasoning_content", "reasoning"):
        if isinstance(m.get(key), str):
            message["reasoning_content"] = m[key]
            break
    message["tool_calls"] = calls
    message["finish_reason"] = reason
    message["usage"] = data.get("usage")
    return message, out


# ----------------------------------------------------------------------------- errors
def check_error(status: int, body: bytes) -> list[Violation]:
    """Judge an error response: `{"error": {"message": str, "type": ..., ...}}`."""
    return error_envelope_problems(ENVELOPE, "openai.error", status, body,
                                   '{"error": {"message": ..., "type": ...}}')[1]


# ----------------------------------------------------------------------------- first content
def content_started(buf: bytes) -> bool:
    """True once `buf` holds content: text, reasoning, a tool call, a finish, [DONE] or an error.

    A role-only first chunk, empty chunks and comments are not content. A body that is not an
    event stream (JSON response or error) is content from its first byte.
    """
    head = buf.lstrip()[:1]
    if not head:
        return False
    if head in (b"{", b"["):
        return True
    return any(_has_content(part) for part in head_then_whole(buf))  # (see the anthropic wire's content_started)


def _has_content(buf: bytes) -> bool:
    events, _ = decode(buf)
    for ev in events:
        if ev.data.strip() == "[DONE]" or ev.event == "error":
            return True
        data, _err = load_json(ev.data)
        if not isinstance(data, dict):
            return True  # garbage is an answer too: let the judge see it
        if "error" in data:
            return True
        for c in data.get("choices") or []:
            if not isinstance(c, dict):
                continue
            d = c.get("delta") if isinstance(c.get("delta"), dict) else {}
            if c.get("finish_reason") or d.get("content") or d.get("tool_calls") or d.get("reasoning_content") \
                    or d.get("reasoning"):
                return True
    return False
