"""Stopping the recording proxy loses nothing: a real proxy process, a real HTTP client, a real signal.

The proxy runs as `conformance capture` in its own process; the test stops it with SIGTERM or
SIGINT the instant the client has its answer (what a script or Ctrl-C does) and reads the file.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from conformance.capture.format import load_capture
from conformance.capture.proxy import STOPPED_NOTE, write_atomically
from conformance.engine.launch import serve_engine_in_thread

STOP_BUDGET = 5.0  # seconds from the signal to the process's exit (the recorder's promise)


def _cli() -> list[str]:
    return [sys.executable, "-c", "import sys; from conformance.cli import main; sys.exit(main())"]


class ProxyProcess:
    def __init__(self, upstream: str, out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [*_cli(), "capture", "--upstream", upstream, "--out", str(out), "--label", "stop"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening on "), f"proxy did not start: {line!r} {self.proc.stderr.read()}"
        self.url = line.split()[-1]

    def stop(self, sig: int) -> float:
        """Signal the proxy; seconds until it exited."""
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return time.monotonic() - t0

    def exchanges(self):
        return load_capture(self.out / "stop.json").exchanges


def _messages(text: str, history: list[dict] | None = None) -> dict:
    return {"model": "reference-model", "max_tokens": 64, "stream": True,
            "messages": [*(history or []), {"role": "user", "content": text}]}


def _body_of(ex) -> bytes:
    return b"".join(c.data for c in ex.response.chunks)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stop_the_instant_the_client_returns_keeps_every_exchange(tmp_path, sig):
    """A two-request conversation and a count, through the proxy to the reference engine; the
    signal goes out the moment the last answer is read."""
    with serve_engine_in_thread() as engine:
        proxy = ProxyProcess(engine, tmp_path)
        try:
            with httpx.Client(base_url=proxy.url, timeout=30, headers={"x-api-key": "sk-test"}) as client:
                first = client.post("/v1/messages", json=_messages("hello"))
                assert first.status_code == 200 and b"message_stop" in first.content
                history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
                second = client.post("/v1/messages", json=_messages("and again", history))
                assert b"message_stop" in second.content
                count = client.post("/v1/messages/count_tokens",
                                    json={"model": "reference-model", "messages": history})
                assert count.status_code == 200
            took = proxy.stop(sig)
        finally:
            if proxy.proc.poll() is None:
                proxy.proc.kill()
    assert took < STOP_BUDGET, f"the proxy took {took:.1f}s to stop"
    exchanges = proxy.exchanges()
    assert [e.request.path for e in exchanges] == ["/v1/messages", "/v1/messages", "/v1/messages/count_tokens"]
    assert all(b"message_stop" in _body_of(e) for e in exchanges[:2])
    assert json.loads(_body_of(exchanges[2]))["input_tokens"] > 0
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()), "a temporary file was left behind"


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


EVENTS = [_sse("message_start", {"type": "message_start", "message": {"id": "msg_1", "content": []}}),
          _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"text": "hi"}}),
          _sse("message_stop", {"type": "message_stop"})]


def _upstream(linger: float, hang_after_first: bool) -> web.Application:
    """An upstream that sends the answer, then keeps the response open `linger` seconds (a
    client that stops reading at message_stop returns before the response ends), or that hangs
    after the first event."""

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for n, event in enumerate(EVENTS):
            await resp.write(event)
            if hang_after_first and n == 0:
                await asyncio.sleep(3600)
        await asyncio.sleep(linger)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_post("/v1/messages", handler)
    return app


def _read_until_message_stop(url: str) -> bytes:
    got = b""
    with httpx.Client(timeout=30) as client, client.stream("POST", url + "/v1/messages", json=_messages("x")) as r:
        for chunk in r.iter_raw():
            got += chunk
            if b"message_stop" in got:
                break  # the client has its answer and goes away, as Claude Code does
    return got


def test_stop_while_the_upstream_still_holds_the_response_open(tmp_path, serve_app):
    with serve_app(_upstream(linger=1.5, hang_after_first=False)) as upstream:
        proxy = ProxyProcess(upstream, tmp_path)
        try:
            assert b"message_stop" in _read_until_message_stop(proxy.url)
            took = proxy.stop(signal.SIGTERM)
        finally:
            if proxy.proc.poll() is None:
                proxy.proc.kill()
    assert took < STOP_BUDGET
    (ex,) = proxy.exchanges()
    assert _body_of(ex) == b"".join(EVENTS), "the exchange in flight was not finished before the exit"
    assert STOPPED_NOTE not in ex.note


def test_a_hung_upstream_is_cut_within_the_budget_and_what_passed_is_kept(tmp_path, serve_app):
    with serve_app(_upstream(linger=0, hang_after_first=True)) as upstream:
        proxy = ProxyProcess(upstream, tmp_path)
        try:
            with httpx.Client(timeout=30) as client, \
                    client.stream("POST", proxy.url + "/v1/messages", json=_messages("x")) as r:
                first = next(r.iter_raw())
                assert b"message_start" in first
                took = proxy.stop(signal.SIGTERM)
        finally:
            if proxy.proc.poll() is None:
                proxy.proc.kill()
    assert took < STOP_BUDGET, f"the proxy took {took:.1f}s to stop"
    (ex,) = proxy.exchanges()
    assert ex.note == STOPPED_NOTE
    assert _body_of(ex) == EVENTS[0]


def test_a_write_cut_short_leaves_the_previous_file(tmp_path):
    path = tmp_path / "c.json"
    write_atomically(path, '{"good": true}\n')
    with pytest.raises(UnicodeEncodeError):
        write_atomically(path, '{"bad": "' + "x" * 100_000 + "\ud800" + '"}')  # fails mid-write
    assert path.read_text() == '{"good": true}\n'
    assert os.listdir(tmp_path) == ["c.json"]
