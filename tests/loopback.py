"""A real aiohttp app (or a standard-library request handler) on a loopback port, served from a
thread, for tests that need a scripted server (a slow upstream, a lazily generated huge body, a
target that hangs, a plain web server).

Rule: the server is a real HTTP server on 127.0.0.1:<free port>; it is stopped (its handlers
cancelled, at most `shutdown_timeout` s for open connections) when the context exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiohttp import web


@contextlib.contextmanager
def serve_app_in_thread(app: web.Application, *, shutdown_timeout: float = 0.5) -> Iterator[str]:
    """Serve `app` on 127.0.0.1:<free port> in a thread; yields the base URL."""
    loop = asyncio.new_event_loop()
    box: dict = {}
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        # handler_cancellation: a handler still writing (a hung or endless body) stops at shutdown
        runner = web.AppRunner(app, access_log=None, handle_signals=False, handler_cancellation=True,
                               shutdown_timeout=shutdown_timeout)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        box["url"] = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10), "the loopback test server did not start within 10 s"
    try:
        yield box["url"]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@contextlib.contextmanager
def serve_handler_in_thread(handler: type[BaseHTTPRequestHandler] | object) -> Iterator[str]:
    """Serve a standard-library request handler (class or factory) on 127.0.0.1:<free port> in a
    thread; yields the base URL; the server is shut down and closed when the context exits."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
