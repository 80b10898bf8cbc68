"""What a wire is, in one object: the `Dialect` base, the neutral model of a request's
conversation (`Entry`, `Turn`, `Slots`), and the registry of wires.

Rules:
- A wire is one package under `conformance/wire/` (`anthropic/`, `chat/`, `responses/`): its
  grammar (the stream state machine, in `grammar.py`), its JSON Schemas (`schemas/`) and its
  Dialect (`dialect.py`), registered here with `register_dialect` when the package is imported.
  `conformance.wire` imports the built-in packages, so any `conformance.wire.*` import sees them;
  a wire defined elsewhere (a test's toy wire) registers itself the same way, with one call.
- A Dialect READS a request (`entries`, `turns`, `slots`, `prompt_slot`, `context_texts`, the
  offered tools, the demanded tool_choice, the output cap) and an answer (text, thinking, tool
  calls as one `ToolCall`, stop reason, usage), and WRITES requests that stay valid
  (`with_prompt`, `first_turn`, `quoted`, `forcing`, `with_output_cap`, `without_thinking`,
  `salted`, ...). Writers never change their input: they return a changed deep copy.
- Every module outside `wire/` reads or changes the conversation inside a request only through a
  Dialect, and passes Dialect objects, not names. The one path -> wire map is
  `dialect_for_path`; the one name -> wire map is `dialect` (names are what users type:
  `--conformance-api openai`, and what the results record stores).
- Readers never raise on a target's or a client's data: a missing or mistyped field reads as
  empty / None. They accept dicts and attribute objects (SDK models) alike.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

# Prompt tokens the Anthropic usage counts apart from input_tokens (read from and written to the cache).
ANTHROPIC_CACHED_INPUT_KEYS = ("cache_read_input_tokens", "cache_creation_input_tokens")

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


# ----------------------------------------------------------------------------- the neutral model
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


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _int(value: Any) -> int | None:
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
            return json.loads(value)
        except ValueError:
            return value
    return value


def not_an_object(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    return f"arguments are JSON {type(value).__name__}, not an object"


def function_call_from_text(call_id: str, name: str, args: Any, pointer: str,
                            namespace: str | None = None) -> ToolCall:
    """A ToolCall from arguments that should be a JSON string (chat and Responses function calls);
    an object is read and named in `not_text`, any other type is a parse error."""
    if isinstance(args, str):
        try:
            parsed = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            return ToolCall(call_id, name, None, args, pointer, f"not JSON: {exc}", namespace=namespace)
        err = None if isinstance(parsed, dict) else f"arguments are JSON {type(parsed).__name__}, not an object"
        return ToolCall(call_id, name, parsed if isinstance(parsed, dict) else None, args, pointer, err,
                        namespace=namespace)
    if isinstance(args, dict):
        return ToolCall(call_id, name, args, None, pointer, None, type(args).__name__, namespace=namespace)
    return ToolCall(call_id, name, None, None, pointer, f"arguments are {type(args).__name__}",
                    type(args).__name__, namespace=namespace)


# ----------------------------------------------------------------------------- the Dialect
class Grammar(Protocol):
    """What a wire's grammar offers its Dialect (a module, as the built-in wires' grammar.py, or
    any object with these four functions)."""

    def check_stream(self, chunks: Any, *, request: dict | None = None) -> Any: ...

    def check_response(self, body: Any, *, request: dict | None = None) -> tuple[Any, list]: ...

    def check_error(self, status: int, body: bytes) -> list: ...

    def content_started(self, buf: bytes) -> bool: ...


@dataclass(frozen=True, eq=False)  # one object per wire: equal only to itself, hashable
class Dialect:
    """What one wire is; subclasses hold the readers and writers that differ between wires."""

    name: str
    grammar: Grammar  # the wire's grammar: check_stream, check_response, check_error, content_started
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
    conversation_key: str = "messages"  # the request key holding the conversation
    # The conversation is sent as items the engine must get back unchanged (Responses input items,
    # store false), rather than as messages a router may translate.
    carries_items: bool = False
    # A target may not serve this wire at all (a chat-only server has no /v1/responses): a 404 on
    # its generation path is the wire missing (`suite.responses.available`), not a refusal.
    may_be_absent: bool = False
    # Routers translate this wire's requests for engines of other wires (LiteLLM's and
    # claude-code-router's /v1/messages in front of chat or Responses engines): a client of this
    # wire is judged by the rules for a translated request (`conformance.checks.translation`).
    router_translates: bool = False
    # The request field that asks a stream to end with usage (chat: `stream_options`, its
    # `include_usage`); None: a stream reports usage unasked.
    stream_usage_option: str | None = None
    # The content type of a streamed answer (what a stream:true request must be answered with).
    stream_media_type: str = "text/event-stream"

    def __str__(self) -> str:
        return self.name

    # ---- the grammar -----------------------------------------------------------------------
    def content_started(self, buf: bytes) -> bool:
        return self.grammar.content_started(buf)

    def check_stream(self, chunks, *, request: dict | None = None):
        return self.grammar.check_stream(chunks, request=request)

    def check_response(self, body, *, request: dict | None = None):
        return self.grammar.check_response(body, request=request)

    def check_error(self, status: int, body: bytes):
        return self.grammar.check_error(status, body)

    @property
    def rule_prefix(self) -> str:
        """The prefix of this wire's grammar check ids (`anthropic.`, `openai.`, ...)."""
        return f"{self.name}."

    # ---- paths and sending -----------------------------------------------------------------
    def serves_path(self, path: str) -> bool:
        """Does `path` end with this wire's generation or count_tokens endpoint?"""
        return _tail_length(self, path) is not None

    def is_count_tokens(self, path: str) -> bool:
        p = path.split("?", 1)[0].rstrip("/")
        return bool(self.count_tokens_path) and p.endswith(self.count_tokens_path.removeprefix("/v1"))

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

    # ---- readers of a request: the conversation --------------------------------------------
    def entries(self, request: dict | None) -> list[Entry]:
        """The conversation's entries as sent (messages, or input items)."""
        items = (request or {}).get(self.conversation_key)
        return [Entry(f"/{self.conversation_key}/{i}", i, m) for i, m in enumerate(items or [])
                if isinstance(m, dict)] if isinstance(items, list) else []

    def turns(self, request: dict | None) -> list[Turn]:
        """The conversation as neutral turns (see `Turn`), the system prompt first."""
        raise NotImplementedError

    def chat_messages(self, request: dict | None) -> list[dict]:
        """The request's conversation as chat-completions messages (a tokenizer's chat template
        input): the system prompt first, content flattened to its text."""
        raise NotImplementedError

    def system_text(self, request: dict | None) -> str | None:
        """The system prompt's text (blocks joined), None when the request has none."""
        turns = [t for t in self.turns(request) if t.role == "system" and t.index < 0]
        return "\n".join(turns[0].texts) if turns else None

    def _user_parts(self, entry: dict) -> list[tuple[Any, Any]]:
        """(holder, key) of each text of a user entry, in order (a string content is one)."""
        content = entry.get("content")
        if isinstance(content, str):
            return [(entry, "content")]
        return [(part, "text") for part in content if isinstance(part, dict)
                and part.get("type") in ("text", "input_text") and isinstance(part.get("text"), str)] \
            if isinstance(content, list) else []

    def _is_user(self, entry: dict) -> bool:
        return entry.get("role") == "user" and entry.get("type", "message") == "message"

    def _is_model_side(self, entry: dict) -> bool:
        return entry.get("role") in ("assistant", "tool")

    def prompt_slot(self, request: dict | None) -> tuple[Any, Any] | None:
        """(holder, key) of the user's own prompt text, in place: the first user entry before the
        model's first turn that holds text of the user's own (a client's injected context blocks —
        Claude Code's `<system-reminder>`, Codex's `<environment_context>` — are skipped), its last
        such text; a string content is all the user's. None when the request has no user text."""
        first_texts = None
        for e in self.entries(request):
            value = e.value
            if self._is_model_side(value):
                break
            if not self._is_user(value):
                continue
            parts = self._user_parts(value)
            if parts and first_texts is None:
                first_texts = parts
            if parts and parts[0][1] == "content":
                return parts[0] if parts[0][0]["content"].strip() else None
            own = [p for p in parts if p[0]["text"].strip() and not is_context_block(p[0]["text"])]
            if own:
                return own[-1]
        # Only context blocks: the first user entry's last text (a template may hold no own words).
        return first_texts[-1] if first_texts else None

    def prompt(self, request: dict | None) -> str | None:
        slot = self.prompt_slot(request)
        return None if slot is None else slot[0][slot[1]]

    def context_texts(self, request: dict | None) -> list[str]:
        """Every text a client writes about its environment: the system prompt, system / developer
        entries, and the context blocks injected into user turns (where a client names its
        working directory)."""
        out: list[str] = []
        for t in self.turns(request):
            if t.role == "system":
                out.extend(t.texts)
        for e in self.entries(request):
            if self._is_user(e.value):
                out.extend(h[k] for h, k in self._user_parts(e.value)
                           if k == "text" and is_context_block(h[k]))
        return out

    def last_user_text(self, request: dict | None) -> str:
        """The last non-blank text of the last user entry that holds one (the user's words or a
        context block a client injected; never a tool result); "" when there is none."""
        for e in reversed(self.entries(request)):
            if self._is_user(e.value):
                texts = [h[k] for h, k in self._user_parts(e.value) if h[k].strip()]
                if texts:
                    return texts[-1]
        return ""

    def tail_text(self, request: dict | None) -> str:
        """The longest text of the conversation's last entry, stripped (its text parts, or the
        content of the tool result it carries): what tells the requests of one agent loop apart,
        since they all carry the same first prompt. "" when it holds none."""
        entries = self.entries(request)
        parts = self._tail_parts(entries[-1].value) if entries else []
        return max(parts, key=len).strip() if parts else ""

    def _tail_parts(self, entry: dict) -> list[str]:
        content = entry.get("content")
        if isinstance(content, str):
            return [content]
        return [str(b.get("text", "")) for b in content if isinstance(b, dict)
                and b.get("type") in ("text", "input_text")] if isinstance(content, list) else []

    def is_first_request(self, request: dict | None) -> bool:
        """A loop's first request: a user turn and nothing the model said yet."""
        roles = [t.role for t in self.turns(request)]
        return "user" in roles and not any(r in ("assistant", "tool") for r in roles)

    def system_entries(self, request: dict | None) -> list[Entry]:
        """Mid-conversation system entries (a chat wire's leading system message is its system
        prompt, not one of these)."""
        return [e for e in self.entries(request) if self._is_system_role_entry(e.index, e.value)]

    def _is_system_role_entry(self, index: int, entry: Any) -> bool:
        """A `role: system` entry after the conversation's first: what `without_system_entries`
        removes and `system_role_turns` reads."""
        return index > 0 and isinstance(entry, dict) and entry.get("role") == "system"

    def system_role_turns(self, request: dict | None) -> list[Turn]:
        """The `role: system` entries after the conversation's first, as turns: Claude Code's
        mid-conversation system entries (a `content: []` one reads as a turn with no text),
        exactly what `without_system_entries` removes. A chat wire's leading system message is
        its system prompt, a Responses developer message an instruction of that wire: neither is
        one, whatever `system_entries` of that wire counts."""
        indexes = {e.index for e in self.entries(request) if self._is_system_role_entry(e.index, e.value)}
        return [t for t in self.turns(request) if t.index in indexes]

    # ---- readers of a request: everything else ---------------------------------------------
    def offered_tools(self, request: dict | None) -> dict[str, dict | None]:
        """Tool name -> its JSON schema (None for tools without one, e.g. server tools)."""
        raise NotImplementedError

    def offered_tool_specs(self, request: dict | None) -> list[OfferedTool]:
        """Every offered tool with its kind, namespace and strictness (a wire without freeform,
        hosted or namespaced tools: plain functions from `offered_tools`)."""
        return [OfferedTool(name, schema, "function" if schema is not None else "hosted")
                for name, schema in self.offered_tools(request).items()]

    def tool_definitions(self, request: dict | None) -> list[dict]:
        """The raw tool definitions the request offers, as sent (in this wire's shape, in order)."""
        tools = (request or {}).get("tools")
        return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []

    def deferred_tools(self, request: dict | None) -> list[str]:
        """The tools offered with `defer_loading: true` (callable only once a tool search loads
        them: Claude Code's deferred tools), by name, in order."""
        return [name for t in self.tool_definitions(request)
                if t.get("defer_loading") is True and (name := self.tool_name(t)) is not None]

    def thinking_display(self, request: dict | None) -> Any:
        """How the request asks thinking to be shown (Anthropic `thinking.display`; None: not asked)."""
        return None

    def last_tool_result(self, request: dict | None) -> str | None:
        """The call id the last turn's tool result answers, where this wire's tool-result writers
        (`with_tool_result_image`, `with_replayed_blocks`, `with_tool_reference`) can change it;
        None: no such result (or a wire without those writers)."""
        return None

    def system_block_text(self, request: dict | None, prefix: str) -> str | None:
        """The first text block of a block-list system prompt that starts with `prefix` (Claude
        Code's `x-anthropic-billing-header:` block); None: none, or a wire without system blocks."""
        return None

    def tool_name(self, tool: Any) -> str | None:
        """The name of one raw tool definition as this wire writes it (None: none)."""
        if not isinstance(tool, dict):
            return None
        fn = tool.get("function")
        name = tool.get("name") or (fn.get("name") if isinstance(fn, dict) else None)
        return name if isinstance(name, str) and name else None

    def tool_schema(self, tool: Any) -> Any:
        """The input JSON schema of one raw tool definition as this wire writes it (None: none)."""
        if not isinstance(tool, dict):
            return None
        fn = tool.get("function")
        return fn.get("parameters") if isinstance(fn, dict) else tool.get("parameters")

    def output_cap(self, request: dict | None) -> int | None:
        for key in self.cap_keys:
            value = _int((request or {}).get(key))
            if value is not None and value > 0:
                return value
        return None

    def thinking_budget(self, request: dict | None) -> int | None:
        """A fixed thinking budget in tokens the request sets (None: none, adaptive or an effort)."""
        return None

    def stop_sequences(self, request: dict | None) -> tuple[str, ...]:
        if self.stop_sequences_key is None:
            return ()
        value = (request or {}).get(self.stop_sequences_key)
        value = [value] if isinstance(value, str) else value
        return tuple(s for s in value or [] if isinstance(s, str))

    def demanded_tool_choice(self, request: dict | None) -> tuple[str, str | None, list[str] | None] | None:
        """What the request's tool_choice demands: ("force", name or None, allowed names or None),
        ("forbid", None, None), or None when it demands nothing (auto, absent, unknown shapes)."""
        raise NotImplementedError

    def slots(self, request: dict | None) -> Slots:
        choice = self.demanded_tool_choice(request)
        return Slots(
            system=self.system_text(request),
            prompt=self.prompt(request),
            tools=tuple(self.offered_tool_specs(request)),
            tool_choice=None if choice is None else (choice[0], choice[1], tuple(choice[2]) if choice[2] else None),
            output_cap=self.output_cap(request),
            thinking_budget=self.thinking_budget(request),
            stop_sequences=self.stop_sequences(request),
            stream=(request or {}).get("stream") is True,
        )

    # ---- writers: each returns a changed deep copy -----------------------------------------
    def with_model(self, request: dict, model: str | None) -> dict:
        if not model or request.get("model") == model:
            return request
        out = copy.deepcopy(request)
        out["model"] = model
        return out

    def with_prompt(self, request: dict, text: str, *, first_turn: bool = False) -> dict:
        """The request with the user's own prompt text replaced by `text` (LookupError when it
        has none); `first_turn`: the conversation also ends after that prompt's entry."""
        out = copy.deepcopy(request)
        slot = self.prompt_slot(out)
        if slot is None:
            raise LookupError("the request has no user prompt text to replace")
        holder, key = slot
        holder[key] = text
        if first_turn:
            self._cut_after(out, holder)
        return out

    def first_turn(self, request: dict) -> dict:
        """The conversation up to the entry holding the user's prompt (LookupError without one)."""
        out = copy.deepcopy(request)
        slot = self.prompt_slot(out)
        if slot is None:
            raise LookupError("the request has no user prompt text")
        self._cut_after(out, slot[0])
        return out

    def _cut_after(self, request: dict, holder: Any) -> None:
        items = request.get(self.conversation_key)
        if not isinstance(items, list):
            return
        for i, entry in enumerate(items):
            content = entry.get("content") if isinstance(entry, dict) else None
            if entry is holder or (isinstance(content, list) and any(p is holder for p in content)):
                request[self.conversation_key] = items[: i + 1]
                return

    def quoted(self, request: dict) -> dict | None:
        """The same request with the prompt wrapped in literal double quotes (as opencode sends
        arguments containing spaces); None when the request has no user prompt text."""
        prompt = self.prompt(request)
        return None if prompt is None else self.with_prompt(request, f'"{prompt}"')

    def with_tools(self, request: dict, tools: list[dict]) -> dict:
        """The request offering exactly `tools` (raw definitions in this wire's shape)."""
        out = copy.deepcopy(request)
        out["tools"] = copy.deepcopy(tools)
        return out

    def forcing(self, request: dict, name: str | None = None) -> dict:
        """The request demanding a tool call (of `name`, else of any offered tool), kept valid."""
        raise NotImplementedError

    def with_output_cap(self, request: dict, cap: int) -> dict:
        """The request with its output cap set to `cap` (the key it already uses, else the wire's
        first), kept valid (a thinking budget that must stay below the cap is lowered)."""
        out = copy.deepcopy(request)
        key = next((k for k in self.cap_keys if k in out), self.cap_keys[-1])
        out[key] = cap
        return out

    def without_thinking(self, request: dict) -> dict:
        """The request with extended thinking off (thinking and what depends on it removed)."""
        out = copy.deepcopy(request)
        out.pop("thinking", None)
        out.pop("context_management", None)
        return out

    def without_system_entries(self, request: dict) -> dict:
        """The request without mid-conversation system entries (`system_role_turns`)."""
        out = copy.deepcopy(request)
        items = out.get(self.conversation_key)
        if isinstance(items, list):
            out[self.conversation_key] = [m for i, m in enumerate(items) if not self._is_system_role_entry(i, m)]
        return out

    def without_thinking_display(self, request: dict) -> dict:
        """The request without a thinking display setting (`thinking_display`)."""
        return copy.deepcopy(request)

    def with_stream(self, request: dict, stream: bool) -> dict:
        """The request asking for a streamed answer or a whole one (without `stream_options`,
        which chat and Responses accept only on a streamed request)."""
        out = copy.deepcopy(request)
        out["stream"] = stream
        if not stream:
            out.pop("stream_options", None)
        return out

    def with_stop_sequences(self, request: dict, stops: list[str]) -> dict:
        """The request stopping at `stops` (ValueError on a wire without stop sequences)."""
        if self.stop_sequences_key is None:
            raise ValueError(f"the {self.name} wire has no stop sequences")
        out = copy.deepcopy(request)
        out[self.stop_sequences_key] = list(stops)
        return out

    def with_tool_result_image(self, request: dict, media_type: str, data: str) -> dict:
        """The last tool result (`last_tool_result`) with an image (base64 `data`) after its
        content (LookupError without one)."""
        raise LookupError(f"no tool-result writer on the {self.name} wire")

    def with_replayed_blocks(self, request: dict, blocks: list[dict]) -> dict:
        """`blocks` (this wire's content blocks, as a conversation that used server tools replays
        them) at the start of the assistant turn whose call the last tool result answers
        (LookupError without one)."""
        raise LookupError(f"no tool-result writer on the {self.name} wire")

    def with_tool_reference(self, request: dict, tool: str, *, search: str | None = None) -> dict:
        """The last tool call made a tool search that loaded `tool` (`search`: the client's search
        tool, when it offers one; else the call keeps its name): its result is a reference to
        `tool`, the call the assistant turn's only content (LookupError without one)."""
        raise LookupError(f"no tool-result writer on the {self.name} wire")

    def with_system_of(self, request: dict, other: dict, *, keep: str) -> dict:
        """The request with `other`'s system prompt, after its own system blocks that start with
        `keep` (two conversations of one project: each its own billing header, one system text);
        unchanged on a wire without system blocks."""
        return copy.deepcopy(request)

    def salted(self, request: dict, prefix: str) -> dict:
        """`prefix` at the very start of the system prompt (a run token that defeats prefix and
        response caches); a request without one gets one."""
        raise NotImplementedError

    def salted_prefix(self, request: dict, salt: str, *, skip: str | None = None) -> dict:
        """`salt` at the start of the first system text (not one starting with `skip`) and of the
        first tool's description: two requests salted alike share it, no earlier one saw it. Both,
        because a chat template may render the tools or the system text first."""
        out = copy.deepcopy(request)
        for holder, key in self._system_slots(out):
            if not (skip and holder[key].startswith(skip)):
                holder[key] = salt + holder[key]
                break
        tools = out.get("tools") or []
        first = tools[0] if tools and isinstance(tools[0], dict) else None
        if first is not None:
            fn = first.get("function") if isinstance(first.get("function"), dict) else first
            if isinstance(fn.get("description"), str):
                fn["description"] = salt + fn["description"]
        return out

    def _system_slots(self, request: dict) -> list[tuple[Any, Any]]:
        """(holder, key) of each text of the system prompt, in place and in order: the top-level
        `system` (a string or text blocks) on a wire that keeps it there, else the conversation's
        leading system / developer message."""
        if self.system_at_top:
            holder, key, value = request, "system", request.get("system")
        else:
            entries = self.entries(request)
            first = entries[0].value if entries and entries[0].index == 0 else {}
            if first.get("role") not in ("system", "developer"):
                return []
            holder, key, value = first, "content", first.get("content")
        if isinstance(value, str):
            return [(holder, key)]
        return [(b, "text") for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)] \
            if isinstance(value, list) else []

    def count_tokens_request(self, request: dict) -> dict | None:
        """The count_tokens body for a generation request (None: this wire has no count_tokens)."""
        return None

    def invalid_request(self, body: dict) -> tuple[dict, str]:
        """`body` made one the API must refuse (non-stream), and what was broken, for messages."""
        return {**body, "messages": "this is not a list of messages", "stream": False}, "messages is a string"

    def one_turn_request(self, model: str, system: str, user_text: str, *, max_tokens: int,
                         stream: bool) -> dict[str, Any]:
        """A minimal one-turn request in this wire's shape (a streamed chat request asks for usage)."""
        raise NotImplementedError

    def tool_definition(self, name: str, description: str, schema: dict) -> dict:
        """One function tool offered in this wire's shape (a raw definition for `with_tools`)."""
        raise NotImplementedError

    def reasoning_variants(self, budget_tokens: int) -> list[tuple[str, dict]]:
        """The reasoning controls the clients send on this wire, as (name, request fields to add):
        each effort level, then a fixed budget of `budget_tokens` where the wire has one. Empty:
        the wire has none."""
        return []


# ----------------------------------------------------------------------------- the registry
DIALECTS: dict[str, Dialect] = {}


def register_dialect(d: Dialect) -> Dialect:
    """Add a wire (re-registering the same object is a no-op; another one under a taken name is refused)."""
    existing = DIALECTS.get(d.name)
    if existing is not None and existing is not d:
        raise ValueError(f"a wire named {d.name!r} is registered already")
    DIALECTS[d.name] = d
    return d


def unregister_dialect(d: Dialect) -> None:
    """Remove a wire registered with `register_dialect` (a wire defined for a while: a test's toy)."""
    if DIALECTS.get(d.name) is d:
        del DIALECTS[d.name]


def dialect(name: str | Dialect) -> Dialect:
    """The Dialect of a wire name (what users type and the results record stores); a Dialect is
    returned as it is. An unknown name is refused with the known ones."""
    if isinstance(name, Dialect):
        return name
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown api {name!r}: expected one of {', '.join(repr(n) for n in DIALECTS)}") from None


def _tail_length(d: Dialect, path: str) -> int | None:
    p = path.split("?", 1)[0].rstrip("/")
    best = None
    for endpoint in (d.generation_path, d.count_tokens_path):
        tail = endpoint.removeprefix("/v1") if endpoint else None
        if tail and p.endswith(tail) and (best is None or len(tail) > best):
            best = len(tail)
    return best


def dialect_for_path(path: str) -> Dialect | None:
    """The wire of a request path: the Dialect whose generation or count_tokens endpoint the path
    ends with, under any mount prefix (/v1, /anthropic/v1, none) and ignoring a query; None for
    any other path. The one path -> wire map (captures, hops, the exchange judge)."""
    best: tuple[int, Dialect] | None = None
    for d in DIALECTS.values():
        n = _tail_length(d, path)
        if n is not None and (best is None or n > best[0]):
            best = (n, d)
    return best[1] if best else None


def is_generation_path(path: str) -> bool:
    """Does `path` end with a wire's generation endpoint (not count_tokens, not anything else)?"""
    p = path.split("?", 1)[0].rstrip("/")
    return any(p.endswith(d.generation_path.removeprefix("/v1")) for d in DIALECTS.values())


def is_count_tokens_path(path: str) -> bool:
    return any(d.is_count_tokens(path) for d in DIALECTS.values())
