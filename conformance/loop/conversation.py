"""How each wire's real client carries its conversation on after tool calls.

Rules:
- One `Conversation` per wire, keyed by the Dialect's name (`CONVERSATIONS`, `conversation(api)`):
  the loop drives the Anthropic wire as Claude Code does and the OpenAI chat wire as opencode does
  (`conformance.loop.tools.CLIENT_FOR_API`). The shapes are the clients' own, measured on Claude
  Code 2.1.197 and opencode 1.18.33 against a loopback server (docs/loop.md), down to key order.
- Claude Code: the assistant message with its content blocks verbatim (thinking + signature, text,
  tool_use), then one user message of `tool_result` blocks (`is_error: true` on errors, `is_error:
  false` where the client marks a success); one message-level cache breakpoint, moved to the last
  block each turn; thinking and redacted_thinking blocks go back unchanged.
- opencode: the assistant message with `content: ""` (or the text) and `tool_calls`, then one
  `role: tool` message per call with its `tool_call_id`.
- Forcing a tool call (a scenario's `tool_choice_required`, turn 1 only) uses the wire's "any
  tool" choice. The Messages API refuses a forced tool_choice with thinking on, and a later turn may
  not switch thinking back on, so a forced Claude Code loop runs as with MAX_THINKING_TOKENS=0:
  thinking disabled, no context_management (WIRE.md).
- The readers (`echoed_call_ids`, `answered_ids`, `kept_blocks`) read a request as this client
  writes it, for the driver's self-check (`conformance.loop.driver.check_outgoing`).
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.loop.sandbox import ToolOutcome
from conformance.wire.dialect import ANTHROPIC, OPENAI


class Conversation:
    """The client's way on one wire; subclasses hold the shapes."""

    # assistant block types the client sends back unchanged (the self-check compares them)
    kept_kinds: tuple[str, ...] = ()
    # the client keeps one message-level cache_control breakpoint, on the newest block
    moves_cache_breakpoint: bool = False

    def force_tool_call(self, body: dict) -> None:
        """Make the request demand a call of some tool (in place)."""
        raise NotImplementedError

    def echo_assistant(self, message: dict) -> dict:
        """The assistant turn as the client sends it back."""
        raise NotImplementedError

    def result_messages(self, call_ids: list[str], outcomes: list[ToolOutcome]) -> list[dict]:
        """The messages carrying the tool results, one outcome per call id, in call order."""
        raise NotImplementedError

    def echoed_call_ids(self, sent: dict) -> list | None:
        """The tool call ids of an assistant message sent back, where they are compared with the
        received ones (None: the content goes back verbatim and is compared block by block)."""
        return None

    def answered_ids(self, after: list) -> list:
        """The call ids the tool results answer, in the messages after the assistant message."""
        raise NotImplementedError

    def kept_blocks(self, message: dict, kind: str) -> list[dict]:
        """The blocks of type `kind` of an assistant message (received or sent back)."""
        content = message.get("content")
        return [b for b in content or [] if isinstance(b, dict) and b.get("type") == kind] \
            if isinstance(content, list) else []


class ClaudeCodeConversation(Conversation):
    kept_kinds = ("thinking", "redacted_thinking")
    moves_cache_breakpoint = True

    def force_tool_call(self, body: dict) -> None:
        body["tool_choice"] = {"type": "any"}
        if (body.get("thinking") or {}).get("type") not in (None, "disabled"):
            body["thinking"] = {"type": "disabled"}
            body.pop("context_management", None)

    def echo_assistant(self, message: dict) -> dict:
        return {"role": "assistant", "content": copy.deepcopy(message.get("content") or [])}

    def result_messages(self, call_ids: list[str], outcomes: list[ToolOutcome]) -> list[dict]:
        blocks = []
        for call_id, outcome in zip(call_ids, outcomes, strict=True):
            if outcome.is_error:
                blocks.append({"type": "tool_result", "content": outcome.text, "is_error": True,
                               "tool_use_id": call_id})
            elif outcome.explicit_ok:
                blocks.append({"tool_use_id": call_id, "type": "tool_result", "content": outcome.text,
                               "is_error": False})
            else:
                blocks.append({"tool_use_id": call_id, "type": "tool_result", "content": outcome.text})
        return [{"role": "user", "content": blocks}]

    def answered_ids(self, after: list) -> list:
        return [b.get("tool_use_id") for m in after
                if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), list)
                for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


class OpencodeConversation(Conversation):
    def force_tool_call(self, body: dict) -> None:
        body["tool_choice"] = "required"

    def echo_assistant(self, message: dict) -> dict:
        out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
        calls = message.get("tool_calls") or []
        if calls:
            out["tool_calls"] = [{"id": tc.get("id"), "type": "function",
                                  "function": {"name": (tc.get("function") or {}).get("name"),
                                               "arguments": (tc.get("function") or {}).get("arguments")}}
                                 for tc in calls]
        return out

    def result_messages(self, call_ids: list[str], outcomes: list[ToolOutcome]) -> list[dict]:
        return [{"role": "tool", "tool_call_id": call_id, "content": outcome.text}
                for call_id, outcome in zip(call_ids, outcomes, strict=True)]

    def echoed_call_ids(self, sent: dict) -> list | None:
        return [tc.get("id") for tc in sent.get("tool_calls") or []]

    def answered_ids(self, after: list) -> list:
        return [m.get("tool_call_id") for m in after if isinstance(m, dict) and m.get("role") == "tool"]


CONVERSATIONS: dict[str, Conversation] = {ANTHROPIC.name: ClaudeCodeConversation(),
                                          OPENAI.name: OpencodeConversation()}


def conversation(api: str) -> Conversation:
    """The Conversation of an API name (the Dialect's name)."""
    try:
        return CONVERSATIONS[api]
    except KeyError:
        raise ValueError(f"api must be one of {sorted(CONVERSATIONS)}, got {api!r}") from None
