"""The engine's API-neutral view of a request: system text, messages, offered tools, limits.

Rules:
- Each route (Anthropic, OpenAI chat, Responses) validates its own wire and builds a
  `Conversation`; the planner and the scenario player only ever see this view.
- `InvalidRequest` carries what each route needs to render its own error envelope: HTTP status,
  an error kind (Anthropic error type names; routes map them) and a message that names the field.
- Prompt tokens are counted here with the engine tokenizer, over exactly what the model "reads".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from conformance.engine import tokenizer
from conformance.engine.faults import SCHEMA_GRAMMAR_FAIL


class InvalidRequest(Exception):
    """A request the engine refuses. `kind` uses Anthropic's error type names."""

    def __init__(self, message: str, *, status: int = 400, kind: str = "invalid_request_error", param=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind
        self.param = param


@dataclass
class ToolCall:
    id: str
    name: str
    input: object  # dict when parseable, else the raw argument text (a custom tool's raw input)


@dataclass
class ToolResult:
    id: str
    text: str
    is_error: bool = False


@dataclass
class Message:
    role: str  # "user", "assistant", "system", "tool"
    texts: list[str] = field(default_factory=list)  # text the author wrote (never tool results)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)


@dataclass
class Tool:
    name: str
    schema: dict
    description: str = ""
    kind: str = "function"  # "function" (JSON arguments) or "custom" (Responses freeform: raw text input)
    namespace: str | None = None  # Responses: the `namespace` tool this one was offered inside


@dataclass
class Conversation:
    api: str  # "anthropic", "openai", "responses"
    model: str
    system: list[str]
    messages: list[Message]
    tools: list[Tool]
    tool_choice: str = "auto"  # "auto", "none", "any" (some tool), "tool" (the named one)
    tool_choice_name: str | None = None
    max_tokens: int | None = None  # None: up to the context limit
    stop: list[str] = field(default_factory=list)
    thinking: bool = False  # emit a thinking/reasoning block
    thinking_display: str = "summarized"  # "omitted": thinking text withheld, signature kept
    stream: bool = False
    parallel_tools: bool = True  # False: at most one tool call per turn (disable_parallel_tool_use)
    truncated_tokens: int = 0  # fault over-limit-not-refused: tokens silently dropped from the start

    def system_text(self) -> str:
        parts = list(self.system)
        parts += [t for m in self.messages if m.role == "system" for t in m.texts]
        return "\n".join(parts)

    def haystack(self) -> str:
        """Every text the model reads, in order (system, messages, tool results)."""
        out = list(self.system)
        for m in self.messages:
            out += m.thinking
            out += m.texts
            out += [r.text for r in m.results]
        return "\n".join(out)

    def prompt_tokens(self) -> int:
        n = 3 + sum(tokenizer.count(s) for s in self.system)
        for m in self.messages:
            n += 4
            n += sum(tokenizer.count(t) for t in m.texts)
            n += sum(tokenizer.count(t) for t in m.thinking)
            n += sum(tokenizer.count(r.text) for r in m.results)
            for c in m.calls:
                n += tokenizer.count(c.name) + tokenizer.count(compact_json(c.input))
        for t in self.tools:
            n += tokenizer.count(t.name) + tokenizer.count(t.description) + tokenizer.count(compact_json(t.schema))
        return n


def compact_json(value) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def block_text(content) -> str:
    """Text of a tool result / message content given as a string or a list of blocks/parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for b in content:
            if isinstance(b, str):
                out.append(b)
            elif isinstance(b, dict):
                t = b.get("text")
                if isinstance(t, str):
                    out.append(t)
        return "\n".join(out)
    return str(content)


def require(cond: bool, message: str, param: str | None = None) -> None:
    if not cond:
        raise InvalidRequest(message, param=param)


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def refuse_ungrammatical(tools: list[Tool], choice: str, choice_name: str | None, faults) -> None:
    """Fault `schema-grammar-fail`: a constrained decoder that cannot compile a `pattern` keyword
    fails the forced tool's grammar with a 500 (lmstudio-bug-tracker #2220; llama.cpp #28340)."""
    if SCHEMA_GRAMMAR_FAIL not in faults or choice not in ("any", "tool", "required"):
        return
    forced = [t for t in tools if choice != "tool" or t.name == choice_name]
    for t in forced:
        if '"pattern"' in json.dumps(t.schema):
            raise InvalidRequest(f"failed to parse grammar: the schema of tool {t.name!r} uses `pattern`",
                                 status=500, kind="api_error")
