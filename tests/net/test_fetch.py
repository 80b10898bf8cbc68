"""The suite's JSON GET: through the one sender, with a deadline, never raising on the other side."""

from __future__ import annotations

import asyncio

from aiohttp import web

from conformance.net.fetch import get_json
from conformance.net.transport import Deadlines
from tests.loopback import serve_app_in_thread


def _app() -> web.Application:
    async def doc(request: web.Request) -> web.Response:
        return web.json_response({"requests": [], "total": 3, "accept": request.headers.get("accept"),
                                  "key": request.headers.get("x-api-key") or request.headers.get("authorization")})

    async def text(request: web.Request) -> web.Response:
        return web.Response(text="not json")

    async def missing(request: web.Request) -> web.Response:
        return web.json_response({"error": "no"}, status=404)

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/doc", doc)
    app.router.add_get("/text", text)
    app.router.add_get("/missing", missing)
    app.router.add_get("/slow", slow)
    return app


def test_a_json_document_is_read_and_anything_else_is_none():
    with serve_app_in_thread(_app()) as url:
        assert get_json(url, "/doc") == {"requests": [], "total": 3, "accept": "application/json", "key": None}
        assert get_json(url, "/text") is None
        assert get_json(url, "/missing") is None
        assert get_json(url, "/slow", deadlines=Deadlines(connect=1, first_content=0.5, total=0.5)) is None
    assert get_json("http://127.0.0.1:9", "/doc") is None  # nothing listening
