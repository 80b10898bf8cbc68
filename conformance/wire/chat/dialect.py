"""The OpenAI chat-completions Dialect: one choice's message, `finish_reason`, a bearer token.

Rules:
- Readers and writers of chat-completions requests and answers (the base class's rules hold).
  The wire's name is `openai` (what `--conformance-api` takes and the results record stores).
- A request's conversation is `messages`: the leading system (or developer) message is the system
  prompt; assistant messages carry `tool_calls` (arguments a JSON string), `role: tool` messages
  the results under their `tool_call_id`; reasoning an assistant message carries back is
  `reasoning_content` / `reasoning` (vLLM, llama.cpp) or LiteLLM's `thinking_blocks`.
- A forced call is `tool_choice: "required"` (any tool) or a named function.
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.wire.chat import grammar
from conformance.wire.chat.rules import CUT_FINISH_REASONS
from conformance.wire.conversation import (
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

EFFORTS = ("low", "medium", "high")  # reasoning_effort levels


def _function_tool(tool: dict) -> tuple[str, dict | None] | None:
    """(name, parameters) of a chat-shaped tool `{function: {name, parameters}}`, else None."""
    fn = tool.get("function") or {}
    return (fn["name"], fn.get("parameters")) if fn.get("name") else None


class ChatDialect(Dialect):
    """OpenAI chat completions: one choice's message, `finish_reason`, a bearer token."""

    # ---- answers ---------------------------------------------------------------------------
    def text(self, message: Any) -> str:
        if message is None:
            return ""
        content = field_of(message, "content")
        if isinstance(content, list):
            return "".join(field_of(p, "text") or "" for p in content)
        return content or ""

    def thinking(self, message: Any) -> str:
        if not message:
            return ""
        return field_of(message, "reasoning_content") or field_of(message, "reasoning") or ""

    def thinking_blocks(self, message: Any) -> list[tuple[str, str | None]]:
        reasoning = self.thinking(message)
        return [(str(reasoning), None)] if reasoning else []

    def delivers_content(self, event: Any) -> bool:
        data = field_of(event, "data") or ""
        return data.strip() != "[DONE]" and '"delta"' in data and (
            '"content":"' in data.replace(" ", "") or "tool_calls" in data or "reasoning" in data)

    def tool_calls(self, message: Any, unparsed_input: dict[str, str] | None = None) -> list[ToolCall]:
        """`tool_calls` with `function.arguments` as a JSON string (an object is read, and named
        in `not_text`: the wire core reports the string rule, the schema can still be judged)."""
        if message is None:
            return []
        calls: list[ToolCall] = []
        for i, call in enumerate(field_of(message, "tool_calls") or []):
            fn = field_of(call, "function") or {}
            calls.append(function_call_from_text(str(field_of(call, "id") or ""), field_of(fn, "name") or "",
                                                 field_of(fn, "arguments"), f"/tool_calls/{i}/function/arguments"))
        return calls

    # ---- requests: reading -----------------------------------------------------------------
    def offered_tools(self, request: dict | None) -> dict[str, dict | None]:
        out: dict[str, dict | None] = {}
        for tool in (request or {}).get("tools") or []:
            entry = _function_tool(tool) if isinstance(tool, dict) else None
            if entry is not None:
                out[entry[0]] = entry[1]
        return out

    def offered_tool_specs(self, request: dict | None) -> list[OfferedTool]:
        """Every tool is a client's function: chat has no hosted tools, and a function without
        `parameters` (valid: it takes no arguments) is still one a call may be forced to."""
        return [OfferedTool(name, schema) for name, schema in self.offered_tools(request).items()]

    def demanded_tool_object(self, choice: dict):
        """A named function, or `allowed_tools` in mode required (its tools by name)."""
        if choice.get("type") == "function":
            fn = choice.get("function")
            name = fn.get("name") if isinstance(fn, dict) else None
            return ("force", name, None) if isinstance(name, str) else None
        allowed = choice.get("allowed_tools") if isinstance(choice.get("allowed_tools"), dict) else None
        if choice.get("type") == "allowed_tools" and allowed and allowed.get("mode") == "required":
            names = [((t.get("function") or {}).get("name") if isinstance(t.get("function"), dict) else t.get("name"))
                     for t in allowed.get("tools") or [] if isinstance(t, dict)]
            return "force", None, [n for n in names if isinstance(n, str)] or None
        return None

    def turns(self, request: dict | None) -> list[Turn]:
        turns: list[Turn] = []
        for e in self.entries(request):
            m = e.value
            role = str(m.get("role"))
            t = Turn(role, index=e.index, pointer=e.pointer)
            if role == "tool":
                t.results.append((str(m.get("tool_call_id", "")), text_of(m.get("content"))))
            else:
                text = text_of(m.get("content"))
                if text:
                    t.texts.append(text)
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or {}
                t.calls.append((str(c.get("id", "")), str(fn.get("name", "")), parsed_arguments(fn.get("arguments"))))
            reasoning = m.get("reasoning_content") or m.get("reasoning")
            if reasoning:
                t.thinking.append((str(reasoning), None))
            for tb in m.get("thinking_blocks") or []:  # LiteLLM's field
                if isinstance(tb, dict):
                    t.thinking.append((str(tb.get("thinking", "")), tb.get("signature")))
            turns.append(t)
        return turns

    def system_text(self, request: dict | None) -> str | None:
        entries = self.entries(request)
        first = entries[0].value if entries else None
        if first is not None and entries[0].index == 0 and first.get("role") in ("system", "developer"):
            return text_of(first.get("content"))
        return None

    def chat_messages(self, request: dict | None) -> list[dict]:
        return (request or {}).get("messages", [])

    # ---- requests: writing -----------------------------------------------------------------
    def forcing(self, request: dict, name: str | None = None) -> dict:
        out = copy.deepcopy(request)
        out["tool_choice"] = {"type": "function", "function": {"name": name}} if name else "required"
        return out

    def salted(self, request: dict, prefix: str) -> dict:
        body = copy.deepcopy(request)
        messages = body.get("messages") or []
        for msg in messages:
            if isinstance(msg, dict) and msg.get("role") in ("system", "developer"):
                content = msg.get("content")
                if isinstance(content, str):
                    msg["content"] = prefix + content
                elif isinstance(content, list) and content and isinstance(content[0], dict):
                    content[0]["text"] = prefix + content[0].get("text", "")
                return body
        messages.insert(0, {"role": "system", "content": prefix.rstrip()})
        body["messages"] = messages
        return body

    def one_turn_request(self, model: str, system: str, user_text: str, *, max_tokens: int,
                         stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user_text}],
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def tool_definition(self, name: str, description: str, schema: dict) -> dict:
        return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}

    def reasoning_variants(self, budget_tokens: int) -> list[tuple[str, dict]]:
        """`reasoning_effort` at each level (the chat wire has no fixed budget)."""
        return [(f"reasoning_effort={effort}", {"reasoning_effort": effort}) for effort in EFFORTS]


# API reference facts (docs/wire-facts.md): finish_reason values and the cut ones (rules.CUT_FINISH_REASONS).
CHAT = register_dialect(ChatDialect(
    name="openai",
    grammar=grammar,
    generation_path="/v1/chat/completions",
    count_tokens_path=None,
    always_bearer=True,
    default_headers=(),
    stops=StopVocabulary(
        field="finish_reason", natural="stop", final=("stop",), tool=("tool_calls",), cap="length",
        cut=frozenset(CUT_FINISH_REASONS),
        caps=frozenset({"length", "content_filter"}),
        forced_tool=("stop",),  # a named tool_choice may end with stop here (docs/faults.md, variations)
        to_anthropic={"length": "max_tokens", "stop": "end_turn", "tool_calls": "tool_use",
                      "function_call": "tool_use", "content_filter": "refusal"},
        # `stop` is also a matched stop sequence; a filtered answer may reach Anthropic as a plain end.
        to_anthropic_also={"stop": ("stop_sequence",), "content_filter": ("end_turn",)},
    ),
    output_tokens_key="completion_tokens",
    input_tokens_key="prompt_tokens",
    cap_keys=("max_completion_tokens", "max_tokens"),
    structured_call="tool_calls",
    stop_sequences_key="stop",
    matched_stop_key=None,
    stream_usage_option="stream_options",  # {"include_usage": true}, else a stream carries no usage
))
