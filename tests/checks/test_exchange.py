"""check_exchange runs the registered exchange checks in order: the order, what ends judging, the
judging budget between checks, and one outcome shape; and the judge on hand-made exchanges."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from conformance.checks import exchange
from conformance.checks.exchange import check_exchange, judge_stages
from conformance.checks.exchange_state import ExchangeState
from conformance.core import registry
from conformance.core.verdict import Verdict
from conformance.net.transport import RawExchange
from conformance.wire import ANTHROPIC, CHAT

# The exchange checks by (order, registration): each registered under the id it is principally about.
ORDER = ["suite.transport.complete", "suite.request.accepted", "suite.count_tokens.available",
         "suite.stream.wellformed", "suite.stop_reason.cap_reported", "tools.call_structured",
         "tools.choice_honoured", "tools.arguments_schema", "tools.custom_tool_kept", "identity.model_matches"]
TOOLS = [{"name": "Write", "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["file_path", "content"]}}]
CALL = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
        "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 5},
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {"file_path": "a"}}]}


def raw(status=200, body=b"", *, path="/v1/messages", ctype="application/json", error_kind=None, error=None,
        deadline_total=None, elapsed=0.0):
    return RawExchange("POST", f"http://127.0.0.1:1{path}", {}, b"{}", status=status,
                       response_headers={"content-type": ctype}, chunks=[(0.01, body)] if body else [],
                       error_kind=error_kind, error=error, deadline_total=deadline_total, elapsed=elapsed)


def test_the_registered_exchange_checks_run_in_order():
    specs = registry.checks_for("exchange")
    assert [s.id for s in specs] == ORDER
    assert all(s.scope == "exchange" and s.judges == "stack" for s in specs)
    state, _ = judge_stages(raw(200, json.dumps(CALL).encode()), {"model": "m", "tools": TOOLS,
                                                                 "tool_choice": {"type": "any"}}, wire="anthropic")
    assert state.ran == ORDER and state.ended_by is None
    assert state.wire is ANTHROPIC


def test_a_newly_registered_exchange_check_runs_in_its_order(monkeypatch):
    seen = []

    def extra(state: ExchangeState) -> list[Verdict]:
        seen.append(state.message["id"])
        return [Verdict("suite.selftest.extra", "passed")]

    spec = registry.CheckSpec("suite.selftest.extra", "a check added by registering it", scope="exchange",
                              order=45, run=extra)
    monkeypatch.setitem(registry._REGISTRY, spec.id, spec)
    monkeypatch.setitem(registry._SEQUENCE, spec.id, len(registry._SEQUENCE))
    state, outcomes = judge_stages(raw(200, json.dumps(CALL).encode()), {"model": "m"}, wire="anthropic")
    assert state.ran[state.ran.index("suite.stream.wellformed") + 1] == "suite.selftest.extra"
    assert seen == ["msg_1"] and Verdict("suite.selftest.extra", "passed") in outcomes


@pytest.mark.parametrize("kind", ["deadline_total", "deadline_first_content", "connect"])
def test_no_answer_or_a_deadline_ends_judging_after_transport(kind):
    state, outcomes = judge_stages(raw(200, json.dumps(CALL).encode(), error_kind=kind, error="late"),
                                   {"tools": TOOLS}, wire="anthropic")
    assert state.ran == ["suite.transport.complete"] and state.ended_by == "suite.transport.complete"
    assert [o.outcome for o in outcomes] == ["failed"] and state.message is None


def test_a_4xx_ends_judging_at_status():
    state, outcomes = judge_stages(raw(400, b'{"error": {"message": "bad tools"}}'), {"tools": TOOLS},
                                   wire="anthropic")
    assert state.ran == ["suite.transport.complete", "suite.request.accepted"]
    assert state.ended_by == "suite.request.accepted"
    assert [(o.check_id, o.outcome) for o in outcomes] == [("suite.request.accepted", "failed")]
    assert state.error_text == "bad tools"


def test_count_tokens_and_other_paths_end_judging_at_endpoint():
    state, outcomes = judge_stages(raw(200, b'{"input_tokens": 7}', path="/v1/messages/count_tokens"), {},
                                   wire="anthropic")
    assert state.ended_by == "suite.count_tokens.available"
    assert [(o.check_id, o.outcome) for o in outcomes] == [("suite.request.accepted", "passed"),
                                                           ("suite.count_tokens.available", "passed")]
    state, outcomes = judge_stages(raw(200, b"{}", path="/v1/models"), {}, wire="openai")
    assert state.ended_by == "suite.count_tokens.available"
    assert outcomes[-1].outcome is None and outcomes[-1].note
    assert "suite.stream.wellformed" not in check_exchange(raw(200, b"{}", path="/v1/models"), {}, wire="openai").outcomes


def test_the_judging_budget_is_checked_between_checks_and_names_the_check_not_reached(monkeypatch):
    clock = iter(range(100))
    monkeypatch.setattr(exchange, "time", SimpleNamespace(monotonic=lambda: float(next(clock))))
    # 100 s of deadline, 97.5 s of transfer, no grace: 2.5 s of judging, one per clock tick
    monkeypatch.setattr("conformance.net.transport.JUDGE_GRACE", 0.0)
    exchange_ = raw(200, json.dumps(CALL).encode(), deadline_total=100.0, elapsed=97.5)
    state, outcomes = judge_stages(exchange_, {"model": "m"}, wire="anthropic")
    assert state.ran == ORDER[:2] and state.ended_by == "deadline"
    assert outcomes[-1].check_id == "suite.deadline.total" and outcomes[-1].outcome == "failed"
    assert "stopped before the check suite.count_tokens.available" in outcomes[-1].violations[0].message


@pytest.mark.parametrize("request_", [
    {"model": "m", "tools": TOOLS, "tool_choice": {"type": "none"}, "max_tokens": 5},
    {"model": "other", "tools": TOOLS},
    {},
])
def test_every_exchange_check_returns_verdicts(request_):
    state = ExchangeState.start(raw(200, json.dumps(CALL).encode()), request_, wire=ANTHROPIC)
    for spec in registry.checks_for("exchange"):
        got = spec.run(state)
        assert isinstance(got, list) and all(isinstance(o, Verdict) for o in got), spec.id
        assert state.ended_by is None, spec.id


def test_the_verdict_is_the_check_verdicts_folded_in_order():
    request_ = {"model": "m", "tools": TOOLS, "tool_choice": {"type": "none"}}
    exchange_ = raw(200, json.dumps(CALL).encode())
    _, outcomes = judge_stages(exchange_, request_, wire="anthropic")
    verdict = check_exchange(exchange_, request_, wire="anthropic")
    assert verdict.violations == [v for o in outcomes for v in o.violations]
    assert verdict.outcomes == {o.check_id: o.outcome for o in outcomes if o.outcome is not None}
    assert verdict.outcomes["tools.choice_honoured"] == "failed"
    assert verdict.outcomes["tools.arguments_schema"] == "failed"
    assert verdict.wire is ANTHROPIC


def test_an_outcome_outside_the_results_vocabulary_is_refused():
    with pytest.raises(ValueError):
        Verdict("x.y", "fine")


def test_refusal_names_the_field_and_shows_the_error_text():
    body = json.dumps({"detail": [{"loc": ["body", "context_management"], "msg": "Extra inputs are not permitted",
                                   "type": "extra_forbidden"}]}).encode()
    request = {"model": "m", "messages": [], "context_management": {"edits": []}, "stream": True}
    v = check_exchange(raw(400, body), request, wire="anthropic")
    assert v.failed_checks == ["suite.request.accepted"]
    viol = v.errors[0]
    assert viol.where.pointer == "/context_management"
    assert "Extra inputs are not permitted" in viol.seen and "HTTP 400" in viol.seen


def test_deadlines_and_connect_are_transport_verdicts_only():
    total = check_exchange(raw(200, b"event: ping\ndata: {}\n\n", ctype="text/event-stream", error_kind="deadline_total",
                               error="did not finish"), {"stream": True}, wire="anthropic")
    assert total.failed_checks == ["suite.deadline.total"]
    first = check_exchange(raw(200, error_kind="deadline_first_content", error="pings only"), {"stream": True},
                           wire="anthropic")
    assert first.failed_checks == ["suite.deadline.first_content"]
    down = check_exchange(RawExchange("POST", "http://127.0.0.1:1/v1/messages", {}, b"", error_kind="connect",
                                      error="refused"), {}, wire=CHAT)
    assert down.failed_checks == ["suite.target.reachable"]


def test_count_tokens_missing_and_present():
    missing = check_exchange(raw(404, b'{"error":"not found"}', path="/v1/messages/count_tokens"), {}, wire="anthropic")
    assert missing.failed_checks == ["suite.count_tokens.available"]
    ok = check_exchange(raw(200, b'{"input_tokens": 12}', path="/v1/messages/count_tokens"), {}, wire="anthropic")
    assert ok.ok and ok.outcomes["suite.count_tokens.available"] == "passed"


def test_a_judge_of_one_answer_runs_on_the_exchange_state():
    state = ExchangeState.start(raw(200), {"model": "m"}, wire=ANTHROPIC, turn=3)
    state.message = CALL
    seen = []

    def judge(message, request, wire, *, turn=None):
        seen.append((message, request, wire, turn))
        return None if turn is None else Verdict("tools.call_structured", "passed")

    assert state.answer_verdicts(judge) == [Verdict("tools.call_structured", "passed")]
    assert seen == [(CALL, {"model": "m"}, ANTHROPIC, 3)]
    state.turn = None
    assert state.answer_verdicts(judge) == []  # a judge that does not apply gives no verdict
