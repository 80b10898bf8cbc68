"""The minimal Anthropic -> OpenAI-chat translation, independent of every router.

Rules:
- `minimal_openai_request` is the documented minimal translation attribution uses when the engine
  has no route for the client's wire: system -> a system message; text -> content; tool_use ->
  tool_calls; tool_result -> tool messages (before the text of the same message); tools ->
  functions; max_tokens, stop_sequences -> stop, stream (+ include_usage). Nothing else is carried.
- It reads the request's conversation through the source wire's Dialect (`turns`) and writes
  the chat shape of TARGET; an invalid request (messages not a list) stays invalid, unchanged.
- It is independent of the reference router's translation (conformance.router.translate) on
  purpose: a bug shared by the router under test and the yardstick would hide.
- SOURCE and TARGET are the two wires it joins (Anthropic Messages -> OpenAI chat);
  `translates(wire)` says whether a client's request is one it takes: a wire routers translate
  (`Dialect.router_translates`), of which it is the yardstick.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.wire import ANTHROPIC, CHAT
from conformance.wire.dialect import Dialect

SOURCE: Dialect = ANTHROPIC  # the wire minimal_openai_request reads
TARGET: Dialect = CHAT  # the wire it writes


def translates(wire: Dialect) -> bool:
    """Does the minimal translation take a request of `wire` (module rules)?"""
    return wire.router_translates


def _chat_messages(body: dict) -> list[dict]:
    turns = SOURCE.turns(body)
    messages = [{"role": "system", "content": "\n".join(t.texts)} for t in turns if t.index < 0]
    by_index = {t.index: t for t in turns if t.index >= 0}
    for entry in SOURCE.entries(body):
        role, content, turn = entry.value.get("role"), entry.value.get("content"), by_index[entry.index]
        if isinstance(content, str):  # a string content is one message, as it is
            messages.append({"role": role, "content": content})
            continue
        words = "\n".join(turn.texts)
        messages += [{"role": "tool", "tool_call_id": rid, "content": text} for rid, text in turn.results]
        calls = [{"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(
            {} if args is None else args)}} for cid, name, args in turn.calls]
        if calls:
            messages.append({"role": "assistant", "content": words or None, "tool_calls": calls})
        elif words or role != "user":
            messages.append({"role": role, "content": words})
    return messages


def minimal_openai_request(body: dict) -> dict:
    """The documented minimal Anthropic -> OpenAI-chat translation (see the module rules)."""
    if not isinstance(body.get(SOURCE.conversation_key), list):  # an invalid request stays invalid, unchanged
        return {k: body[k] for k in ("model", "messages", "max_tokens", "stream") if k in body}
    out: dict[str, Any] = {"model": body.get("model", ""), "messages": _chat_messages(body)}
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
