"""The OpenAI Responses Dialect: a Response whose `output` is a list of items, `status` +
`incomplete_details`, a bearer token; what Codex CLI speaks.

Rules:
- Readers and writers of Responses requests and answers (the base class's rules hold; the wire's
  facts: docs/wire-responses.md, docs/wire-facts.md).
- A request's conversation is `instructions` (the system prompt) and the `input` items: messages
  (roles developer — read as system —, user, assistant), `function_call` / `custom_tool_call`
  with their `call_id`, their `*_output` items, and `reasoning` items whose `encrypted_content` is
  the reasoning a store-false client carries between turns. A string `input` is one user message.
  These items reach an engine through a router unchanged (`carries_items`).
- A forced call is `tool_choice: "required"` (any tool) or `{type: function | custom, name}`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from conformance.core.bounded_json import parse as parse_json
from conformance.wire.conversation import (
    Entry,
    OfferedTool,
    ToolCall,
    Turn,
    field_of,
    function_call_from_text,
    parsed_arguments,
    text_of,
)
from conformance.wire.dialect import Dialect, StopVocabulary
from conformance.wire.registry import register_dialect
from conformance.wire.responses import grammar
from conformance.wire.responses.rules import CUT_REASONS

EFFORTS = ("low", "medium", "high")  # reasoning.effort levels
_RESPONSES_TOOL_ITEMS = ("function_call", "custom_tool_call")
_OUTPUT_ITEMS = ("function_call_output", "custom_tool_call_output")
_MODEL_SIDE_ITEMS = ("reasoning", *_RESPONSES_TOOL_ITEMS, *_OUTPUT_ITEMS)
_RESPONSES_CONTENT_EVENTS = frozenset({
    "response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta",
    "response.reasoning_summary_text.delta", "response.function_call_arguments.delta",
    "response.custom_tool_call_input.delta"})


def _responses_text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(field_of(p, "text") or "" for p in content or [] if isinstance(field_of(p, "text"), str))


class ResponsesDialect(Dialect):
    """OpenAI Responses API: a Response whose `output` is a list of items (message, reasoning,
    function_call, custom_tool_call, hosted calls), `status` + `incomplete_details`, a bearer token.

    Stop reasons are read from the Response (the API has no single field): `incomplete_details.
    reason` when the status is incomplete (max_output_tokens, content_filter), `tool_call` when a
    completed response holds function or custom tool calls, else the status (completed, failed)."""

    def stop_reason(self, message: Any) -> Any:
        if message is None:
            return None
        status = field_of(message, "status")
        if status == "incomplete":
            details = field_of(message, "incomplete_details")
            reason = field_of(details, "reason") if details is not None else None
            return reason if isinstance(reason, str) else "incomplete"
        if status == "completed" and any(field_of(i, "type") in _RESPONSES_TOOL_ITEMS
                                         for i in field_of(message, "output") or []):
            return "tool_call"
        return status

    def describe_cut(self, reason: str) -> str:
        by = "by the output cap" if reason == "max_output_tokens" else "short"
        return f"cut {by} (status incomplete, incomplete_details.reason {reason!r})"

    def _items(self, message: Any, kind: str) -> list:
        if message is None:
            return []
        return [i for i in field_of(message, "output") or [] if field_of(i, "type") == kind]

    def text(self, message: Any) -> str:
        return "".join(field_of(p, "text") or "" for m in self._items(message, "message")
                       for p in field_of(m, "content") or [] if field_of(p, "type") == "output_text")

    def thinking(self, message: Any) -> str:
        return "".join(text for text, _sig in self.thinking_blocks(message))

    def thinking_blocks(self, message: Any) -> list[tuple[str, str | None]]:
        """Each reasoning item: its summary and reasoning text, and its `encrypted_content`."""
        out = []
        for item in self._items(message, "reasoning"):
            text = _responses_text_of(field_of(item, "summary")) + _responses_text_of(field_of(item, "content"))
            sig = field_of(item, "encrypted_content")
            out.append((text, sig if isinstance(sig, str) else None))
        return out

    def delivers_content(self, event: Any) -> bool:
        data = field_of(event, "data") or ""
        if ".delta" not in data:
            return False
        try:
            kind = parse_json(data).get("type")
        except (ValueError, AttributeError):
            return False
        return isinstance(kind, str) and kind in _RESPONSES_CONTENT_EVENTS

    def tool_calls(self, message: Any, unparsed_input: dict[str, str] | None = None) -> list[ToolCall]:
        """`function_call` items (arguments a JSON string, read like chat's) and `custom_tool_call`
        items (kind "custom": the raw `input` text, never parsed)."""
        if message is None:
            return []
        calls: list[ToolCall] = []
        for i, item in enumerate(field_of(message, "output") or []):
            kind = field_of(item, "type")
            if kind not in _RESPONSES_TOOL_ITEMS:
                continue
            call_id, name = str(field_of(item, "call_id") or field_of(item, "id") or ""), field_of(item, "name") or ""
            ns = field_of(item, "namespace")
            ns = ns if isinstance(ns, str) and ns else None
            if kind == "custom_tool_call":
                raw = field_of(item, "input")
                calls.append(ToolCall(call_id, name, None, raw if isinstance(raw, str) else None, f"/output/{i}/input",
                                      None if isinstance(raw, str) else f"input is {type(raw).__name__}",
                                      None if isinstance(raw, str) else type(raw).__name__, "custom", ns))
                continue
            calls.append(function_call_from_text(call_id, name, field_of(item, "arguments"), f"/output/{i}/arguments", ns))
        return calls

    def offered_tool_specs(self, request: dict | None) -> list[OfferedTool]:
        """`function` (parameters, strict), `custom` (freeform; its grammar), `namespace` (the
        function / custom tools inside, each with its namespace) and hosted tools (`web_search`,
        `file_search`, ...: named by their type, run by the server)."""
        out: list[OfferedTool] = []

        def one(tool: dict, ns: str | None) -> None:
            kind, name = tool.get("type"), tool.get("name")
            if kind == "function" and isinstance(name, str) and name:
                params = tool.get("parameters")
                out.append(OfferedTool(name, params if isinstance(params, dict) else {"type": "object"}, "function",
                                       ns, tool.get("strict") is True))
            elif kind == "custom" and isinstance(name, str) and name:
                fmt = tool.get("format") if isinstance(tool.get("format"), dict) else {}
                grammar = fmt.get("definition") if isinstance(fmt.get("definition"), str) else None
                out.append(OfferedTool(name, None, "custom", ns, grammar=grammar))
            elif kind == "namespace" and ns is None:
                for inner in tool.get("tools") or []:
                    if isinstance(inner, dict):
                        one(inner, name if isinstance(name, str) else "")
            elif isinstance(kind, str) and kind:
                out.append(OfferedTool(name if isinstance(name, str) and name else kind, None, "hosted", ns))

        for tool in (request or {}).get("tools") or []:
            if isinstance(tool, dict):
                one(tool, None)
        return out

    def offered_tools(self, request: dict | None) -> dict[str, dict | None]:
        """Tool name -> schema; a namespaced tool under its own name (what its call's `name` is)."""
        return {t.name: t.schema for t in self.offered_tool_specs(request)}

    def demanded_tool_object(self, choice: dict):
        """A named function or custom tool, or `allowed_tools` in mode required (its tools by name)."""
        kind = choice.get("type")
        if kind in ("function", "custom") and isinstance(choice.get("name"), str):
            return "force", choice["name"], None
        if kind == "allowed_tools" and choice.get("mode") == "required":
            names = [t.get("name") for t in choice.get("tools") or [] if isinstance(t, dict)]
            return "force", None, [n for n in names if isinstance(n, str)] or None
        return None

    def chat_messages(self, request: dict | None) -> list[dict]:
        request = request or {}
        msgs: list[dict] = []
        if isinstance(request.get("instructions"), str) and request["instructions"]:
            msgs.append({"role": "system", "content": request["instructions"]})
        inp = request.get("input")
        if isinstance(inp, str):
            return msgs + [{"role": "user", "content": inp}]
        for item in inp or []:
            if not isinstance(item, dict):
                continue
            kind = item.get("type", "message")
            if kind == "message":
                role = item.get("role")
                msgs.append({"role": "system" if role in ("system", "developer") else role,
                             "content": _responses_text_of(item.get("content"))})
            elif kind in _RESPONSES_TOOL_ITEMS:
                body = item.get("arguments") if kind == "function_call" else item.get("input")
                msgs.append({"role": "assistant", "content": f"{item.get('name')}: {body}"})
            elif kind in ("function_call_output", "custom_tool_call_output"):
                out = item.get("output")
                msgs.append({"role": "tool", "content": out if isinstance(out, str) else _responses_text_of(out)})
            elif kind == "reasoning":
                text = _responses_text_of(item.get("summary")) + _responses_text_of(item.get("content"))
                if text:
                    msgs.append({"role": "assistant", "content": text})
        return msgs


    # ---- requests: the conversation --------------------------------------------------------
    def entries(self, request: dict | None) -> list[Entry]:
        items = (request or {}).get("input")
        if isinstance(items, str):
            return [Entry("/input", 0, {"type": "message", "role": "user", "content": items})]
        return super().entries(request)

    def prompt_slot(self, request: dict | None) -> tuple[Any, Any] | None:
        """A string `input` is the user's prompt, in place in the request itself; else as the
        base reads the input items."""
        inp = (request or {}).get("input")
        if isinstance(inp, str):
            return (request, "input") if inp.strip() else None
        return super().prompt_slot(request)

    def _system_slots(self, request: dict) -> list[tuple[Any, Any]]:
        """`instructions` when the request has them, then the texts of the developer / system
        messages the input opens with (Codex sends its instructions so), in order."""
        slots: list[tuple[Any, Any]] = [(request, "instructions")] if isinstance(request.get("instructions"), str) else []
        for e in self.entries(request):
            if e.value.get("type", "message") != "message" or e.value.get("role") not in ("system", "developer"):
                break
            content = e.value.get("content")
            if isinstance(content, str):
                slots.append((e.value, "content"))
            elif isinstance(content, list):
                slots.extend((p, "text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
        return slots

    def _is_model_side(self, entry: dict) -> bool:
        return entry.get("type") in _MODEL_SIDE_ITEMS or (
            entry.get("type", "message") == "message" and entry.get("role") == "assistant")

    def turns(self, request: dict | None) -> list[Turn]:
        """`instructions`, then the input items: consecutive calls and reasoning of one answer
        join one assistant turn; each call output is a tool turn."""
        body = request or {}
        turns: list[Turn] = []
        if body.get("instructions"):
            turns.append(Turn("system", [text_of(body["instructions"])], index=-1, pointer="/instructions"))

        def assistant(e: Entry) -> Turn:
            if turns and turns[-1].role == "assistant":
                return turns[-1]
            turns.append(Turn("assistant", index=e.index, pointer=e.pointer))
            return turns[-1]

        for e in self.entries(body):
            item = e.value
            kind = item.get("type", "message")
            if kind == "message":
                role = str(item.get("role"))
                turns.append(Turn("system" if role == "developer" else role, [text_of(item.get("content"))],
                                  index=e.index, pointer=e.pointer))
            elif kind in _RESPONSES_TOOL_ITEMS:
                payload = item.get("arguments") if kind == "function_call" else item.get("input")
                assistant(e).calls.append((str(item.get("call_id", "")), str(item.get("name", "")),
                                           parsed_arguments(payload) if kind == "function_call" else payload))
            elif kind in _OUTPUT_ITEMS:
                turns.append(Turn("tool", results=[(str(item.get("call_id", "")), text_of(item.get("output")))],
                                  index=e.index, pointer=e.pointer))
            elif kind == "reasoning":
                summary = item.get("summary") or []
                text = "".join(x.get("text", "") for x in summary if isinstance(x, dict))
                assistant(e).thinking.append((text, item.get("encrypted_content")))
        return turns

    def _tail_parts(self, entry: dict) -> list[str]:
        """A call output's `output` (as JSON when it is not text); else the base's text parts."""
        if "output" in entry and "content" not in entry:
            output = entry["output"]
            return [output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)]
        return super()._tail_parts(entry)

    def system_text(self, request: dict | None) -> str | None:
        instructions = (request or {}).get("instructions")
        return text_of(instructions) if instructions else None

    # ---- requests: writing -----------------------------------------------------------------
    def forcing(self, request: dict, name: str | None = None) -> dict:
        out = copy.deepcopy(request)
        if name is None:
            out["tool_choice"] = "required"
        else:
            kind = next((t.kind for t in self.offered_tool_specs(out) if t.name == name), "function")
            out["tool_choice"] = {"type": "custom" if kind == "custom" else "function", "name": name}
        return out

    def salted(self, request: dict, prefix: str) -> dict:
        """`instructions` when the request has them, else the first developer / system input
        message, else a new developer message at the start of `input`."""
        body = copy.deepcopy(request)
        if isinstance(body.get("instructions"), str):
            body["instructions"] = prefix + body["instructions"]
            return body
        inp = body.get("input")
        if isinstance(inp, str):
            inp = body["input"] = [{"type": "message", "role": "user", "content": inp}]
        if not isinstance(inp, list):
            return body
        for item in inp:
            if isinstance(item, dict) and item.get("type", "message") == "message" and \
                    item.get("role") in ("developer", "system"):
                content = item.get("content")
                if isinstance(content, str):
                    item["content"] = prefix + content
                    return body
                if isinstance(content, list) and content and isinstance(content[0], dict) \
                        and isinstance(content[0].get("text"), str):
                    content[0]["text"] = prefix + content[0]["text"]
                    return body
        inp.insert(0, {"type": "message", "role": "developer",
                       "content": [{"type": "input_text", "text": prefix.rstrip()}]})
        return body

    def invalid_request(self, body: dict) -> tuple[dict, str]:
        # a string is a valid `input` here: a number is not (neither a string nor a list of items)
        return {**body, "input": 12345, "stream": False}, "input is a number"

    def one_turn_request(self, model: str, system: str, user_text: str, *, max_tokens: int,
                         stream: bool) -> dict[str, Any]:
        return {
            "model": model,
            "instructions": system,
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": user_text}]}],
            "max_output_tokens": max_tokens,
            "stream": stream,
            "store": False,
        }

    def tool_definition(self, name: str, description: str, schema: dict) -> dict:
        return {"type": "function", "name": name, "description": description, "parameters": schema}

    def reasoning_variants(self, budget_tokens: int) -> list[tuple[str, dict]]:
        """`reasoning.effort` at each level (the Responses wire has no fixed budget)."""
        return [(f"reasoning.effort={effort}", {"reasoning": {"effort": effort}}) for effort in EFFORTS]


# OpenAI Responses API reference: Response.status, incomplete_details.reason (max_output_tokens,
# content_filter), no stop sequences, `max_output_tokens`; what Codex CLI speaks (docs/wire-facts.md).
RESPONSES = register_dialect(ResponsesDialect(
    name="responses",
    grammar=grammar,
    generation_path="/v1/responses",
    count_tokens_path=None,
    always_bearer=True,
    default_headers=(),
    stops=StopVocabulary(
        field="status", natural="completed", final=("completed",), tool=("tool_call",), cap="max_output_tokens",
        cut=CUT_REASONS,
        caps=frozenset({"max_output_tokens", "content_filter"}),
        forced_tool=("completed",),
        to_anthropic={"completed": "end_turn", "tool_call": "tool_use", "max_output_tokens": "max_tokens",
                      "content_filter": "refusal"},
        to_anthropic_also={"completed": ("stop_sequence",), "content_filter": ("end_turn",)},
    ),
    output_tokens_key="output_tokens",
    input_tokens_key="input_tokens",
    cap_keys=("max_output_tokens",),
    structured_call="function_call / custom_tool_call items",
    stop_sequences_key=None,
    matched_stop_key=None,
    conversation_key="input",
    carries_items=True,
    may_be_absent=True,
))
