"""How each wire's real client carries its conversation on after tool calls.

Rules:
- One `Conversation` per wire, chosen by the Dialect object (`conversation_for(wire)`): the loop
  drives each wire as the client whose own wire it is (`conformance.clients.profile_for_wire`)
  carries it on — Claude Code on the Anthropic wire, opencode on the OpenAI chat wire, Codex CLI
  on the Responses wire; a client the suite does not know is driven as its wire's client. The
  shapes are the clients' own, measured on Claude Code 2.1.197, opencode 1.18.33 and Codex CLI
  0.171.0 against a loopback server (docs/loop.md), down to key order.
- Claude Code: the assistant message with its content blocks verbatim (thinking + signature, text,
  tool_use), then one user message of `tool_result` blocks (`is_error: true` on errors, `is_error:
  false` where the client marks a success); it keeps one message-level cache breakpoint, moved to
  the last block of the newest message each turn (`cache_breakpoint`, `with_turn`); thinking and
  redacted_thinking blocks go back unchanged.
- opencode: the assistant message with `content: ""` (or the text) and `tool_calls`, then one
  `role: tool` message per call with its `tool_call_id`.
- Codex (the Responses wire): `store: false`, so the whole history is resent in `input` every
  turn. After a turn Codex appends the model's output items — `reasoning` as `{type, id,
  summary, content, encrypted_content}` (the opaque `encrypted_content` unchanged; `content:
  null` when none came), `function_call` as `{type, status, id, name, [namespace,] arguments,
  call_id}`, `custom_tool_call` as `{type, id, status, call_id, name, input}`, an assistant
  `message` with its output_text — then one `function_call_output` / `custom_tool_call_output`
  `{type, id, call_id, output}` per call, in call order, each with the call's `call_id` (the
  `id`s `fco_…` / `ctco_…` are Codex's own). An attached MCP server's tools are one namespace tool
  `mcp__<server>`; a resumed session's stored history goes before the new prompt.
- The request's conversation is read through the wire's Dialect (`prompt_slot`,
  `conversation_key`, `is_first_request`); forcing a tool call is the Dialect's `forcing`. The
  readers here (`history`, `last_turn`, `echoed_call_ids`, `answered_ids`, `kept_blocks`) read a
  request as this client writes it, for the driver's self-check (`conformance.checks.loop`).
- The writers (`with_turn`, `with_mcp_server`, `resumed`) return a changed deep copy, as the
  Dialect's writers do; the driver never edits a request it has sent.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from conformance.loop.voices import ToolOutcome
from conformance.wire import ANTHROPIC, CHAT, RESPONSES
from conformance.wire.conversation import is_context_block
from conformance.wire.dialect import Dialect


class Conversation:
    """The client's way on one wire; subclasses hold the shapes."""

    # assistant block types the client sends back unchanged (the self-check compares them)
    kept_kinds: tuple[str, ...] = ()
    # where in an assistant entry the kept blocks and the call ids sit (for a violation's pointer)
    kept_pointer = "/content"
    calls_pointer = "/tool_calls"
    # MCP servers whose tools this client offers in a namespace (a scenario's `mcp_server`)
    mcp_servers: tuple[str, ...] = ()
    # the client resumes a stored session by resending its history before the new prompt
    resumes_sessions: bool = False

    def __init__(self, wire: Dialect) -> None:
        self.wire = wire

    def history(self, body: dict) -> list:
        items = body.get(self.wire.conversation_key)
        return items if isinstance(items, list) else []

    # ---- sessions and servers the client brings along
    def stored_history(self, body: dict) -> list[dict] | None:
        """The conversation a later request of a session carries after the client's own context
        (what a resumed session sends back), or None when it carries none."""
        return None

    def resumed(self, body: dict, history: list[dict]) -> dict:
        """The request with a stored session's history put before the new prompt."""
        raise ValueError(f"{type(self).__name__} does not resume sessions by resending their history")

    def mcp_namespace(self, server: str) -> str | None:
        """The namespace tool an attached MCP server's tools sit in (None: the client has none)."""
        return None

    def with_mcp_server(self, body: dict, server: str) -> dict:
        """The request offering an attached MCP server's tools as the client does."""
        raise ValueError(f"{type(self).__name__} offers no MCP server tools in a namespace; a scenario with "
                         f"mcp_server {server!r} runs only on a wire whose client does (the Responses wire, as Codex)")

    # ---- the turns
    def cache_breakpoint(self, body: dict) -> dict | None:
        """The cache breakpoint the client keeps on its newest block (None: it keeps none)."""
        return None

    def with_turn(self, body: dict, echoed: dict | list[dict], results: list[dict],
                  cache_breakpoint: dict | None = None) -> dict:
        """The next request: the echoed assistant turn (one message, or a list of items) and its
        results appended (the client keeps `cache_breakpoint` on the newest block)."""
        out = copy.deepcopy(body)
        history = out.setdefault(self.wire.conversation_key, [])
        history.extend(echoed if isinstance(echoed, list) else [echoed])
        history.extend(results)
        return out

    def echo_assistant(self, message: dict) -> dict | list[dict]:
        """The assistant turn as the client sends it back."""
        raise NotImplementedError

    def result_messages(self, call_ids: list[str], outcomes: list[ToolOutcome]) -> list[dict]:
        """The messages carrying the tool results, one outcome per call id, in call order."""
        raise NotImplementedError

    def results_for(self, message: Any, call_ids: list[str], outcomes: list[ToolOutcome]) -> list[dict]:
        """The entries carrying the results of `message`'s calls (a wire whose result shape
        depends on the call's kind reads it from the message)."""
        return self.result_messages(call_ids, outcomes)

    # ---- readers for the self-check
    def last_turn(self, body: dict) -> tuple[Any, list, int] | None:
        """(the last assistant turn as sent, the entries after it, its index in the history), or
        None when the request carries no assistant turn."""
        msgs = self.history(body)
        idx = max((i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "assistant"), default=None)
        return None if idx is None else (msgs[idx], msgs[idx + 1:], idx)

    def mismatched_results(self, sent: Any, after: list) -> list[str]:
        """Results of the wrong kind for their call (none on wires with one kind of call)."""
        return []

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

    def cache_breakpoint(self, body: dict) -> dict | None:
        """The cache_control of the user's prompt block (Claude Code marks it), else ephemeral."""
        slot = self.wire.prompt_slot(body)
        holder = slot[0] if slot is not None and slot[1] == "text" else None
        if isinstance(holder, dict) and isinstance(holder.get("cache_control"), dict):
            return dict(holder["cache_control"])
        return {"type": "ephemeral"}

    def with_turn(self, body: dict, echoed: dict | list[dict], results: list[dict],
                  cache_breakpoint: dict | None = None) -> dict:
        """Claude Code keeps one message-level cache breakpoint: on the last block of the last
        message (when the request marks any block)."""
        out = super().with_turn(body, echoed, results)
        if cache_breakpoint is None:
            return out
        had = False
        messages = self.history(out)
        for m in messages:
            if isinstance(m, dict) and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if isinstance(b, dict) and "cache_control" in b:
                        had = True
                        del b["cache_control"]
        last = messages[-1]
        if had and isinstance(last.get("content"), list) and last["content"]:
            last["content"][-1]["cache_control"] = dict(cache_breakpoint)
        return out

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



# The MCP server a scenario may attach (`mcp_server: "files"`): Codex 0.171.0 offers an MCP
# server's tools as one `namespace` tool named `mcp__<server>` (measured with a stdio MCP server).
MCP_FILES_NAMESPACE = "mcp__files"
MCP_FILES_TOOL = {
    "type": "namespace", "name": MCP_FILES_NAMESPACE, "description": f"Tools in the {MCP_FILES_NAMESPACE} namespace.",
    "tools": [{"type": "function", "name": "read_file", "description": "Read a text file of the project",
               "strict": False, "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                               "required": ["path"]}}],
}


class CodexConversation(Conversation):
    """Codex CLI on the Responses wire: output items back verbatim in Codex's key order, then
    one output item per call under its `call_id`; the whole history resent (`store: false`)."""

    kept_kinds = ("reasoning",)
    kept_pointer = calls_pointer = ""  # the assistant turn is a run of items: the pointer names its first
    mcp_servers = ("files",)
    resumes_sessions = True
    output_of = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}

    def _prompt_index(self, body: dict) -> int | None:
        """Index of the item holding the user's own first prompt (after Codex's context blocks)."""
        slot = self.wire.prompt_slot(body)
        if slot is None or is_context_block(slot[0][slot[1]]):
            return None
        holder = slot[0]
        return next((k for k, i in enumerate(self.history(body)) if i is holder or (
            isinstance(i, dict) and isinstance(i.get("content"), list) and any(p is holder for p in i["content"]))),
            None)

    def stored_history(self, body: dict) -> list[dict] | None:
        items = self.history(body)
        start = self._prompt_index(body)
        if start is None or not any(isinstance(i, dict) and i.get("type") == "reasoning" and i.get("encrypted_content")
                                    for i in items[start:]):
            return None
        return copy.deepcopy(items[start:])

    def resumed(self, body: dict, history: list[dict]) -> dict:
        """`codex exec resume --last PROMPT` (measured on 0.171.0): the stored history — the first
        prompt, reasoning with its encrypted_content, calls, outputs, the assistant's answer — then
        the new user message, after the context blocks."""
        out = copy.deepcopy(body)
        at = self._prompt_index(out)
        if at is None:
            raise ValueError("the request has no prompt of the user's own to resume the session before")
        self.history(out)[at:at] = copy.deepcopy(history)
        return out

    def mcp_namespace(self, server: str) -> str | None:
        return f"mcp__{server}" if server in self.mcp_servers else None

    def with_mcp_server(self, body: dict, server: str) -> dict:
        """Codex 0.171.0 offers an MCP server's tools as one `namespace` tool `mcp__<server>`, after
        its own namespaces and before the goal and hosted tools (measured with a stdio server)."""
        if server not in self.mcp_servers:
            return super().with_mcp_server(body, server)
        out = copy.deepcopy(body)
        tools = out.setdefault("tools", [])
        if any(isinstance(t, dict) and t.get("name") == self.mcp_namespace(server) for t in tools):
            return out  # the captured request has it already
        at = max((k + 1 for k, t in enumerate(tools) if isinstance(t, dict) and t.get("type") == "namespace"),
                 default=None)
        if at is None:
            at = next((k for k, t in enumerate(tools) if isinstance(t, dict) and t.get("type") not in
                       ("function", "custom")), len(tools))
        tools.insert(at, copy.deepcopy(MCP_FILES_TOOL))
        return out

    @staticmethod
    def output_items(message: Any) -> list[dict]:
        """The output items of an accumulated response (the Response object, or its `output`)."""
        items = message.get("output") if isinstance(message, dict) else message
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    def echo_assistant(self, message: Any) -> list[dict]:
        out: list[dict] = []
        for item in self.output_items(message):
            kind = item.get("type")
            if kind == "reasoning":
                echoed = {"type": "reasoning", "id": item.get("id"), "summary": copy.deepcopy(item.get("summary") or []),
                          "content": copy.deepcopy(item.get("content"))}
                if "encrypted_content" in item:
                    echoed["encrypted_content"] = item["encrypted_content"]
            elif kind == "function_call":
                echoed = {"type": "function_call", "status": item.get("status", "completed"), "id": item.get("id"),
                          "name": item.get("name")}
                if item.get("namespace") is not None:
                    echoed["namespace"] = item["namespace"]
                echoed.update({"arguments": item.get("arguments"), "call_id": item.get("call_id")})
            elif kind == "custom_tool_call":
                echoed = {"type": "custom_tool_call", "id": item.get("id"), "status": item.get("status", "completed"),
                          "call_id": item.get("call_id"), "name": item.get("name"), "input": item.get("input")}
            elif kind == "message":  # measured in a resumed session's history
                echoed = {"type": "message", "status": item.get("status", "completed"), "id": item.get("id"),
                          "role": "assistant",
                          "content": [{"type": "output_text", "text": p.get("text", ""),
                                       "annotations": copy.deepcopy(p.get("annotations") or [])}
                                      for p in item.get("content") or [] if isinstance(p, dict)
                                      and p.get("type") == "output_text"]}
            else:
                continue  # hosted-tool items the client neither runs nor resends
            out.append(echoed)
        return out

    def results_for(self, message: Any, call_ids: list[str], outcomes: list[ToolOutcome]) -> list[dict]:
        """One output item per call, in call order, of the kind that answers the call's item."""
        kinds = {i.get("call_id"): i.get("type") for i in self.output_items(message) if i.get("type") in self.output_of}
        out = []
        for call_id, outcome in zip(call_ids, outcomes, strict=True):
            output_type = self.output_of.get(kinds.get(call_id, "function_call"), "function_call_output")
            prefix = "ctco_" if output_type == "custom_tool_call_output" else "fco_"
            out.append({"type": output_type, "id": prefix + str(uuid.uuid4()), "call_id": call_id,
                        "output": copy.deepcopy(outcome.parts) if outcome.parts is not None else outcome.text})
        return out

    def last_turn(self, body: dict) -> tuple[Any, list, int] | None:
        items = self.history(body)
        end = max((k for k, i in enumerate(items) if isinstance(i, dict) and self._model_side(i)), default=None)
        if end is None:
            return None
        start = end
        while start > 0 and isinstance(items[start - 1], dict) and self._model_side(items[start - 1]):
            start -= 1
        return {"output": items[start:end + 1]}, items[end + 1:], start

    def _model_side(self, item: dict) -> bool:
        return item.get("type") in ("reasoning", "function_call", "custom_tool_call") or (
            item.get("type", "message") == "message" and item.get("role") == "assistant")

    def echoed_call_ids(self, sent: dict) -> list | None:
        return [i.get("call_id") for i in self.output_items(sent) if i.get("type") in self.output_of]

    def answered_ids(self, after: list) -> list:
        """The call_ids the output items answer (their kind is `mismatched_results`' business)."""
        return [i.get("call_id") for i in after
                if isinstance(i, dict) and i.get("type") in self.output_of.values()]

    def mismatched_results(self, sent: Any, after: list) -> list[str]:
        """Calls answered by an output item of the other kind (a custom call with a
        function_call_output): each as 'call_id: got TYPE, expected TYPE'."""
        kinds = {i.get("call_id"): i.get("type") for i in self.output_items(sent) if i.get("type") in self.output_of}
        return [f"{i.get('call_id')}: got {i.get('type')}, expected {self.output_of[kinds[i.get('call_id')]]}"
                for i in after if isinstance(i, dict) and i.get("call_id") in kinds
                and i.get("type") in self.output_of.values() and i.get("type") != self.output_of[kinds[i.get("call_id")]]]

    def kept_blocks(self, message: dict, kind: str) -> list[dict]:
        """The reasoning items as the next turn needs them: id, summary and encrypted_content."""
        return [{"id": i.get("id"), "summary": i.get("summary") or [], "encrypted_content": i.get("encrypted_content")}
                for i in self.output_items(message) if i.get("type") == kind]


CONVERSATIONS = (ClaudeCodeConversation(ANTHROPIC), OpencodeConversation(CHAT), CodexConversation(RESPONSES))
LOOP_WIRES = tuple(c.wire for c in CONVERSATIONS)  # the wires the loop drives, each as its own client


def conversation_for(wire: Dialect) -> Conversation:
    """How the client that drives `wire` carries its conversation on."""
    found = next((c for c in CONVERSATIONS if c.wire is wire), None)
    if found is None:
        raise ValueError(f"the loop drives no client on the {wire.name} wire "
                         f"(it drives {', '.join(c.wire.name for c in CONVERSATIONS)})")
    return found
