"""Writing SSE the way real servers do: events split across network writes, small deltas.

Rules:
- `SSEWriter` serialises events (`event: NAME\ndata: JSON\n\n`, or data-only for OpenAI) into a
  byte buffer and writes it out in pieces of cycling, awkward sizes (1 to 97 bytes), carrying the
  tail of one event into the next write: lines, events and multi-byte UTF-8 characters are split
  across network writes, as a client must tolerate.
- Between events it yields to the loop and sleeps briefly (EVENT_DELAY for the first
  SLOW_EVENTS events, then every 25th event), so delivery is incremental but long outputs stay fast.
- Pacing (EngineConfig.prefill_tokens_per_s / decode_tokens_per_s, None = the default pace
  above): the first event waits prompt_tokens / prefill rate after the writer starts; each
  content event (a delta carrying text, thinking or tool arguments) is due when the content
  tokens so far (engine tokenizer) at the decode rate have elapsed. Other events go at once.
- `buffered=True` (fault `buffered-stream`) keeps everything and releases it in one write at the
  end, after the same generation time and at least BUFFERED_MIN_SECONDS after the writer starts
  (a buffering proxy in front of an engine whose answer takes that long: a shorter stream
  cannot show buffering, whatever the variations).
- Valid variations (variations.py) act here when the request's engine settings (`current()`, set
  per request by server.generation_route) name them: instant, slow, gzip, crlf, cr,
  sse-comments-retry, pings-everywhere, unknown-events, unknown-fields, one-byte-writes,
  split-utf8, empty-text-deltas; the routes ask `active(NAME)` for the content ones.
- `split_text` / `split_json` cut strings into many small deltas at awkward places; the first JSON
  piece of a tool call is "" (as Anthropic sends).
- A client that disconnects mid-stream raises `ClientGone`; routes stop quietly.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
import zlib
from dataclasses import dataclass

from aiohttp import web

from conformance.engine import tokenizer
from conformance.engine import variations as V

WRITE_SIZES = (5, 17, 1, 40, 11, 97, 2, 23, 64, 3)
# `one-byte-writes`: this many bytes of every body go one byte per write, the rest in WRITE_SIZES.
# One byte per write for a whole Codex stream (~63 KB, its Response object echoed three times)
# costs ~2 s a stream and ~10 minutes a matrix row; the head holds every kind of boundary the
# variation is for (inside event names, JSON, numbers, the blank line), and the mixed sizes after
# it still include single bytes.
ONE_BYTE_HEAD = 4096
TEXT_PIECES = (1, 3, 2, 5, 4, 7, 3, 6)
JSON_PIECES = (1, 4, 2, 9, 3, 6, 1, 11)
EVENT_DELAY = 0.001
SLOW_EVENTS = 40
BUFFERED_MIN_SECONDS = 0.5
# Keys of a delta whose string values are generated content (pacing, `slow`).
CONTENT_KEYS = frozenset({"text", "thinking", "partial_json", "content", "reasoning_content", "arguments"})
# Never given an unknown field (`unknown-fields`): model-chosen tool inputs and echoed request parts.
UNTOUCHED_KEYS = frozenset({"input", "tools", "metadata", "input_schema", "parameters", "schema"})


class ClientGone(Exception):
    pass


@dataclass(frozen=True)
class StreamSettings:
    """What one request's responses are written with (set per request by the server)."""
    variations: frozenset = frozenset()
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    accepts_gzip: bool = False


_DEFAULT = StreamSettings()
_CURRENT: contextvars.ContextVar[StreamSettings | None] = contextvars.ContextVar("engine_stream_settings",
                                                                                 default=None)


def use(settings: StreamSettings) -> None:
    """Set the settings of the request being handled (each aiohttp handler runs in its own task)."""
    _CURRENT.set(settings)


def current() -> StreamSettings:
    return _CURRENT.get() or _DEFAULT


def active(name: str) -> bool:
    """Is valid variation `name` on for the request being handled?"""
    return name in current().variations


def other_id(default: str, other: str) -> str:
    """`other` under `other-id-formats`, else `default` (ids are opaque strings on every wire)."""
    return other if active("other-id-formats") else default


def text_parts(text: str) -> list[str]:
    """The answer text as its blocks: two under `several-text-blocks` (cut at a space near the middle)."""
    if not active("several-text-blocks") or len(text) < 2:
        return [text]
    mid = text.find(" ", len(text) // 2)
    mid = mid + 1 if 0 < mid < len(text) - 1 else len(text) // 2
    return [text[:mid], text[mid:]]


def _scaled(sizes, length):
    # Long strings get proportionally larger pieces (about 500 pieces at most).
    factor = max(1, length // 1500)
    return [s * factor for s in sizes]


def split_text(text: str, sizes=TEXT_PIECES) -> list[str]:
    if not text:
        return []
    answer_text = sizes is TEXT_PIECES  # `empty-text-deltas` adds "" to text, never to tool arguments
    sizes = _scaled(sizes, len(text))
    out, i, k = [], 0, 0
    while i < len(text):
        n = sizes[k % len(sizes)]
        out.append(text[i:i + n])
        i += n
        k += 1
    if answer_text and active("empty-text-deltas"):  # before, between the first pieces, after
        out = [""] + [p for piece in out[:2] for p in (piece, "")] + out[2:] + [""]
    return out


def split_json(text: str) -> list[str]:
    return [""] + split_text(text, JSON_PIECES)


def sse_event(name: str | None, data) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {payload}\n\n".encode()


def with_unknown_fields(data):
    """A copy of `data` with UNKNOWN_FIELD in every object (tool inputs and echoed request parts excepted)."""
    if isinstance(data, dict):
        out = {k: (v if k in UNTOUCHED_KEYS else with_unknown_fields(v)) for k, v in data.items()}
        out.setdefault(V.UNKNOWN_FIELD, V.UNKNOWN_VALUE)
        return out
    if isinstance(data, list):
        return [with_unknown_fields(v) for v in data]
    return data


def content_tokens(data) -> int:
    """Engine tokens of generated content in one event (0 for events that carry none)."""
    if not isinstance(data, dict):
        return 0
    deltas = [data.get("delta")] + [c.get("delta") for c in data.get("choices") or () if isinstance(c, dict)]
    strings: list[str] = []

    def walk(node, key=None):
        if isinstance(node, str):
            if key in CONTENT_KEYS or key == "delta":
                strings.append(node)
        elif isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)

    for d in deltas:
        if d is not None:
            walk(d, "delta")
    return sum(tokenizer.count(s) for s in strings)


def _is_content(data) -> bool:
    if not isinstance(data, dict):
        return False
    deltas = [data.get("delta")] + [c.get("delta") for c in data.get("choices") or () if isinstance(c, dict)]
    return content_tokens(data) > 0 or any(isinstance(d, str) and d for d in deltas)


class SSEWriter:
    def __init__(self, response: web.StreamResponse, *, buffered: bool = False, prompt_tokens: int = 0):
        self.response = response
        self.buffered = buffered
        self.buf = bytearray()
        self.events = 0
        self._k = 0
        self._written = 0  # bytes of the body handed to the socket so far
        self.settings = current()
        self.vars = self.settings.variations
        self.started = time.monotonic()
        self.prompt_tokens = prompt_tokens
        self.decoded = 0  # content tokens written so far (decode pacing)
        self.content_events = 0
        self.api = response.get(_API_KEY) or "chat"
        self.anthropic = self.api == "anthropic"
        self.gzip = zlib.compressobj(6, zlib.DEFLATED, 31) if response.get(_GZIP_KEY) else None
        self.eol = b"\r\n" if "crlf" in self.vars else b"\r" if "cr" in self.vars else b"\n"

    # ---- bytes to the socket
    async def _write(self, data: bytes) -> None:
        if self.gzip is not None:  # flushed per write, so a compressed stream stays incremental
            data = self.gzip.compress(data) + self.gzip.flush(zlib.Z_SYNC_FLUSH)
        try:
            await self.response.write(data)
        except (ConnectionError, RuntimeError) as e:  # reset by peer / transport closed
            raise ClientGone(str(e)) from e

    def _cut(self) -> int:
        """Length of the next write."""
        if "one-byte-writes" in self.vars:
            return 1 if self._written < ONE_BYTE_HEAD else WRITE_SIZES[self._k % len(WRITE_SIZES)]
        if "split-utf8" in self.vars:
            # End the write inside the first multi-byte character or between the two newlines of
            # an event end, whichever comes first; else at the usual size.
            n = WRITE_SIZES[self._k % len(WRITE_SIZES)]
            for i in range(min(len(self.buf), 4096)):
                b = self.buf[i]
                if b >= 0xC0:  # a lead byte: cut after it
                    return i + 1
                if b == 0x0A and i + 1 < len(self.buf) and self.buf[i + 1] in (0x0A, 0x0D):
                    return i + 1
            return n
        return WRITE_SIZES[self._k % len(WRITE_SIZES)]

    async def _drain(self, keep_tail: bool) -> None:
        while self.buf:
            n = self._cut()
            if keep_tail and len(self.buf) <= n:
                return
            self._k += 1
            piece = bytes(self.buf[:n])
            del self.buf[:n]  # in place: a bytearray drops its head without copying the rest
            self._written += len(piece)
            await self._write(piece)

    # ---- pacing
    async def _sleep_until(self, due: float) -> None:
        wait = due - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)

    async def _pace(self, data) -> None:
        s = self.settings
        if self.events == 0 and s.prefill_tokens_per_s:
            await self._sleep_until(self.started + self.prompt_tokens / s.prefill_tokens_per_s)
        if not _is_content(data):
            return
        self.content_events += 1
        if "slow" in self.vars and self.content_events <= V.SLOW_GAPS:
            await self._slow_wait()
        if s.decode_tokens_per_s:
            self.decoded += content_tokens(data)
            prefill = self.prompt_tokens / s.prefill_tokens_per_s if s.prefill_tokens_per_s else 0.0
            await self._sleep_until(self.started + prefill + self.decoded / s.decode_tokens_per_s)

    async def _slow_wait(self) -> None:
        end = time.monotonic() + V.SLOW_GAP_SECONDS
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(min(V.SLOW_PING_SECONDS, left))
            if end - time.monotonic() > 0.05:
                await self._ping_now()

    async def _ping_now(self) -> None:
        self.buf += self._frame(*self._ping())
        if not self.buffered and "instant" not in self.vars:
            await self._drain(keep_tail=False)

    def _ping(self):
        return ("ping", {"type": "ping"}) if self.anthropic else (None, None)

    def _frame(self, name, data) -> bytes:
        if data is None:  # an SSE comment (OpenAI wires have no ping event)
            raw = b": ping\n\n"
        else:
            raw = sse_event(name, data) if not isinstance(data, bytes) else data
        return raw.replace(b"\n", self.eol) if self.eol != b"\n" else raw

    # ---- events
    async def raw(self, data: bytes, *, payload=None) -> None:
        await self._pace(payload)
        if self.events == 0 and "sse-comments-retry" in self.vars:
            # Inside the first event, not a block of its own: a retry-only block dispatches no event
            # (WHATWG SSE), but the official SDKs' decoders yield it as an event with empty data
            # and fail on its JSON.
            self.buf += self._frame(None, f"retry: {V.RETRY_MS}\n".encode())
        if self.events > 0:
            if "sse-comments-retry" in self.vars:
                self.buf += self._frame(None, b": variation comment\n")
            if "pings-everywhere" in self.vars:
                self.buf += self._frame(*self._ping())
            if "unknown-events" in self.vars and self.api != "chat":
                self.buf += self._frame(*self._unknown_event())
        self.buf += self._frame(None, data)
        self.events += 1
        if not self.buffered and "instant" not in self.vars:
            await self._drain(keep_tail=True)
        if "instant" in self.vars or self.settings.decode_tokens_per_s:
            return
        if self.events <= SLOW_EVENTS or self.events % 25 == 0:
            await asyncio.sleep(EVENT_DELAY)
        else:
            await asyncio.sleep(0)

    def _unknown_event(self):
        if self.anthropic:
            return "vendor_event", {"type": "vendor_event", "detail": V.UNKNOWN_VALUE}
        return "response.vendor_event", {"type": "response.vendor_event", "detail": V.UNKNOWN_VALUE}

    async def event(self, name: str | None, data) -> None:
        if "unknown-fields" in self.vars and isinstance(data, dict):
            data = with_unknown_fields(data)
        await self.raw(sse_event(name, data), payload=data)

    async def comment(self, text: str) -> None:
        await self.raw(f": {text}\n\n".encode())

    async def flush(self) -> None:
        if self.buffered or "instant" in self.vars:
            if self.buffered:
                await self._sleep_until(self.started + BUFFERED_MIN_SECONDS)
            data, self.buf = bytes(self.buf), bytearray()
            if data:
                await self._write(data)
        else:
            await self._drain(keep_tail=False)

    async def close(self) -> None:
        await self.flush()
        try:
            if self.gzip is not None:
                await self.response.write(self.gzip.flush())
            await self.response.write_eof()
        except (ConnectionError, RuntimeError) as e:
            raise ClientGone(str(e)) from e


_API_KEY = web.ResponseKey("conformance_api", str) if hasattr(web, "ResponseKey") else "conformance_api"
_GZIP_KEY = web.ResponseKey("conformance_gzip", bool) if hasattr(web, "ResponseKey") else "conformance_gzip"


def accepts_gzip(request: web.Request) -> bool:
    """Does the request's Accept-Encoding allow gzip (RFC 9110 section 12.5.3, q=0 refuses)?"""
    for part in request.headers.get("Accept-Encoding", "").split(","):
        token, _, params = part.strip().partition(";")
        if token.strip().lower() in ("gzip", "x-gzip", "*"):
            q = params.strip().lower()
            return not (q.startswith("q=") and float(q[2:] or 0) == 0)
    return False


def wire_of(path: str) -> str:
    return "anthropic" if path.startswith("/v1/messages") else "responses" if path.startswith("/v1/responses") else "chat"


async def start_sse(request: web.Request, headers: dict | None = None) -> web.StreamResponse:
    resp = web.StreamResponse(status=200)
    resp.content_type = "text/event-stream"
    resp.charset = "utf-8"
    resp.headers["Cache-Control"] = "no-cache"
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    settings = current()
    resp[_API_KEY] = wire_of(request.path)
    if "gzip" in settings.variations and settings.accepts_gzip:
        resp.headers["Content-Encoding"] = "gzip"
        resp[_GZIP_KEY] = True
    if "connection-close" in settings.variations:
        resp.force_close()
    if "other-id-formats" in settings.variations:
        resp.headers.popall("request-id", None)
    try:
        await resp.prepare(request)
    except (ConnectionError, RuntimeError) as e:
        raise ClientGone(str(e)) from e
    return resp
