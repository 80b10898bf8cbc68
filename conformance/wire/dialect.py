"""What a wire is, in one object: the `Dialect` base (its facts, its grammar, its readers of
requests and answers; its writers are `writers.RequestWriters`).

Rules:
- A wire is one package under `conformance/wire/` (`anthropic/`, `chat/`, `responses/`): its
  grammar (the stream state machine, in `grammar.py`), its JSON Schemas (`schemas/`) and its
  Dialect (`dialect.py`, a subclass of `Dialect`), registered with `registry.register_dialect`
  when the package is imported. A wire defined elsewhere (a test's toy wire) registers itself
  the same way, with one call.
- A Dialect READS a request (`entries`, `turns`, `slots`, `prompt_slot`, `context_texts`, the
  offered tools, the demanded tool_choice, the output cap) and an answer (text, thinking, tool
  calls as one `ToolCall`, stop reason, usage), in the neutral model of `conversation`, and WRITES
  requests that stay valid (`writers`). The base class holds what is the same on every wire and
  the defaults a wire overrides; a reader only a wire can know raises NotImplementedError here.
- Every module outside `wire/` reads or changes the conversation inside a request only through a
  Dialect, and passes Dialect objects, not names (`registry.dialect` turns a user's name into one).
- Readers never raise on a target's or a client's data: a missing or mistyped field reads as
  empty / None. They accept dicts and attribute objects (SDK models) alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from conformance.wire.conversation import (
    Entry,
    OfferedTool,
    Slots,
    ToolCall,
    Turn,
    field_of,
    int_or_none,
    is_context_block,
)
from conformance.wire.writers import RequestWriters

# Prompt tokens the Anthropic usage counts apart from input_tokens (read from and written to the cache).
ANTHROPIC_CACHED_INPUT_KEYS = ("cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass(frozen=True)
class StopVocabulary:
    """A wire's stop reasons: where an answer says why it ended, and what each reason means."""

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


class Grammar(Protocol):
    """What a wire's grammar offers its Dialect (a module, as the built-in wires' grammar.py, or
    any object with these four functions)."""

    def check_stream(self, chunks: Any, *, request: dict | None = None) -> Any: ...

    def check_response(self, body: Any, *, request: dict | None = None) -> tuple[Any, list]: ...

    def check_error(self, status: int, body: bytes) -> list: ...

    def content_started(self, buf: bytes) -> bool: ...


@dataclass(frozen=True, eq=False)  # one object per wire: equal only to itself, hashable
class Dialect(RequestWriters):
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
    def endpoint_match(self, path: str) -> int | None:
        """How much of `path` this wire's generation or count_tokens endpoint matches: the length
        of the longest endpoint (without its /v1) the path ends with, ignoring a query and a
        trailing slash; None when it ends with neither. The longest match names a path's wire."""
        p = path.split("?", 1)[0].rstrip("/")
        best = None
        for endpoint in (self.generation_path, self.count_tokens_path):
            tail = endpoint.removeprefix("/v1") if endpoint else None
            if tail and p.endswith(tail) and (best is None or len(tail) > best):
                best = len(tail)
        return best

    def serves_path(self, path: str) -> bool:
        """Does `path` end with this wire's generation or count_tokens endpoint?"""
        return self.endpoint_match(path) is not None

    def is_generation(self, path: str) -> bool:
        """Does `path` end with this wire's generation endpoint (ignoring a query)?"""
        p = path.split("?", 1)[0].rstrip("/")
        return p.endswith(self.generation_path.removeprefix("/v1"))

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
        return field_of(message, self.stops.field)

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
        usage = field_of(message, "usage") if message is not None else None
        return usage if isinstance(usage, dict) else None

    def output_tokens(self, message: Any) -> int | None:
        usage = self.usage(message)
        return None if usage is None else int_or_none(usage.get(self.output_tokens_key))

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
        one."""
        indexes = {e.index for e in self.system_entries(request)}
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
            value = int_or_none((request or {}).get(key))
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

    def wire_request_problems(self, request: dict, betas: frozenset[str], *, counting: bool = False) -> list[str]:
        """What this wire's API refuses beyond the generic rules (`conformance.wire.request_rules`);
        `counting`: the body goes to count_tokens (no answer, so no output cap)."""
        return []

    def demanded_tool_choice(self, request: dict | None) -> tuple[str, str | None, list[str] | None] | None:
        """What the request's tool_choice demands: ("force", name or None, allowed names or None),
        ("forbid", None, None), or None when it demands nothing (auto, absent, unknown shapes).
        The words are the OpenAI wires' (`required`: any tool, `none`); an object is the wire's
        own shape (`demanded_tool_object`)."""
        choice = (request or {}).get("tool_choice")
        if choice == "required":
            return "force", None, None
        if choice == "none":
            return "forbid", None, None
        return self.demanded_tool_object(choice) if isinstance(choice, dict) else None

    def demanded_tool_object(self, choice: dict) -> tuple[str, str | None, list[str] | None] | None:
        """What an object tool_choice demands, read in this wire's shape (as `demanded_tool_choice`)."""
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
