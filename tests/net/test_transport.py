"""Deadlines: a hung target, a target that pings forever, and a refused connection are data."""

import asyncio
import socket
import threading
import time

import pytest
from aiohttp import web

from conformance.net.transport import Deadlines, send_sync


@pytest.fixture(scope="module")
def server():
    async def pings(request):
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        try:
            for _ in range(200):
                await resp.write(b"event: ping\ndata: {\"type\": \"ping\"}\n\n")
                await asyncio.sleep(0.05)
        except ConnectionError:
            pass
        return resp

    async def silent(request):
        await asyncio.sleep(30)
        return web.Response(text="late")

    async def ok(request):
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_get("/pings", pings)
    app.router.add_get("/silent", silent)
    app.router.add_get("/ok", ok)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    loop.call_soon_threadsafe(loop.stop)


def test_pings_forever_fail_on_the_total_deadline(server):
    t0 = time.monotonic()
    ex = send_sync("GET", server + "/pings", deadlines=Deadlines(first_content=30, total=1.0))
    assert ex.error_kind == "deadline_total"
    assert time.monotonic() - t0 < 3
    assert ex.chunks, "the bytes that did arrive are kept"


def test_pings_are_not_content_for_the_first_content_deadline(server):
    ex = send_sync("GET", server + "/pings", deadlines=Deadlines(first_content=0.5, total=10),
                   first_content=lambda buf: b"content_block" in buf)
    assert ex.error_kind == "deadline_first_content"
    assert "pings" in ex.error


def test_silent_target_fails_on_first_byte(server):
    ex = send_sync("GET", server + "/silent", deadlines=Deadlines(first_content=0.5, total=10))
    assert ex.error_kind == "deadline_first_byte"


def test_refused_connection_is_data_not_an_exception():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ex = send_sync("GET", f"http://127.0.0.1:{port}/", deadlines=Deadlines(connect=2, total=5))
    assert ex.error_kind == "connect" and not ex.ok


def test_ok_exchange_records_status_body_and_timing(server):
    ex = send_sync("GET", server + "/ok")
    assert ex.ok and ex.status == 200 and ex.body() == b'{"ok": true}'
    assert ex.first_byte_at is not None and ex.first_content_at is not None
