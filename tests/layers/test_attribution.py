"""Attribution: the decision table; a test's exchanges folded into one layer, returned as data;
and the error-envelope test, whose deliberately invalid request is judged on both sides by the
error-answer rule, so an engine that refuses it correctly (400) is a pass, not "the engine refuses
the request too" (which once blamed the engine for a router's 500).

Real reference engines on loopback; the router's answers are what real routers sent
(fixtures/peers: LiteLLM's 500 `api_error`, a router accepting the request with 200).
"""

from __future__ import annotations

import json

import httpx
import pytest

from conformance.checks.error_answer import check_error_answer
from conformance.checks.exchange import check_exchange
from conformance.core.registry import violation
from conformance.engine.launch import serve_engine_in_thread
from conformance.layers.attribution import (
    JudgedExchange,
    attribute,
    attribute_exchanges,
    decide,
    symptom,
    violation_symptom,
)
from conformance.net.transport import RawExchange
from conformance.wire import ANTHROPIC

INVALID = {"model": "reference-model", "max_tokens": 20, "messages": "this is not a list of messages", "stream": False}


def _answer(status: int, body: dict) -> RawExchange:
    return RawExchange("POST", "http://router/v1/messages", {}, b"", status=status,
                       chunks=[(0.0, json.dumps(body).encode())])


ROUTER_CRASH = _answer(500, {"type": "error", "error": {"type": "api_error", "message": "'str' object has no attribute 'get'"}})
ROUTER_ACCEPTS = _answer(200, {"id": "msg_1", "type": "message", "role": "assistant", "content": []})


def _judge(raw, body, api):
    return check_error_answer(raw, api)


@pytest.fixture(scope="module")
def good_engine():
    with serve_engine_in_thread() as url:
        yield url


@pytest.fixture(scope="module")
def envelope_engine():
    with serve_engine_in_thread(faults=["error-envelope-wrong"]) as url:
        yield url


def test_correct_refusal_passes_the_error_judge(good_engine):
    resp = httpx.post(good_engine + "/v1/messages", json=INVALID, timeout=10)
    raw = _answer(resp.status_code, resp.json())
    assert resp.status_code == 400
    assert check_error_answer(raw, ANTHROPIC) == []


def test_router_crash_in_front_of_a_correct_engine_is_the_router(good_engine):
    wrong = check_error_answer(ROUTER_CRASH, ANTHROPIC)
    assert [v.check_id for v in wrong] == ["suite.error.envelope"]
    att = attribute(INVALID, wrong, good_engine, wire=ANTHROPIC, judge=_judge)
    assert att.layer == "router", att.explanation
    assert att.engine_status == 400


def test_router_crash_in_front_of_a_wrong_envelope_engine_is_both(envelope_engine):
    wrong = check_error_answer(ROUTER_CRASH, ANTHROPIC)
    att = attribute(INVALID, wrong, envelope_engine, wire=ANTHROPIC, judge=_judge)
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


def _v(check_id):
    return violation(check_id, "x")


def test_decide_layers():
    assert decide([_v("identity.model_matches")], [], engine_answered=True)[0] == "router"
    assert decide([_v("anthropic.stream.tool_use_stop_reason")], [_v("openai.stream.finish_reason_tool_calls")],
                  engine_answered=True)[0] == "engine"
    assert decide([_v("tools.call_structured"), _v("identity.model_matches")], [_v("tools.call_structured")],
                  engine_answered=True)[0] == "both"
    assert decide([_v("tools.call_structured")], [], engine_answered=False)[0] == "unknown"
    # a translating router re-encodes the engine's broken arguments: not a second bug
    assert decide([_v("anthropic.stream.event_schema"), _v("tools.arguments_schema")],
                  [_v("openai.stream.tool_arguments_string")], engine_answered=True, cross_dialect=True)[0] == "engine"
    assert symptom("anthropic.stream.stop_sequence_present") == "stream.stop_sequence_present"


# ----------------------------------------------------------------------------- a whole test, as data
GOOD = {"model": "reference-model", "max_tokens": 20, "stream": False,
        "messages": [{"role": "user", "content": "Say hi."}]}
WRONG_MODEL = _answer(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": "another-model",
                            "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                            "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}})


def test_a_tests_exchanges_are_folded_into_one_layer_and_nothing_is_written(engine_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # The router forwarded GOOD (and relabelled the answer's model): the engine's log carries it.
    assert httpx.post(engine_url + "/v1/messages", json=GOOD, timeout=30).status_code == 200
    verdict = check_exchange(WRONG_MODEL, GOOD, wire=ANTHROPIC, expect_model="reference-model")
    assert verdict.failed_checks == ["identity.model_matches"]
    passed = JudgedExchange(GOOD, ANTHROPIC, "/v1/messages", (), "reference-model")
    failed = JudgedExchange(GOOD, ANTHROPIC, "/v1/messages", tuple(verdict.violations), "reference-model")
    crashed = JudgedExchange(INVALID, ANTHROPIC, "/v1/messages", tuple(check_error_answer(ROUTER_CRASH, ANTHROPIC)),
                             refusal=True)
    attributed = attribute_exchanges([crashed, passed, failed], list(verdict.errors), engine_url)
    assert [a.layer for a in attributed.exchanges] == ["router", "router"]  # the passing exchange is not replayed
    assert attributed.layer == "router" and attributed.line().startswith("router — introduced by the router")
    assert attributed.exchanges[0].engine_status == 400  # judged by the error-answer rule: a correct refusal
    assert [d["layer"] for d in attributed.details()] == ["router", "router"]
    doc = attributed.exchanges[1].document()
    assert doc["target_violations"][0]["check_id"] == "identity.model_matches" and doc["engine_request"]
    assert not list(tmp_path.iterdir())  # attribution returns data; the caller writes the evidence


def test_a_failure_of_no_single_exchange_is_attributed_on_the_last_one(good_engine):
    loop_failed = [violation("loop.completed", "the loop never completed")]
    ok = JudgedExchange(GOOD, ANTHROPIC, "/v1/messages", (), "reference-model")
    attributed = attribute_exchanges([ok, ok], loop_failed, good_engine)
    assert len(attributed.exchanges) == 1 and attributed.exchanges[0].target_violations == loop_failed
    assert attribute_exchanges([], loop_failed, good_engine) is None
