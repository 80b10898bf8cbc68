"""The engine is named only from what the engine says: a router's /v1/models `owned_by` (LiteLLM
says "openai") is the router's word; with the engine's URL known, the engine itself is asked."""

from __future__ import annotations

from aiohttp import web

from conformance.suite.config import SuiteConfig
from conformance.suite.session import SuiteSession
from tests.loopback import serve_app_in_thread


def _router_app() -> web.Application:
    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "openai"}]},
                                 headers={"x-litellm-version": "1.0.0"})

    app = web.Application()
    app.router.add_get("/v1/models", models)
    return app


def test_a_routers_owned_by_is_not_the_engine(engine_url):
    with serve_app_in_thread(_router_app()) as url:
        alone = SuiteSession(SuiteConfig.resolve({"target": url})).detect_versions()
        behind = SuiteSession(SuiteConfig.resolve({"target": url, "engine_url": engine_url})).detect_versions()
    assert alone.get("router") == "1.0.0" and "engine" not in alone, alone
    # the reference engine lists its models as owned_by "conformance": its own word
    assert behind.get("engine") == "conformance (owned_by in the engine's /v1/models)", behind
