"""Attribution of the error-envelope test: a deliberately invalid request is judged on both sides
by the error-answer rule, so an engine that refuses it correctly (400) is a pass, not "the engine
refuses the request too" (which once blamed the engine for a router's 500).

Real reference engines on loopback; the router's answers are what real routers sent
(fixtures/peers: LiteLLM's 500 `api_error`, a router accepting the request with 200).
"""

from __future__ import annotations

import json

import pytest

from conformance.checks.error_answer import check_error_answer
from conformance.engine.launch import serve_engine_in_thread
from conformance.layers.attribution import attribute, decide, violation_symptom
from conformance.net.transport import RawExchange
from conformance.wire import ANTHROPIC
from conformance.wire.dialect import dialect

INVALID = {"model": "reference-model", "max_tokens": 20, "messages": "this is not a list of messages", "stream": False}


def _answer(status: int, body: dict) -> RawExchange:
    return RawExchange("POST", "http://router/v1/messages", {}, b"", status=status,
                       chunks=[(0.0, json.dumps(body).encode())])


ROUTER_CRASH = _answer(500, {"type": "error", "error": {"type": "api_error", "message": "'str' object has no attribute 'get'"}})
ROUTER_ACCEPTS = _answer(200, {"id": "msg_1", "type": "message", "role": "assistant", "content": []})


def _judge(raw, body, api):
    return check_error_answer(raw, dialect(api))


@pytest.fixture(scope="module")
def good_engine():
    with serve_engine_in_thread() as url:
        yield url


@pytest.fixture(scope="module")
def envelope_engine():
    with serve_engine_in_thread(faults=["error-envelope-wrong"]) as url:
        yield url


def test_correct_refusal_passes_the_error_judge(good_engine):
    import httpx

    resp = httpx.post(good_engine + "/v1/messages", json=INVALID, timeout=10)
    raw = _answer(resp.status_code, resp.json())
    assert resp.status_code == 400
    assert check_error_answer(raw, ANTHROPIC) == []


def test_router_crash_in_front_of_a_correct_engine_is_the_router(good_engine):
    wrong = check_error_answer(ROUTER_CRASH, ANTHROPIC)
    assert [v.check_id for v in wrong] == ["suite.error.envelope"]
    att = attribute(INVALID, wrong, good_engine, api="anthropic", judge=_judge)
    assert att.layer == "router", att.explanation
    assert att.engine_status == 400


def test_router_crash_in_front_of_a_wrong_envelope_engine_is_both(envelope_engine):
    wrong = check_error_answer(ROUTER_CRASH, ANTHROPIC)
    att = attribute(INVALID, wrong, envelope_engine, api="anthropic", judge=_judge)
    assert att.layer == "both", att.explanation
    assert any(v.check_id == "anthropic.error.envelope" for v in att.engine_violations)


def test_accepting_and_crashing_are_different_symptoms():
    accepted = check_error_answer(ROUTER_ACCEPTS, ANTHROPIC)
    crashed = check_error_answer(ROUTER_CRASH, ANTHROPIC)
    assert violation_symptom(accepted[0]) != violation_symptom(crashed[0])
    # router crashes (500) while the engine would accept (200): two failures, one per layer
    layer, _ = decide(crashed, accepted, engine_answered=True)
    assert layer == "both"
    layer, _ = decide(accepted, accepted, engine_answered=True)
    assert layer == "engine"
