"""The asyncio-socket backend (conformance.net.backend) records what httpx's default backend records.

A real loopback server writes a stream in small paced writes; the transport reads it once through
each backend and the chunks (bytes and boundaries) must be the same, as must the error kinds of a
connection cut mid-response and of a refused one.
"""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from aiohttp import web

from conformance.net import transport
from conformance.net.backend import SocketBackend, use_socket_backend
from conformance.net.target import Target
from conformance.net.transport import Deadlines
from tests.loopback import serve_app_in_thread

PIECES = [b"event: a\n", b"data: {\"x\":", b"1}\n", b"\n", b"event: b\ndata: {}\n\n", b"x" * 5000 + b"\n\n"]


@pytest.fixture(scope="module")
def url():
    async def paced(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for piece in PIECES:
            await resp.write(piece)
            await asyncio.sleep(0.02)  # each write arrives on its own
        return resp

    async def cut(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b"event: a\ndata: {}\n\n")
        await asyncio.sleep(0.05)
        request.transport.close()  # no terminating chunk: the body breaks off
        return resp

    app = web.Application()
    app.router.add_get("/paced", paced)
    app.router.add_get("/cut", cut)
    with serve_app_in_thread(app) as base:
        yield base


def _send(url: str, socket_backend: bool):
    async def go():
        client = httpx.AsyncClient(timeout=10)
        if socket_backend:
            use_socket_backend(client, url)
        async with client:
            return await transport.send("GET", url, deadlines=Deadlines(2, 5, 10), client=client)

    return asyncio.run(go())


def test_a_plain_http_target_reads_through_the_socket_backend_and_https_does_not():
    plain = Target("http://127.0.0.1:1").async_client()
    tls = Target("https://127.0.0.1:1").async_client()
    assert isinstance(plain._transport._pool._network_backend, SocketBackend)
    assert not isinstance(tls._transport._pool._network_backend, SocketBackend)
    asyncio.run(plain.aclose())
    asyncio.run(tls.aclose())


def test_both_backends_record_the_same_chunks(url):
    default = _send(url + "/paced", socket_backend=False)
    sockets = _send(url + "/paced", socket_backend=True)
    assert default.ok and sockets.ok, (default.error, sockets.error)
    assert [c for _, c in sockets.chunks] == [c for _, c in default.chunks] == PIECES
    times = [t for t, _ in sockets.chunks]
    assert times == sorted(times) and times[-1] - times[0] >= 0.08, "arrival times are per write"


def test_a_connection_cut_mid_response_is_a_read_error_on_both(url):
    for socket_backend in (False, True):
        ex = _send(url + "/cut", socket_backend)
        assert ex.error_kind == "read", (socket_backend, ex.error_kind, ex.error)
        assert ex.body() == b"event: a\ndata: {}\n\n"


def test_a_refused_connection_is_a_connect_error_on_both():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    for socket_backend in (False, True):
        ex = _send(f"http://127.0.0.1:{port}/", socket_backend)
        assert ex.error_kind == "connect", (socket_backend, ex.error_kind, ex.error)


def test_a_host_name_is_resolved(url):
    port = url.rsplit(":", 1)[1]
    ex = _send(f"http://localhost:{port}/paced", socket_backend=True)
    assert ex.ok and ex.body() == b"".join(PIECES)
