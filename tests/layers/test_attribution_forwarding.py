"""Attribution by correlation, never by recency: a router that fails before forwarding gets no
engine blame, even when the engine's received log holds other (unrelated) requests; a router that
forwards is matched to what it forwarded by the body's hash or the client's own text.

Real parts on loopback: the reference engine, and in front of it a small aiohttp "router" that
either answers 500 to everything without contacting the engine (LiteLLM's crash on a malformed
request, fixtures/peers) or forwards the body verbatim and relabels the answer's model.
"""

from __future__ import annotations

import json

import aiohttp
import pytest
from aiohttp import web

from conformance.checks.error_answer import check_error_answer
from conformance.checks.exchange import check_exchange
from conformance.core.paths import captured_dir
from conformance.engine.launch import serve_engine_in_thread
from conformance.layers.attribution import NOT_FORWARDED, JudgedExchange, attribute_exchanges
from conformance.layers.hop import body_sha256, log_total, reached_engine, received_log, replay
from conformance.net.client import serialize
from conformance.wire import ANTHROPIC, RESPONSES
from tests.loopback import serve_app_in_thread

INVALID = {"model": "reference-model", "max_tokens": 20, "messages": "this is not a list of messages", "stream": False}
GOOD = {"model": "reference-model", "max_tokens": 20, "stream": False,
        "messages": [{"role": "user", "content": "Name one prime number. [forwarding-test]"}]}
CODEX = json.loads((captured_dir() / "codex" / "0.171.0" / "plain.json").read_text(encoding="utf-8"))
UNRELATED = next(ex["request"]["body"] for ex in CODEX["exchanges"] if ex["request"]["path"] == "/v1/responses")


def _crashing_router() -> web.Application:
    async def crash(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"type": "error", "error": {"type": "api_error", "message": "No connected db."}},
                                 status=500)

    app = web.Application()
    app.router.add_route("POST", "/{tail:.*}", crash)
    return app


def _relabelling_router(engine_url: str) -> web.Application:
    async def forward(request: web.Request) -> web.Response:
        data = await request.read()
        async with aiohttp.ClientSession() as session, session.post(
                engine_url + request.path, data=data, headers={"content-type": "application/json"}) as resp:
            answer = await resp.json()
        answer["model"] = "another-model"
        return web.json_response(answer, status=resp.status)

    app = web.Application()
    app.router.add_route("POST", "/{tail:.*}", forward)
    return app


@pytest.fixture
def engine_with_history():
    """An engine whose log already holds requests of other tests (a Codex turn, another prompt)."""
    with serve_engine_in_thread() as url:
        assert replay(url, "/v1/responses", UNRELATED, wire=RESPONSES).status == 200
        other = dict(GOOD, messages=[{"role": "user", "content": "Say hi."}])
        assert replay(url, "/v1/messages", other, wire=ANTHROPIC).status == 200
        yield url


def _judged(router: str, body: dict, *, refusal: bool, since: int | None, expect: str | None = None) -> JudgedExchange:
    raw = replay(router, "/v1/messages", body, wire=ANTHROPIC)
    violations = check_error_answer(raw, ANTHROPIC) if refusal else check_exchange(
        raw, body, wire=ANTHROPIC, expect_model=expect).violations
    assert any(v.is_error for v in violations)
    return JudgedExchange(body, ANTHROPIC, "/v1/messages", tuple(violations), expect, refusal=refusal,
                          sent_sha256=body_sha256(raw.request_body), since=since)


@pytest.mark.parametrize("body, refusal", [(INVALID, True), (GOOD, False)], ids=["invalid-request", "plain-request"])
@pytest.mark.parametrize("windowed", [True, False], ids=["since-test-start", "whole-log"])
def test_a_router_that_fails_before_forwarding_gets_no_engine_blame(engine_with_history, body, refusal, windowed):
    engine = engine_with_history
    with serve_app_in_thread(_crashing_router()) as router:
        since = log_total(engine)
        ex = _judged(router, body, refusal=refusal, since=since if windowed else None, expect="reference-model")
        if refusal and not windowed:  # no text of its own and no window: absence cannot be told, so it
            verdict = attribute_exchanges([ex], list(ex.violations), engine)  # is replayed as the client sent it
            att = verdict.exchanges[0]
            assert att.reached_engine is None and att.engine_request == INVALID  # never the unrelated Codex turn
            assert verdict.layer == "router", verdict.line()  # the engine refuses it correctly
            return
        verdict = attribute_exchanges([ex], list(ex.violations), engine)
    att = verdict.exchanges[0]
    assert verdict.layer == "router" and verdict.line().startswith(f"router — {NOT_FORWARDED}"), verdict.line()
    assert att.reached_engine is False and att.replayed == "" and att.engine_request is None
    assert att.engine_status is None and not att.engine_violations
    assert set(att.extra()) == {"layer"}  # no "engine replay" / "engine verdict" lines
    assert "directly against the engine" not in att.evidence() and "not replayed" in att.evidence()
    assert log_total(engine) == since  # nothing was replayed on the engine either


def test_a_forwarding_router_is_matched_by_the_hash_of_what_it_forwarded(engine_with_history):
    engine = engine_with_history
    with serve_app_in_thread(_relabelling_router(engine)) as router:
        since = log_total(engine)
        ex = _judged(router, GOOD, refusal=False, since=since, expect="reference-model")
        log = received_log(engine)
        reached, entry = reached_engine(log, GOOD, since, wire=ANTHROPIC, sent_sha256=ex.sent_sha256)
        assert reached is True and entry["sha256"] == ex.sent_sha256 and entry["body"] == GOOD
        # the hash alone finds it, even for a request with no text to look for
        assert reached_engine(log, INVALID, since, wire=ANTHROPIC, sent_sha256=ex.sent_sha256)[1] is entry
        assert entry["sha256"] == body_sha256(serialize(GOOD))
        verdict = attribute_exchanges([ex], list(ex.violations), engine)
    att = verdict.exchanges[0]
    assert att.reached_engine is True and att.replayed == "forwarded" and att.engine_request == GOOD
    assert verdict.layer == "router" and "the engine passes the same request directly" in verdict.line()


def test_a_request_with_no_text_never_matches_an_unrelated_logged_one(engine_with_history):
    log = received_log(engine_with_history)
    assert len(log["requests"]) == 2
    reached, entry = reached_engine(log, INVALID, None, wire=ANTHROPIC, sent_sha256=body_sha256(serialize(INVALID)))
    assert entry is None and reached is None  # unknown, never the Codex turn or the other prompt


def _token_counting_router(engine_url: str, *, forward: bool) -> web.Application:
    """count_tokens the way LiteLLM with a chat upstream handles it: sent on to the upstream's
    /v1/responses/input_tokens (`forward`), or answered 404 by the router itself."""

    async def count(request: web.Request) -> web.Response:
        data = await request.read()
        if not forward:
            return web.json_response({"error": {"message": "Not Found"}}, status=404)
        async with aiohttp.ClientSession() as session, session.post(
                engine_url + "/v1/responses/input_tokens", data=data, headers={"content-type": "application/json"}) as up:
            return web.Response(body=await up.read(), status=up.status, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/messages/count_tokens", count)
    return app


COUNT = {"model": "reference-model", "messages": [{"role": "user", "content": "How many tokens is this? [count-test]"}]}


@pytest.mark.parametrize("forward", [True, False], ids=["forwarded-to-an-unserved-path", "answered-by-the-router"])
def test_count_tokens_is_attributed_where_the_404_came_from(engine_with_history, forward):
    engine = engine_with_history
    with serve_app_in_thread(_token_counting_router(engine, forward=forward)) as router:
        since = log_total(engine)
        raw = replay(router, "/v1/messages/count_tokens", COUNT, wire=ANTHROPIC)
        verdict = check_exchange(raw, COUNT, wire=ANTHROPIC)
        assert verdict.failed_checks == ["suite.count_tokens.available"], verdict.failed_checks
        ex = JudgedExchange(COUNT, ANTHROPIC, "/v1/messages/count_tokens", tuple(verdict.violations),
                            sent_sha256=body_sha256(raw.request_body), since=since)
        attributed = attribute_exchanges([ex], list(verdict.errors), engine)
    att = attributed.exchanges[0]
    if forward:  # the engine has /v1/messages/count_tokens, but not the path the router uses
        assert att.replayed == "forwarded" and att.engine_path == "/v1/responses/input_tokens"
        assert attributed.layer == "engine" and att.engine_status == 404, attributed.line()
        assert "does not serve" in attributed.line()
    else:
        assert attributed.layer == "router" and attributed.line().startswith(f"router — {NOT_FORWARDED}")
        assert att.engine_status is None and att.replayed == ""
