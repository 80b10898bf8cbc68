"""Writing SSE the way real servers do: events split across network writes, small deltas.

Rules:
- `SSEWriter` serialises events (`event: NAME\ndata: JSON\n\n`, or data-only for OpenAI) into a
  byte buffer and writes it out in pieces of cycling, awkward sizes (1 to 97 bytes), carrying the
  tail of one event into the next write: lines, events and multi-byte UTF-8 characters are split
  across network writes, as a client must tolerate.
- Between events it yields to the loop and sleeps briefly (EVENT_DELAY for the first
  SLOW_EVENTS events, then every 25th event), so delivery is incremental but long outputs stay fast.
- `buffered=True` (fault `buffered-stream`) keeps everything and releases it in one write at the
  end, after the same generation time.
- `split_text` / `split_json` cut strings into many small deltas at awkward places; the first JSON
  piece of a tool call is "" (as Anthropic sends).
- A client that disconnects mid-stream raises `ClientGone`; routes stop quietly.
"""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

WRITE_SIZES = (5, 17, 1, 40, 11, 97, 2, 23, 64, 3)
TEXT_PIECES = (1, 3, 2, 5, 4, 7, 3, 6)
JSON_PIECES = (1, 4, 2, 9, 3, 6, 1, 11)
EVENT_DELAY = 0.001
SLOW_EVENTS = 40


class ClientGone(Exception):
    pass


def _scaled(sizes, length):
    # Long strings get proportionally larger pieces (about 500 pieces at most).
    factor = max(1, length // 1500)
    return [s * factor for s in sizes]


def split_text(text: str, sizes=TEXT_PIECES) -> list[str]:
    if not text:
        return []
    sizes = _scaled(sizes, len(text))
    out, i, k = [], 0, 0
    while i < len(text):
        n = sizes[k % len(sizes)]
        out.append(text[i:i + n])
        i += n
        k += 1
    return out


def split_json(text: str) -> list[str]:
    return [""] + split_text(text, JSON_PIECES)


def sse_event(name: str | None, data) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {payload}\n\n".encode()


class SSEWriter:
    def __init__(self, response: web.StreamResponse, *, buffered: bool = False):
        self.response = response
        self.buffered = buffered
        self.buf = bytearray()
        self.events = 0
        self._k = 0

    async def _write(self, data: bytes) -> None:
        try:
            await self.response.write(data)
        except (ConnectionError, RuntimeError) as e:  # reset by peer / transport closed
            raise ClientGone(str(e)) from e

    async def _drain(self, keep_tail: bool) -> None:
        while self.buf:
            n = WRITE_SIZES[self._k % len(WRITE_SIZES)]
            if keep_tail and len(self.buf) <= n:
                return
            self._k += 1
            piece, self.buf = bytes(self.buf[:n]), self.buf[n:]
            await self._write(piece)

    async def raw(self, data: bytes) -> None:
        self.buf += data
        self.events += 1
        if not self.buffered:
            await self._drain(keep_tail=True)
        if self.events <= SLOW_EVENTS or self.events % 25 == 0:
            await asyncio.sleep(EVENT_DELAY)
        else:
            await asyncio.sleep(0)

    async def event(self, name: str | None, data) -> None:
        await self.raw(sse_event(name, data))

    async def comment(self, text: str) -> None:
        await self.raw(f": {text}\n\n".encode())

    async def flush(self) -> None:
        if self.buffered:
            data, self.buf = bytes(self.buf), bytearray()
            if data:
                await self._write(data)
        else:
            await self._drain(keep_tail=False)

    async def close(self) -> None:
        await self.flush()
        try:
            await self.response.write_eof()
        except (ConnectionError, RuntimeError) as e:
            raise ClientGone(str(e)) from e


async def start_sse(request: web.Request, headers: dict | None = None) -> web.StreamResponse:
    resp = web.StreamResponse(status=200)
    resp.content_type = "text/event-stream"
    resp.charset = "utf-8"
    resp.headers["Cache-Control"] = "no-cache"
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    try:
        await resp.prepare(request)
    except (ConnectionError, RuntimeError) as e:
        raise ClientGone(str(e)) from e
    return resp
