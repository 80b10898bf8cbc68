"""The suite's own work is bounded: size caps on the raw bytes, linear content detection.

A real loopback server generates the huge bodies lazily (nothing is built in memory on either
side), so a 200 MB event or 300 MB without a newline costs the test only what the client reads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web

from conformance.checks.exchange import check_exchange
from conformance.net.transport import MIB, ContentWatch, Deadlines, Limits, send_sync
from conformance.report.artifacts import write_failure_folder
from conformance.suite.session import Sent
from conformance.wire import ANTHROPIC
from tests.loopback import serve_app_in_thread

WRITE = 64 * 1024  # the server's write size; httpx hands chunks of at most this size here


def _stream(first: bytes, unit: bytes, total: int, content_type: str = "text/event-stream"):
    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"content-type": content_type})
        await resp.prepare(request)
        sent = 0
        try:
            await resp.write(first)
            block = unit * max(1, WRITE // len(unit))
            while sent < total:
                await resp.write(block)
                sent += len(block)
        except (ConnectionError, RuntimeError):
            pass  # the client stopped reading: the lazy body stops here
        return resp

    return handler


@pytest.fixture(scope="module")
def huge(serve_app_module):
    app = web.Application()
    start = b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","content":[]}}\n\n'
    # one 200 MB event: many `data:` lines, never a blank line
    app.router.add_post("/event", _stream(start + b"event: content_block_delta\n", b"data: " + b"x" * 1016 + b"\n",
                                          200 * 1000 * 1000))
    # 300 MB with no newline at all
    app.router.add_post("/line", _stream(start + b"data: ", b"y" * 4096, 300 * 1000 * 1000))
    # a JSON body (one long line by nature) larger than the response cap
    app.router.add_post("/json", _stream(b'{"text":"', b"z" * 4096, 100 * 1000 * 1000, "application/json"))
    with serve_app_module(app) as url:
        yield url


@pytest.fixture(scope="module")
def serve_app_module():
    return serve_app_in_thread


def _send(url: str, limits: Limits | None = None):
    return send_sync("POST", url, body=b"{}", deadlines=Deadlines(5, 30, 60),
                     first_content=ANTHROPIC.content_started, limits=limits or Limits())


def _kept(raw) -> int:
    return sum(len(c) for _, c in raw.chunks)


def test_a_200_mb_event_is_refused_after_the_event_cap(huge):
    url = huge
    raw = _send(url + "/event")
    cap = Limits().event_bytes
    assert raw.error_kind == "limit_event_size", raw.error
    assert "maximum event size" in raw.error
    assert _kept(raw) <= cap + 4096
    assert raw.bytes_read <= cap + WRITE + 4096, "read more than the cap plus one chunk"
    verdict = check_exchange(raw, {"stream": True}, wire="anthropic")
    assert [v.check_id for v in verdict.violations] == ["suite.limits.event_size"]


def test_300_mb_without_a_newline_is_refused_after_the_line_cap(huge):
    url = huge
    raw = _send(url + "/line")
    cap = Limits().line_bytes
    assert raw.error_kind == "limit_line_size", raw.error
    assert raw.bytes_read <= cap + WRITE + 4096, "read more than the cap plus one chunk"
    verdict = check_exchange(raw, {"stream": True}, wire="anthropic")
    assert [v.check_id for v in verdict.violations] == ["suite.limits.line_size"]


def test_a_json_body_past_the_response_cap(huge):
    url = huge
    raw = _send(url + "/json", Limits(response_bytes=2 * MIB))
    assert raw.error_kind == "limit_response_size", raw.error
    assert 2 * MIB - WRITE <= _kept(raw) <= 2 * MIB
    assert raw.bytes_read <= 2 * MIB + WRITE
    verdict = check_exchange(raw, {"stream": False}, wire="anthropic")
    assert [v.check_id for v in verdict.violations] == ["suite.limits.response_size"]


def test_a_json_body_is_not_held_to_the_line_cap(huge):
    url = huge
    raw = _send(url + "/json", Limits(response_bytes=4 * MIB, line_bytes=1 * MIB, event_bytes=1 * MIB))
    assert raw.error_kind == "limit_response_size"  # not limit_line_size: JSON is one line


def test_configured_caps_apply(huge):
    url = huge
    raw = _send(url + "/event", Limits(event_bytes=256 * 1024))
    assert raw.error_kind == "limit_event_size"
    assert raw.bytes_read <= 256 * 1024 + WRITE + 4096


def test_content_detection_looks_at_each_byte_once():
    """Thousands of ping events before the first content, one per chunk: the predicate sees each
    completed event once (linear), never the growing prefix again (quadratic)."""
    seen: list[int] = []

    def predicate(buf: bytes) -> bool:
        seen.append(len(buf))
        return ANTHROPIC.content_started(buf)

    watch = ContentWatch(predicate)
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    total = 0
    for _ in range(5000):
        assert not watch.feed(ping)
        total += len(ping)
    # an event split across chunks, with CRLF line ends, completes the content
    delta = b'event: content_block_delta\r\ndata: {"type":"content_block_delta","index":0,"delta":{"text":"a"}}\r\n\r\n'
    assert not watch.feed(delta[:20])
    assert watch.feed(delta[20:])
    total += len(delta)
    assert sum(seen) <= total, f"the predicate read {sum(seen)} bytes of a {total}-byte stream"


@pytest.mark.parametrize("ending", [b"\n", b"\r", b"\r\n"])
def test_content_detection_finds_events_in_every_line_ending(ending):
    text = b'event: content_block_delta' + ending + b'data: {"type":"content_block_delta"}' + ending + ending
    watch = ContentWatch(ANTHROPIC.content_started)
    assert not watch.feed(b"event: ping" + ending + b'data: {"type":"ping"}' + ending + ending)
    assert any(watch.feed(text[i:i + 1]) for i in range(len(text)))  # one byte at a time


def test_a_json_body_is_content_from_its_first_byte():
    assert ContentWatch(ANTHROPIC.content_started).feed(b'  {"type":"mess')


def test_failure_folders_cap_what_they_record(tmp_path: Path):
    from conformance.net.transport import RawExchange

    raw = RawExchange("POST", "http://t/v1/messages", {}, b"{}", status=200,
                      chunks=[(0.1 * i, b"a" * 1000) for i in range(3000)])
    folder = write_failure_folder(tmp_path / "f", title="t", violations=[], exchanges=[Sent("anthropic", "/v1/messages", {}, raw)],
                                  reproduce=[], versions={}, max_response_bytes=100_000)
    assert (folder / "1.response.raw").stat().st_size == 100_000
    lines = (folder / "1.response.chunks.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["truncated"] == {"kept": 100_000, "of": 3_000_000}
    assert len(lines) == 1 + 100


def _valid_stream(deltas: int) -> list[tuple[float, bytes]]:
    def ev(data: dict) -> bytes:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    events = [ev({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m", "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    events += [ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "w" * 100}})] * deltas
    events += [ev({"type": "content_block_stop", "index": 0}),
               ev({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                   "usage": {"output_tokens": deltas}}),
               ev({"type": "message_stop"})]
    return [(0.001 * i, e) for i, e in enumerate(events)]


def test_the_total_deadline_bounds_judging(monkeypatch):
    from conformance.net import transport
    from conformance.net.transport import RawExchange

    raw = RawExchange("POST", "http://t/v1/messages", {}, b"{}", status=200,
                      response_headers={"content-type": "text/event-stream"}, chunks=_valid_stream(20000),
                      deadline_total=10.0, elapsed=10.0)
    request = {"model": "m", "max_tokens": 30000, "stream": True, "messages": [{"role": "user", "content": "x"}]}
    judged = check_exchange(raw, request, wire="anthropic")
    assert "suite.deadline.total" not in judged.failed_checks  # the grace is enough for this stream
    monkeypatch.setattr(transport, "JUDGE_GRACE", 0.01)  # the transfer used the whole deadline
    cut = check_exchange(raw, request, wire="anthropic")
    (v,) = [v for v in cut.violations if v.check_id == "suite.deadline.total"]
    assert "decoding and judging passed the total deadline of 10s" in v.message


def test_the_lazy_line_and_event_counts_equal_a_scan_of_every_chunk():
    """ByteCaps scans only when a cap could be passed; the counts it reports, and the chunk at
    which it refuses, are those of scanning every chunk (any chunking, any line ending)."""
    import random

    from conformance.net.transport import ByteCaps, _last_blank_line_end

    def naive(chunks, limits):
        since_line = since_blank = 0
        seen = b""
        for i, chunk in enumerate(chunks):
            seen += chunk
            line_end = max(seen.rfind(b"\n"), seen.rfind(b"\r"))
            since_line = len(seen) - line_end - 1
            blank = _last_blank_line_end(seen)
            since_blank = len(seen) - blank if blank >= 0 else len(seen)
            if since_line > limits.line_bytes:
                return i, "limit_line_size", since_line
            if since_blank > limits.event_bytes:
                return i, "limit_event_size", since_blank
        return None

    rng = random.Random(11)
    units = [b"data: x\n", b"\n", b"\r\n", b"\r", b"y" * 40, b"event: e\r\n", b"data: " + b"z" * 90 + b"\n"]
    for _ in range(300):
        stream = b"".join(rng.choice(units) for _ in range(rng.randint(5, 80)))
        cuts = sorted(rng.sample(range(1, len(stream)), min(len(stream) - 1, rng.randint(1, 40))))
        chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        limits = Limits(response_bytes=10**6, line_bytes=rng.randint(20, 120), event_bytes=rng.randint(60, 400))
        caps = ByteCaps(limits, event_stream=True)
        got = None
        for i, chunk in enumerate(chunks):
            over = caps.feed(chunk)
            if over is not None:
                got = (i, over[0], caps.since_line_end if over[0] == "limit_line_size" else caps.since_blank_line)
                break
        assert got == naive(chunks, limits), (chunks, limits)
