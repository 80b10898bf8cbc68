"""HTTP transport with deadlines; records raw response bytes with arrival times.

Rules:
- Every request has three deadlines: connect, first content, and total. httpx's read timeout
  resets on every byte, so a target that sends `ping` events forever would never time out on it:
  the total deadline is enforced on the wall clock around the whole exchange, and the
  first-content deadline uses a caller-supplied predicate over the bytes received so far (pings
  and comments are not content).
- Nothing raises for a target's misbehaviour: refusals, resets, deadlines and early closes become
  `RawExchange.error` (a kind from ERROR_KINDS plus text), with whatever bytes did arrive kept.
  Only programming errors raise.
- Chunks are kept exactly as they arrived (no re-chunking), with the time since the request was
  sent, so framing survives into reports and replays.
- The suite's own work is bounded (`Limits`): the response may be at most `response_bytes`; an
  event stream's line at most `line_bytes` between line ends (LF or CR) and its event at most
  `event_bytes` between blank lines. The counting runs on the raw bytes as they arrive, before
  any decoder (`ByteCaps`: a few `rfind` per chunk), so a 200 MB event or 300 MB with no newline
  is refused after the cap plus at most one chunk, and the exchange ends with the error kind
  `limit_response_size`, `limit_line_size` or `limit_event_size` (judged by
  `conformance.checks.limits`). The chunks before the one that passed the cap are kept;
  `RawExchange.bytes_read` counts that one too. Line and event caps apply to
  `text/event-stream` bodies only: a JSON body is one long line by nature.
- The total deadline bounds the judging too: a RawExchange carries the deadline it was sent
  under, and `judging_budget()` is what the transfer left of it (at least JUDGE_GRACE); the judge
  (`conformance.checks.exchange.judge_stages`) stops between stages once that is spent.
- Content-started detection is incremental (`ContentWatch`): the predicate sees only the events
  completed since its last call, and is called only when a chunk completes an event (a blank line
  arrives), so the work is linear in the bytes received; a body that opens with `{` or `[` is
  content from its first byte, as the Dialect predicates say.
- A request that asks for a content coding (accept-encoding other than identity, see
  net/client.py) gets its chunks decoded as they arrive (httpx's decoders), arrival times kept;
  the caps then count the decoded bytes (what is kept and judged).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from conformance.net.backend import use_socket_backend

LIMIT_KINDS = ("limit_response_size", "limit_line_size", "limit_event_size")
ERROR_KINDS = ("connect", "deadline_first_byte", "deadline_first_content", "deadline_total", "read", "protocol",
               *LIMIT_KINDS)
MIB = 1024 * 1024
# The least time judging gets after the transfer (RawExchange.judging_budget): a few times what
# judging the largest response the size caps let through costs here (benchmarks/bench_bounds.py).
JUDGE_GRACE = 30.0
ContentPredicate = Callable[[bytes], bool]


@dataclass(frozen=True)
class Deadlines:
    connect: float = 10.0
    first_content: float = 60.0  # seconds until the first content-bearing bytes
    total: float = 180.0  # wall clock for the whole exchange, pings or not

    def scaled(self, factor: float) -> Deadlines:
        return Deadlines(self.connect, self.first_content * factor, self.total * factor)


@dataclass(frozen=True)
class Limits:
    """Size caps on what the suite reads (module rules). The defaults are far above anything a
    client meets (a 128k-token answer is well under 1 MiB of SSE) and low enough that decoding
    and judging a capped response stays a small part of the total deadline
    (benchmarks/bench_bounds.py)."""

    response_bytes: int = 64 * MIB
    line_bytes: int = 8 * MIB
    event_bytes: int = 16 * MIB


# Two line ends in a row, in any of the three spellings (LF, CR, CRLF), always contain one of these.
_BLANK_LINE = (b"\n\n", b"\r\r", b"\n\r")


def _last_blank_line_end(data: bytes | bytearray, start: int = 0) -> int:
    """Index just past the last blank line in data[start:], or -1 when there is none."""
    best = -1
    for pattern in _BLANK_LINE:
        i = data.rfind(pattern, start)
        if i >= 0 and i + 2 > best:
            best = i + 2
    return best


class ByteCaps:
    """Counts bytes as they arrive; `feed` returns (error kind, text) once a cap is passed.

    The line and event counts are kept lazily: a chunk costs a few additions until the bytes not
    yet scanned could, all together, pass a cap; only then are they scanned (joined once) for their
    last line end and blank line. So a stream of thousands of small writes pays no per-chunk search,
    and the count at the chunk that passes a cap is exact (the same as scanning every chunk)."""

    def __init__(self, limits: Limits, *, event_stream: bool) -> None:
        self.limits = limits
        self.event_stream = event_stream
        self.total = 0
        self.since_line_end = 0  # exact up to the last scan
        self.since_blank_line = 0
        self._last = b""  # the last scanned byte: a blank line can straddle the scan boundary
        self._unscanned: list[bytes] = []
        self._unscanned_bytes = 0
        # scan once the unscanned bytes could pass the nearer of the two caps
        self._room = 0

    def feed(self, chunk: bytes) -> tuple[str, str] | None:
        n = len(chunk)
        self.total += n
        if self.event_stream:
            self._unscanned.append(chunk)
            self._unscanned_bytes += n
            if self._unscanned_bytes <= self._room and self.total <= self.limits.response_bytes:
                return None  # the common case: far from every cap
        lim = self.limits
        if self.total > lim.response_bytes:
            return ("limit_response_size",
                    f"the response passed the maximum response size of {lim.response_bytes} bytes "
                    f"({self.total} bytes read); the rest was not read")
        if not self.event_stream:
            return None
        self._scan()
        if self.since_line_end > lim.line_bytes:
            return ("limit_line_size",
                    f"an event-stream line passed the maximum line size of {lim.line_bytes} bytes "
                    f"({self.since_line_end} bytes without a line end, {self.total} bytes read); the rest was not read")
        if self.since_blank_line > lim.event_bytes:
            return ("limit_event_size",
                    f"an event passed the maximum event size of {lim.event_bytes} bytes "
                    f"({self.since_blank_line} bytes without a blank line, {self.total} bytes read); "
                    "the rest was not read")
        return None

    def _scan(self) -> None:
        """Make the line and event counts exact over the bytes fed since the last scan."""
        pending = self._unscanned[0] if len(self._unscanned) == 1 else b"".join(self._unscanned)
        joined = self._last + pending
        line_end = max(joined.rfind(b"\n"), joined.rfind(b"\r"))
        self.since_line_end = len(joined) - line_end - 1 if line_end >= 0 else self.since_line_end + len(pending)
        blank = _last_blank_line_end(joined)
        self.since_blank_line = len(joined) - blank if blank >= 0 else self.since_blank_line + len(pending)
        self._last = joined[-1:]
        self._unscanned, self._unscanned_bytes = [], 0
        self._room = min(self.limits.line_bytes - self.since_line_end, self.limits.event_bytes - self.since_blank_line)


class ContentWatch:
    """Incremental first-content detection over a bytes predicate (module rules). The bytes since
    the last event boundary are kept as the chunks themselves and joined only when a chunk may
    complete an event (it holds a line end): most chunks of a long event cost one append."""

    def __init__(self, predicate: ContentPredicate | None) -> None:
        self.predicate = predicate
        self._parts: list[bytes] = []  # bytes since the last event boundary the predicate has seen
        self._tail = b""  # their last byte when it is a line end: a blank line can straddle two chunks
        self._head_decided = False

    def feed(self, chunk: bytes) -> bool:
        """True once content has started (the caller stops feeding then)."""
        if self.predicate is None:
            return True
        if self._head_decided and b"\n" not in chunk and b"\r" not in chunk:
            self._parts.append(chunk)  # a blank line needs a line end in this chunk: no event completed
            self._tail = b""
            return False
        tail = self._tail
        self._parts.append(chunk)
        self._tail = chunk[-1:] if chunk[-1:] in (b"\n", b"\r") else b""
        if not self._head_decided:
            pending = b"".join(self._parts)
            self._parts = [pending]
            head = pending.lstrip()[:1]
            if not head:
                return False
            self._head_decided = True
            if head in (b"{", b"["):
                return self.predicate(pending)
        if _last_blank_line_end(tail + chunk) < 0:
            return False  # no event completed by this chunk: nothing new to ask about
        pending = b"".join(self._parts)
        cut = _last_blank_line_end(pending, max(0, len(pending) - len(chunk) - 2))
        rest = pending[cut:]
        self._parts = [rest] if rest else []
        if not rest:
            self._tail = b""
        return self.predicate(pending[:cut])

    def close(self) -> None:
        """Content has started: drop what is held (nothing more is fed)."""
        self._parts = []


@dataclass
class RawExchange:
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    error_kind: str | None = None
    error: str | None = None
    elapsed: float = 0.0
    first_byte_at: float | None = None
    first_content_at: float | None = None
    bytes_read: int = 0  # off the socket, the chunk that passed a cap included (it is not kept)
    deadline_total: float | None = None  # the total deadline it was sent under (None: unknown)

    def judging_budget(self) -> float | None:
        """Seconds left for decoding and judging: what the transfer left of the total deadline,
        but at least JUDGE_GRACE (a stream that ends just inside its deadline is still judged)."""
        if self.deadline_total is None:
            return None
        return max(self.deadline_total - self.elapsed, JUDGE_GRACE)

    def body(self) -> bytes:
        return b"".join(c for _, c in self.chunks)

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.status is not None and 200 <= self.status < 300

    @property
    def content_type(self) -> str:
        return self.response_headers.get("content-type", "")

    def __repr__(self) -> str:
        # A summary, not the fields: a stream of thousands of chunks would make every repr (an
        # asyncio task holding this as its result is repr'd when `asyncio.run` restores the SIGINT
        # handler) cost milliseconds and fill assertion messages with bytes.
        outcome = self.error_kind or self.status
        return f"RawExchange({self.method} {self.url} -> {outcome}, {len(self.chunks)} chunks, {self.elapsed:.3f}s)"



async def send(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    deadlines: Deadlines = Deadlines(),
    first_content: ContentPredicate | None = None,
    client: httpx.AsyncClient | None = None,
    limits: Limits = Limits(),
) -> RawExchange:
    """Send one request and read the response under the deadlines and the size limits."""
    headers = dict(headers or {})
    ex = RawExchange(method, url, headers, body, deadline_total=deadlines.total)
    start = time.monotonic()
    own_client = client is None
    if client is None:
        client = use_socket_backend(httpx.AsyncClient(timeout=httpx.Timeout(deadlines.total, connect=deadlines.connect)),
                                    url)
    watch = ContentWatch(first_content)

    async def run() -> None:
        async with client.stream(method, url, headers=headers, content=body) as resp:
            ex.status = resp.status_code
            ex.response_headers = {k.lower(): v for k, v in resp.headers.items()}
            caps = ByteCaps(limits, event_stream="text/event-stream" in ex.response_headers.get("content-type", ""))
            # Asked for a content coding (the client's own accept-encoding): record decoded bytes.
            decode = headers.get("accept-encoding", headers.get("Accept-Encoding", "identity")) != "identity"
            # The loop runs once per chunk (thousands per stream): local names, and the caps and
            # the content watch do their searching only when a chunk can matter (their docs).
            chunks, clock, feed_caps = ex.chunks, time.monotonic, caps.feed
            feed_watch = watch.feed
            try:
                # raw: the response's byte stream itself (what aiter_raw re-yields through one more
                # generator and a re-chunker that, without a chunk size, passes chunks as they are)
                async for chunk in (resp.aiter_bytes() if decode else resp.stream):
                    now = clock() - start
                    if ex.first_byte_at is None:
                        ex.first_byte_at = now
                    chunk = bytes(chunk)
                    over = feed_caps(chunk)
                    if over is not None:
                        ex.error_kind, ex.error = over
                        return  # leaving the stream closes the connection: nothing more is read
                    chunks.append((now, chunk))
                    if feed_watch is not None and feed_watch(chunk):
                        ex.first_content_at = now
                        watch.close()
                        feed_watch = None
            finally:
                ex.bytes_read = caps.total

    async def watch_first_content(task: asyncio.Task) -> None:
        await asyncio.sleep(deadlines.first_content)
        if ex.first_content_at is None and not task.done():
            ex.error_kind = "deadline_first_content" if ex.first_byte_at is not None else "deadline_first_byte"
            ex.error = (
                f"no content within the first-content deadline of {deadlines.first_content:g}s "
                f"({'only non-content bytes such as pings arrived' if ex.first_byte_at is not None else 'no byte arrived'})"
            )
            task.cancel()

    task = asyncio.ensure_future(run())
    watcher = asyncio.ensure_future(watch_first_content(task))
    try:
        await asyncio.wait_for(asyncio.shield(task), timeout=deadlines.total)
    except TimeoutError:
        task.cancel()
        if ex.error_kind is None:
            ex.error_kind = "deadline_total"
            ex.error = f"the exchange did not finish within the total deadline of {deadlines.total:g}s"
    except asyncio.CancelledError:
        if ex.error_kind is None:  # cancelled by someone else: propagate
            raise
    except httpx.ConnectError as exc:
        ex.error_kind, ex.error = "connect", f"cannot connect to {url}: {exc}"
    except httpx.ConnectTimeout as exc:
        ex.error_kind = "deadline_total"
        ex.error = f"the connect deadline of {deadlines.connect:g}s fired: no connection ({exc or 'ConnectTimeout'})"
    except httpx.TimeoutException as exc:
        # httpx's own read/write/pool timeouts are set to the total deadline (Target.async_client)
        ex.error_kind = "deadline_total"
        ex.error = (f"the total deadline of {deadlines.total:g}s fired as the socket's {type(exc).__name__} "
                    f"(no byte moved for that long): {exc or type(exc).__name__}")
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        ex.error_kind, ex.error = "read", f"the connection broke mid-response: {type(exc).__name__}: {exc}"
    except httpx.HTTPError as exc:
        ex.error_kind, ex.error = "protocol", f"{type(exc).__name__}: {exc}"
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
        try:
            await task
        except BaseException:  # noqa: BLE001 - the outcome is already recorded in ex
            pass
        if own_client:
            await client.aclose()
        ex.elapsed = time.monotonic() - start
    return ex


def send_sync(method: str, url: str, **kwargs) -> RawExchange:
    """`send` from synchronous code (tests, CLI). Must not be called from a running event loop."""
    return asyncio.run(send(method, url, **kwargs))


def probe(url: str, timeout: float = 3.0) -> str | None:
    """Is anything listening? Returns None if a TCP/HTTP answer came back, else the reason."""
    try:
        httpx.get(url, timeout=timeout)
        return None
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
