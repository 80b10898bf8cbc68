"""The suite's attribution through a router that crashes before forwarding (what LiteLLM did on
the deliberately invalid request): the error-envelope failure says "the router answered without
forwarding" and prints no engine verdict, although the engine's received log holds an unrelated
Codex request from earlier. Real parts on loopback: the reference engine, a small aiohttp router."""

from __future__ import annotations

import json

from aiohttp import web

from conformance.core.paths import captured_dir
from conformance.engine.launch import serve_engine_in_thread
from conformance.layers.hop import replay
from conformance.plugin import SUITE_DIR
from conformance.wire import RESPONSES
from tests.loopback import serve_app_in_thread

SMALL = SUITE_DIR.parents[1] / "tests" / "suite" / "small"
CODEX = json.loads((captured_dir() / "codex" / "0.171.0" / "plain.json").read_text(encoding="utf-8"))
UNRELATED = next(ex["request"]["body"] for ex in CODEX["exchanges"] if ex["request"]["path"] == "/v1/responses")


def _crashing_router() -> web.Application:
    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "reference-model", "object": "model"}]})

    async def crash(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"error": {"message": "'str' object has no attribute 'get'", "type": "None"}},
                                 status=500)

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_route("POST", "/{tail:.*}", crash)
    return app


def test_a_router_crash_before_forwarding_blames_no_engine(pytester, suite):
    with serve_engine_in_thread() as engine, serve_app_in_thread(_crashing_router()) as router:
        assert replay(engine, "/v1/responses", UNRELATED, wire=RESPONSES).status == 200  # another test's request
        run = suite(pytester, router, str(SUITE_DIR / "test_protocol.py"), "-k", "test_error_envelope",
                    f"--conformance-engine-url={engine}", "--conformance-client=claude-code", captures=SMALL)
    assert run.outcome.ret == 1
    failure = next(p for p in (run.report_dir / "failures").rglob("failure.txt")
                   if "test_error_envelope" in str(p)).read_text(encoding="utf-8")
    assert "error.envelope" in failure
    layer = next(line for line in failure.splitlines() if line.startswith("layer:"))
    assert layer.startswith("layer: router — the router answered without forwarding"), layer
    assert "engine replay" not in failure and "engine verdict" not in failure and "engine fails" not in failure
    records = [r for r in run.results if r.check_id == "suite.error.envelope" and r.outcome == "failed"]
    assert records and all(r.layer == "router" for r in records)
    assert records[0].details["attribution"][0]["reached_engine"] is False
