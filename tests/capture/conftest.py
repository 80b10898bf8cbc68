"""Fixtures for the capture tests: a scripted slow upstream on a real loopback port."""

from __future__ import annotations

import asyncio
import threading

import pytest
from aiohttp import web

from tests.loopback import serve_app_in_thread


class SlowUpstream:
    """Answers POST with SSE chunks separated by `gap` seconds; records what it received."""

    def __init__(self, chunks: list[bytes], gap: float) -> None:
        self.chunks = chunks
        self.gap = gap
        self.received: list[dict] = []
        self.finished_at: list[float] = []
        self.disconnected = threading.Event()

    def app(self) -> web.Application:
        import time

        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            self.received.append({"headers": dict(request.headers), "body": body, "path": request.path_qs})
            if request.method != "POST":
                return web.Response(status=404, text="not here")
            resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
            await resp.prepare(request)
            try:
                for i, c in enumerate(self.chunks):
                    if i:
                        await asyncio.sleep(self.gap)
                    await resp.write(c)
                # stamped before write_eof: the client cannot see the end of the stream before it,
                # so a test reading finished_at right after its last byte never races the handler
                self.finished_at.append(time.monotonic())
                await resp.write_eof()
            except (ConnectionResetError, asyncio.CancelledError):
                self.disconnected.set()
                raise
            return resp

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app


@pytest.fixture
def slow_upstream():
    def make(chunks: list[bytes], gap: float = 0.6):
        up = SlowUpstream(chunks, gap)
        return up, serve_app_in_thread(up.app())

    return make


@pytest.fixture
def serve_app():
    """serve_app(app) -> a context manager yielding the base URL of the served aiohttp app."""
    return serve_app_in_thread
