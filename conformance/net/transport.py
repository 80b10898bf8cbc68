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
- A request that asks for a content coding (accept-encoding other than identity, see
  net/client.py) gets its chunks decoded as they arrive (httpx's decoders), arrival times kept.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

ERROR_KINDS = ("connect", "deadline_first_byte", "deadline_first_content", "deadline_total", "read", "protocol")


@dataclass(frozen=True)
class Deadlines:
    connect: float = 10.0
    first_content: float = 60.0  # seconds until the first content-bearing bytes
    total: float = 180.0  # wall clock for the whole exchange, pings or not

    def scaled(self, factor: float) -> Deadlines:
        return Deadlines(self.connect, self.first_content * factor, self.total * factor)


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

    def body(self) -> bytes:
        return b"".join(c for _, c in self.chunks)

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.status is not None and 200 <= self.status < 300

    @property
    def content_type(self) -> str:
        return self.response_headers.get("content-type", "")


ContentPredicate = Callable[[bytes], bool]


async def send(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    deadlines: Deadlines = Deadlines(),
    first_content: ContentPredicate | None = None,
    client: httpx.AsyncClient | None = None,
) -> RawExchange:
    """Send one request and read the whole response under the deadlines."""
    headers = dict(headers or {})
    ex = RawExchange(method, url, headers, body)
    start = time.monotonic()
    own_client = client is None
    if client is None:
        client = httpx.AsyncClient(timeout=httpx.Timeout(deadlines.total, connect=deadlines.connect))
    received = bytearray()

    async def run() -> None:
        async with client.stream(method, url, headers=headers, content=body) as resp:
            ex.status = resp.status_code
            ex.response_headers = {k.lower(): v for k, v in resp.headers.items()}
            # Asked for a content coding (the client's own accept-encoding): record decoded bytes.
            decode = headers.get("accept-encoding", headers.get("Accept-Encoding", "identity")) != "identity"
            async for chunk in (resp.aiter_bytes() if decode else resp.aiter_raw()):
                now = time.monotonic() - start
                if ex.first_byte_at is None:
                    ex.first_byte_at = now
                ex.chunks.append((now, bytes(chunk)))
                if ex.first_content_at is None:
                    received.extend(chunk)
                    if first_content is None or first_content(bytes(received)):
                        ex.first_content_at = now
                        received.clear()

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
    except httpx.TimeoutException as exc:
        ex.error_kind, ex.error = "deadline_total", f"timed out: {type(exc).__name__} {exc}"
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
