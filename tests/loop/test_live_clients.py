"""The real Claude Code, opencode and Codex CLIs against `conformance engine` (marker `live`, opt-in).

Needs the CLIs: on PATH, or CONFORMANCE_CLAUDE_BIN / CONFORMANCE_OPENCODE_BIN / CONFORMANCE_CODEX_BIN
(see docs/loop.md):
    npm install --prefix /opt/clients @anthropic-ai/claude-code@2.1.197 opencode-ai@1.18.33 @openai/codex@0.171.0
"""

from __future__ import annotations

import pytest

from conformance.clients.live import ClientNotFound, find_binary, run_live
from conformance.engine.launch import spawn_engine
from conformance.loop.scenarios import get_scenario

pytestmark = pytest.mark.live

PASS_DEADLINE = 120.0
FAULT_DEADLINE = 30.0


def _binary(client: str):
    try:
        return find_binary(client)
    except ClientNotFound as exc:
        # Live tests are opt-in (-m live): once asked for, a missing client is a failure, not a skip.
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def engine_cli():
    with spawn_engine("--port", "0") as eng:
        yield eng.url


PASS_RUNS = [(c, a, s) for c, a in (("claude-code", "anthropic"), ("opencode", "openai"))
             for s in ("write-file", "multi-step")] + [("opencode", "anthropic", "write-file")] + [
    ("codex", "responses", s) for s in ("write-file", "edit-file")]


@pytest.mark.parametrize("client,api,scenario_id", PASS_RUNS, ids=[f"{c}-{a}-{s}" for c, a, s in PASS_RUNS])
def test_real_client_completes_the_task(engine_cli, client, api, scenario_id, tmp_path):
    binary = _binary(client)
    report = run_live(client, get_scenario(scenario_id), engine_cli, binary=binary, api=api, deadline=PASS_DEADLINE,
                      workdir=tmp_path, artifacts_dir=tmp_path / "artifacts")
    report.raise_for_failure()
    assert report.exchanges >= 3  # read, write, final answer: a real multi-turn loop


# message-start-incomplete lives on the Anthropic wire: opencode speaks it with @ai-sdk/anthropic.
FAULT_RUNS = [
    ("claude-code", "tool-call-as-text", "anthropic", {"tools.call_structured"}),
    ("claude-code", "message-start-incomplete", "anthropic", {"anthropic.stream.message_start_complete"}),
    ("opencode", "tool-call-as-text", "openai", {"tools.call_structured"}),
    ("opencode", "message-start-incomplete", "anthropic", {"anthropic.stream.message_start_complete"}),
    # Codex: the patch comes back as prose (the judge names it; Codex answers and exits 0), and a
    # turn 2 whose history items the engine refuses
    ("codex", "custom-tool-dropped", "responses", {"tools.call_structured"}),
    ("codex", "multi-turn-items-rejected", "responses", {"suite.request.accepted"}),
]


@pytest.mark.parametrize("client,fault,api,expected", FAULT_RUNS, ids=[f"{c}-{f}" for c, f, _, _ in FAULT_RUNS])
def test_real_client_fails_within_its_deadline_against_a_fault(client, fault, api, expected, tmp_path):
    binary = _binary(client)
    # write-file's second turn writes: on the Responses wire that is the freeform apply_patch
    with spawn_engine("--port", "0", "--fault", fault) as eng:
        report = run_live(client, get_scenario("write-file"), eng.url, binary=binary, api=api,
                          deadline=FAULT_DEADLINE, workdir=tmp_path)
    assert not report.passed, report.title()
    assert set(report.check_ids) & expected, report.check_ids
    assert report.elapsed <= FAULT_DEADLINE + 20
