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
- Codex (the Responses wire, Codex CLI 0.171.0 measured against a scripted loopback server,
  docs/loop.md): `store: false`, so the whole history is resent in `input` every turn. After a
  turn Codex appends the model's output items — `reasoning` as `{type, id, summary, content,
  encrypted_content}` (the opaque `encrypted_content` unchanged; `content: null` when none came),
  `function_call` as `{type, status, id, name, [namespace,] arguments, call_id}`, `custom_tool_call`
  as `{type, id, status, call_id, name, input}`, an assistant `message` with its output_text —
  then one `function_call_output` / `custom_tool_call_output` `{type, id, call_id, output}` per
  call, in call order, each with the call's `call_id` (the `id`s `fco_…` / `ctco_…` are Codex's
  own). Forcing a call is `tool_choice: "required"`.
- The readers (`history`, `last_turn`, `echoed_call_ids`, `answered_ids`, `kept_blocks`,
  `prompt_slot`, `working_directory`, `is_first_request`) read a request as this client writes it,
  for the driver's first request and its self-check (`conformance.loop.driver.check_outgoing`).
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from typing import Any

from conformance.loop.codex_tools import MCP_FILES_TOOL
from conformance.loop.sandbox import ToolOutcome
from conformance.wire import ANTHROPIC, CHAT, RESPONSES

_CWD_RX = re.compile(r"working directory:\s*(/[^\s\"\\<>]+)", re.IGNORECASE)
_CODEX_CWD_RX = re.compile(r"<cwd>(/[^<>\n]+)</cwd>")


class Conversation:
    """The client's way on one wire; subclasses hold the shapes."""

    # assistant block types the client sends back unchanged (the self-check compares them)
    kept_kinds: tuple[str, ...] = ()
    # the client keeps one message-level cache_control breakpoint, on the newest block
    moves_cache_breakpoint: bool = False
    # the request key holding the conversation
    history_key: str = "messages"
    # MCP servers whose tools this client offers in a namespace (a scenario's `mcp_server`)
    mcp_servers: tuple[str, ...] = ()

    # the client resumes a stored session by resending its history before the new prompt
    resumes_sessions: bool = False

    def stored_history(self, body: dict) -> list[dict] | None:
        """The conversation a later request of a session carries after the client's own context
        (what a resumed session sends back), or None when it carries none."""
        return None

    def resume(self, body: dict, history: list[dict]) -> None:
        """Put a stored session's history before the new prompt (in place)."""
        raise ValueError(f"{type(self).__name__} does not resume sessions by resending their history")

    def mcp_namespace(self, server: str) -> str | None:
        """The namespace tool an attached MCP server's tools sit in (None: the client has none)."""
        return None

    def attach_mcp_server(self, body: dict, server: str) -> None:
        """Offer an attached MCP server's tools as the client does (in place)."""
        raise ValueError(f"{type(self).__name__} offers no MCP server tools in a namespace; a scenario with "
                         f"mcp_server {server!r} runs only on a wire whose client does (the Responses wire, as Codex)")

    def history(self, body: dict) -> list:
        items = body.get(self.history_key)
        return items if isinstance(items, list) else []

    def is_first_request(self, body: dict) -> bool:
        """A loop's first request: a user turn and nothing the model said yet."""
        msgs = self.history(body)
        if any(isinstance(m, dict) and m.get("role") in ("assistant", "tool") for m in msgs):
            return False
        return any(isinstance(m, dict) and m.get("role") == "user" for m in msgs)

    def working_directory(self, body: dict) -> str | None:
        """The working directory the client named in its system text (Claude Code's `Primary
        working directory: X`, opencode's `Working directory: X`)."""
        texts: list[str] = []
        system = body.get("system")
        if isinstance(system, str):
            texts.append(system)
        elif isinstance(system, list):
            texts.extend(b.get("text", "") for b in system if isinstance(b, dict))
        for m in self.history(body):
            if isinstance(m, dict) and m.get("role") == "system":
                c = m.get("content")
                texts.append(c if isinstance(c, str) else json.dumps(c))
        for t in texts:
            m = _CWD_RX.search(t)
            if m:
                return m.group(1).rstrip(".,;")
        return None

    def prompt_slot(self, body: dict) -> tuple[Any, Any]:
        """(container, key) of the user's own prompt text in the first user message (LookupError
        when there is none)."""
        for m in self.history(body):
            if not isinstance(m, dict) or m.get("role") != "user":
                continue
            content = m.get("content")
            if isinstance(content, str):
                return m, "content"
            if isinstance(content, list):
                texts = [b for b in content if isinstance(b, dict) and b.get("type") == "text"]
                own = [b for b in texts if not b.get("text", "").lstrip().startswith("<system-reminder>")]
                if own or texts:
                    return (own or texts)[-1], "text"
            break
        raise LookupError("the template's first user message has no text to replace")

    def last_turn(self, body: dict) -> tuple[Any, list, int] | None:
        """(the last assistant turn as sent, the entries after it, its index in the history), or
        None when the request carries no assistant turn."""
        msgs = self.history(body)
        idx = max((i for i, m in enumerate(msgs) if isinstance(m, dict) and m.get("role") == "assistant"), default=None)
        return None if idx is None else (msgs[idx], msgs[idx + 1:], idx)

    def append_turn(self, body: dict, echoed: dict | list[dict], results: list[dict]) -> None:
        """Append the echoed assistant turn (one message, or a list of items) and its results."""
        history = body.setdefault(self.history_key, [])
        history.extend(echoed if isinstance(echoed, list) else [echoed])
        history.extend(results)

    def force_tool_call(self, body: dict) -> None:
        """Make the request demand a call of some tool (in place)."""
        raise NotImplementedError

    def echo_assistant(self, message: dict) -> dict:
        """The assistant turn as the client sends it back."""
        raise NotImplementedError

    def result_messages(self, call_ids: list[str], outcomes: list[ToolOutcome]) -> list[dict]:
        """The messages carrying the tool results, one outcome per call id, in call order."""
        raise NotImplementedError

    def results_for(self, message: Any, call_ids: list[str], outcomes: list[ToolOutcome]) -> list[dict]:
        """The entries carrying the results of `message`'s calls (a wire whose result shape
        depends on the call's kind reads it from the message)."""
        return self.result_messages(call_ids, outcomes)

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


class CodexConversation(Conversation):
    """Codex CLI on the Responses wire: output items back verbatim in Codex's key order, then
    one output item per call under its `call_id`; the whole history resent (`store: false`)."""

    kept_kinds = ("reasoning",)
    history_key = "input"
    mcp_servers = ("files",)
    resumes_sessions = True

    def _first_prompt(self, items: list) -> int | None:
        """Index of the first user message of the user's own (after Codex's context blocks)."""
        for k, i in enumerate(items):
            if isinstance(i, dict) and i.get("role") == "user" and isinstance(i.get("content"), list) and any(
                    isinstance(p, dict) and isinstance(p.get("text"), str)
                    and not p["text"].lstrip().startswith(("<", "# AGENTS.md")) for p in i["content"]):
                return k
        return None

    def stored_history(self, body: dict) -> list[dict] | None:
        items = self.history(body)
        start = self._first_prompt(items)
        if start is None or not any(isinstance(i, dict) and i.get("type") == "reasoning" and i.get("encrypted_content")
                                    for i in items[start:]):
            return None
        return copy.deepcopy(items[start:])

    def resume(self, body: dict, history: list[dict]) -> None:
        """`codex exec resume --last PROMPT` (measured on 0.171.0): the stored history — the first
        prompt, reasoning with its encrypted_content, calls, outputs, the assistant's answer — then
        the new user message, after the context blocks."""
        items = self.history(body)
        holder, _key = self.prompt_slot(body)
        at = next(k for k, i in enumerate(items) if i is holder or (isinstance(i.get("content"), list)
                                                                   and any(p is holder for p in i["content"])))
        items[at:at] = copy.deepcopy(history)
    # model-side item types: what a turn echoes back
    model_items = ("reasoning", "function_call", "custom_tool_call", "message")
    output_of = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}

    @staticmethod
    def output_items(message: Any) -> list[dict]:
        """The output items of an accumulated response (the Response object, or its `output`)."""
        items = message.get("output") if isinstance(message, dict) else message
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    def is_first_request(self, body: dict) -> bool:
        items = self.history(body)
        if any(isinstance(i, dict) and (i.get("type") in ("reasoning", "function_call", "custom_tool_call",
                                                          "function_call_output", "custom_tool_call_output")
                                        or i.get("role") == "assistant") for i in items):
            return False
        return any(isinstance(i, dict) and i.get("role") == "user" for i in items)

    def working_directory(self, body: dict) -> str | None:
        """Codex names it in the `<environment_context>` user message: `<cwd>X</cwd>`."""
        for i in self.history(body):
            for part in (i.get("content") if isinstance(i, dict) and isinstance(i.get("content"), list) else []):
                m = _CODEX_CWD_RX.search(part.get("text", "") if isinstance(part, dict) else "")
                if m:
                    return m.group(1)
        return None

    def prompt_slot(self, body: dict) -> tuple[Any, Any]:
        """The user's own prompt: the last user `input_text` that is not a context block Codex
        injects (`<environment_context>`, `# AGENTS.md instructions`, other `<...>` blocks)."""
        for i in reversed(self.history(body)):
            if not isinstance(i, dict) or i.get("role") != "user":
                continue
            content = i.get("content")
            if isinstance(content, str):
                return i, "content"
            for part in reversed(content if isinstance(content, list) else []):
                text = part.get("text") if isinstance(part, dict) else None
                if isinstance(text, str) and not text.lstrip().startswith(("<", "# AGENTS.md")):
                    return part, "text"
        raise LookupError("the template has no user input_text of the user's own to replace")

    def force_tool_call(self, body: dict) -> None:
        body["tool_choice"] = "required"

    def mcp_namespace(self, server: str) -> str | None:
        return f"mcp__{server}" if server in self.mcp_servers else None

    def attach_mcp_server(self, body: dict, server: str) -> None:
        """Codex 0.171.0 offers an MCP server's tools as one `namespace` tool `mcp__<server>`, after
        its own namespaces and before the goal and hosted tools (measured with a stdio server)."""
        if server not in self.mcp_servers:
            super().attach_mcp_server(body, server)
        tools = body.setdefault("tools", [])
        if any(isinstance(t, dict) and t.get("name") == self.mcp_namespace(server) for t in tools):
            return  # the captured request has it already
        at = max((k + 1 for k, t in enumerate(tools) if isinstance(t, dict) and t.get("type") == "namespace"),
                 default=None)
        if at is None:
            at = next((k for k, t in enumerate(tools) if isinstance(t, dict) and t.get("type") not in
                       ("function", "custom")), len(tools))
        tools.insert(at, copy.deepcopy(MCP_FILES_TOOL))

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

    def result_messages(self, call_ids: list[str], outcomes: list[ToolOutcome]) -> list[dict]:
        return self.results_for([], call_ids, outcomes)

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


CONVERSATIONS: dict[str, Conversation] = {ANTHROPIC.name: ClaudeCodeConversation(),
                                          CHAT.name: OpencodeConversation(),
                                          RESPONSES.name: CodexConversation()}


def conversation(api: str) -> Conversation:
    """The Conversation of an API name (the Dialect's name)."""
    try:
        return CONVERSATIONS[api]
    except KeyError:
        raise ValueError(f"api must be one of {sorted(CONVERSATIONS)}, got {api!r}") from None
