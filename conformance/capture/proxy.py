"""The recording proxy: put it between a real client and any target; it records the capture format.

Rules:
- Byte for byte, no buffering: every response chunk is written to the client the moment it
  arrives from the upstream (aiohttp `iter_any`), with the upstream's status and headers
  (hop-by-hop headers aside). The request body is read whole first (requests are finite and
  must be recorded); the request goes upstream unchanged except `accept-encoding: identity`, so
  the recorded chunks are the wire bytes and never a compressed stream (the client's own
  accept-encoding is what the capture records).
- Redaction happens in memory before anything touches disk (`conformance.capture.redact`); the capture
  file is rewritten the moment an exchange's response ends (before the proxy even closes its side
  to the client), exchanges in the order the client sent them (concurrent requests keep their
  arrival order). Every write is atomic: the whole file goes to a fresh temporary file beside it,
  is flushed to disk, then renamed over the old one, so a write cut short (a crash, a full disk)
  leaves the previous good file, never a partial one.
- Stopping loses nothing: `stop_proxy` (SIGTERM or SIGINT in the CLI, leaving
  `serve_proxy_in_thread`) first stops accepting connections, then lets the exchanges in flight
  finish for up to DRAIN_SECONDS, then cuts the rest, recording what passed with the note
  `proxy stopped mid-stream`, and writes the file once more. A client that returns the moment it
  has its answer may do so before the upstream has ended the response; draining is what keeps
  that exchange. The whole stop takes under 5 s.
- A client that disconnects mid-stream leaves a valid record of what passed, with the note
  `client disconnected mid-stream`; an upstream that breaks mid-stream leaves the bytes that
  arrived and the note `upstream broke: ...`, and the client sees the connection cut, as it
  would have without the proxy. An unreachable upstream answers 502 and is recorded as such.
- Client name and version come from the requests (`conformance.clients.identify`: the User-Agent,
  header facts, and body facts that win over a borrowed User-Agent), unless the caller sets them
  (`conformance capture --client/--client-version`). Until a request whose body can tell clients
  apart decides, the last request that named a client stands. A note of the identification (a
  client that sent another's User-Agent) is recorded in the capture's meta as `identification`.
- No deadline shorter than the client's own: connect 30 s, no total limit, 600 s between bytes.
- Bounded memory: the client gets every byte, but a recorded response body stops at
  `max_body_bytes` (DEFAULT_MAX_BODY_BYTES): past it the bytes are forwarded and counted, not
  kept, and the response is marked `truncated: {"kept", "of"}` (conformance.capture.format). So
  two responses of 300 MB pass through a proxy that keeps at most 8 MiB of each.
- Secrets known by name are out of the record too (`conformance.core.secrets`): query parameters
  and JSON body fields named key, api_key, access_token, token, password, secret, ... and
  `token=...`-style parameters inside response text; the whole file passes through the run's
  scrubber (the upstream's userinfo, `--secret` values, key environment variables) as it is written.
- Upstream credentials: an upstream URL with userinfo (`http://user:pass@host`) is never stored or
  printed (the URL is used without it). They are the upstream's HTTP Basic credentials
  (RFC 7617: `Authorization: Basic base64(user:pass)`, what curl and browsers send for such a
  URL); the upstream is who asked for them, so they replace an `Authorization` the client sent
  (other headers, `x-api-key` among them, go up unchanged). The capture records the client's
  request as the client sent it (redacted).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import ClientError, ClientSession, ClientTimeout, web
from aiohttp.client_exceptions import ClientConnectionResetError

from conformance.capture.format import (
    Capture,
    CapturedRequest,
    CapturedResponse,
    Chunk,
    Exchange,
    capture_to_json,
)
from conformance.capture.redact import RedactionConfig, Redactor
from conformance.clients.identify import UNKNOWN_VERSION, has_body_facts, identify
from conformance.clients.profile import GENERIC, ClientProfile
from conformance.core.secrets import (
    redact_named_fields,
    redact_named_params,
    redact_named_params_bytes,
    scrub_text,
    split_userinfo,
    without_userinfo,
)
from conformance.wire.registry import dialect_for_path

# RFC 9110 section 7.6.1 hop-by-hop fields, plus the ones aiohttp sets itself.
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
     "host", "content-length"}
)

# How long a stop waits for the exchanges in flight before cutting them: with the cut, the final
# write and the loop's own shutdown the whole stop stays under the 5 s a script or a user waits.
DRAIN_SECONDS = 3.5
STOPPED_NOTE = "proxy stopped mid-stream"
# What a capture keeps of one response body. Model answers are kilobytes; 8 MiB keeps every real
# one whole while two concurrent endless streams stay within a bounded footprint.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


@dataclass
class CaseInfo:
    case: str
    client: str | None = None  # None: identified from the requests
    client_version: str | None = None
    description: str = ""
    command: str = ""
    flags: list[str] = field(default_factory=list)
    covers: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


class CaptureRecorder:
    """Collects the redacted exchanges of one case and keeps its capture file up to date.

    `path` is the file to write (None: keep in memory only). `begin_case` switches to a new
    case (a fresh Redactor, so pseudonyms restart), which is how recapture runs many cases
    through one proxy.
    """

    def __init__(self, info: CaseInfo, path: Path | None, config: RedactionConfig | None = None) -> None:
        self._lock = threading.Lock()
        self.begin_case(info, path, config)

    def begin_case(self, info: CaseInfo, path: Path | None, config: RedactionConfig | None = None) -> None:
        with self._lock:
            self.info = info
            self.path = Path(path) if path is not None else None
            self.redactor = Redactor(config or RedactionConfig())
            self._exchanges: dict[int, Exchange] = {}
            self._seq = itertools.count(1)
            self._identified: tuple[ClientProfile, str, str] | None = None
            self._decided = False  # a request whose body tells clients apart has named the client
            self._generation = getattr(self, "_generation", 0) + 1

    def next_seq(self) -> tuple[int, int]:
        """(case generation, order of arrival): an exchange still in flight when the case
        changes is dropped instead of landing in the next case."""
        with self._lock:
            return self._generation, next(self._seq)

    def record(
        self,
        seq: tuple[int, int],
        *,
        method: str,
        path: str,
        query: str,
        headers: dict[str, str],
        body: bytes,
        response: CapturedResponse | None,
        note: str = "",
    ) -> Exchange | None:
        """Redact one exchange (in memory) and add it; rewrite the capture file. Returns None
        when the exchange belongs to a case that has ended."""
        generation, order = seq
        with self._lock:
            if generation != self._generation:
                return None
            red = self.redactor
            parsed: Any = None
            text: str | None = None
            if body:
                try:
                    parsed = json.loads(body)
                except ValueError:
                    text = body.decode("utf-8", "replace")
            self._identify(path, headers, parsed)
            red.collect_identifiers(headers, parsed)
            req = CapturedRequest(
                method=method,
                path=path,
                query=redact_named_params(red.redact_text(query)),
                headers=red.redact_headers(headers),
                body=redact_named_fields(red.redact_body(parsed)) if parsed is not None else None,
                body_text=redact_named_params(red.redact_text(text)) if text is not None else None,
            )
            if response is not None:
                response = CapturedResponse(
                    status=response.status,
                    headers=red.redact_headers(response.headers),
                    chunks=[Chunk(c.t, redact_named_params_bytes(c.data)) for c in red.redact_chunks(response.chunks)],
                    truncated=response.truncated,
                )
            ex = Exchange(req, response, note)
            self._exchanges[order] = ex
            self._save_locked()
            return ex

    def _identify(self, path: str, headers: dict[str, str], body: Any) -> None:
        """Identify the client from one request, before redaction (module rules)."""
        if self._decided:
            return
        wire = dialect_for_path(path)
        found = identify(headers, body, wire, path)
        decisive = has_body_facts(body, wire, path)
        if decisive or found[0] is not GENERIC or self._identified is None:
            self._identified = found
        self._decided = decisive

    def capture(self) -> Capture:
        with self._lock:
            return self._capture_locked()

    def _capture_locked(self) -> Capture:
        info = self.info
        client, version, note = self._identified or (GENERIC, UNKNOWN_VERSION, "")
        meta = dict(info.meta)
        if note and not info.client:
            meta["identification"] = note
        return Capture(
            client=info.client or client.name,
            client_version=info.client_version or version,
            case=info.case,
            exchanges=[self._exchanges[k] for k in sorted(self._exchanges)],
            description=info.description,
            command=info.command,
            flags=list(info.flags),
            covers=list(info.covers),
            meta=meta,
        )

    def _save_locked(self) -> None:
        if self.path is None or not self._exchanges:
            return
        write_atomically(self.path, scrub_text(json.dumps(capture_to_json(self._capture_locked()),
                                                          ensure_ascii=False, indent=1) + "\n"))

    def save(self) -> Path | None:
        with self._lock:
            self._save_locked()
            return self.path


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` by `text` or leave it as it was: a fresh temporary file in the same folder
    (so the rename stays on one file system), flushed to disk, then renamed over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a capture is meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _join(upstream: str, path_qs: str) -> str:
    return upstream.rstrip("/") + path_qs


_INFLIGHT = web.AppKey("inflight", set)
_STOPPING = web.AppKey("stopping", dict)


def upstream_auth(upstream: str) -> tuple[str, str | None]:
    """(the upstream URL without userinfo, the Authorization value its userinfo stands for)."""
    base, user, password = split_userinfo(upstream)
    if user is None:
        return upstream, None
    token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
    return base, f"Basic {token}"


def make_app(upstream: str, recorder: CaptureRecorder, *, log=None,
             max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> web.Application:
    """The aiohttp application: one catch-all route that forwards, streams and records."""
    upstream, authorization = upstream_auth(upstream)
    app = web.Application(client_max_size=256 * 1024 * 1024)
    state: dict[str, ClientSession] = {}
    inflight: set[asyncio.Task] = set()
    stopping: dict[str, bool] = {"now": False}
    app[_INFLIGHT] = inflight
    app[_STOPPING] = stopping

    async def on_startup(_app: web.Application) -> None:
        state["session"] = ClientSession(
            auto_decompress=False,
            timeout=ClientTimeout(total=None, connect=30, sock_read=600),
        )

    async def on_cleanup(_app: web.Application) -> None:
        await state["session"].close()

    async def handle(request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            inflight.add(task)
        seq = recorder.next_seq()
        req_headers = {k.lower(): v for k, v in request.headers.items()}
        body = b""
        chunks: list[Chunk] = []
        status: int | None = None
        resp_headers: dict[str, str] = {}
        size = {"kept": 0, "of": 0}  # what the record holds of the response body, of what passed
        note = ""
        recorded = False
        out: web.StreamResponse | None = None

        def record_now() -> None:
            # Called the moment the response ends (and again, harmlessly skipped, in `finally`).
            nonlocal recorded
            if recorded:
                return
            recorded = True
            cut = dict(size) if size["of"] > size["kept"] else None
            response = CapturedResponse(status, resp_headers, chunks, cut) if status is not None else None
            ex = recorder.record(
                seq, method=request.method, path=request.path, query=request.query_string,
                headers=req_headers, body=body, response=response, note=note,
            )
            if log is not None:
                log(f"#{seq[1]} {request.method} {request.path} -> {status} "
                    f"({len(chunks)} chunks){' ' + note if note else ''}"
                    + ("" if ex is not None else " (case ended: not recorded)"))

        try:
            body = await request.read()
            forward = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
            forward = {k: v for k, v in forward.items() if k.lower() != "accept-encoding"}
            forward["Accept-Encoding"] = "identity"
            if authorization is not None:  # the upstream's credentials win (module rules)
                forward = {k: v for k, v in forward.items() if k.lower() != "authorization"}
                forward["Authorization"] = authorization
            t0 = time.monotonic()
            async with state["session"].request(
                request.method, _join(upstream, request.path_qs), headers=forward, data=body,
                allow_redirects=False,
            ) as up:
                status = up.status
                resp_headers = {k.lower(): v for k, v in up.headers.items()}
                out = web.StreamResponse(status=up.status, reason=up.reason)
                for k, v in up.headers.items():
                    if k.lower() not in _HOP_BY_HOP:
                        out.headers.add(k, v)
                if "content-length" in resp_headers and "content-encoding" not in resp_headers:
                    out.content_length = int(resp_headers["content-length"])
                await out.prepare(request)
                try:
                    async for chunk in up.content.iter_any():
                        size["of"] += len(chunk)
                        room = max_body_bytes - size["kept"]
                        if room > 0:  # past the cap the bytes go to the client only (module rules)
                            part = bytes(chunk[:room])
                            size["kept"] += len(part)
                            chunks.append(Chunk(time.monotonic() - t0, part))
                        await out.write(chunk)
                except (ClientConnectionResetError, ConnectionResetError):
                    note = "client disconnected mid-stream"
                    return out
                except ClientError as exc:
                    note = f"upstream broke: {type(exc).__name__}: {exc}"
                    if request.transport is not None:
                        request.transport.close()  # cut the client too, as the upstream did
                    return out
                record_now()  # the response has ended: on disk before the client's side is closed
                with contextlib.suppress(ClientConnectionResetError, ConnectionResetError):
                    await out.write_eof()
                return out
        except asyncio.CancelledError:
            note = note or (STOPPED_NOTE if stopping["now"] else "client disconnected mid-stream")
            raise
        except ClientError as exc:
            if out is not None:  # headers already sent: nothing more to tell the client
                note = note or f"upstream broke: {type(exc).__name__}: {exc}"
                return out
            note = f"upstream unreachable: {type(exc).__name__}: {exc}"
            status = 502
            payload = json.dumps({"type": "error", "error": {"type": "api_error", "message":
                                  f"conformance capture proxy: upstream {upstream} unreachable: {exc}"}}).encode()
            chunks = [Chunk(0.0, payload)]
            resp_headers = {"content-type": "application/json"}
            return web.Response(status=502, body=payload, content_type="application/json")
        finally:
            try:
                record_now()
            finally:
                inflight.discard(task)

    app.router.add_route("*", "/{tail:.*}", handle)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    return app


async def start_proxy(upstream: str, recorder: CaptureRecorder, host: str = "127.0.0.1", port: int = 0,
                      *, log=None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> tuple[web.AppRunner, str]:
    """Start the proxy on the running loop; returns (runner, base URL). Stop with `stop_proxy`."""
    runner = web.AppRunner(make_app(upstream, recorder, log=log, max_body_bytes=max_body_bytes), access_log=None, handle_signals=False,
                           shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    sock = site._server.sockets[0]  # noqa: SLF001 - the bound port when port=0
    h, p = sock.getsockname()[:2]
    return runner, f"http://{h}:{p}"


async def stop_proxy(runner: web.AppRunner, recorder: CaptureRecorder, drain: float = DRAIN_SECONDS) -> int:
    """Stop without losing an exchange (module rules): stop accepting, let the exchanges in flight
    finish for up to `drain` seconds, cut the rest (recorded with STOPPED_NOTE), write the file.
    Returns how many exchanges had to be cut."""
    app = runner.app
    for site in list(runner.sites):
        await site.stop()  # no new connections; the open ones keep going
    inflight: set[asyncio.Task] = app[_INFLIGHT]
    cut = 0
    if inflight:
        _done, pending = await asyncio.wait(set(inflight), timeout=drain)
        if pending:
            cut = len(pending)
            app[_STOPPING]["now"] = True
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=0.5)
    await runner.cleanup()
    recorder.save()
    return cut


@contextlib.contextmanager
def serve_proxy_in_thread(upstream: str, recorder: CaptureRecorder, *, log=None,
                          max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Iterator[str]:
    """Run the proxy on its own loop in a thread (tests, recapture); yields its base URL."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            box["runner"], box["url"] = loop.run_until_complete(start_proxy(upstream, recorder, log=log,
                                                                                max_body_bytes=max_body_bytes))
        except BaseException as exc:  # noqa: BLE001 - reported to the caller below
            box["error"] = exc
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.close()

    thread = threading.Thread(target=run, name="capture-proxy", daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("capture proxy did not start within 30 s")
    if "error" in box:
        raise box["error"]
    try:
        yield box["url"]
    finally:
        stopped = asyncio.run_coroutine_threadsafe(stop_proxy(box["runner"], recorder), loop)
        with contextlib.suppress(Exception):
            stopped.result(DRAIN_SECONDS + 5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


def run_proxy_forever(upstream: str, recorder: CaptureRecorder, host: str, port: int, *,
                      max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
    """The CLI's loop: serve until SIGTERM or SIGINT, printing one line per exchange to stderr;
    on the signal, stop without losing an exchange (`stop_proxy`)."""

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        runner, url = await start_proxy(upstream, recorder, host, port, log=log, max_body_bytes=max_body_bytes)
        print(f"listening on {url}", flush=True)
        print(f"forwarding to {without_userinfo(upstream)}; recording to {recorder.path}", file=sys.stderr, flush=True)
        await stop.wait()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)  # a second Ctrl-C ends at once
        cut = await stop_proxy(runner, recorder)
        n = len(recorder.capture().exchanges)
        print(f"stopped: {n} exchange(s) in {recorder.path}"
              + (f"; {cut} still streaming were cut ({STOPPED_NOTE})" if cut else ""), file=sys.stderr, flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
