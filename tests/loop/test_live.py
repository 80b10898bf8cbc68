"""The real Claude Code, opencode, Codex and Qwen Code CLIs against `conformance engine` (marker `live`, opt-in).

Needs the CLIs: on PATH, or CONFORMANCE_CLAUDE_BIN / CONFORMANCE_OPENCODE_BIN / CONFORMANCE_CODEX_BIN /
CONFORMANCE_QWEN_BIN (see docs/loop.md):
    npm install --prefix /opt/clients @anthropic-ai/claude-code@2.1.332 opencode-ai@1.18.33 @openai/codex@0.171.0 \
        @qwen-code/qwen-code@0.24.4
and, for the per-release run, each Claude Code release the corpus keeps in its own prefix named by
CONFORMANCE_CLIENTS_DIR_<version> (or CONFORMANCE_CLIENTS_DIR=D with D/claude-code@<version>):
    npm install --prefix /opt/cc197 @anthropic-ai/claude-code@2.1.197   # CONFORMANCE_CLIENTS_DIR_2_1_197=/opt/cc197
"""

from __future__ import annotations

import pytest

from conformance.clients.launch import ClientNotFound, find_binary, find_release_binary
from conformance.clients.profile import profile
from conformance.clients.profiles.claude_code import CLAUDE_CODE
from conformance.engine.launch import spawn_engine
from conformance.loop.live import run_live
from conformance.loop.scenarios import get_scenario
from conformance.wire.registry import dialect

pytestmark = pytest.mark.live

PASS_DEADLINE = 120.0
FAULT_DEADLINE = 30.0


def _binary(client: str):
    try:
        return find_binary(profile(client))
    except ClientNotFound as exc:
        # Live tests are opt-in (-m live): once asked for, a missing client is a failure, not a skip.
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def engine_cli():
    with spawn_engine("--port", "0") as eng:
        yield eng.url


PASS_RUNS = [(c, a, s) for c, a in (("claude-code", "anthropic"), ("opencode", "openai"))
             for s in ("write-file", "multi-step")] + [("opencode", "anthropic", "write-file")] + [
    ("codex", "responses", s) for s in ("write-file", "edit-file")] + [
    # Qwen Code's Anthropic mode sends thinking.budget_tokens equal to max_tokens, which the engine
    # refuses until it follows the interleaved-thinking budget rule: its chat and Responses modes here
    ("qwen-code", a, s) for a in ("openai", "responses") for s in ("write-file", "edit-file")]


@pytest.mark.parametrize("client,api,scenario_id", PASS_RUNS, ids=[f"{c}-{a}-{s}" for c, a, s in PASS_RUNS])
def test_real_client_completes_the_task(engine_cli, client, api, scenario_id, tmp_path):
    binary = _binary(client)
    report = run_live(profile(client), get_scenario(scenario_id), engine_cli, binary=binary, wire=dialect(api),
                      deadline=PASS_DEADLINE, workdir=tmp_path, artifacts_dir=tmp_path / "artifacts")
    report.raise_for_failure()
    assert report.exchanges >= 3  # read, write, final answer: a real multi-turn loop


@pytest.mark.parametrize("version", CLAUDE_CODE.releases)
def test_each_claude_code_release_runs_its_own_binary(engine_cli, version, tmp_path):
    try:
        binary = find_release_binary(CLAUDE_CODE, version)
    except ClientNotFound as exc:
        pytest.fail(str(exc), pytrace=False)
    report = run_live(CLAUDE_CODE, get_scenario("write-file"), engine_cli, binary=binary, deadline=PASS_DEADLINE,
                      workdir=tmp_path)
    report.raise_for_failure()
    assert report.version == version and report.exchanges >= 3


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
        report = run_live(profile(client), get_scenario("write-file"), eng.url, binary=binary, wire=dialect(api),
                          deadline=FAULT_DEADLINE, workdir=tmp_path)
    assert not report.passed, report.title()
    assert set(report.check_ids) & expected, report.check_ids
    assert report.elapsed <= FAULT_DEADLINE + 20


def _shape(items: list) -> list:
    """Each appended item's type and keys in order, and the framing lines of its output text."""
    out = []
    for i in items:
        text = i.get("output") if isinstance(i.get("output"), str) else ""
        framing = [line.split(":")[0] for line in text.split("\nOutput:\n")[0].splitlines()]
        out.append((i.get("type"), list(i), framing))
    return out


def test_the_driver_appends_what_codex_appends(engine_cli, tmp_path):
    """edit-file: real Codex and the driver against the same engine; the items after the prompt
    (reasoning, exec_command call and output, apply_patch call and output) have the same kinds,
    keys in the same order, and the same output framing."""
    from conformance.loop.driver import LoopDriver
    from conformance.wire import RESPONSES

    scenario = get_scenario("edit-file")
    live = run_live(profile("codex"), scenario, engine_cli, binary=_binary("codex"), deadline=PASS_DEADLINE,
                    workdir=tmp_path)
    live.raise_for_failure()
    real = live.capture.main_exchanges()[-1].request.body["input"]
    report = LoopDriver(engine_cli, RESPONSES, workdir=tmp_path).run(scenario)
    report.raise_for_failure()
    ours = report.turns[-1].request["input"]

    def appended(items):
        start = max(k for k, i in enumerate(items) if i.get("role") == "user") + 1
        return items[start:]

    kinds = [i.get("type") for i in appended(real)]
    assert kinds == ["reasoning", "function_call", "function_call_output", "reasoning", "custom_tool_call",
                     "custom_tool_call_output"], kinds
    assert _shape(appended(ours)) == _shape(appended(real))
