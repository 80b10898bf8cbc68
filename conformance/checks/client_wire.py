"""client_wire.*: what the newest client wire (Claude Code 2.1.332) asks of a stack.

Rules (facts: docs/wire-facts.md, "Claude Code 2.1.332"; each fault's source is its `found` row in
fixtures/faults.json):
- A shape a released client sends is accepted: `thinking.display`, a `{"role":"system"}` entry
  with `content: []`, an image inside a `tool_result`, replayed `redacted_thinking` /
  `server_tool_use` / `*_tool_result` blocks. A refusal fails the shape's own id; an accepted
  request is then judged as every exchange is (`check_exchange`).
- Deferred tools: a tool with `defer_loading: true` is not callable until a `tool_reference`
  block loads it (`client_wire.deferred.not_callable`); a `tool_reference` inside a `tool_result`
  loads its tool or is refused with a 4xx that names `tool_reference` or the tool, never dropped
  (`client_wire.tool_reference.expanded`).
- `max_tokens` above what the target can give is clamped (2xx) or refused with a 4xx whose text
  names the limit; a 5xx, a transport failure (a hang past the deadline) fails it, and so does a
  silent truncation (`silent_truncation`: the output filled the room the advertised context left
  and the stop reason claims a natural end). Without an advertised context (or
  --conformance-context-limit) the truncation is not judged, and the note says so.
- A refused `{"role":"system"}` entry must be refused with a 400 whose text the client's own
  fallback recognises (`fallback_recognised`, facts read from Claude Code 2.1.332's error
  classifier: it retries without mid-conversation system entries only on such a 400; colibri
  PR #725). An accepted entry needs no fallback and passes.
- With the engine behind a router known (`--conformance-engine-url`), what reached the engine is
  read too: a deferred tool forwarded as an ordinary function, or `defer_loading` inside a
  forwarded schema, fails `client_wire.deferred.not_callable` whatever the model then called.
- Several tool calls asked for in one turn all arrive: `conformance.checks.parallel_calls`.
- Each real tool schema, forced one by one, is answered with a call of that tool
  (`client_wire.schema.forced_call_answered`; a 500 "failed to parse grammar" fails it).
- Prefix reuse (opt-in probe): a second turn that re-prefills the shared prefix is a warning
  with the measured cost; a second conversation that re-prefills the shared system prompt and
  tools is a note (info) with the cost. The verdict names its signal, the first that can tell:
  the answer's usage (`cache_read_input_tokens`, `prompt_tokens_details.cached_tokens`,
  `input_tokens_details.cached_tokens`) or llama.cpp's `timings.cache_n` (a reported 0 gives
  way to the counters below when they moved: a router may write a 0 it does not know); then the
  growth of vLLM's Prometheus counters `vllm:prefix_cache_hits_total` /
  `vllm:prefix_cache_queries_total` over the second request; then a salted time-to-first-token
  ratio (TTFT_* thresholds). No signal, or one that cannot tell, is unverifiable with what was
  tried, never a pass.
- A client that resends one turn's body with `stream: false` fell back from an unusable stream
  (`client_wire.stream.no_nonstream_fallback`; judged from the recorded exchanges of a live turn
  by `conformance.capture.turns`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from conformance.checks.refusal import error_text
from conformance.core.registry import register, violation
from conformance.core.verdict import Verdict
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


def accepted(check_id: str, raw: RawExchange, shape: str) -> Verdict:
    """A shape a released client sends must get a 2xx."""
    if raw.ok:
        return Verdict(check_id, "passed", note=f"{shape}: accepted (HTTP {raw.status})")
    return Verdict.of(violation(check_id, f"the target refused {shape}: {_answer(raw)}",
                                     expected="a 2xx answer", seen=_answer(raw)))


def deferred_not_called(calls: list, deferred: set[str]) -> Verdict:
    """No call names a tool that is still deferred."""
    bad = [c.name for c in calls if c.name in deferred]
    if not bad:
        return Verdict(DEFERRED_NOT_CALLABLE, "passed",
                            note=f"calls: {', '.join(c.name for c in calls) or 'none'}; deferred: {', '.join(sorted(deferred))}")
    return Verdict.of(violation(
        DEFERRED_NOT_CALLABLE, f"the model called {bad[0]!r}, a defer_loading tool no tool_reference had loaded: "
        "the stack offered it as callable", expected=f"no call of {sorted(deferred)}", seen=bad))


def reference_expanded(raw: RawExchange, calls: list, tool: str) -> Verdict:
    """After a tool_reference to `tool`, a choice forcing `tool` gets a call of it, or a clear refusal."""
    if raw.status is not None and 400 <= raw.status < 500:
        text = error_text(raw.body())
        if "tool_reference" in text or tool in text:
            return Verdict(TOOL_REFERENCE_EXPANDED, "passed", note=f"refused clearly: HTTP {raw.status}: {text[:200]}")
        return Verdict.of(violation(
            TOOL_REFERENCE_EXPANDED, f"refused without naming tool_reference or {tool!r}: {_answer(raw)}",
            expected=f"a call of {tool!r}, or a 4xx naming tool_reference", seen=_answer(raw)))
    if not raw.ok:
        return Verdict.of(violation(TOOL_REFERENCE_EXPANDED, f"no usable answer: {_answer(raw)}",
                                         expected=f"a call of {tool!r}", seen=_answer(raw)))
    names = [c.name for c in calls]
    if tool in names:
        return Verdict(TOOL_REFERENCE_EXPANDED, "passed", note=f"{tool} loaded by its tool_reference and called")
    return Verdict.of(violation(
        TOOL_REFERENCE_EXPANDED, f"the tool_reference to {tool!r} was dropped: forced to call it, the answer called "
        f"{names or 'nothing'} (HTTP {raw.status}, no error)", expected=f"a call of {tool!r}", seen=names))


# Stop reasons that say the output was cut by a token budget (the three wires' words).
BUDGET_STOPS = frozenset({"max_tokens", "length", "max_output_tokens", "model_context_window_exceeded"})
# Reported token counts may differ from the engine's own by a few template tokens.
TRUNCATION_SLACK_TOKENS = 16
# Below this room a natural end near the room is plausible: silent truncation is not judged.
TRUNCATION_MIN_ROOM = 256


@dataclass(frozen=True)
class AnswerFigures:
    """What a 2xx answer to the over-context max_tokens reported, and the context it ran in."""
    stop_reason: str | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    context: int | None = None  # the target's context length, None when it advertises none
    context_source: str = ""

    @property
    def room(self) -> int | None:
        if self.context is None or self.prompt_tokens is None:
            return None
        return self.context - self.prompt_tokens


def silent_truncation(max_tokens: int, figures: AnswerFigures) -> str | None:
    """Why the answer was cut silently, or None. Silent truncation: max_tokens exceeded the room
    the context left (context - prompt tokens, room >= TRUNCATION_MIN_ROOM), the output filled that
    room (output tokens >= room - TRUNCATION_SLACK_TOKENS), and the stop reason is a natural end
    (not max_tokens / length / model_context_window_exceeded). A server that clamps and says so
    reports a budget stop; an answer that ends by itself stops well inside the room."""
    room, out, stop = figures.room, figures.output_tokens, figures.stop_reason
    if room is None or out is None or not isinstance(stop, str) or stop in BUDGET_STOPS:
        return None
    if room < TRUNCATION_MIN_ROOM or max_tokens <= room or out < room - TRUNCATION_SLACK_TOKENS:
        return None
    return (f"the output ({out} tokens) filled the room the context left ({figures.context} - "
            f"{figures.prompt_tokens} prompt tokens = {room}; context from {figures.context_source}) and "
            f"the answer says it ended by itself (stop reason {stop!r}): the client cannot tell the cut "
            "from a finished answer")


def max_tokens_outcome(raw: RawExchange, max_tokens: int, figures: AnswerFigures | None = None) -> Verdict:
    if raw.ok:
        why = silent_truncation(max_tokens, figures) if figures is not None else None
        if why is not None:
            return Verdict.of(violation(
                MAX_TOKENS_OVER_CONTEXT, f"max_tokens {max_tokens} was accepted and the answer silently truncated: {why}",
                expected="a budget stop reason (max_tokens / length) when the clamped output hits the context",
                seen=f"stop {figures.stop_reason!r}, {figures.output_tokens} output tokens"))
        if figures is None or figures.room is None:
            judged = "silent truncation not judged: the target advertises no context length"
        else:
            judged = (f"not cut silently (room {figures.room} tokens, output {figures.output_tokens}, "
                      f"stop {figures.stop_reason!r})")
        return Verdict(MAX_TOKENS_OVER_CONTEXT, "passed",
                            note=f"max_tokens {max_tokens}: answered (clamped or fits); {judged}")
    if raw.status is not None and 400 <= raw.status < 500:
        text = error_text(raw.body())
        if _LIMIT_WORDS.search(text):
            return Verdict(MAX_TOKENS_OVER_CONTEXT, "passed", note=f"refused naming the limit: {text[:200]}")
        return Verdict.of(violation(
            MAX_TOKENS_OVER_CONTEXT, f"max_tokens {max_tokens} refused without naming the limit: {_answer(raw)}",
            expected="a 2xx (clamped) or a 4xx naming max_tokens / the context limit", seen=_answer(raw)))
    return Verdict.of(violation(
        MAX_TOKENS_OVER_CONTEXT, f"max_tokens {max_tokens} (as the client sends it): {_answer(raw)}",
        expected="a 2xx (clamped) or a 4xx naming the limit, never a 5xx or a hang", seen=_answer(raw)))


def fallback_outcome(raw: RawExchange) -> Verdict:
    if raw.ok:
        return Verdict(FALLBACK_WORDING, "passed", note="the system entry was accepted: no fallback needed")
    text = error_text(raw.body()) if raw.status is not None else ""
    if fallback_recognised(raw.status, text):
        return Verdict(FALLBACK_WORDING, "passed", note=f"refused in words the client's fallback recognises: {text[:200]}")
    return Verdict.of(violation(
        FALLBACK_WORDING, f"the {{role: system}} entry was refused in words the client's fallback does not recognise, "
        f"so Claude Code shows the error instead of retrying without it: {_answer(raw)}",
        expected="accepted, or a 400 such as \"messages.N.role: Input should be 'user' or 'assistant'\"",
        seen=_answer(raw)))




def forced_outcome(raw: RawExchange, calls: list, tool: str, callable_names: frozenset[str] = frozenset()) -> Verdict:
    """`tool` forced alone; a call of it (or, for a namespace, of any tool inside it) answers."""
    names = callable_names or frozenset({tool})
    if not raw.ok:
        return Verdict.of(violation(SCHEMA_FORCED, f"forcing {tool!r}: {_answer(raw)}",
                                         expected=f"a call of {tool!r}", seen=_answer(raw)))
    if any(c.name in names for c in calls):
        return Verdict(SCHEMA_FORCED, "passed", note=f"{tool}: called")
    return Verdict.of(violation(SCHEMA_FORCED, f"forcing {tool!r} got {[c.name for c in calls] or 'no call'}",
                                     expected=f"a call of {tool!r}", seen=[c.name for c in calls]))


# ---- prefix reuse: the signals, in the order they are read ----------------------------------

# Per-answer reports of the prompt tokens read from a prefix cache: (signal name, path in usage).
USAGE_SIGNALS = (
    ("usage.cache_read_input_tokens", ("cache_read_input_tokens",)),  # Messages API; vLLM with token details
    ("usage.prompt_tokens_details.cached_tokens", ("prompt_tokens_details", "cached_tokens")),  # OpenAI chat
    ("usage.input_tokens_details.cached_tokens", ("input_tokens_details", "cached_tokens")),  # Responses
)
# llama.cpp's server adds `timings` to an answer: cache_n prompt tokens reused, prompt_n computed
# (tools/server result_timings::to_json).
TIMINGS_SIGNAL = "timings.cache_n"
# vLLM's prefix-cache counters (vllm/v1/metrics/loggers.py, vLLM 0.32.0: counters
# `vllm:prefix_cache_queries` / `vllm:prefix_cache_hits`, in tokens; exposed with `_total`).
METRIC_QUERIES = "vllm:prefix_cache_queries_total"
METRIC_HITS = "vllm:prefix_cache_hits_total"
# Salted time-to-first-token: the same prefix against a salted one of equal length. Reused when
# the median warm TTFT is at most TTFT_REUSED_BELOW of the median cold one and even the slowest
# warm try is faster than the median cold, or when (ratio below TTFT_NOT_REUSED_ABOVE) every warm
# try is faster than every cold one by a gap of medians at least TTFT_SEPARATION times the wider
# spread of the two (a fixed cost per request dilutes the ratio: vLLM 0.32.0 on the CPU answered
# 1.09-1.16 s warm, 1.60-1.78 s cold, ratio 0.70); not reused at TTFT_NOT_REUSED_ABOVE or more;
# otherwise, or when the median cold TTFT is under TTFT_MIN_COLD_SECONDS (the reference engine
# answers a 23k-token prompt unpaced in 20-45 ms on a loaded 2-core machine), inconclusive.
TTFT_REUSED_BELOW = 0.6
TTFT_NOT_REUSED_ABOVE = 0.85
TTFT_SEPARATION = 2.0
TTFT_MIN_COLD_SECONDS = 0.25


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def reported_cache_read(usage, answer=None) -> tuple[int | None, str | None]:
    """(prompt tokens read from the prefix cache, the field that said so) from an answer's usage,
    else from llama.cpp's `timings`; (None, None) when the answer reports neither."""
    if isinstance(usage, dict):
        for signal, path in USAGE_SIGNALS:
            node = usage
            for key in path:
                node = node.get(key) if isinstance(node, dict) else None
            if _int(node) is not None:
                return node, signal
    timings = answer.get("timings") if isinstance(answer, dict) else None
    if isinstance(timings, dict) and _int(timings.get("cache_n")) is not None:
        return timings["cache_n"], TIMINGS_SIGNAL
    return None, None


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEinfINFNa]+)(?:\s+-?\d+)?\s*$")


def prometheus_counters(text: str, names=(METRIC_QUERIES, METRIC_HITS)) -> dict[str, float]:
    """The value of each named counter in a Prometheus text exposition, summed over its label
    sets (one per engine of a data-parallel server); a name with no sample is left out."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())
        if m and m.group(1) in names:
            try:
                out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
            except ValueError:
                continue
    return out


@dataclass(frozen=True)
class ReuseSignal:
    """What one signal says about the second request of a pair."""
    name: str  # the signal used, named in the verdict
    reused: bool | None  # None: the signal was read but cannot tell
    note: str  # the measured figures, one line
    figures: dict = field(default_factory=dict)
    reused_tokens: int | None = None
    reprefilled_tokens: int | None = None


def usage_signal(read: int, name: str, prompt: int | None) -> ReuseSignal:
    reprefilled = None if prompt is None else max(0, prompt - read)
    of = f" of {prompt} prompt tokens" if prompt else ""
    return ReuseSignal(name, read > 0, f"{name} = {read}{of}", {name: read, "prompt_tokens": prompt},
                       read, reprefilled)


def metrics_signal(before: dict[str, float], after: dict[str, float], url: str) -> ReuseSignal | None:
    """The counters' growth over the second request; None when either counter is missing or
    nothing was counted (a counter that did not move cannot tell)."""
    if any(n not in before or n not in after for n in (METRIC_QUERIES, METRIC_HITS)):
        return None
    queried = int(after[METRIC_QUERIES] - before[METRIC_QUERIES])
    hit = int(after[METRIC_HITS] - before[METRIC_HITS])
    if queried <= 0:
        return None
    figures = {"metrics_url": url, "prefix_cache_queries_delta": queried, "prefix_cache_hits_delta": hit}
    return ReuseSignal(METRIC_HITS, hit > 0, f"{METRIC_HITS} +{hit} of {METRIC_QUERIES} +{queried} ({url})",
                       figures, hit, max(0, queried - hit))


def _median(xs: list[float]) -> float:
    ys = sorted(xs)
    mid = len(ys) // 2
    return ys[mid] if len(ys) % 2 else (ys[mid - 1] + ys[mid]) / 2


def ttft_signal(warm: list[float], cold: list[float]) -> ReuseSignal:
    """Time to first content of the shared prefix (`warm`) against salted prefixes of equal length
    (`cold`, each a fresh salt), seconds."""
    name = "salted TTFT ratio"
    w, c = _median(warm), _median(cold)
    ratio = w / c if c > 0 else None
    figures = {"ttft_warm_s": [round(x, 4) for x in warm], "ttft_cold_s": [round(x, 4) for x in cold],
               "ttft_ratio": None if ratio is None else round(ratio, 3)}
    note = (f"median TTFT {w * 1000:.0f} ms on the shared prefix vs {c * 1000:.0f} ms on a salted one "
            f"(ratio {'n/a' if ratio is None else f'{ratio:.2f}'}; {len(warm)} + {len(cold)} tries)")
    if c < TTFT_MIN_COLD_SECONDS or ratio is None:
        return ReuseSignal(name, None, f"{note}: the salted prefill ({c * 1000:.0f} ms) is under "
                           f"{TTFT_MIN_COLD_SECONDS * 1000:.0f} ms, too short to tell from noise", figures)
    noise = max(max(warm) - min(warm), max(cold) - min(cold))
    separated = max(warm) < min(cold) and c - w >= TTFT_SEPARATION * noise
    if (ratio <= TTFT_REUSED_BELOW and max(warm) < c) or (ratio < TTFT_NOT_REUSED_ABOVE and separated):
        return ReuseSignal(name, True, note, figures)
    if ratio >= TTFT_NOT_REUSED_ABOVE:
        return ReuseSignal(name, False, note, figures)
    return ReuseSignal(name, None, f"{note}: above {TTFT_REUSED_BELOW} and below {TTFT_NOT_REUSED_ABOVE} without "
                       f"a clean separation (every warm try faster than every cold one by {TTFT_SEPARATION:g}x the "
                       "spread), inconclusive", figures)


def reuse_outcome(check_id: str, what: str, signal: ReuseSignal | None, tried: list[str]) -> Verdict:
    """Reuse passes; re-prefilling is a warning (turns) or a note (conversations); no signal, or
    one that cannot tell, is unverifiable with what was tried. Never a pass without a signal."""
    if signal is None:
        return Verdict(check_id, "unverifiable", note=f"{what}: no prefix-reuse signal: {'; '.join(tried)}")
    if signal.reused is None:
        return Verdict(check_id, "unverifiable",
                            note=f"{what}: {signal.name} inconclusive: {signal.note}"
                                 + (f" ({'; '.join(tried)})" if tried else ""))
    if signal.reused:
        return Verdict(check_id, "passed", note=f"{what}: prefix reused ({signal.name}: {signal.note})")
    cost = f"; ~{signal.reprefilled_tokens} tokens re-prefilled" if signal.reprefilled_tokens else ""
    found = violation(check_id, f"{what}: no prefix reused{cost} ({signal.name}: {signal.note})",
                      expected="the shared prefix read from the cache", seen=signal.note)
    return Verdict(check_id, "warning" if found.severity == "warning" else "info", (found,))


def _mentions_defer(schema) -> bool:
    if isinstance(schema, dict):
        return "defer_loading" in schema or any(_mentions_defer(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_mentions_defer(v) for v in schema)
    return False


def forwarded_deferred(forwarded: dict | None, deferred: set[str]) -> Verdict | None:
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
    return Verdict(DEFERRED_NOT_CALLABLE, "failed", tuple(found)) if found else None
