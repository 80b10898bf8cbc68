"""The loop against the reference engine: every scenario completes in both dialects; each engine
fault breaks it at the turn it happens, naming the cause; a broken driver fails too."""

from __future__ import annotations

import copy
import socket

import pytest

from conformance.loop.driver import LoopDriver, scenario_runs_on
from conformance.loop.scenarios import get_scenario, load_scenarios
from conformance.loop.templates import find_template
from conformance.loop.voices import ToolOutcome
from conformance.report.text import ConformanceFailure
from conformance.wire import ANTHROPIC, CHAT

from .conftest import engine

WIRES = (ANTHROPIC, CHAT)
SCENARIOS = load_scenarios()

pytestmark = pytest.mark.loop


@pytest.mark.parametrize("wire,scenario", [(w, s) for s in SCENARIOS for w in WIRES if scenario_runs_on(s, w)],
                         ids=lambda x: x.id if hasattr(x, "id") else x.name)
def test_every_scenario_completes_against_the_conformant_engine(conformant_engine, scenario, wire, tmp_path):
    report = LoopDriver(conformant_engine, wire, model="reference-model", workdir=tmp_path).run(scenario)
    report.raise_for_failure()
    assert report.ended == "final"
    assert 2 <= len(report.turns) <= scenario.max_turns
    assert report.turns[-1].stop_reason == wire.stops.natural
    assert all(not o.is_error for t in report.turns for o in t.outcomes)
    results = report.results("test", model="reference-model")
    assert [r.outcome for r in results if r.check_id == "loop.completed"] == ["passed"]
    assert not [r for r in results if r.outcome == "failed"]


def test_the_parallel_scenario_really_runs_two_calls_in_one_turn(conformant_engine, tmp_path):
    for wire in WIRES:
        report = LoopDriver(conformant_engine, wire, workdir=tmp_path).run(get_scenario("parallel-reads"))
        assert len(report.turns[0].calls) == 2
        sent = report.turns[1].request["messages"]
        if wire is ANTHROPIC:
            assert [b["type"] for b in sent[-1]["content"]] == ["tool_result", "tool_result"]
        else:
            assert [m["role"] for m in sent[-2:]] == ["tool", "tool"]


def test_claude_code_turns_keep_thinking_signature_and_move_cache_control(conformant_engine, tmp_path):
    report = LoopDriver(conformant_engine, ANTHROPIC, workdir=tmp_path).run(get_scenario("sum-numbers"))
    report.raise_for_failure()
    first = report.turns[0].verdict.message
    thinking = [b for b in first["content"] if b["type"] == "thinking"]
    assert thinking and thinking[0]["signature"]
    turn2 = report.turns[1].request["messages"]
    assert [m["role"] for m in turn2] == ["user", "system", "assistant", "user"]
    assert turn2[2]["content"] == first["content"]
    marked = [(i, j) for i, m in enumerate(turn2) if isinstance(m["content"], list)
              for j, b in enumerate(m["content"]) if "cache_control" in b]
    assert marked == [(3, len(turn2[3]["content"]) - 1)]


FAULTS = {
    # fault -> (check ids that may name it, per api)
    "tool-call-as-text": {"anthropic": {"tools.call_structured"}, "openai": {"tools.call_structured"}},
    "tool-args-invalid-json": {"anthropic": {"anthropic.stream.tool_input_json", "tools.arguments_schema"},
                               "openai": {"openai.stream.tool_arguments_json", "tools.arguments_schema"}},
    "tool-stop-reason-wrong": {"anthropic": {"anthropic.stream.tool_use_stop_reason"},
                               "openai": {"openai.stream.finish_reason_tool_calls"}},
    "wrong-model": {"anthropic": {"identity.model_matches"}, "openai": {"identity.model_matches"}},
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_engine_faults_break_the_loop_naming_turn_and_cause(fault, tmp_path):
    scenario = get_scenario("sum-numbers")
    with engine(fault) as url:
        for wire in WIRES:
            report = LoopDriver(url, wire, model="reference-model", workdir=tmp_path).run(scenario)
            assert not report.passed, f"{fault} went unnoticed on {wire.name}"
            assert report.failed_turn == 1
            assert set(report.check_ids) & FAULTS[fault][wire.name], (wire.name, report.check_ids)
            with pytest.raises(ConformanceFailure) as info:
                report.raise_for_failure()
            text = str(info.value)
            assert "broke at turn 1" in text and "turn 1" in text
            assert "likely cause" in text


def test_an_ignored_forced_tool_choice_breaks_the_forcing_loop_at_turn_1(tmp_path):
    """write-static forces the call on turn 1: an engine that answers it in text fails there, named
    as the ignored tool_choice (not as an unfinished task); a loop that forces nothing still completes."""
    with engine("tool-choice-ignored") as url:
        for wire in WIRES:
            report = LoopDriver(url, wire, model="reference-model", workdir=tmp_path).run(get_scenario("write-static"))
            assert report.check_ids == ["tools.choice_honoured"] and report.failed_turn == 1, (wire.name, report.check_ids)
            assert report.turns[0].stop_reason == wire.stops.natural
            assert not report.turns[0].calls
            assert "broke at turn 1 (tools.choice_honoured)" in report.title()
            LoopDriver(url, wire, model="reference-model", workdir=tmp_path).run(
                get_scenario("sum-numbers")).raise_for_failure()


# ---------------------------------------------------------------------------- broken drivers
class DropsToolResultId(LoopDriver):
    def result_messages(self, calls, outcomes):
        msgs = copy.deepcopy(super().result_messages(calls, outcomes))
        for m in msgs:
            m.pop("tool_call_id", None)
            for b in m["content"] if isinstance(m["content"], list) else []:
                b.pop("tool_use_id", None)
        return msgs


class DropsThinkingSignature(LoopDriver):
    def echo_assistant(self, message):
        out = super().echo_assistant(message)
        for b in out["content"]:
            if b.get("type") == "thinking":
                b.pop("signature", None)
        return out


class SkipsReading(LoopDriver):
    def run_call(self, sandbox, call):
        if call.name.lower() == "read":
            return ToolOutcome("1\t100\n2\t200\n")  # a canned answer instead of the file
        return super().run_call(sandbox, call)


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
def test_a_driver_that_drops_the_tool_result_id_fails(conformant_engine, wire, tmp_path):
    report = DropsToolResultId(conformant_engine, wire, workdir=tmp_path).run(get_scenario("sum-numbers"))
    assert not report.passed
    assert report.check_ids == ["loop.tool_result_paired"] and report.failed_turn == 2


def test_a_driver_that_drops_the_thinking_signature_fails(conformant_engine, tmp_path):
    report = DropsThinkingSignature(conformant_engine, ANTHROPIC, workdir=tmp_path).run(get_scenario("sum-numbers"))
    assert not report.passed
    assert report.check_ids == ["loop.thinking_preserved"] and report.failed_turn == 2


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
@pytest.mark.parametrize("scenario_id", ["sum-numbers", "write-file"])
def test_a_driver_that_skips_reading_fails(conformant_engine, wire, scenario_id, tmp_path):
    report = SkipsReading(conformant_engine, wire, workdir=tmp_path).run(get_scenario(scenario_id))
    assert not report.passed
    assert report.check_ids == ["loop.completion_check"]
    assert report.failed_turn == len(report.turns)


# ---------------------------------------------------------------------------- how loops end
def test_turn_limit_is_a_failure(conformant_engine, tmp_path):
    report = LoopDriver(conformant_engine, CHAT, workdir=tmp_path).run(get_scenario("sum-numbers"), max_turns=1)
    assert report.ended == "turn_limit"
    assert "loop.turn_limit" in report.check_ids


def test_a_dead_target_fails_fast_at_turn_1(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    report = LoopDriver(f"http://127.0.0.1:{port}", ANTHROPIC, workdir=tmp_path).run(get_scenario("write-static"))
    assert not report.passed and report.failed_turn == 1
    assert report.elapsed < 10


def test_forced_tool_choice_runs_without_thinking_on_the_anthropic_wire(conformant_engine, tmp_path):
    scenario = get_scenario("write-static")
    assert scenario.tool_choice_required
    report = LoopDriver(conformant_engine, ANTHROPIC, workdir=tmp_path).run(scenario)
    report.raise_for_failure()
    first, second = report.turns[0].request, report.turns[1].request
    assert first["tool_choice"] == {"type": "any"} and "tool_choice" not in second
    assert first["thinking"] == second["thinking"] == {"type": "disabled"}
    assert "context_management" not in first
    oc = LoopDriver(conformant_engine, CHAT, workdir=tmp_path).run(scenario)
    oc.raise_for_failure()
    assert oc.turns[0].request["tool_choice"] == "required" and oc.turns[1].request["tool_choice"] == "auto"


def test_an_output_cap_ends_the_loop_with_a_stop_reason_failure(tmp_path):
    with engine("output-cap") as url:
        for wire in WIRES:
            report = LoopDriver(url, wire, workdir=tmp_path).run(get_scenario("sum-numbers"))
            assert "loop.stop_reason" in report.check_ids and report.failed_turn == 1
            assert report.turns[0].stop_reason == wire.stops.cap


def test_a_hanging_target_fails_the_turn_on_its_deadline(tmp_path):
    from conformance.net.transport import Deadlines

    with engine("hang-with-pings") as url:
        report = LoopDriver(url, ANTHROPIC, workdir=tmp_path, deadlines=Deadlines(2, 2, 4)).run(
            get_scenario("write-static"))
    assert report.failed_turn == 1 and report.check_ids[0].startswith("suite.deadline.")
    assert report.elapsed < 8


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
def test_the_bundled_fallback_templates_drive_a_loop(conformant_engine, wire, tmp_path):
    template = find_template(wire, tmp_path / "empty-corpus")
    assert "bundled fallback" in template.source
    LoopDriver(conformant_engine, wire, template=template, workdir=tmp_path).run(
        get_scenario("sum-numbers")).raise_for_failure()
