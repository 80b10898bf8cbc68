"""suite.stream.incremental judged only when the stream can tell: a short stream delivered in one
burst is `unverifiable` with its measured durations (a response cache or a fast engine does that
legally); a long one whose content all arrives at its end fails; behind a router, the engine's own
delivery decides whether a burst is the router's buffering or the engine's own speed."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import httpx
import pytest
from aiohttp import web
from suite_runner import SMALL

from conformance.suite.test_replay import FASTEST_EVENTS_PER_S, MIN_JUDGED_SECONDS, judge_incremental
from conformance.wire import ANTHROPIC
from conformance.wire.sse import SSEDecoder

CLAUDE = SMALL / "claude-code" / "2.1.197" / "tool-loop-small.json"


def _events(times: list[float], end: float):
    """An Anthropic stream whose content events arrive at `times`, the last event at `end`."""
    dec = SSEDecoder()
    out = dec.feed(b'event: message_start\ndata: {"type":"message_start"}\n\n', 0.0)
    for t in times:
        out += dec.feed(b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                        b'"delta":{"type":"text_delta","text":"x"}}\n\n', t)
    out += dec.feed(b'event: message_stop\ndata: {"type":"message_stop"}\n\n', end)
    return out


def test_a_short_burst_is_unverifiable_with_its_durations():
    outcome, text = judge_incremental(_events([0.010 + i * 1e-6 for i in range(14)], 0.011), ANTHROPIC, 0.011)
    assert outcome == "unverifiable"
    assert "11.0 ms" in text and "first content at 10.0 ms" in text and f"{MIN_JUDGED_SECONDS * 1000:.0f} ms" in text


def test_a_long_stream_released_at_its_end_fails():
    outcome, text = judge_incremental(_events([0.6 + i * 1e-5 for i in range(14)], 0.6002), ANTHROPIC, 0.61)
    assert outcome == "failed" and "all 14 content events arrived within" in text


def test_a_long_wait_then_content_faster_than_any_decoder_fails_but_decoder_speed_passes():
    # 50 events 0.1 ms apart after a 1 s wait: 10000 events/s, faster than any decoder.
    fast = [1.0 + i * 0.0001 for i in range(50)]
    assert judge_incremental(_events(fast, fast[-1]), ANTHROPIC, 1.0)[0] == "failed"
    # the same 50 events at a fast decoder's pace (a quarter of the bound) pass
    paced = [1.0 + i * 4 / FASTEST_EVENTS_PER_S for i in range(50)]
    assert judge_incremental(_events(paced, paced[-1]), ANTHROPIC, 1.0)[0] == "passed"


def test_content_spread_over_the_stream_passes():
    outcome, text = judge_incremental(_events([0.1 * i for i in range(1, 10)], 1.0), ANTHROPIC, 1.0)
    assert outcome == "passed" and "content spread over 900.0 ms" in text


# ---- behind a router: a proxy that adds latency in front of an engine that answers at once


@contextlib.contextmanager
def _slow_proxy(upstream: str, delay: float):
    """A real HTTP proxy on loopback: waits `delay`, then relays the upstream answer in one write."""
    async def relay(request: web.Request):
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        async with httpx.AsyncClient(timeout=30) as c:
            r = await c.post(upstream + request.path_qs, content=body, headers=headers)
        await asyncio.sleep(delay)
        return web.Response(body=r.content, status=r.status_code,
                            headers={"content-type": r.headers.get("content-type", "application/json")})

    async def passthrough(request: web.Request):
        async with httpx.AsyncClient(timeout=30) as c:
            r = await c.request(request.method, upstream + request.path_qs)
        return web.Response(body=r.content, status=r.status_code,
                            headers={"content-type": r.headers.get("content-type", "application/json")})

    app = web.Application()
    app.router.add_route("POST", "/{tail:.*}", relay)
    app.router.add_route("*", "/{tail:.*}", passthrough)
    loop = asyncio.new_event_loop()
    holder = {}
    ready = threading.Event()

    async def start():
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        holder["runner"], holder["url"] = runner, f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        ready.set()

    def run():
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()
        loop.run_until_complete(holder["runner"].cleanup())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    ready.wait(10)
    try:
        yield holder["url"]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        t.join(10)


@pytest.mark.parametrize("engine_url_given", [False, True])
def test_latency_in_front_of_a_one_burst_engine(pytester, suite, engine_url_given):
    """Without the engine URL, a stream that waited 0.4 s and then arrived at once is buffered;
    given the engine URL, the engine's own one-burst answer shows it is latency, not buffering."""
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(variations=["instant"]) as engine, _slow_proxy(engine, 0.4) as router:
        extra = [f"--conformance-engine-url={engine}"] if engine_url_given else []
        run = suite(pytester, router, str(pytester_suite_module()) + "::test_stream_incremental", *extra,
                    captures=CLAUDE)
    verdicts = [r for r in run.results if r.check_id == "suite.stream.incremental"]
    assert verdicts, run.outcome.stdout.str()[-2000:]
    if engine_url_given:
        assert {r.outcome for r in verdicts} == {"unverifiable"}, [r.message for r in verdicts]
        assert any("the engine's own stream of the same request is one burst too" in r.message for r in verdicts)
    else:
        assert "failed" in {r.outcome for r in verdicts}, [r.message for r in verdicts]


def pytester_suite_module():
    from conformance.plugin import SUITE_DIR

    return SUITE_DIR / "test_replay.py"


def test_a_short_stream_with_spread_content_passes():
    """Streaming shows on a short stream too: only a burst needs a long stream to be judged."""
    outcome, text = judge_incremental(_events([0.01 * i for i in range(1, 10)], 0.1), ANTHROPIC, 0.1)
    assert outcome == "passed" and "content spread over 90.0 ms" in text
