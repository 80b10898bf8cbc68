"""Valid variations of the reference engine: behaviour a correct server may show, switched on by name.

The fault catalog (faults.py) lists what a server must not do; this catalog lists what it may do
and the suite must accept (`--variation NAME`, several at once; `conformance variations` lists
them). The self-test matrix (tests/suite/test_variation_matrix.py) runs the default suite against
the engine with each variation and with COMPATIBLE at once: any failure there is a false positive.

Rules:
- Each variation is data: a one-line description, the spec clause or the real server that
  behaves so (`source`), the wires it changes (`wires`; elsewhere it is a no-op) and the
  variations it cannot be combined with (`excludes`, symmetric).
- A variation changes only what it names; the answer's content, tool calls, stop reasons and
  token counts stay those of the default engine (the id formats and usage fields named by a
  variation excepted), so every verdict of the suite must stay the same.
- Transport variations act in the stream writer (wire.py) and the HTTP layer (server.py); the
  content ones in the routes, which ask `wire.active(NAME)`.
- `validate(names)` returns the set or raises UnknownVariation naming the bad names and the
  conflicting pairs; `COMPATIBLE` is the documented set that runs at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.engine.named import checked_names

ANTHROPIC, CHAT, RESPONSES = "anthropic", "openai-chat", "openai-responses"
ALL_WIRES = (ANTHROPIC, CHAT, RESPONSES)

# `slow`: time between content events, and the ping interval while waiting (numbers in docs/engine.md).
SLOW_GAP_SECONDS = 2.0
SLOW_PING_SECONDS = 0.5
# `slow` pauses before the first SLOW_GAPS content events only (a 2 s wait for the first token,
# then 2 s between the first two), then streams at the default pace: those waits are what a slow
# server shows the client (pings while waiting, content after a gap), and a suite of ~100 streams
# at 2 s per token would take hours without judging anything more.
SLOW_GAPS = 2
# `retry:` value sent by `sse-comments-retry` (milliseconds, WHATWG SSE).
RETRY_MS = 3000
# The unknown field added by `unknown-fields` (a non-ASCII value, so it also splits UTF-8).
UNKNOWN_FIELD = "x_vendor_extension"
UNKNOWN_VALUE = "vendor-é✓"


@dataclass(frozen=True)
class Variation:
    description: str
    source: str
    wires: tuple[str, ...] = ALL_WIRES
    excludes: tuple[str, ...] = ()


VARIATIONS: dict[str, Variation] = {
    "instant": Variation(
        "the whole answer in one burst: no pacing, one network write at the end",
        "a gateway response cache (LiteLLM caching, a CDN) or a fast GPU engine on a short answer",
        excludes=("slow", "one-byte-writes", "split-utf8")),
    "slow": Variation(
        f"{SLOW_GAP_SECONDS:g} s before each of the first {SLOW_GAPS} content events, pings every "
        f"{SLOW_PING_SECONDS:g} s while waiting (Anthropic ping events; SSE comments on OpenAI wires)",
        "a loaded engine / long prefill; Anthropic streaming docs: ping events may be sent at any time",
        excludes=("instant",)),
    "gzip": Variation(
        "streams and bodies gzip-compressed (Content-Encoding: gzip) when the request's Accept-Encoding "
        "allows it; the stream is flushed per write so it stays incremental",
        "RFC 9110 section 8.4 content codings; nginx/Cloudflare gzip in front of an engine"),
    "crlf": Variation(
        "SSE lines end in CRLF",
        "WHATWG HTML, server-sent events: end-of-line is CRLF, LF or CR", excludes=("cr",)),
    "cr": Variation(
        "SSE lines end in a lone CR",
        "WHATWG HTML, server-sent events: end-of-line is CRLF, LF or CR", excludes=("crlf",)),
    "sse-comments-retry": Variation(
        f"a `retry: {RETRY_MS}` field in the first event, and `: comment` lines between events",
        "WHATWG HTML, server-sent events: comments and the retry field; OpenRouter's `: OPENROUTER PROCESSING`"),
    "pings-everywhere": Variation(
        "a ping between any two events (Anthropic `event: ping`; an SSE comment on the OpenAI wires)",
        "Anthropic streaming docs: 'Event streams may also include any number of ping events'"),
    "unknown-events": Variation(
        "an event of an unknown type between events (Anthropic `vendor_event`, Responses `response.vendor_event`)",
        "Anthropic versioning docs: new event types may be added, handle unknown ones gracefully",
        wires=(ANTHROPIC, RESPONSES)),
    "unknown-fields": Variation(
        f"an unknown field `{UNKNOWN_FIELD}` in every object of every event and body (tool inputs excepted)",
        "Anthropic versioning docs: new fields may be added to responses; OpenAI adds fields without a version"),
    "one-byte-writes": Variation(
        "every network write is one byte for the first 4 KiB of a body (event names, JSON, the blank line "
        "all split), then writes of 1 to 97 bytes",
        "a proxy that flushes per byte; TCP may deliver any segmentation", excludes=("instant", "split-utf8")),
    "split-utf8": Variation(
        "network writes end inside multi-byte UTF-8 characters and between the two newlines that end an event",
        "TCP segmentation; any chunked proxy", excludes=("instant", "one-byte-writes")),
    "connection-close": Variation(
        "every response carries `Connection: close` and the connection is closed after it (no keep-alive)",
        "RFC 9112 section 9.6; HTTP/1.0-style servers and some load balancers"),
    "several-text-blocks": Variation(
        "the answer text comes in two text blocks (Responses: two output_text parts) instead of one",
        "Anthropic Messages API: content is a list of blocks; Claude answers with several text blocks around citations",
        wires=(ANTHROPIC, RESPONSES)),
    "empty-text-deltas": Variation(
        "empty text deltas before, inside and after the answer text",
        "Anthropic streams and vLLM/OpenAI chat chunks with content \"\" (role chunk, keep-alive deltas)"),
    "thinking-omitted": Variation(
        "thinking shown as omitted: empty thinking text with a signature (no thinking deltas)",
        "Anthropic extended thinking, display 'omitted' (Claude 4 models may return empty thinking with a signature)",
        wires=(ANTHROPIC,)),
    "usage-without-cache": Variation(
        "usage without cache fields (Anthropic: no cache_*_input_tokens; OpenAI: no *_tokens_details)",
        "Anthropic via Bedrock/Vertex and vLLM's Anthropic route omit the cache fields",
        excludes=("usage-with-cache",)),
    "usage-with-cache": Variation(
        "usage with cache detail: Anthropic cache_creation {ephemeral_5m/1h}, OpenAI prompt_tokens_details.cached_tokens",
        "Anthropic prompt caching docs; OpenAI usage.prompt_tokens_details / input_tokens_details",
        excludes=("usage-without-cache",)),
    "other-id-formats": Variation(
        "other id formats: msg_bdrk_/toolu_bdrk_ (Bedrock), chatcmpl-<uuid hex> and chatcmpl-tool-<hex> (vLLM), "
        "resp_<hex>; no request-id header",
        "Amazon Bedrock and vLLM ids; ids are opaque strings in both APIs"),
}

# The documented set that runs at once: every variation except the losing side of each exclusion
# (instant, cr, one-byte-writes and usage-without-cache each get their own matrix row).
COMPATIBLE: tuple[str, ...] = (
    "slow", "gzip", "crlf", "sse-comments-retry", "pings-everywhere", "unknown-events", "unknown-fields",
    "split-utf8", "connection-close", "several-text-blocks", "empty-text-deltas", "thinking-omitted",
    "usage-with-cache", "other-id-formats",
)


class UnknownVariation(ValueError):
    pass


def conflicts(names) -> list[tuple[str, str]]:
    names = sorted(set(names))
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
            if b in VARIATIONS[a].excludes or a in VARIATIONS[b].excludes]


def validate(names) -> frozenset[str]:
    """The set of variation names, or UnknownVariation naming the bad ones / the conflicting pairs."""
    names = checked_names(names, VARIATIONS, "variation", UnknownVariation)
    clash = conflicts(names)
    if clash:
        raise UnknownVariation(
            "variations that exclude each other: " + ", ".join(f"{a} + {b}" for a, b in clash)
            + "; pick one of each pair (`conformance variations` shows the exclusions)")
    return frozenset(names)
