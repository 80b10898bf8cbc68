"""The loop through a router and an engine: Claude Code's Anthropic wire, translated by the
reference router to OpenAI chat for the reference engine, and back."""

from __future__ import annotations

import pytest

from conformance.engine.launch import serve_engine_in_thread
from conformance.loop.driver import LoopDriver, scenario_runs_on
from conformance.loop.scenarios import get_scenario, load_scenarios
from conformance.router.launch import serve_router_in_thread
from conformance.wire import ANTHROPIC

pytestmark = pytest.mark.loop


@pytest.fixture(scope="module")
def engine_url():
    with serve_engine_in_thread() as url:
        yield url


def test_every_scenario_completes_through_the_router(engine_url, tmp_path):
    with serve_router_in_thread(engine_url) as router:
        for scenario in [s for s in load_scenarios() if scenario_runs_on(s, ANTHROPIC)]:
            LoopDriver(router, ANTHROPIC, workdir=tmp_path).run(scenario).raise_for_failure()


@pytest.mark.parametrize("fault,turn,check", [
    ("lossy-translation", 2, "suite.request.accepted"),  # rewritten tool ids: results no longer pair
    ("strict-unknown-field", 1, "suite.request.accepted"),  # context_management refused
    ("stop-sequence-missing", 1, "anthropic.stream.stop_sequence_present"),
])
def test_router_faults_break_the_loop_at_their_turn(engine_url, tmp_path, fault, turn, check):
    with serve_router_in_thread(engine_url, (fault,)) as router:
        report = LoopDriver(router, ANTHROPIC, workdir=tmp_path).run(get_scenario("sum-numbers"))
    assert not report.passed
    assert report.failed_turn == turn and check in report.check_ids, (report.failed_turn, report.check_ids)
