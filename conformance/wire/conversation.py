"""The neutral model of what travels on any wire: a request's conversation (`Entry`, `Turn`,
`Slots`), the tools it offers (`OfferedTool`), an answer's tool calls (`ToolCall`), and the
helpers every wire's Dialect reads them with.

Rules:
- Plain data and pure functions, the same on every wire: nothing here knows a wire's shape (that
  is each wire's Dialect) and nothing imports above the standard library.
- Readers never raise on a target's or a client's data: a missing or mistyped field reads as
  empty / None. `field_of` reads dicts and attribute objects (SDK models) alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from conformance.core.bounded_json import parse as parse_json

# Text a client injects into a user turn around the user's own prompt: Claude Code's
# `<system-reminder>` blocks, Codex's `<environment_context>` and `# AGENTS.md instructions`
# messages (measured on Claude Code 2.1.197/2.1.332 and Codex 0.171.0, docs/wire-facts.md).
_CONTEXT_BLOCK = re.compile(r"^\s*(<[A-Za-z_][\w\-]*[\s>]|# AGENTS\.md)")


def is_context_block(text: str) -> bool:
    """Is `text` a block a client injects into a user turn (not the user's own words)?"""
    return bool(_CONTEXT_BLOCK.match(text))


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
class Entry:
    """One entry of a request's conversation as sent: a message (Anthropic, chat) or an input item
    (Responses; a string `input` reads as one user message). `pointer` is its JSON pointer."""

    pointer: str
    index: int
    value: dict


@dataclass
class Turn:
    """One turn of a conversation, the same on every wire.

    `role` is system (a top-level system prompt, a mid-conversation system entry, a Responses
    developer message), user, assistant or tool (a chat tool message, a Responses call output).
    `calls` are (id, name, arguments: parsed where they parse), `results` (call id, text),
    `thinking` (text, signature or encrypted content). `index` is the entry's position in the
    request's list (-1 for a top-level system prompt), `pointer` its JSON pointer."""

    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    results: list[tuple[str, str]] = field(default_factory=list)
    thinking: list[tuple[str, str | None]] = field(default_factory=list)
    index: int = -1
    pointer: str = ""


@dataclass(frozen=True)
class Slots:
    """The parts of a request every reader asks for, read once, the same on every wire."""

    system: str | None  # the system prompt's text (blocks joined), None when there is none
    prompt: str | None  # the user's own prompt text (`prompt_slot`), None when there is none
    tools: tuple[OfferedTool, ...]
    tool_choice: tuple[str, str | None, tuple[str, ...] | None] | None  # `demanded_tool_choice`
    output_cap: int | None
    thinking_budget: int | None  # a fixed thinking/reasoning budget in tokens (None: none or adaptive)
    stop_sequences: tuple[str, ...]
    stream: bool


def field_of(obj: Any, key: str, default: Any = None) -> Any:
    """`obj[key]` of a dict, else the attribute `key` of an object (an SDK model); `default` when absent."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def int_or_none(value: Any) -> int | None:
    """`value` when it is an int (a bool is not), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text_of(content: Any) -> str:
    """The text of a content value on any wire: a string, or its text parts joined by newlines
    (`text`, `input_text`, `output_text`); any other value as compact JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, str):
                parts.append(c)
            elif isinstance(c, dict) and c.get("type") in ("text", "input_text", "output_text"):
                parts.append(str(c.get("text", "")))
        return "\n".join(parts)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def parsed_arguments(value: Any) -> Any:
    """Call arguments as a request carries them: a JSON string is parsed where it parses."""
    if isinstance(value, str):
        try:
            return parse_json(value)
        except ValueError:
            return value
    return value


def not_an_object(text: str) -> str:
    """Why arguments text that does not parse to an object is refused (not JSON, or its JSON type)."""
    try:
        value = parse_json(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    return f"arguments are JSON {type(value).__name__}, not an object"


def function_call_from_text(call_id: str, name: str, args: Any, pointer: str,
                            namespace: str | None = None) -> ToolCall:
    """A ToolCall from arguments that should be a JSON string (chat and Responses function calls);
    an object is read and named in `not_text`, any other type is a parse error."""
    if isinstance(args, str):
        try:
            parsed = parse_json(args) if args.strip() else {}
        except ValueError as exc:  # not JSON, or past the bound
            return ToolCall(call_id, name, None, args, pointer, f"not JSON: {exc}", namespace=namespace)
        err = None if isinstance(parsed, dict) else f"arguments are JSON {type(parsed).__name__}, not an object"
        return ToolCall(call_id, name, parsed if isinstance(parsed, dict) else None, args, pointer, err,
                        namespace=namespace)
    if isinstance(args, dict):
        return ToolCall(call_id, name, args, None, pointer, None, type(args).__name__, namespace=namespace)
    return ToolCall(call_id, name, None, None, pointer, f"arguments are {type(args).__name__}",
                    type(args).__name__, namespace=namespace)
