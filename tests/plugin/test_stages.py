"""check_exchange is an ordered list of stages: the order, what ends judging, and one outcome shape."""

from __future__ import annotations

import json

import pytest

from conformance.checks.exchange import STAGES, ExchangeState, check_exchange, judge_stages
from conformance.core.verdict import Verdict
from conformance.net.transport import RawExchange

ORDER = ["transport", "status", "endpoint", "grammar", "cap", "structured", "choice", "arguments", "model_identity"]
TOOLS = [{"name": "Write", "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["file_path", "content"]}}]
CALL = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
        "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 5},
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {"file_path": "a"}}]}


def raw(status=200, body=b"", *, path="/v1/messages", error_kind=None, error=None):
    return RawExchange("POST", f"http://127.0.0.1:1{path}", {}, b"{}", status=status,
                       response_headers={"content-type": "application/json"}, chunks=[(0.01, body)] if body else [],
                       error_kind=error_kind, error=error)


def test_the_stages_run_in_the_module_rules_order():
    assert [stage.__name__ for stage in STAGES] == ORDER
    state, _ = judge_stages(raw(200, json.dumps(CALL).encode()), {"model": "m", "tools": TOOLS,
                                                                 "tool_choice": {"type": "any"}}, wire="anthropic")
    assert state.ran == ORDER and state.ended_by is None


@pytest.mark.parametrize("kind", ["deadline_total", "deadline_first_content", "connect"])
def test_no_answer_or_a_deadline_ends_judging_after_transport(kind):
    state, outcomes = judge_stages(raw(200, json.dumps(CALL).encode(), error_kind=kind, error="late"),
                                   {"tools": TOOLS}, wire="anthropic")
    assert state.ran == ["transport"] and state.ended_by == "transport"
    assert [o.outcome for o in outcomes] == ["failed"] and state.message is None


def test_a_4xx_ends_judging_at_status():
    state, outcomes = judge_stages(raw(400, b'{"error": {"message": "bad tools"}}'), {"tools": TOOLS},
                                   wire="anthropic")
    assert state.ran == ["transport", "status"] and state.ended_by == "status"
    assert [(o.check_id, o.outcome) for o in outcomes] == [("suite.request.accepted", "failed")]
    assert state.error_text == "bad tools"


def test_count_tokens_and_other_paths_end_judging_at_endpoint():
    state, outcomes = judge_stages(raw(200, b'{"input_tokens": 7}', path="/v1/messages/count_tokens"), {},
                                   wire="anthropic")
    assert state.ended_by == "endpoint"
    assert [(o.check_id, o.outcome) for o in outcomes] == [("suite.request.accepted", "passed"),
                                                           ("suite.count_tokens.available", "passed")]
    state, outcomes = judge_stages(raw(200, b"{}", path="/v1/models"), {}, wire="openai")
    assert state.ended_by == "endpoint" and outcomes[-1].outcome is None and outcomes[-1].note
    assert "suite.stream.wellformed" not in check_exchange(raw(200, b"{}", path="/v1/models"), {}, wire="openai").outcomes


@pytest.mark.parametrize("request_", [
    {"model": "m", "tools": TOOLS, "tool_choice": {"type": "none"}, "max_tokens": 5},
    {"model": "other", "tools": TOOLS},
    {},
])
def test_every_stage_returns_check_outcomes(request_):
    state = ExchangeState.start(raw(200, json.dumps(CALL).encode()), request_, api="anthropic")
    for stage in STAGES:
        got = stage(state)
        assert isinstance(got, list) and all(isinstance(o, Verdict) for o in got), stage.__name__
        assert state.ended_by is None, stage.__name__


def test_the_verdict_is_the_stage_outcomes_folded_in_order():
    request_ = {"model": "m", "tools": TOOLS, "tool_choice": {"type": "none"}}
    exchange = raw(200, json.dumps(CALL).encode())
    _, outcomes = judge_stages(exchange, request_, wire="anthropic")
    verdict = check_exchange(exchange, request_, wire="anthropic")
    assert verdict.violations == [v for o in outcomes for v in o.violations]
    assert verdict.outcomes == {o.check_id: o.outcome for o in outcomes if o.outcome is not None}
    assert verdict.outcomes["tools.choice_honoured"] == "failed"
    assert verdict.outcomes["tools.arguments_schema"] == "failed"


def test_an_outcome_outside_the_results_vocabulary_is_refused():
    with pytest.raises(ValueError):
        Verdict("x.y", "fine")
