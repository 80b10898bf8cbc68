"""The engine's prefix cache (as the Messages API's prompt caching), shared by its routes.

Rules:
- The prompt is read in the API's cache order (tools, system, messages: `messages_segments`; the
  chat route gives its own order); a prefix ending at a `cache_control` breakpoint of at least
  PREFIX_CACHE_MIN_TOKENS is written to the cache, and every block boundary up to the last
  breakpoint is looked up, so a later turn reads what an earlier one wrote. The routes report
  the tokens read / written apart from the rest of the prompt (Anthropic: cache_read_input_tokens
  / cache_creation_input_tokens) and count every lookup in the /metrics counters (metrics.py);
  stream prefill pacing (`--prefill-rate`) counts only the prompt tokens not read from the cache.
- Claude Code's first system block (`x-anthropic-billing-header: cc_version=...`, its suffix
  differs per conversation) is client metadata, left out of the cache key as llama.cpp does (PR
  #21793), so conversations share the system prompt and tools.
- The cache keeps the PREFIX_CACHE_KEEP newest prefixes; there is one per engine (`prefix_cache`).
- Every route asks through `lookup`: nothing is read or written under the fault
  prefix-cache-defeated, and every lookup is counted in /metrics.
"""

from __future__ import annotations

import hashlib

from conformance.engine import tokenizer
from conformance.engine.conversation import compact_json
from conformance.engine.faults import PREFIX_CACHE_DEFEATED
from conformance.engine.metrics import record_prefix_query

# The first system block of every Claude Code request: per-conversation client metadata.
BILLING_HEADER_PREFIX = "x-anthropic-billing-header:"
# The Messages API caches no prefix shorter than this (the smallest documented minimum).
PREFIX_CACHE_MIN_TOKENS = 1024
PREFIX_CACHE_KEEP = 512


class PrefixCache:
    """Prefixes by the digest of everything up to a block boundary -> their token count."""

    def __init__(self) -> None:
        self.entries: dict[str, int] = {}

    def serve(self, segments, prompt: int) -> tuple[int, int]:
        """(tokens read, tokens written) for this request; writes its breakpoints. `segments`:
        (text, breakpoint) in the route's cache order (`messages_segments`, `chat_segments`)."""
        h = hashlib.sha256()
        tokens = 0
        boundaries: list[tuple[str, int, bool]] = []  # (digest, tokens so far, a breakpoint)
        for text, breakpoint in segments:
            h.update(text.encode("utf-8", "replace") + b"\x00")
            tokens += tokenizer.count(text)
            boundaries.append((h.hexdigest(), tokens, breakpoint))
        last = max((k for k, b in enumerate(boundaries) if b[2]), default=-1)
        if last < 0 or tokens == 0:
            return 0, 0
        # Segments are counted over their JSON; usage counts what the model reads: scale to it, and
        # the last prompt token is always computed.
        def scaled(n: int) -> int:
            return min(max(0, prompt - 1), n * prompt // tokens)

        read = scaled(max((n for d, n, _ in boundaries[:last + 1] if d in self.entries), default=0))
        top = scaled(boundaries[last][1])
        for d, n, b in boundaries[:last + 1]:
            if b and scaled(n) >= PREFIX_CACHE_MIN_TOKENS:
                self.entries.pop(d, None)
                self.entries[d] = n
        while len(self.entries) > PREFIX_CACHE_KEEP:
            self.entries.pop(next(iter(self.entries)))
        written = top - read if top >= PREFIX_CACHE_MIN_TOKENS and top > read else 0
        return read, written


def messages_segments(body: dict):
    """(text, is a cache_control breakpoint) in the API's cache order: tools, system, messages."""
    def marked(b) -> bool:
        return isinstance(b, dict) and isinstance(b.get("cache_control"), dict)

    for t in body.get("tools") or []:
        yield compact_json(t if not marked(t) else {k: v for k, v in t.items() if k != "cache_control"}), marked(t)
    system = body.get("system")
    for b in ([{"type": "text", "text": system}] if isinstance(system, str) else system or []):
        text = b.get("text", "") if isinstance(b, dict) else ""
        if isinstance(text, str) and text.startswith(BILLING_HEADER_PREFIX):
            continue  # per-conversation client metadata: not part of the shared prefix
        yield str(text), marked(b)
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        role = m.get("role") if isinstance(m, dict) else None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        yield f"<{role}>", False
        for b in blocks:
            if isinstance(b, dict):
                yield compact_json({k: v for k, v in b.items() if k != "cache_control"}), marked(b)


def chat_segments(body: dict):
    """(text, a cache boundary) for automatic prefix caching (vLLM's APC): tools, then each message;
    Claude Code's billing-header line at the start of a system message is left out (as llama.cpp)."""
    for t in body.get("tools") or []:
        yield compact_json(t), False
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        content = m.get("content")
        if m.get("role") == "system" and isinstance(content, str) and content.startswith(BILLING_HEADER_PREFIX):
            content = content.split("\n", 1)[1] if "\n" in content else ""
        elif m.get("role") == "system" and isinstance(content, list) and content and isinstance(content[0], dict) \
                and str(content[0].get("text", "")).startswith(BILLING_HEADER_PREFIX):
            content = content[1:]  # a router's translation keeps the blocks as content parts
        yield compact_json({k: (content if k == "content" else v) for k, v in m.items()}), True


def prefix_cache(state) -> PrefixCache:
    """The engine's one prefix cache (kept on its state, made on first use)."""
    cache = vars(state).get("prefix_cache")
    if cache is None:
        cache = vars(state).setdefault("prefix_cache", PrefixCache())
    return cache


def lookup(state, segments, prompt: int) -> tuple[int, int]:
    """(tokens read, tokens written) for one request's prompt, counted in /metrics; (0, 0) under
    prefix-cache-defeated (the segments, a generator, are then never computed)."""
    cached = (0, 0) if PREFIX_CACHE_DEFEATED in state.faults else prefix_cache(state).serve(segments, prompt)
    record_prefix_query(state, prompt, cached[0])
    return cached
