"""client_wire.*: what the newest client wire (Claude Code 2.1.332) asks of a stack.

Rules (facts: docs/WIRE.md "What the clients send now"; the sources of each fault in FAULTS.md's
"Proposed" list):
- A shape a released client sends is accepted: `thinking.display`, a `{"role":"system"}` entry
  with `content: []`, an image inside a `tool_result`, replayed `redacted_thinking` /
  `server_tool_use` / `*_tool_result` blocks. A refusal fails the shape's own id; an accepted
  request is then judged as every exchange is (`check_exchange`).
- Deferred tools: a tool with `defer_loading: true` is not callable until a `tool_reference`
  block loads it (`client_wire.deferred.not_callable`); a `tool_reference` inside a `tool_result`
  loads its tool or is refused with a 4xx that names `tool_reference` or the tool, never dropped
  (`client_wire.tool_reference.expanded`).
- `max_tokens` above what the target can give is clamped (2xx) or refused with a 4xx whose text
  names the limit; a 5xx, a transport failure (a hang past the deadline) fails it.
- A refused `{"role":"system"}` entry must be refused with a 400 whose text the client's own
  fallback recognises (`fallback_recognised`, facts read from Claude Code 2.1.332's error
  classifier: it retries without mid-conversation system entries only on such a 400; colibri
  PR #725). An accepted entry needs no fallback and passes.
- With the engine behind a router known (`--conformance-engine-url`), what reached the engine is
  read too: a deferred tool forwarded as an ordinary function, or `defer_loading` inside a
  forwarded schema, fails `client_wire.deferred.not_callable` whatever the model then called.
- Several tool calls asked for in one turn all arrive (`client_wire.parallel_calls.all_survive`).
- Each real tool schema, forced one by one, is answered with a call of that tool
  (`client_wire.schema.forced_call_answered`; a 500 "failed to parse grammar" fails it).
- Prefix reuse (opt-in probe): a second turn that re-prefills the shared prefix is a warning
  with the measured cost; a second conversation that re-prefills the shared system prompt and
  tools is a note (info) with the cost. The signal is `usage.cache_read_input_tokens` (named in
  the verdict).
- A client that resends one turn's body with `stream: false` fell back from an unusable stream
  (`client_wire.stream.no_nonstream_fallback`; judged from the recorded exchanges of a live turn
  by `conformance.capture.turns`).
"""

from __future__ import annotations

import re

from conformance.checks.exchange import error_text
from conformance.checks.outcome import CheckOutcome
from conformance.core.registry import register, violation
from conformance.net.transport import RawExchange

DEFERRED_NOT_CALLABLE = register(
    "client_wire.deferred.not_callable",
    "a defer_loading tool is not called before a tool_reference loads it",
    likely_cause=(
        "the stack passes defer_loading tools to the model as ordinary functions (a router translating "
        "to chat completions, or an engine that ignores defer_loading); `defer_loading` may also leak "
        "into the function's JSON schema, where it is not a JSON Schema keyword"
    ),
).id
TOOL_REFERENCE_EXPANDED = register(
    "client_wire.tool_reference.expanded",
    "a tool_reference block in a tool_result loads its tool, or the request is refused naming it",
    likely_cause=(
        "the stack drops tool_reference blocks it does not know (a translation to chat completions keeps "
        "only text parts of a tool result), so the tool the client loaded through tool search never "
        "becomes callable"
    ),
).id
THINKING_DISPLAY_ACCEPTED = register(
    "client_wire.thinking_display.accepted",
    "thinking.display (Claude Code 2.1.332 sends display: omitted) is accepted",
    likely_cause="a closed request struct for `thinking` (extra fields forbidden) in the router or engine",
).id
EMPTY_SYSTEM_ENTRY_ACCEPTED = register(
    "client_wire.system_entry.empty_accepted",
    "a {role: system} entry inside messages with content [] (Claude Code 2.1.332 --bare) is accepted",
    likely_cause="message validation requires at least one content block, or no system role inside messages",
).id
MAX_TOKENS_OVER_CONTEXT = register(
    "client_wire.max_tokens.over_context",
    "a max_tokens above what the target can give is clamped or refused with a 4xx naming the limit",
    likely_cause=(
        "the engine validates max_tokens + prompt against its context length deep inside generation and "
        "surfaces it as a 500 (or a router forwards the client's 128000 to a small-context engine)"
    ),
).id
FALLBACK_WORDING = register(
    "client_wire.fallback.wording",
    "a refused optional feature is refused with a 400 whose text lets the client fall back",
    likely_cause=(
        "the error text is the stack's own wording: the client retries without the feature only when the "
        "400 says what its classifier looks for (e.g. \"Input should be 'user' or 'assistant'\", "
        "\"role 'system' ... not supported\")"
    ),
).id
PARALLEL_CALLS = register(
    "client_wire.parallel_calls.all_survive",
    "several tool calls asked for in one turn all arrive",
    likely_cause=(
        "the tool-call parser stops after the first call (llama.cpp #14101, vLLM #57791) or a router keeps "
        "only tool_calls[0]"
    ),
).id
TOOL_RESULT_IMAGE = register(
    "client_wire.tool_result.image_accepted",
    "an image block inside a tool_result is accepted",
    likely_cause="tool_result content is validated as text-only in the router or engine",
).id
HISTORY_BLOCKS = register(
    "client_wire.history.blocks_accepted",
    "replayed history with redacted_thinking / server_tool_use / web_search_tool_result blocks is accepted",
    likely_cause="the content-block union of the router or engine lacks the block types a client replays",
).id
SCHEMA_FORCED = register(
    "client_wire.schema.forced_call_answered",
    "each real tool schema of a client, forced one by one, is answered with a call of that tool",
    likely_cause=(
        "the engine's constrained decoder cannot compile a keyword of the schema (`pattern`, `format`, "
        "`exclusiveMinimum`, ...): 500 \"failed to parse grammar\""
    ),
).id
PREFIX_REUSE_TURNS = register(
    "client_wire.prefix_reuse.turns",
    "the second turn of a conversation reuses the prefix the first turn computed",
    severity="warning",
    likely_cause="prefix caching is off in the engine, or a router rewrites the prompt's start on every turn",
).id
PREFIX_REUSE_CONVERSATIONS = register(
    "client_wire.prefix_reuse.conversations",
    "two conversations sharing the system prompt and tools reuse it (figures)",
    severity="info",
    likely_cause=(
        "the engine hashes prefixes from the first token, and Claude Code's first system block "
        "(x-anthropic-billing-header: cc_version=<version>.<suffix>) differs per conversation"
    ),
).id
NO_NONSTREAM_FALLBACK = register(
    "client_wire.stream.no_nonstream_fallback",
    "a live client turn is sent once: the client never resends it with stream: false",
    likely_cause=(
        "the client could not use the stream (no `event:` lines, a wrong content type, a cut stream) and "
        "silently fell back to a non-stream request: every turn costs twice"
    ),
).id

# The texts Claude Code 2.1.332 treats as "drop the mid-conversation system entries and retry" on a
# 400 (read from its error classifier; restated here as facts, not code).
_SYSTEM_FALLBACK_PATTERNS = (
    re.compile(r"text-only role .{0,2}system.{0,2} messages require", re.I),
    re.compile(r"role .{0,2}system.{0,2} must (?:precede an|follow a)|use the top-level .{0,2}system.{0,2} "
               r"parameter for the initial system prompt", re.I),
    re.compile(r"(?:unknown variant .{0,2}system\b.{0,2}, expected|Input should be) [\\'\"`]{1,2}"
               r"(?:user|assistant)\b.{0,2} or [\\'\"`]{1,2}(?:user|assistant)\b", re.I),
)
_LIMIT_WORDS = re.compile(r"max_tokens|context|maximum|limit|too (?:long|large)|exceed", re.I)


def fallback_recognised(status: int | None, text: str) -> bool:
    """Does Claude Code's own fallback (retry without mid-conversation system entries) fire on it?"""
    if status != 400:
        return False
    if any(p.search(text) for p in _SYSTEM_FALLBACK_PATTERNS):
        return True
    if "Unexpected role" in text and "input message role" in text:
        return True
    if "cache_control" in text and re.search(r"system messages?\b|role .{0,2}system", text, re.I):
        return True
    return "not supported" in text and re.search(r"role .{0,2}system", text, re.I) is not None


def _answer(raw: RawExchange) -> str:
    if raw.status is None:
        return f"no answer ({raw.error_kind}: {raw.error})"
    return f"HTTP {raw.status}: {error_text(raw.body())[:300]}"


def accepted(check_id: str, raw: RawExchange, shape: str) -> CheckOutcome:
    """A shape a released client sends must get a 2xx."""
    if raw.ok:
        return CheckOutcome(check_id, "passed", note=f"{shape}: accepted (HTTP {raw.status})")
    return CheckOutcome.of(violation(check_id, f"the target refused {shape}: {_answer(raw)}",
                                     expected="a 2xx answer", seen=_answer(raw)))


def deferred_not_called(calls: list, deferred: set[str]) -> CheckOutcome:
    """No call names a tool that is still deferred."""
    bad = [c.name for c in calls if c.name in deferred]
    if not bad:
        return CheckOutcome(DEFERRED_NOT_CALLABLE, "passed",
                            note=f"calls: {', '.join(c.name for c in calls) or 'none'}; deferred: {', '.join(sorted(deferred))}")
    return CheckOutcome.of(violation(
        DEFERRED_NOT_CALLABLE, f"the model called {bad[0]!r}, a defer_loading tool no tool_reference had loaded: "
        "the stack offered it as callable", expected=f"no call of {sorted(deferred)}", seen=bad))


def reference_expanded(raw: RawExchange, calls: list, tool: str) -> CheckOutcome:
    """After a tool_reference to `tool`, a choice forcing `tool` gets a call of it, or a clear refusal."""
    if raw.status is not None and 400 <= raw.status < 500:
        text = error_text(raw.body())
        if "tool_reference" in text or tool in text:
            return CheckOutcome(TOOL_REFERENCE_EXPANDED, "passed", note=f"refused clearly: HTTP {raw.status}: {text[:200]}")
        return CheckOutcome.of(violation(
            TOOL_REFERENCE_EXPANDED, f"refused without naming tool_reference or {tool!r}: {_answer(raw)}",
            expected=f"a call of {tool!r}, or a 4xx naming tool_reference", seen=_answer(raw)))
    if not raw.ok:
        return CheckOutcome.of(violation(TOOL_REFERENCE_EXPANDED, f"no usable answer: {_answer(raw)}",
                                         expected=f"a call of {tool!r}", seen=_answer(raw)))
    names = [c.name for c in calls]
    if tool in names:
        return CheckOutcome(TOOL_REFERENCE_EXPANDED, "passed", note=f"{tool} loaded by its tool_reference and called")
    return CheckOutcome.of(violation(
        TOOL_REFERENCE_EXPANDED, f"the tool_reference to {tool!r} was dropped: forced to call it, the answer called "
        f"{names or 'nothing'} (HTTP {raw.status}, no error)", expected=f"a call of {tool!r}", seen=names))


def max_tokens_outcome(raw: RawExchange, max_tokens: int) -> CheckOutcome:
    if raw.ok:
        return CheckOutcome(MAX_TOKENS_OVER_CONTEXT, "passed", note=f"max_tokens {max_tokens}: answered (clamped or fits)")
    if raw.status is not None and 400 <= raw.status < 500:
        text = error_text(raw.body())
        if _LIMIT_WORDS.search(text):
            return CheckOutcome(MAX_TOKENS_OVER_CONTEXT, "passed", note=f"refused naming the limit: {text[:200]}")
        return CheckOutcome.of(violation(
            MAX_TOKENS_OVER_CONTEXT, f"max_tokens {max_tokens} refused without naming the limit: {_answer(raw)}",
            expected="a 2xx (clamped) or a 4xx naming max_tokens / the context limit", seen=_answer(raw)))
    return CheckOutcome.of(violation(
        MAX_TOKENS_OVER_CONTEXT, f"max_tokens {max_tokens} (as the client sends it): {_answer(raw)}",
        expected="a 2xx (clamped) or a 4xx naming the limit, never a 5xx or a hang", seen=_answer(raw)))


def fallback_outcome(raw: RawExchange) -> CheckOutcome:
    if raw.ok:
        return CheckOutcome(FALLBACK_WORDING, "passed", note="the system entry was accepted: no fallback needed")
    text = error_text(raw.body()) if raw.status is not None else ""
    if fallback_recognised(raw.status, text):
        return CheckOutcome(FALLBACK_WORDING, "passed", note=f"refused in words the client's fallback recognises: {text[:200]}")
    return CheckOutcome.of(violation(
        FALLBACK_WORDING, f"the {{role: system}} entry was refused in words the client's fallback does not recognise, "
        f"so Claude Code shows the error instead of retrying without it: {_answer(raw)}",
        expected="accepted, or a 400 such as \"messages.N.role: Input should be 'user' or 'assistant'\"",
        seen=_answer(raw)))


def parallel_outcome(calls: list, wanted: int) -> CheckOutcome:
    if len(calls) >= wanted:
        return CheckOutcome(PARALLEL_CALLS, "passed", note=f"{len(calls)} calls in one turn")
    return CheckOutcome.of(violation(
        PARALLEL_CALLS, f"{len(calls)} of the {wanted} tool calls asked for in one turn arrived "
        f"({', '.join(c.name for c in calls) or 'none'})", expected=f">= {wanted} tool calls", seen=len(calls)))


def forced_outcome(raw: RawExchange, calls: list, tool: str, callable_names: frozenset[str] = frozenset()) -> CheckOutcome:
    """`tool` forced alone; a call of it (or, for a namespace, of any tool inside it) answers."""
    names = callable_names or frozenset({tool})
    if not raw.ok:
        return CheckOutcome.of(violation(SCHEMA_FORCED, f"forcing {tool!r}: {_answer(raw)}",
                                         expected=f"a call of {tool!r}", seen=_answer(raw)))
    if any(c.name in names for c in calls):
        return CheckOutcome(SCHEMA_FORCED, "passed", note=f"{tool}: called")
    return CheckOutcome.of(violation(SCHEMA_FORCED, f"forcing {tool!r} got {[c.name for c in calls] or 'no call'}",
                                     expected=f"a call of {tool!r}", seen=[c.name for c in calls]))


def reuse_outcome(check_id: str, read: int | None, shared: int, what: str, signal: str) -> CheckOutcome:
    """`read` tokens reused of the `shared` prefix; re-prefilling it is a warning (turns) or a note."""
    if read is None:
        return CheckOutcome(check_id, "unverifiable", note=f"{what}: the target reports no {signal}")
    if read > 0:
        return CheckOutcome(check_id, "passed", note=f"{what}: {read} of ~{shared} shared prompt tokens reused ({signal})")
    found = violation(check_id, f"{what}: no prefix reused; ~{shared} tokens re-prefilled ({signal} = 0)",
                      expected="cache reads on the shared prefix", seen=f"{signal} 0")
    return CheckOutcome(check_id, "warning" if found.severity == "warning" else "info", (found,))


def _mentions_defer(schema) -> bool:
    if isinstance(schema, dict):
        return "defer_loading" in schema or any(_mentions_defer(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_mentions_defer(v) for v in schema)
    return False


def forwarded_deferred(forwarded: dict | None, deferred: set[str]) -> CheckOutcome | None:
    """What reached the engine: a deferred tool as a plain function (chat / Responses shapes: no
    defer_loading of its own), or defer_loading inside any forwarded schema. None: nothing to say."""
    if not isinstance(forwarded, dict) or not isinstance(forwarded.get("tools"), list):
        return None
    found = []
    for k, tool in enumerate(forwarded["tools"]):
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        name = fn.get("name")
        schema = fn.get("parameters", fn.get("input_schema"))
        if _mentions_defer(schema):
            found.append(violation(DEFERRED_NOT_CALLABLE, f"`defer_loading` reached the engine inside the JSON schema of "
                                   f"{name!r}, where it is no JSON Schema keyword", pointer=f"/tools/{k}",
                                   expected="no defer_loading in a schema", seen=schema))
        elif name in deferred and tool.get("defer_loading") is not True:
            found.append(violation(DEFERRED_NOT_CALLABLE, f"the deferred tool {name!r} reached the engine as an ordinary "
                                   "callable tool (its defer_loading was dropped)", pointer=f"/tools/{k}",
                                   expected="deferred: left out until loaded, or kept with defer_loading",
                                   seen=sorted(tool)))
    return CheckOutcome(DEFERRED_NOT_CALLABLE, "failed", tuple(found)) if found else None
