"""Reasoning and output-cap probes against the reference engine: a max_tokens stop is reported as
truncation by the output cap, never as a wrong answer; each fault fails its own check."""

from __future__ import annotations

from conformance.probes.common import run_sync
from conformance.probes.reasoning import ThinkingCase, default_cases, reasoning_probe

CASES = default_cases("anthropic", max_tokens=2048, budget_tokens=1024)


def _by_id(outs):
    return {o.check_id: o for o in outs}


def test_cases_are_what_the_clients_send():
    names = [c.name for c in CASES]
    assert names == ["adaptive+effort=low", "adaptive+effort=medium", "adaptive+effort=high",
                     "adaptive+effort=xhigh", "adaptive+effort=max", "enabled+budget=1024", "no-thinking"]
    assert CASES[0].fields == {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}
    assert [c.name for c in default_cases("openai")] == ["reasoning_effort=low", "reasoning_effort=medium",
                                                          "reasoning_effort=high", "no-thinking"]


def test_conformant_engine_answers_before_the_cap_in_every_case(engine, make_target):
    out = _by_id(run_sync(reasoning_probe(make_target(engine()), CASES)))
    assert out["reasoning.answer_before_cap"].outcome == "passed", out["reasoning.answer_before_cap"].message
    assert out["reasoning.output_cap"].outcome == "passed"
    assert out["reasoning.answer_correct"].outcome == "passed"
    rows = out["reasoning.output_cap"].details["cases"]
    assert all(r["stop"] == "end_turn" and r["correct"] for r in rows)
    assert all(r["thinking_chars"] > 0 for r in rows if r["case"] != "no-thinking")


def test_output_cap_is_reported_as_truncation_not_as_a_wrong_answer(engine, make_target):
    out = _by_id(run_sync(reasoning_probe(make_target(engine("output-cap")), CASES)))
    cap = out["reasoning.output_cap"]
    assert cap.outcome == "failed"
    assert "truncated by the output cap (24 tokens)" in cap.message
    assert "below the max_tokens 2048" in cap.message
    assert out["reasoning.answer_before_cap"].outcome == "passed"
    assert out["reasoning.answer_correct"].outcome == "passed", "a cut answer is never judged wrong"


def test_unbounded_reasoning_fails_answer_before_cap(engine, make_target):
    out = _by_id(run_sync(reasoning_probe(make_target(engine("unbounded-reasoning")), CASES[:1] + CASES[-2:])))
    before = out["reasoning.answer_before_cap"]
    assert before.outcome == "failed"
    assert "truncated by the output cap (2048 tokens): reasoning used the whole budget" in before.message
    assert out["reasoning.output_cap"].outcome == "passed"


def test_hang_is_no_answer_on_the_deadline(spawned, make_target):
    ep = spawned("hang")
    t = make_target(ep.url, process=ep, first_content=1.0, total=1.5)
    case = ThinkingCase("adaptive+effort=high", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}, 2048)
    out = _by_id(run_sync(reasoning_probe(t, [case])))
    before = out["reasoning.answer_before_cap"]
    assert before.outcome == "failed" and "no answer" in before.message
    assert any(v.check_id.startswith("suite.deadline.") for v in before.violations)


def test_openai_wire_reasoning_effort_and_output_cap(engine, make_target):
    cases = default_cases("openai", max_tokens=2048)
    ok = _by_id(run_sync(reasoning_probe(make_target(engine(), api="openai"), cases)))
    assert ok["reasoning.answer_before_cap"].outcome == "passed" and ok["reasoning.output_cap"].outcome == "passed"
    capped = _by_id(run_sync(reasoning_probe(make_target(engine("output-cap"), api="openai"), cases[:1])))
    assert "truncated by the output cap (24 tokens)" in capped["reasoning.output_cap"].message
