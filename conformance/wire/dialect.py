"""One Dialect per wire: everything the rest of the code asks about a wire, in one object.

Rules:
- A Dialect owns what other modules used to ask with `api == "..."`: the generation and
  count_tokens paths, how the key is sent (x-api-key or a bearer token), the content-started
  predicate and which stream events deliver content, the stop vocabulary (natural / final /
  tool / the output cap / every cut reason, and the map from this wire's stop reasons to the
  Anthropic stops a faithful translation may carry), where stop sequences go in a request and
  where a message names the one that matched, and readers of an accumulated message (answer
  text, thinking, tool calls as one `ToolCall`, stop reason, usage) and of a request (offered
  tools, the output cap, tool_choice, the conversation as chat messages), where the system
  prompt lives, and a minimal one-turn request in the wire's shape.
- Only this module (and the wire modules it fronts) may compare against a wire's name; the rest
  of the judge asks `dialect(api)`. A new wire is one wire module plus one entry in DIALECTS.
- Readers never raise on a target's data: a missing or mistyped field reads as empty / None.
  They accept dicts and attribute objects (SDK models) alike.
- The wire grammar stays in the wire modules (`check_stream`, `check_response`, `check_error`);
  the Dialect only hands them out, imported on first use.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

# Prompt tokens the Anthropic usage counts apart from input_tokens (read from and written to the cache).
ANTHROPIC_CACHED_INPUT_KEYS = ("cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass(frozen=True)
class ToolCall:
    """One structured tool call of an accumulated message, on any wire."""

    id: str
    name: str
    arguments: Any  # parsed arguments (a dict) or None when they did not parse to an object
    raw: str | None  # the arguments as the text that arrived (OpenAI; an Anthropic input that did not parse)
    pointer: str  # JSON pointer to the arguments in the accumulated message
    parse_error: str | None = None  # why `arguments` is None (not JSON, not an object, wrong type)
    not_text: str | None = None  # the wire wants the arguments as a JSON string and got this type instead
    # "function": JSON arguments; "custom": a freeform tool's raw text input (Responses
    # `custom_tool_call`, in `raw`; `arguments` stays None and is never parsed as JSON)
    kind: str = "function"
    namespace: str | None = None  # the namespace the called tool sits in (Responses `namespace` tools)


@dataclass(frozen=True)
class OfferedTool:
    """One tool a request offers, on any wire."""

    name: str
    schema: dict | None  # its JSON schema (None: a freeform or hosted tool, or none given)
    kind: str = "function"  # function | custom (freeform text input) | hosted (run by the server)
    namespace: str | None = None  # the namespace tool it sits in
    strict: bool = False  # the request asks the server to hold the arguments to the schema exactly
    grammar: str | None = None  # a custom tool's grammar definition (e.g. apply_patch's Lark grammar)


@dataclass(frozen=True)
class StopVocabulary:
    field: str  # where an accumulated message says why the turn ended
    natural: str  # the model finished on its own
    final: tuple[str, ...]  # stops that end an agent turn with a final answer
    tool: tuple[str, ...]  # stops that hand tool calls to the client
    cap: str  # the request's output cap was reached
    cut: frozenset[str]  # every stop saying the output was cut short (a cut turn may end inside a call)
    caps: frozenset[str]  # the cuts that end a turn before a forced call could come (caps only)
    forced_tool: tuple[str, ...] = ()  # further stops a turn forced to call a tool may end with
    to_anthropic: dict[str, str] = field(default_factory=dict)  # this wire's reason -> Anthropic's
    # Further Anthropic stops a faithful translation of a reason may carry (one reason here can be
    # two there: chat's `stop` is both a natural end and a matched stop sequence).
    to_anthropic_also: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _not_an_object(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    return f"arguments are JSON {type(value).__name__}, not an object"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Dialect:
    """What one wire is; subclasses hold the readers that differ between wires."""

    name: str
    module_name: str  # the wire module: check_stream, check_response, check_error, content_started
    generation_path: str
    count_tokens_path: str | None
    always_bearer: bool  # the key always goes as `Authorization: Bearer` (else x-api-key unless captured)
    default_headers: tuple[tuple[str, str], ...]  # sent when the capture does not carry them
    stops: StopVocabulary
    output_tokens_key: str
    input_tokens_key: str
    cap_keys: tuple[str, ...]  # request keys of the output cap, first present wins
    structured_call: str  # what a structured tool call is on this wire, named in messages
    stop_sequences_key: str | None  # request key of the stop sequences (None: the wire has none)
    matched_stop_key: str | None  # message key naming the stop sequence that ended the turn (None: not told)
    system_at_top: bool = False  # the system prompt is the request's top-level `system` (else a system message)
    cached_input_keys: tuple[str, ...] = ()  # usage keys of prompt tokens counted apart from input_tokens_key

    # ---- the wire module -------------------------------------------------------------------
    @property
    def wire(self) -> ModuleType:
        return importlib.import_module(self.module_name)

    def content_started(self, buf: bytes) -> bool:
        return self.wire.content_started(buf)

    def check_stream(self, chunks, *, request: dict | None = None):
        return self.wire.check_stream(chunks, request=request)

    def check_response(self, body, *, request: dict | None = None):
        return self.wire.check_response(body, request=request)

    def check_error(self, status: int, body: bytes):
        return self.wire.check_error(status, body)

    # ---- sending ---------------------------------------------------------------------------
    def bearer(self, captured_headers: dict[str, str]) -> bool:
        """Whether the key goes as a bearer token: always on some wires, else when the capture
        shows the client used one (Claude Code with ANTHROPIC_AUTH_TOKEN)."""
        captured = {k.lower() for k in captured_headers}
        return self.always_bearer or ("authorization" in captured and "x-api-key" not in captured)

    # ---- the stop vocabulary ---------------------------------------------------------------
    def stop_reason(self, message: Any) -> Any:
        """Why the turn ended, in this wire's words (None without a message)."""
        if message is None:
            return None
        return _get(message, self.stops.field)

    def anthropic_stop(self, message: Any) -> Any:
        """The stop reason in the Anthropic vocabulary (what the probes reason in)."""
        reason = self.stop_reason(message)
        return self.stops.to_anthropic.get(reason, reason) if isinstance(reason, str) else reason

    def cut_reason(self, message: Any) -> str | None:
        """The stop reason when it says the output was cut short, else None."""
        reason = self.stop_reason(message)
        return reason if isinstance(reason, str) and reason in self.stops.cut else None

    def anthropic_stops(self, reason: Any) -> frozenset[str]:
        """Every Anthropic stop reason a faithful translation of this wire's `reason` may carry
        (`to_anthropic` and `to_anthropic_also`); empty for a reason the map does not know (on
        Anthropic itself: nothing is translated)."""
        if not isinstance(reason, str) or reason not in self.stops.to_anthropic:
            return frozenset()
        return frozenset({self.stops.to_anthropic[reason], *self.stops.to_anthropic_also.get(reason, ())})

    def describe_cut(self, reason: str) -> str:
        """'cut by the output cap (finish_reason 'length')' and the like, for messages."""
        if reason in ("length", "max_tokens"):
            by = "by the output cap"
        elif reason == "model_context_window_exceeded":
            by = "by the context window"
        else:
            by = "short"
        return f"cut {by} ({self.stops.field} {reason!r})"

    # ---- readers of an accumulated message -------------------------------------------------
    def text(self, message: Any) -> str:
        raise NotImplementedError

    def thinking(self, message: Any) -> str:
        raise NotImplementedError

    def thinking_blocks(self, message: Any) -> list[tuple[str, str | None]]:
        """(text, signature) of each piece of thinking, in order (a wire without signatures: None)."""
        raise NotImplementedError

    def tool_calls(self, message: Any, unparsed_input: dict[str, str] | None = None) -> list[ToolCall]:
        raise NotImplementedError

    def usage(self, message: Any) -> dict | None:
        usage = _get(message, "usage") if message is not None else None
        return usage if isinstance(usage, dict) else None

    def output_tokens(self, message: Any) -> int | None:
        usage = self.usage(message)
        return None if usage is None else _int(usage.get(self.output_tokens_key))

    def prompt_tokens(self, usage: dict | None) -> int | None:
        """Every input token the prompt counted. A usage in the Anthropic shape (`input_tokens`,
        on this wire or a router's answer on another) reports cached tokens apart, so the
        cache_creation / cache_read input tokens are added; else this wire's input key."""
        usage = usage if isinstance(usage, dict) else {}
        if self.input_tokens_key == "input_tokens" or "input_tokens" in usage:
            base = usage.get("input_tokens")
            if not isinstance(base, int):
                return None
            return base + sum(v for k, v in usage.items() if k in ANTHROPIC_CACHED_INPUT_KEYS and isinstance(v, int))
        value = usage.get(self.input_tokens_key)
        return value if isinstance(value, int) else None

    def delivers_content(self, event: Any) -> bool:
        """Does one decoded stream event carry generated content (text, tool input, thinking)?
        What a delivery-timing judge counts; cheaper and narrower than `content_started`."""
        raise NotImplementedError

    # ---- readers of a request --------------------------------------------------------------
    def offered_tools(self, request: dict | None) -> dict[str, dict | None]:
        """Tool name -> its JSON schema (None for tools without one, e.g. server tools)."""
        raise NotImplementedError

    def offered_tool_specs(self, request: dict | None) -> list[OfferedTool]:
        """Every offered tool with its kind, namespace and strictness (a wire without freeform,
        hosted or namespaced tools: plain functions from `offered_tools`)."""
        return [OfferedTool(name, schema, "function" if schema is not None else "hosted")
                for name, schema in self.offered_tools(request).items()]

    def prefix_system(self, body: dict, prefix: str) -> bool:
        """Put `prefix` at the start of the system prompt of `body` (in place) where this wire
        keeps it apart from a `messages` list; False: the wire keeps it the common way."""
        return False

    def output_cap(self, request: dict | None) -> int | None:
        for key in self.cap_keys:
            value = _int((request or {}).get(key))
            if value is not None and value > 0:
                return value
        return None

    def demanded_tool_choice(self, request: dict | None) -> tuple[str, str | None, list[str] | None] | None:
        """What the request's tool_choice demands: ("force", name or None, allowed names or None),
        ("forbid", None, None), or None when it demands nothing (auto, absent, unknown shapes)."""
        raise NotImplementedError

    def chat_messages(self, request: dict | None) -> list[dict]:
        """The request's conversation as chat-completions messages (a tokenizer's chat template
        input): the system prompt first, content flattened to its text."""
        raise NotImplementedError

    # ---- building a request ----------------------------------------------------------------
    def invalid_request(self, body: dict) -> tuple[dict, str]:
        """`body` made one the API must refuse (non-stream), and what was broken, for messages."""
        return {**body, "messages": "this is not a list of messages", "stream": False}, "messages is a string"

    def one_turn_request(self, model: str, system: str, user_text: str, *, max_tokens: int,
                         stream: bool) -> dict[str, Any]:
        """A minimal one-turn request in this wire's shape (a streamed chat request asks for usage)."""
        raise NotImplementedError


def _function_tool(tool: dict) -> tuple[str, dict | None] | None:
    """(name, parameters) of a chat-shaped tool `{function: {name, parameters}}`, else None."""
    fn = tool.get("function") or {}
    return (fn["name"], fn.get("parameters")) if fn.get("name") else None


def _function_tools(request: dict | None) -> dict[str, dict | None]:
    out: dict[str, dict | None] = {}
    for tool in (request or {}).get("tools") or []:
        entry = _function_tool(tool) if isinstance(tool, dict) else None
        if entry is not None:
            out[entry[0]] = entry[1]
    return out


class AnthropicDialect(Dialect):
    """Anthropic Messages: content blocks, `stop_reason`, x-api-key."""

    def text(self, message: Any) -> str:
        if message is None:
            return ""
        return "".join(_get(b, "text") or "" for b in _get(message, "content") or [] if _get(b, "type") == "text")

    def thinking(self, message: Any) -> str:
        if not message:
            return ""
        return "".join(_get(b, "thinking") or "" for b in _get(message, "content") or []
                       if _get(b, "type") == "thinking")

    def thinking_blocks(self, message: Any) -> list[tuple[str, str | None]]:
        if not message:
            return []
        return [(str(_get(b, "thinking") or ""), _get(b, "signature")) for b in _get(message, "content") or []
                if _get(b, "type") == "thinking"]

    def delivers_content(self, event: Any) -> bool:
        return _get(event, "event") in ("content_block_delta", "content_block_start")

    def tool_calls(self, message: Any, unparsed_input: dict[str, str] | None = None) -> list[ToolCall]:
        """`tool_use` blocks. `unparsed_input` (streams): pointer of a tool block's input -> its
        streamed partial_json text, which did not parse (the block keeps `input: {}`)."""
        if message is None:
            return []
        calls: list[ToolCall] = []
        for i, block in enumerate(_get(message, "content") or []):
            if _get(block, "type") != "tool_use":
                continue
            call_id, name = str(_get(block, "id") or ""), _get(block, "name") or ""
            pointer = f"/content/{i}/input"
            text = (unparsed_input or {}).get(pointer)
            if text is not None:
                calls.append(ToolCall(call_id, name, None, text, pointer, _not_an_object(text)))
                continue
            inp = _get(block, "input")
            calls.append(ToolCall(call_id, name, inp if isinstance(inp, dict) else None, None, pointer,
                                  None if isinstance(inp, dict) else f"input is {type(inp).__name__}"))
        return calls

    def offered_tools(self, request: dict | None) -> dict[str, dict | None]:
        out: dict[str, dict | None] = {}
        for tool in (request or {}).get("tools") or []:
            if not isinstance(tool, dict):
                continue
            if tool.get("type") == "function":  # an OpenAI-shaped tool sent to this wire
                entry = _function_tool(tool)
                if entry is not None:
                    out[entry[0]] = entry[1]
            elif tool.get("name"):
                out[tool["name"]] = tool.get("input_schema")
        return out

    def demanded_tool_choice(self, request: dict | None):
        choice = (request or {}).get("tool_choice")
        kind = choice.get("type") if isinstance(choice, dict) else None
        if kind == "any":
            return "force", None, None
        if kind == "tool" and isinstance(choice.get("name"), str):
            return "force", choice["name"], None
        if kind == "none":
            return "forbid", None, None
        return None

    def chat_messages(self, request: dict | None) -> list[dict]:
        msgs: list[dict] = []
        system = (request or {}).get("system")
        if isinstance(system, list):
            system = "".join(b.get("text", "") for b in system if isinstance(b, dict))
        if system:
            msgs.append({"role": "system", "content": system})
        for m in (request or {}).get("messages", []):
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
            msgs.append({"role": m.get("role"), "content": content})
        return msgs

    def one_turn_request(self, model: str, system: str, user_text: str, *, max_tokens: int,
                         stream: bool) -> dict[str, Any]:
        return {
            "model": model,
            "max_tokens": max_tokens,
            "system": [{"type": "text", "text": system}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": user_text}]}],
            "stream": stream,
        }


class ChatDialect(Dialect):
    """OpenAI chat completions: one choice's message, `finish_reason`, a bearer token."""

    def text(self, message: Any) -> str:
        if message is None:
            return ""
        content = _get(message, "content")
        if isinstance(content, list):
            return "".join(_get(p, "text") or "" for p in content)
        return content or ""

    def thinking(self, message: Any) -> str:
        if not message:
            return ""
        return _get(message, "reasoning_content") or _get(message, "reasoning") or ""

    def thinking_blocks(self, message: Any) -> list[tuple[str, str | None]]:
        reasoning = self.thinking(message)
        return [(str(reasoning), None)] if reasoning else []

    def delivers_content(self, event: Any) -> bool:
        data = _get(event, "data") or ""
        return data.strip() != "[DONE]" and '"delta"' in data and (
            '"content":"' in data.replace(" ", "") or "tool_calls" in data or "reasoning" in data)

    def tool_calls(self, message: Any, unparsed_input: dict[str, str] | None = None) -> list[ToolCall]:
        """`tool_calls` with `function.arguments` as a JSON string (an object is read, and named
        in `not_text`: the wire core reports the string rule, the schema can still be judged)."""
        if message is None:
            return []
        calls: list[ToolCall] = []
        for i, call in enumerate(_get(message, "tool_calls") or []):
            fn = _get(call, "function") or {}
            call_id, name = str(_get(call, "id") or ""), _get(fn, "name") or ""
            args = _get(fn, "arguments")
            pointer = f"/tool_calls/{i}/function/arguments"
            if isinstance(args, str):
                try:
                    parsed = json.loads(args) if args.strip() else {}
                except json.JSONDecodeError as exc:
                    calls.append(ToolCall(call_id, name, None, args, pointer, f"not JSON: {exc}"))
                    continue
                err = None if isinstance(parsed, dict) else f"arguments are JSON {type(parsed).__name__}, not an object"
                calls.append(ToolCall(call_id, name, parsed if isinstance(parsed, dict) else None, args, pointer, err))
            elif isinstance(args, dict):
                calls.append(ToolCall(call_id, name, args, None, pointer, None, type(args).__name__))
            else:
                calls.append(ToolCall(call_id, name, None, None, pointer, f"arguments are {type(args).__name__}",
                                      type(args).__name__))
        return calls

    def offered_tools(self, request: dict | None) -> dict[str, dict | None]:
        return _function_tools(request)

    def demanded_tool_choice(self, request: dict | None):
        choice = (request or {}).get("tool_choice")
        if choice == "required":
            return "force", None, None
        if choice == "none":
            return "forbid", None, None
        if isinstance(choice, dict):
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

    def chat_messages(self, request: dict | None) -> list[dict]:
        return (request or {}).get("messages", [])

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


_RESPONSES_TOOL_ITEMS = ("function_call", "custom_tool_call")
_RESPONSES_CONTENT_EVENTS = frozenset({
    "response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta",
    "response.reasoning_summary_text.delta", "response.function_call_arguments.delta",
    "response.custom_tool_call_input.delta"})


def _responses_text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(_get(p, "text") or "" for p in content or [] if isinstance(_get(p, "text"), str))


class ResponsesDialect(Dialect):
    """OpenAI Responses API: a Response whose `output` is a list of items (message, reasoning,
    function_call, custom_tool_call, hosted calls), `status` + `incomplete_details`, a bearer token.

    Stop reasons are read from the Response (the API has no single field): `incomplete_details.
    reason` when the status is incomplete (max_output_tokens, content_filter), `tool_call` when a
    completed response holds function or custom tool calls, else the status (completed, failed)."""

    def stop_reason(self, message: Any) -> Any:
        if message is None:
            return None
        status = _get(message, "status")
        if status == "incomplete":
            details = _get(message, "incomplete_details")
            reason = _get(details, "reason") if details is not None else None
            return reason if isinstance(reason, str) else "incomplete"
        if status == "completed" and any(_get(i, "type") in _RESPONSES_TOOL_ITEMS
                                         for i in _get(message, "output") or []):
            return "tool_call"
        return status

    def describe_cut(self, reason: str) -> str:
        by = "by the output cap" if reason == "max_output_tokens" else "short"
        return f"cut {by} (status incomplete, incomplete_details.reason {reason!r})"

    def _items(self, message: Any, kind: str) -> list:
        if message is None:
            return []
        return [i for i in _get(message, "output") or [] if _get(i, "type") == kind]

    def text(self, message: Any) -> str:
        return "".join(_get(p, "text") or "" for m in self._items(message, "message")
                       for p in _get(m, "content") or [] if _get(p, "type") == "output_text")

    def thinking(self, message: Any) -> str:
        return "".join(text for text, _sig in self.thinking_blocks(message))

    def thinking_blocks(self, message: Any) -> list[tuple[str, str | None]]:
        """Each reasoning item: its summary and reasoning text, and its `encrypted_content`."""
        out = []
        for item in self._items(message, "reasoning"):
            text = _responses_text_of(_get(item, "summary")) + _responses_text_of(_get(item, "content"))
            sig = _get(item, "encrypted_content")
            out.append((text, sig if isinstance(sig, str) else None))
        return out

    def delivers_content(self, event: Any) -> bool:
        data = _get(event, "data") or ""
        if ".delta" not in data:
            return False
        try:
            kind = json.loads(data).get("type")
        except (ValueError, AttributeError):
            return False
        return isinstance(kind, str) and kind in _RESPONSES_CONTENT_EVENTS

    def tool_calls(self, message: Any, unparsed_input: dict[str, str] | None = None) -> list[ToolCall]:
        """`function_call` items (arguments a JSON string, read like chat's) and `custom_tool_call`
        items (kind "custom": the raw `input` text, never parsed)."""
        if message is None:
            return []
        calls: list[ToolCall] = []
        for i, item in enumerate(_get(message, "output") or []):
            kind = _get(item, "type")
            if kind not in _RESPONSES_TOOL_ITEMS:
                continue
            call_id, name = str(_get(item, "call_id") or _get(item, "id") or ""), _get(item, "name") or ""
            ns = _get(item, "namespace")
            ns = ns if isinstance(ns, str) and ns else None
            if kind == "custom_tool_call":
                raw = _get(item, "input")
                calls.append(ToolCall(call_id, name, None, raw if isinstance(raw, str) else None, f"/output/{i}/input",
                                      None if isinstance(raw, str) else f"input is {type(raw).__name__}",
                                      None if isinstance(raw, str) else type(raw).__name__, "custom", ns))
                continue
            args = _get(item, "arguments")
            pointer = f"/output/{i}/arguments"
            if isinstance(args, str):
                try:
                    parsed = json.loads(args) if args.strip() else {}
                except json.JSONDecodeError as exc:
                    calls.append(ToolCall(call_id, name, None, args, pointer, f"not JSON: {exc}", namespace=ns))
                    continue
                err = None if isinstance(parsed, dict) else f"arguments are JSON {type(parsed).__name__}, not an object"
                calls.append(ToolCall(call_id, name, parsed if isinstance(parsed, dict) else None, args, pointer, err,
                                      namespace=ns))
            elif isinstance(args, dict):
                calls.append(ToolCall(call_id, name, args, None, pointer, None, type(args).__name__, namespace=ns))
            else:
                calls.append(ToolCall(call_id, name, None, None, pointer, f"arguments are {type(args).__name__}",
                                      type(args).__name__, namespace=ns))
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

    def demanded_tool_choice(self, request: dict | None):
        choice = (request or {}).get("tool_choice")
        if choice == "required":
            return "force", None, None
        if choice == "none":
            return "forbid", None, None
        if isinstance(choice, dict):
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

    def prefix_system(self, body: dict, prefix: str) -> bool:
        """`instructions` when the request has them, else the first developer / system input
        message, else a new developer message at the start of `input`."""
        if isinstance(body.get("instructions"), str):
            body["instructions"] = prefix + body["instructions"]
            return True
        inp = body.get("input")
        if isinstance(inp, str):
            inp = body["input"] = [{"type": "message", "role": "user", "content": inp}]
        if not isinstance(inp, list):
            return False
        for item in inp:
            if isinstance(item, dict) and item.get("type", "message") == "message" and \
                    item.get("role") in ("developer", "system"):
                content = item.get("content")
                if isinstance(content, str):
                    item["content"] = prefix + content
                    return True
                if isinstance(content, list) and content and isinstance(content[0], dict) \
                        and isinstance(content[0].get("text"), str):
                    content[0]["text"] = prefix + content[0]["text"]
                    return True
        inp.insert(0, {"type": "message", "role": "developer",
                       "content": [{"type": "input_text", "text": prefix.rstrip()}]})
        return True

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


# Facts from the API references (WIRE.md): Anthropic stop_reason values and the cut ones
# (conformance.wire.anthropic.CUT_STOP_REASONS); OpenAI finish_reason values and the cut ones
# (conformance.wire.openai.CUT_FINISH_REASONS), kept equal to the wire modules by a test.
ANTHROPIC = AnthropicDialect(
    name="anthropic",
    module_name="conformance.wire.anthropic",
    generation_path="/v1/messages",
    count_tokens_path="/v1/messages/count_tokens",
    always_bearer=False,
    default_headers=(("anthropic-version", "2023-06-01"),),
    stops=StopVocabulary(
        field="stop_reason", natural="end_turn", final=("end_turn",), tool=("tool_use",), cap="max_tokens",
        cut=frozenset({"max_tokens", "pause_turn", "refusal", "model_context_window_exceeded"}),
        caps=frozenset({"max_tokens", "model_context_window_exceeded"}),
    ),
    output_tokens_key="output_tokens",
    input_tokens_key="input_tokens",
    cap_keys=("max_tokens",),
    structured_call="tool_use block",
    system_at_top=True,
    stop_sequences_key="stop_sequences",
    matched_stop_key="stop_sequence",
    # Cached prompt tokens are counted apart here (OpenAI's prompt_tokens includes its cached part).
    cached_input_keys=ANTHROPIC_CACHED_INPUT_KEYS,
)
OPENAI = ChatDialect(
    name="openai",
    module_name="conformance.wire.openai",
    generation_path="/v1/chat/completions",
    count_tokens_path=None,
    always_bearer=True,
    default_headers=(),
    stops=StopVocabulary(
        field="finish_reason", natural="stop", final=("stop",), tool=("tool_calls",), cap="length",
        cut=frozenset({"length", "content_filter"}),
        caps=frozenset({"length", "content_filter"}),
        forced_tool=("stop",),  # a named tool_choice may finish with stop on this wire (FAULTS.md valid variations)
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
)
# OpenAI Responses API reference: Response.status, incomplete_details.reason (max_output_tokens,
# content_filter), no stop sequences, `max_output_tokens`; what Codex CLI speaks (WIRE.md).
RESPONSES = ResponsesDialect(
    name="responses",
    module_name="conformance.wire.responses",
    generation_path="/v1/responses",
    count_tokens_path=None,
    always_bearer=True,
    default_headers=(),
    stops=StopVocabulary(
        field="status", natural="completed", final=("completed",), tool=("tool_call",), cap="max_output_tokens",
        cut=frozenset({"max_output_tokens", "content_filter"}),
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
)

DIALECTS: dict[str, Dialect] = {d.name: d for d in (ANTHROPIC, OPENAI, RESPONSES)}


def api_for_path(path: str) -> str | None:
    """The wire of a request path: the Dialect whose generation or count_tokens endpoint the path
    ends with, under any mount prefix (/v1, /anthropic/v1, none) and ignoring a query; None for
    any other path. The one path -> wire map (captures, hops, the exchange judge)."""
    p = path.split("?", 1)[0].rstrip("/")
    best: tuple[int, str] | None = None
    for d in DIALECTS.values():
        for endpoint in (d.generation_path, d.count_tokens_path):
            tail = endpoint.removeprefix("/v1") if endpoint else None
            if tail and p.endswith(tail) and (best is None or len(tail) > best[0]):
                best = (len(tail), d.name)
    return best[1] if best else None


def is_generation_path(path: str) -> bool:
    """Does `path` end with a wire's generation endpoint (not count_tokens, not anything else)?"""
    p = path.split("?", 1)[0].rstrip("/")
    return any(p.endswith(d.generation_path.removeprefix("/v1")) for d in DIALECTS.values())


def dialect(api: str) -> Dialect:
    """The Dialect of an API name; an unknown name is refused with the known ones."""
    try:
        return DIALECTS[api]
    except KeyError:
        raise ValueError(f"unknown api {api!r}: expected one of {', '.join(repr(n) for n in DIALECTS)}") from None
