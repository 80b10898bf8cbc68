"""Tool-call checks (`tools.*`): calls arrive structured, name an offered tool, fit its schema.

Rules:
- Works on the accumulated message of either API (conformance.protocols): Anthropic `tool_use`
  blocks with a parsed `input`, OpenAI `tool_calls` with `function.arguments` as a JSON string.
- `tools.call_structured` fires only when the request offered tools and no structured call came
  while the answer's text looks like a call (`<tool_call>`, `[TOOL_CALLS]`, `<function=...>`,
  `{"name": TOOL, "arguments": ...}` and function-call JSON naming an offered tool): the signature of an engine
  running without its tool-call parser (vLLM needs `--enable-auto-tool-choice
  --tool-call-parser NAME`; opencode #1122).
- `tools.arguments_schema` validates every call's arguments against that tool's `input_schema`
  (Anthropic) / `parameters` (OpenAI) from the request, with the schema's own draft
  (2020-12 when it declares none, as Claude Code and opencode send). Compiled validators are
  cached per schema text: Claude Code sends ~24 tool schemas (~64 KB) with every turn.
- Arguments that are not JSON at all are reported here too (the wire core reports the stream
  rule; this check names the tool and the schema, which is what a user fixes).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from conformance.checks.registry import register, violation
from conformance.failures import Violation

CALL_STRUCTURED = register(
    "tools.call_structured",
    "tool calls arrive structured (tool_use / tool_calls), not as text that looks like a call",
    likely_cause=(
        "the engine runs without its tool-call parser, so the model's call is returned as text: "
        "vLLM needs --enable-auto-tool-choice --tool-call-parser NAME (hermes, qwen3_coder, "
        "llama3_json, ...), llama.cpp needs --jinja; a router that flattens tool calls into text "
        "does the same (opencode #1122)"
    ),
).id

ARGUMENTS_SCHEMA = register(
    "tools.arguments_schema",
    "every tool call's arguments parse and validate against that tool's schema in the request",
    likely_cause=(
        "the engine's tool parser produced partial or malformed arguments (vLLM #35266, #41739; "
        "opencode #8102), or the model ignored the schema (wrong property names, e.g. path vs "
        "file_path)"
    ),
).id

NAME_OFFERED = register(
    "tools.name_offered",
    "every tool call names a tool the request offered",
    likely_cause=(
        "a router renamed or dropped tools in translation, or the model hallucinated a tool "
        "(a chat template that did not render the tool list)"
    ),
).id


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Any  # parsed arguments (dict) or None when they did not parse
    raw: str | None  # the arguments text when they arrived as text (OpenAI), else None
    pointer: str  # JSON pointer to the arguments in the accumulated message
    parse_error: str | None = None


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def offered_tools(request: dict | None, api: str) -> dict[str, dict | None]:
    """Tool name -> its JSON schema (None for tools without one, e.g. server tools)."""
    out: dict[str, dict | None] = {}
    for tool in (request or {}).get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if api == "openai" or tool.get("type") == "function":
            fn = tool.get("function") or {}
            if fn.get("name"):
                out[fn["name"]] = fn.get("parameters")
        elif tool.get("name"):
            out[tool["name"]] = tool.get("input_schema")
    return out


def tool_calls(message: Any, api: str) -> list[ToolCall]:
    """The structured tool calls of an accumulated message."""
    if message is None:
        return []
    calls: list[ToolCall] = []
    if api == "anthropic":
        for i, block in enumerate(_get(message, "content") or []):
            if _get(block, "type") == "tool_use":
                inp = _get(block, "input")
                calls.append(ToolCall(_get(block, "name") or "", inp if isinstance(inp, dict) else None,
                                      None, f"/content/{i}/input",
                                      None if isinstance(inp, dict) else f"input is {type(inp).__name__}"))
        return calls
    for i, call in enumerate(_get(message, "tool_calls") or []):
        fn = _get(call, "function") or {}
        args = _get(fn, "arguments")
        pointer = f"/tool_calls/{i}/function/arguments"
        if isinstance(args, str):
            try:
                parsed = json.loads(args) if args.strip() else {}
                err = None if isinstance(parsed, dict) else f"arguments are JSON {type(parsed).__name__}, not an object"
                calls.append(ToolCall(_get(fn, "name") or "", parsed if isinstance(parsed, dict) else None,
                                      args, pointer, err))
            except json.JSONDecodeError as exc:
                calls.append(ToolCall(_get(fn, "name") or "", None, args, pointer, f"not JSON: {exc}"))
        elif isinstance(args, dict):  # the wire core reports the string rule; the schema can still be judged
            calls.append(ToolCall(_get(fn, "name") or "", args, None, pointer))
        else:
            calls.append(ToolCall(_get(fn, "name") or "", None, None, pointer,
                                  f"arguments are {type(args).__name__}"))
    return calls


def message_text(message: Any, api: str) -> str:
    """All answer text of an accumulated message (not thinking)."""
    if message is None:
        return ""
    if api == "anthropic":
        return "".join(_get(b, "text") or "" for b in _get(message, "content") or [] if _get(b, "type") == "text")
    content = _get(message, "content")
    if isinstance(content, list):
        return "".join(_get(p, "text") or "" for p in content)
    return content or ""


# Markers that tool-call chat templates emit when the server does not parse them (hermes/qwen,
# llama 3.x, mistral, functionary, Claude-style XML). Facts from the public chat templates.
_TEXT_CALL_MARKERS = re.compile(
    r"<tool_call>|<\|tool_call\|>|<\|tool_calls_section_begin\|>|<\|python_tag\|>|\[TOOL_CALLS\]"
    r"|<function=[\w.\-]+>|<function_calls>|<invoke name=|<tool_use>|<\|action_start\|>",
)
_JSON_CALL = re.compile(
    r'\{\s*"(?:name|tool|tool_name)"\s*:\s*"(?P<name>[^"]{1,80})"\s*,\s*"(?:arguments|parameters|input|args)"\s*:'
    r'|\{\s*"(?:arguments|parameters|input)"\s*:\s*\{.{0,2000}?\}\s*,\s*"name"\s*:\s*"(?P<name2>[^"]{1,80})"'
    r'|"function"\s*:\s*\{\s*"name"\s*:\s*"(?P<name3>[^"]{1,80})"',
    re.DOTALL,
)


def looks_like_call(text: str, offered: set[str] | None = None) -> re.Match | None:
    """The first place where `text` looks like a tool call written out as text: a template's
    tool-call marker, or call-shaped JSON naming an offered tool (JSON naming anything else is
    more likely an answer about JSON than a lost call)."""
    marker = _TEXT_CALL_MARKERS.search(text)
    if marker:
        return marker
    wanted = {n.lower() for n in offered} if offered is not None else None
    for m in _JSON_CALL.finditer(text):
        name = (m.group("name") or m.group("name2") or m.group("name3") or "").lower()
        if wanted is None or name in wanted:
            return m
    return None


def check_call_structured(message: Any, request: dict | None, api: str, *, turn: int | None = None) -> list[Violation]:
    offered = offered_tools(request, api)
    if not offered or tool_calls(message, api):
        return []
    text = message_text(message, api)
    m = looks_like_call(text, set(offered))
    if m is None:
        return []
    start = max(0, m.start() - 40)
    snippet = text[start:m.start() + 160]
    return [violation(
        CALL_STRUCTURED,
        "the answer contains a tool call written as text and no structured tool call"
        + (" (tool_use block)" if api == "anthropic" else " (tool_calls)"),
        expected=f"a structured call to one of the offered tools ({', '.join(sorted(offered)[:8])}"
        + (", ..." if len(offered) > 8 else "") + ")",
        seen=f"text: {snippet!r}",
        pointer="/content" if api == "anthropic" else "/content",
        turn=turn,
    )]


@lru_cache(maxsize=256)
def _validator(schema_text: str):
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    schema = json.loads(schema_text)
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _pointer(path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def check_arguments(message: Any, request: dict | None, api: str, *, turn: int | None = None) -> tuple[list[Violation], list[str]]:
    """Violations of `tools.name_offered` / `tools.arguments_schema`, and notes (unjudgeable schemas)."""
    from jsonschema.exceptions import SchemaError

    offered = offered_tools(request, api)
    out: list[Violation] = []
    notes: list[str] = []
    for call in tool_calls(message, api):
        if call.name not in offered:
            out.append(violation(
                NAME_OFFERED, f"the call names tool {call.name!r}, which the request did not offer",
                expected=f"one of {sorted(offered)}", seen=call.name, pointer=call.pointer.rsplit("/", 1)[0],
                turn=turn))
            continue
        if call.arguments is None:
            out.append(violation(
                ARGUMENTS_SCHEMA, f"the arguments of the call to {call.name!r} do not parse to a JSON object",
                expected="a JSON object matching the tool's schema", seen=(call.parse_error or "")
                + (f"; arguments text {call.raw[:200]!r}" if call.raw is not None else ""),
                pointer=call.pointer, turn=turn))
            continue
        schema = offered[call.name]
        if not isinstance(schema, dict):
            notes.append(f"tool {call.name!r} has no schema in the request; arguments not validated")
            continue
        try:
            validator = _validator(json.dumps(schema, sort_keys=True))
        except (SchemaError, ValueError) as exc:
            notes.append(f"tool {call.name!r}: its schema is not a valid JSON Schema ({exc}); arguments not validated")
            continue
        errors = sorted(validator.iter_errors(call.arguments), key=lambda e: list(e.absolute_path))
        for err in errors[:3]:
            where = _pointer(err.absolute_path)
            out.append(violation(
                ARGUMENTS_SCHEMA,
                f"the arguments of the call to {call.name!r} violate its schema: {err.message}",
                expected=f"schema rule {'/'.join(str(p) for p in err.absolute_schema_path)}",
                seen=json.dumps(call.arguments, ensure_ascii=False)[:300],
                pointer=call.pointer + where, turn=turn))
    return out, notes
