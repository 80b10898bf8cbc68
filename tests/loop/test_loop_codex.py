"""The Responses-wire loop (as Codex CLI) against the reference engine: every scenario completes;
each Codex-specific engine fault breaks it at its turn with its check id; a broken driver fails."""

from __future__ import annotations

import copy

import pytest

from conformance.loop.driver import LoopDriver, scenario_runs_on
from conformance.loop.scenarios import get_scenario, load_scenarios
from conformance.loop.voices import ToolOutcome
from conformance.wire import RESPONSES

from .conftest import engine

API = RESPONSES
SCENARIOS = [s for s in load_scenarios() if scenario_runs_on(s, API)]

pytestmark = pytest.mark.loop


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_every_scenario_completes_as_codex_against_the_conformant_engine(conformant_engine, scenario, tmp_path):
    report = LoopDriver(conformant_engine, API, model="reference-model", workdir=tmp_path).run(scenario)
    report.raise_for_failure()
    assert report.ended == "final" and report.turns[-1].stop_reason == "completed"
    assert 2 <= len(report.turns) <= scenario.max_turns
    assert all(not o.is_error for t in report.turns for o in t.outcomes), report.turn_summary()
    results = report.results("test", model="reference-model")
    assert [r.outcome for r in results if r.check_id == "loop.completed"] == ["passed"]
    assert not [r for r in results if r.outcome == "failed"]


def test_the_namespace_scenario_really_calls_the_namespaced_tool(conformant_engine, tmp_path):
    report = LoopDriver(conformant_engine, API, workdir=tmp_path).run(get_scenario("namespace-read"))
    report.raise_for_failure()
    first = report.turns[0].calls[0].call
    assert (first.name, first.namespace) == ("read_file", "mcp__files")
    sent = report.turns[1].request["input"]
    call = next(i for i in sent if i.get("type") == "function_call")
    assert call["namespace"] == "mcp__files" and call["name"] == "read_file"


def test_codex_turns_carry_reasoning_and_custom_tool_items_back(conformant_engine, tmp_path):
    report = LoopDriver(conformant_engine, API, workdir=tmp_path).run(get_scenario("edit-file"))
    report.raise_for_failure()
    kinds = [c.call.kind for t in report.turns for c in t.calls]
    assert "custom" in kinds, "edit-file on the Responses wire edits with the freeform apply_patch"
    last = report.turns[-1].request
    assert last["store"] is False
    items = last["input"]
    reasoning = [i for i in items if i.get("type") == "reasoning"]
    assert reasoning and all(isinstance(i.get("encrypted_content"), str) for i in reasoning)
    outputs = {i["call_id"]: i["type"] for i in items if i.get("type", "").endswith("_call_output")}
    calls = {i["call_id"]: i["type"] for i in items if i.get("type") in ("function_call", "custom_tool_call")}
    assert outputs == {k: v + "_output" for k, v in calls.items()}


FAULTS = [
    # fault, scenario, turn, check ids that may name it
    ("tool-choice-ignored", "write-static", 1, {"tools.choice_honoured"}),
    ("custom-tool-dropped", "edit-file", None, {"tools.call_structured"}),
    ("custom-tool-as-function", "edit-file", None, {"tools.custom_tool_kept"}),
    ("multi-turn-items-rejected", "sum-numbers", 2, {"suite.request.accepted"}),
    # a resumed session hands the engine reasoning another server minted (its own it accepts)
    ("foreign-reasoning-rejected", "resume-session", 1, {"suite.request.accepted"}),
    ("terminal-event-missing", "sum-numbers", 1, {"responses.stream.terminal"}),
    ("namespace-flattened", "namespace-read", 1, {"tools.namespace_kept"}),
]


@pytest.mark.parametrize("fault,scenario_id,turn,expected", FAULTS, ids=[f[0] for f in FAULTS])
def test_codex_faults_break_the_loop_naming_turn_and_cause(fault, scenario_id, turn, expected, tmp_path):
    with engine(fault) as url:
        report = LoopDriver(url, API, model="reference-model", workdir=tmp_path).run(get_scenario(scenario_id))
    assert not report.passed, f"{fault} went unnoticed"
    assert set(report.check_ids) & expected, (report.check_ids, report.turn_summary())
    if turn is not None:
        assert report.failed_turn == turn, (report.failed_turn, report.check_ids)


def test_an_engine_that_refuses_foreign_reasoning_still_runs_a_fresh_session(tmp_path):
    """Its own encrypted_content comes back in a fresh loop and is accepted: only the resumed
    session, whose history another server minted, breaks (no false positive on the others)."""
    with engine("foreign-reasoning-rejected") as url:
        LoopDriver(url, API, workdir=tmp_path).run(get_scenario("sum-numbers")).raise_for_failure()


def test_a_resumed_session_sends_the_stored_history_before_the_prompt(conformant_engine, tmp_path):
    report = LoopDriver(conformant_engine, API, workdir=tmp_path).run(get_scenario("resume-session"))
    report.raise_for_failure()
    items = report.turns[0].request["input"]
    users = [k for k, i in enumerate(items) if i.get("role") == "user"]
    assert items[users[-1]]["content"][-1]["text"] == get_scenario("resume-session").prompt
    prior = items[users[-2]:users[-1]]
    assert [i["type"] for i in prior if i.get("type") == "reasoning" and i.get("encrypted_content")]
    assert "resumed session" in report.template


# ---------------------------------------------------------------------------- broken drivers
class DropsCallId(LoopDriver):
    def result_messages(self, calls, outcomes):
        items = copy.deepcopy(super().result_messages(calls, outcomes))
        for i in items:
            i.pop("call_id", None)
        return items


class DropsReasoning(LoopDriver):
    def echo_assistant(self, message):
        return [i for i in super().echo_assistant(message) if i["type"] != "reasoning"]


class CannedOutput(LoopDriver):
    def run_call(self, sandbox, call):
        if call.name == "exec_command":  # a canned answer instead of running the command
            return ToolOutcome("Chunk ID: 000000\nWall time: 0.0000 seconds\nProcess exited with code 0\n"
                               "Original token count: 2\nOutput:\n100\n200\n")
        return super().run_call(sandbox, call)


def test_a_driver_that_drops_the_call_id_fails(conformant_engine, tmp_path):
    report = DropsCallId(conformant_engine, API, workdir=tmp_path).run(get_scenario("sum-numbers"))
    assert report.check_ids == ["loop.tool_result_paired"] and report.failed_turn == 2


def test_a_driver_that_drops_the_reasoning_item_fails(conformant_engine, tmp_path):
    report = DropsReasoning(conformant_engine, API, workdir=tmp_path).run(get_scenario("sum-numbers"))
    assert report.check_ids == ["loop.thinking_preserved"] and report.failed_turn == 2


def test_a_driver_that_cans_the_tool_output_fails(conformant_engine, tmp_path):
    report = CannedOutput(conformant_engine, API, workdir=tmp_path).run(get_scenario("sum-numbers"))
    assert report.check_ids == ["loop.completion_check"]
