"""Reasoning and output-cap probes (conformance.probes.reasoning) against the reference engine: a
max_tokens stop is reported as truncation by the output cap, never as a wrong answer; each fault
fails its own check."""

from __future__ import annotations

import pytest

from conformance.checks.reasoning import ANSWER_BEFORE_CAP, ANSWER_CORRECT, OUTPUT_CAP
from conformance.probes.common import run_sync
from conformance.probes.reasoning import ThinkingCase, default_cases, reasoning_probe
from conformance.wire import ANTHROPIC, CHAT

CASES = default_cases(ANTHROPIC, max_tokens=2048, budget_tokens=1024)


def _by_id(outs):
    return {o.check_id: o for o in outs}


def test_cases_are_what_the_clients_send():
    names = [c.name for c in CASES]
    assert names == ["adaptive+effort=low", "adaptive+effort=medium", "adaptive+effort=high",
                     "adaptive+effort=xhigh", "adaptive+effort=max", "enabled+budget=1024", "no-thinking"]
    assert CASES[0].fields == {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}
    assert [c.name for c in default_cases(CHAT)] == ["reasoning_effort=low", "reasoning_effort=medium",
                                                      "reasoning_effort=high", "no-thinking"]


def test_a_thinking_budget_must_stay_below_max_tokens():
    with pytest.raises(ValueError, match="must be below max_tokens"):
        default_cases(ANTHROPIC, max_tokens=1024)
    assert default_cases(CHAT, max_tokens=1024)[-1].name == "no-thinking", "no fixed budget on the chat wire"


def test_conformant_engine_answers_before_the_cap_in_every_case(engine, make_target):
    out = _by_id(run_sync(reasoning_probe(make_target(engine()), CASES)))
    assert out[ANSWER_BEFORE_CAP].outcome == "passed", out[ANSWER_BEFORE_CAP].message
    assert out[OUTPUT_CAP].outcome == "passed"
    assert out[ANSWER_CORRECT].outcome == "passed"
    rows = out[OUTPUT_CAP].details["cases"]
    assert all(r["stop"] == "end_turn" and r["correct"] for r in rows)
    assert all(r["thinking_chars"] > 0 for r in rows if r["case"] != "no-thinking")


def test_output_cap_is_reported_as_truncation_not_as_a_wrong_answer(engine, make_target):
    out = _by_id(run_sync(reasoning_probe(make_target(engine("output-cap")), CASES)))
    cap = out[OUTPUT_CAP]
    assert cap.outcome == "failed"
    assert "truncated by the output cap (24 tokens)" in cap.message
    assert "below the max_tokens 2048" in cap.message
    assert out[ANSWER_BEFORE_CAP].outcome == "passed"
    assert out[ANSWER_CORRECT].outcome == "passed", "a cut answer is never judged wrong"


def test_unbounded_reasoning_fails_answer_before_cap(engine, make_target):
    out = _by_id(run_sync(reasoning_probe(make_target(engine("unbounded-reasoning")), CASES[:1] + CASES[-2:])))
    before = out[ANSWER_BEFORE_CAP]
    assert before.outcome == "failed"
    assert "truncated by the output cap (2048 tokens): reasoning used the whole budget" in before.message
    assert out[OUTPUT_CAP].outcome == "passed"


def test_hang_is_no_answer_on_the_deadline(spawned, make_target):
    ep = spawned("hang")
    t = make_target(ep.url, process=ep, first_content=1.0, total=1.5)
    case = ThinkingCase("adaptive+effort=high", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}, 2048)
    out = _by_id(run_sync(reasoning_probe(t, [case])))
    before = out[ANSWER_BEFORE_CAP]
    assert before.outcome == "failed" and "no answer" in before.message
    assert any(v.check_id.startswith("suite.deadline.") for v in before.violations)


def test_openai_wire_reasoning_effort_and_output_cap(engine, make_target):
    cases = default_cases(CHAT, max_tokens=2048)
    ok = _by_id(run_sync(reasoning_probe(make_target(engine(), wire=CHAT), cases)))
    assert ok[ANSWER_BEFORE_CAP].outcome == "passed" and ok[OUTPUT_CAP].outcome == "passed"
    capped = _by_id(run_sync(reasoning_probe(make_target(engine("output-cap"), wire=CHAT), cases[:1])))
    assert "truncated by the output cap (24 tokens)" in capped[OUTPUT_CAP].message
