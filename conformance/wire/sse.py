"""Sans-IO Server-Sent-Events decoder (WHATWG HTML "event stream interpretation").

Rules (facts from the WHATWG HTML standard, section 9.2.6 "Interpreting an event stream"):
- Lines end with CRLF, LF or CR; a CR at the end of one chunk followed by LF at the start of
  the next is one line ending. One leading UTF-8 BOM is skipped.
- A line starting with ":" is a comment. Otherwise "field:value" (one space after the colon is
  removed) or a bare "field" (empty value). Fields: `event` sets the event name, `data` appends
  a line to the data buffer (lines joined with "\\n"), `id` sets the last event id (ignored if it
  contains NUL; it persists across events), `retry` sets the reconnection time if all ASCII
  digits. Other fields are ignored.
- A blank line dispatches the event. With an empty data buffer nothing is dispatched (the
  event name, if any, is discarded).
- At end of stream an incomplete event (no terminating blank line) is discarded.

What this module adds for a judge: every event keeps the byte offset of its first line in the
raw stream, its 1-based number and the arrival time of the chunk that completed it. Framing
problems never raise: they become violations in `SSEDecoder.violations` — a leading BOM on a
wire that dispatches on event names (a warning: WHATWG allows it, but the anthropic and openai
Python SDKs do not strip it and lose the first event's name — measured here), bytes that are not
UTF-8 (decoded with replacement so the stream can still be judged), a stream ending mid-event
(the event a client would drop), an event with a name but no data (dropped by clients) and, on
wires that dispatch on the event name (Anthropic: the SDKs switch on `event:`), data with no
event name.

The decoder works a line at a time over a byte buffer (the approach of the anthropic SDK's
`_streaming.SSEDecoder`, re-implemented here), so any chunking gives the same events.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from typing import NamedTuple

from conformance.core.failures import Violation
from conformance.core.registry import register, violation

_BOM = b"\xef\xbb\xbf"

register(
    "sse.encoding.utf8",
    "the event stream is valid UTF-8",
    scope="wire",
    judges="stack",
    likely_cause="a layer re-encodes or splits multi-byte characters across writes with the wrong codec "
    "(e.g. latin-1 in a proxy), or the response is not an event stream at all",
)
register(
    "sse.stream.ends_mid_event",
    "the stream does not end in the middle of an event (every event ends with a blank line)",
    scope="wire",
    judges="stack",
    likely_cause="the connection was closed before the last event was flushed: the engine or a proxy "
    "crashed, hit a timeout, or buffers and drops the final write",
)
register(
    "sse.event.name_missing",
    "every event carries an `event:` name (the Anthropic SDKs dispatch on it and drop unnamed events)",
    scope="wire",
    judges="stack",
    likely_cause="a router translating from OpenAI chat emits `data:` lines only, as OpenAI does; "
    "the Anthropic wire needs `event: <type>` before each `data:` line",
)
register(
    "sse.stream.bom",
    "the stream does not open with a byte-order mark (legal per WHATWG, but the official SDKs keep it)",
    severity="warning",
    scope="wire",
    judges="stack",
    likely_cause="a proxy or framework writes a UTF-8 BOM before the body; the anthropic and openai Python SDKs "
    "do not strip it, so the first event's `event:` name is lost and message_start is dropped",
)
register(
    "sse.event.no_data",
    "an event with fields has at least one `data:` line (clients drop events without data)",
    severity="warning",
    scope="wire",
    judges="stack",
    likely_cause="a server writes `event:` lines without a data payload, or splits one event with a blank line",
)


class SSEEvent(NamedTuple):
    """One dispatched event (immutable; a named tuple: built ~3x faster than a frozen dataclass,
    and a judge builds one per token)."""

    event: str | None  # the `event:` field; None when the event had none (WHATWG default "message")
    data: str  # data lines joined with "\n"
    id: str | None  # the last event id (persists across events, per WHATWG)
    retry: int | None  # a `retry:` given in this event, if any
    offset: int  # byte offset of the event's first line in the raw stream
    t: float | None  # arrival time of the chunk that completed the event (None if not fed with times)
    index: int  # 1-based number of the event in the stream


class SSEDecoder:
    """Feed bytes in any chunking; get dispatched events. Never raises on bad input."""

    def __init__(self, *, require_event_name: bool = False) -> None:
        self.require_event_name = require_event_name
        self.fast = True  # False: the general line-by-line path only (the tests compare the two)
        self.hold_from = _HOLD_FROM
        self.violations: list[Violation] = []
        self.comments = 0
        self._buf = b""
        self._buf_offset = 0  # absolute offset of self._buf[0]
        # chunks of a long pending event held back uncopied (_cannot_complete), and the fast path's
        # blank line while holding (b"" when not)
        self._held: list[bytes] = []
        self._held_sep = b""
        self._held_tail = b""
        self._bom_checked = False
        self._skip_lf = False  # the previous line ended with a lone CR: a leading LF belongs to it
        self._closed = False
        self._count = 0
        # the event being built
        self._event: str | None = None
        self._data: list[str] = []
        self._has_data = False
        self._retry: int | None = None
        self._start: int | None = None  # offset of the first field line of the pending event
        self._last_id: str | None = None
        self._bad_utf8_reported = 0
        self._unnamed = 0  # events without a name (reported once, with the count at close)
        self._unnamed_at = -1

    # -- public API -----------------------------------------------------------------------
    def copy(self) -> SSEDecoder:
        """An independent decoder in the same state (its lists copied; everything else is immutable)."""
        new = copy.copy(self)
        new.violations, new._data, new._held = list(self.violations), list(self._data), list(self._held)
        return new

    def feed(self, data: bytes, t: float | None = None) -> list[SSEEvent]:
        if self._closed:
            raise RuntimeError("SSEDecoder.feed() after close()")
        if not data:
            return []
        if self._held_sep:  # a long event is arriving: hold chunks that cannot complete it, join once
            if self._cannot_complete(data, self._held_sep):
                self._held.append(data)
                self._held_tail = (self._held_tail + data)[-3:]
                return []
            self._release_held()
        buf = self._buf + data if self._buf else bytes(data)
        base = self._buf_offset
        if not self._bom_checked:
            if len(buf) < 3 and _BOM.startswith(buf):
                self._buf = buf
                return []
            self._bom_checked = True
            if buf.startswith(_BOM):
                buf = buf[3:]
                base += 3
                if self.require_event_name:  # only the event name is lost by the SDKs (measured)
                    self.violations.append(
                        violation(
                            "sse.stream.bom",
                            "the stream opens with a UTF-8 BOM; the official SDKs do not strip it and lose the "
                            "first event's name",
                            expected="no BOM",
                            seen="EF BB BF",
                            byte_offset=0,
                        )
                    )
        if self._skip_lf:
            self._skip_lf = False
            if buf[:1] == b"\n":
                buf = buf[1:]
                base += 1
        if self._start is None and self.fast:  # between events: fast if the line endings are uniform
            if b"\r" not in buf:
                sep, nl = b"\n\n", b"\n"
            elif buf.count(b"\r\n") == buf.count(b"\r") == buf.count(b"\n"):
                sep, nl = b"\r\n\r\n", b"\r\n"
            else:
                sep = nl = b""
            if sep:
                if self._buf and sep not in self._buf[-3:] + data:
                    self._buf, self._buf_offset = buf, base  # no event completed: do not re-split it per chunk
                    if len(buf) > self.hold_from:  # and past a size, do not copy it per chunk either
                        self._held_sep, self._held_tail = sep, buf[-3:]
                    return []
                return self._feed_events(buf, base, t, sep, nl)
        return self._feed_lines(buf, base, t)

    def _cannot_complete(self, data: bytes, sep: bytes) -> bool:
        """True when `data` after the held bytes keeps the line endings uniform and ends no event,
        so the fast path would only buffer it (then it is held without being copied)."""
        if sep in self._held_tail + data[:3] or sep in data:
            return False
        if sep == b"\n\n":
            return b"\r" not in data
        return (data[:1] != b"\n" and self._held_tail[-1:] != b"\r"
                and data.count(b"\r\n") == data.count(b"\r") == data.count(b"\n"))

    def _release_held(self) -> None:
        self._buf = b"".join([self._buf, *self._held])
        self._held, self._held_sep, self._held_tail = [], b"", b""

    def _feed_lines(self, buf: bytes, base: int, t: float | None) -> list[SSEEvent]:
        """The general path: line by line, any mix of CRLF, LF and CR."""
        out: list[SSEEvent] = []
        pos = 0
        lines = buf.splitlines(keepends=True)  # bytes.splitlines splits on \n, \r\n and \r only
        last = len(lines) - 1
        for i, raw in enumerate(lines):
            if raw[-1:] == b"\n":
                end = len(raw) - (2 if raw[-2:] == b"\r\n" else 1)
            elif raw[-1:] == b"\r":
                if i == last:
                    self._skip_lf = True  # a CR at the chunk end may be the first half of CRLF
                end = len(raw) - 1
            else:  # incomplete last line: keep for the next feed
                break
            self._line(raw[:end], base + pos, t, out)
            pos += len(raw)
        self._buf = buf[pos:]
        self._buf_offset = base + pos
        return out

    def close(self) -> list[SSEEvent]:
        """End of stream: report an unterminated event (it is discarded, as clients do)."""
        if self._closed:
            return []
        self._closed = True
        out: list[SSEEvent] = []
        self._release_held()
        pending_line = self._buf
        if not self._bom_checked and pending_line and _BOM.startswith(pending_line):
            pending_line = b""
        if b"\n" in pending_line or b"\r" in pending_line:  # the fast path keeps whole lines after the last event
            out.extend(self._feed_lines(pending_line, self._buf_offset, None))
            self._release_held()
        pending_line = self._buf
        if pending_line:
            # A final line without its line ending: interpret it to show what was lost.
            self._line(pending_line, self._buf_offset, None, out, dispatch=False)
        if self._start is not None:
            what = f"event {self._event!r}" if self._event else "an event"
            self.violations.append(
                violation(
                    "sse.stream.ends_mid_event",
                    f"the stream ended in the middle of {what}: its terminating blank line never came, "
                    "so a client discards it",
                    expected="each event terminated by a blank line",
                    seen=("data: " + "\n".join(self._data))[:200] if self._data else "no data line",
                    event_index=self._count + 1,
                    event_type=self._event,
                    byte_offset=self._start,
                )
            )
        if self._unnamed > 1:
            first = self.violations[self._unnamed_at]
            self.violations[self._unnamed_at] = dataclasses.replace(
                first, message=f"{first.message} ({self._unnamed} of {self._count} events have no name; "
                f"the first is shown)")
        self._buf = b""
        return out

    # -- internals ------------------------------------------------------------------------
    def _feed_events(self, buf: bytes, base: int, t: float | None, sep: bytes, nl: bytes) -> list[SSEEvent]:
        """The fast path: one kind of line ending `nl` and no event pending, so a blank line is
        `sep` (nl twice) and every complete event is one slice between two of them. The common
        shapes (`event: X` + one `data:` line, or one `data:` line) are built directly; any other
        event (comments, several data lines, id/retry, bytes that are not UTF-8, ...) goes line
        by line through `_line` like the general path, so both give the same events and
        violations. What follows the last blank line waits in the buffer (it starts a line).
        ASCII bytes are decoded once and split as text (each character is one byte, so the
        offsets are the same); other bytes are split as bytes and each field decoded."""
        text = buf.isascii()
        if text:
            blocks: list = buf.decode("ascii").split(sep.decode("ascii"))
            rest = blocks.pop().encode("ascii")
            event_prefix, data_prefix, line_end = "event: ", "data: ", nl.decode("ascii")
        else:
            blocks = buf.split(sep)
            rest = blocks.pop()
            event_prefix, data_prefix, line_end = b"event: ", b"data: ", nl
        data_line = line_end + data_prefix  # where a named event's one data line starts
        out: list[SSEEvent] = []
        pos = base
        named = self.require_event_name
        n = len(nl)
        step = len(sep)
        count, last_id = self._count, self._last_id
        for block in blocks:
            # `event: X` nl `data: Y`, no other line end: the head holds none, nor does the data
            head, found, data = block.partition(data_line)
            try:
                if found and head[:7] == event_prefix and line_end not in head and line_end not in data:
                    name = head[7:] if text else head[7:].decode()
                    if not text:
                        data = data.decode()
                elif not found and not named and block[:6] == data_prefix and line_end not in block:
                    name, data = None, block[6:] if text else block[6:].decode()
                else:
                    raise ValueError
            except ValueError:  # (UnicodeDecodeError is one) not a common shape: line by line
                self._count = count
                raw = block.encode("ascii") if text else block
                at = pos
                for line in raw.split(nl):
                    self._line(line, at, t, out)
                    at += len(line) + n
                self._dispatch(t, out)
                count, last_id = self._count, self._last_id
            else:
                count += 1
                out.append(_new_tuple(SSEEvent, (name, data, last_id, None, pos, t, count)))
            pos += len(block) + step
        self._count = count
        self._buf = rest
        self._buf_offset = pos
        return out

    def _line(self, raw: bytes, offset: int, t: float | None, out: list[SSEEvent], dispatch: bool = True) -> None:
        if not raw:
            if dispatch:
                self._dispatch(t, out)
            return
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.decode("utf-8", errors="replace")
            self._bad_utf8_reported += 1
            if self._bad_utf8_reported <= 5:  # a binary body would otherwise make thousands
                self.violations.append(
                    violation(
                        "sse.encoding.utf8",
                        f"bytes that are not UTF-8 in the event stream ({exc.reason})",
                        expected="UTF-8 text",
                        seen=repr(raw[max(0, exc.start - 8): exc.end + 8]),
                        event_index=self._count + 1,
                        byte_offset=offset + exc.start,
                    )
                )
        if line[0] == ":":
            self.comments += 1
            return
        if self._start is None:
            self._start = offset
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self._last_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self._retry = int(value)
        # other field names are ignored (WHATWG)

    def _dispatch(self, t: float | None, out: list[SSEEvent]) -> None:
        if self._start is None:  # blank line with nothing pending
            return
        start = self._start
        if not self._has_data:
            if self._event is not None:
                self.violations.append(
                    violation(
                        "sse.event.no_data",
                        f"event {self._event!r} has no data line; clients drop it",
                        expected="at least one `data:` line",
                        seen=f"event: {self._event}",
                        event_index=self._count + 1,
                        event_type=self._event,
                        byte_offset=start,
                    )
                )
        else:
            self._count += 1
            ev = SSEEvent(self._event, "\n".join(self._data), self._last_id, self._retry, start, t, self._count)
            if self.require_event_name and ev.event is None:
                self._unnamed += 1
            if self._unnamed == 1 and ev.event is None and self.require_event_name:
                self._unnamed_at = len(self.violations)
                self.violations.append(
                    violation(
                        "sse.event.name_missing",
                        "a data line with no `event:` name; Anthropic clients dispatch on the name and drop it",
                        expected="`event: <type>` before `data:`",
                        seen=ev.data[:120],
                        event_index=ev.index,
                        byte_offset=start,
                    )
                )
            out.append(ev)
        self._event = None
        self._data = []
        self._has_data = False
        self._retry = None
        self._start = None


_new_tuple = tuple.__new__  # SSEEvent(...) through tuple.__new__ directly: skips the NamedTuple's Python __new__

_HOLD_FROM = 64 * 1024  # a pending event this long is collected in a list, not re-copied per chunk

Chunks = bytes | bytearray | list | tuple


def iter_chunks(chunks: Chunks):
    """(t, bytes) pieces for a decoder from bytes, a list of bytes or a list of (t, bytes).

    A run of chunks without a line end (CR or LF) goes to the decoder joined to the chunk that
    ends it, with that chunk's time: a long JSON line written in hundreds of small writes is one
    feed, not hundreds. The events are those of feeding chunk by chunk, at the same offsets and
    times: an event completes on a blank line, two line ends in a row, and every line end of a
    joined piece is in its last chunk, so each event is completed by the chunk it would have been.
    """
    if isinstance(chunks, bytes | bytearray | memoryview):
        yield None, bytes(chunks)
        return
    held: list[bytes] = []
    t = None
    for item in chunks:
        if isinstance(item, tuple):
            t, data = item
        else:
            t, data = None, item
        if b"\n" not in data and b"\r" not in data:
            held.append(data)
            continue
        if held:
            held.append(data)
            data = b"".join(held)
            held = []
        yield t, bytes(data)
    if held:
        yield t, b"".join(held)


def decode(chunks: Chunks, *, require_event_name: bool = False) -> tuple[list[SSEEvent], list[Violation]]:
    """Decode a whole stream: bytes, or a list of (t, bytes) chunks as the transport records them."""
    if isinstance(chunks, bytes):
        return _decode_bytes(chunks, require_event_name)
    dec = SSEDecoder(require_event_name=require_event_name)
    events: list[SSEEvent] = []
    for t, data in iter_chunks(chunks):
        events.extend(dec.feed(data, t))
    events.extend(dec.close())
    return events, dec.violations


# A sender asks "has content started?" (content_started) on the bytes so far after every chunk:
# the same growing buffer, decoded again and again (quadratic in a long first event). So the
# decoder state before close is kept per thread for the last buffer past RESUME_FROM bytes, and a
# buffer that extends it resumes from there: feeding in two pieces gives what one piece gives
# (tests/wire/test_wire_sse.py), so the answer is the same.
RESUME_FROM = 4096
_resume = threading.local()


def _decode_bytes(buf: bytes, named: bool) -> tuple[list[SSEEvent], list[Violation]]:
    last = getattr(_resume, "last", None)
    if last is not None and last[0] == named and len(buf) >= len(last[1]) and buf.startswith(last[1]):
        _, prev, saved, saved_events = last
        dec, events = saved.copy(), list(saved_events)
        events.extend(dec.feed(buf[len(prev):]))
    else:
        dec = SSEDecoder(require_event_name=named)
        events = dec.feed(buf)
    if len(buf) >= RESUME_FROM:
        _resume.last = (named, buf, dec.copy(), list(events))
    events.extend(dec.close())
    return events, dec.violations


HEAD_BYTES = 4096


def head_then_whole(buf: bytes, head: int = HEAD_BYTES):
    """`buf[:head]`, then `buf` when it is longer: for questions about a stream's first events
    (an SSE prefix dispatches exactly the first events of the whole, so a yes on the head holds)."""
    yield buf[:head]
    if len(buf) > head:
        yield buf
