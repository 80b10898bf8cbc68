"""The minimal Anthropic -> OpenAI-chat translation, independent of every router.

Rules:
- `minimal_openai_request` is the documented minimal translation attribution uses when the engine
  has no `/v1/messages`: system -> a system message; text -> content; tool_use -> tool_calls;
  tool_result -> tool messages; tools -> functions; max_tokens, stop_sequences -> stop, stream
  (+ include_usage). Nothing else is carried.
- It is independent of the reference router's translation (conformance.router.translate) on
  purpose: a bug shared by the router under test and the yardstick would hide.
- SOURCE and TARGET are the two wires it joins (Anthropic Messages -> OpenAI chat): attribution
  asks them which replay forms a client's request has.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.wire.dialect import Dialect, dialect

SOURCE: Dialect = dialect("anthropic")  # the wire minimal_openai_request reads
TARGET: Dialect = dialect("openai")  # the wire it writes


def minimal_openai_request(body: dict) -> dict:
    """The documented minimal Anthropic -> OpenAI-chat translation (see the module rules)."""
    def text(content: Any) -> str:
        if isinstance(content, str):
            return content
        return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")

    if not isinstance(body.get("messages"), list):  # an invalid request stays invalid, unchanged
        return {k: body[k] for k in ("model", "messages", "max_tokens", "stream") if k in body}
    messages: list[dict] = []
    if body.get("system"):
        messages.append({"role": "system", "content": text(body["system"])})
    for m in body.get("messages") or []:
        role, content = m.get("role"), m.get("content")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            continue
        blocks = [b for b in content or [] if isinstance(b, dict)]
        for b in blocks:
            if b.get("type") == "tool_result":
                messages.append({"role": "tool", "tool_call_id": b.get("tool_use_id", ""), "content": text(b.get("content", ""))})
        calls = [{"id": b.get("id", ""), "type": "function",
                  "function": {"name": b.get("name", ""), "arguments": json.dumps(b.get("input", {}))}}
                 for b in blocks if b.get("type") == "tool_use"]
        words = text(blocks)
        if calls:
            messages.append({"role": "assistant", "content": words or None, "tool_calls": calls})
        elif words or role != "user":
            messages.append({"role": role, "content": words})
    out: dict[str, Any] = {"model": body.get("model", ""), "messages": messages}
    if body.get("max_tokens"):
        out["max_tokens"] = body["max_tokens"]
    if body.get("stop_sequences"):
        out["stop"] = body["stop_sequences"]
    if body.get("tools"):
        out["tools"] = [{"type": "function", "function": {"name": t.get("name"), "description": t.get("description", ""),
                                                          "parameters": t.get("input_schema", {})}} for t in body["tools"]]
    if body.get("stream"):
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    return out
