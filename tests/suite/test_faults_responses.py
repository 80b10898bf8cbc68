"""Detection power on the Responses wire: the suite replays the Codex corpus (captured/codex/) green
against the conformant engine and, against each Responses fault of the fault table (issue 14),
fails with the row's check id and nothing unrelated. A target without /v1/responses is skipped
under `auto` (and the summary says the Codex corpus was not run, and why) but fails
`suite.responses.available` when Codex is selected.

The corpus is the bundled one as recorded from the real CLI; its namespace-call capture holds a
real call of a tool inside a namespace (Codex offers an attached MCP server as `mcp__files`).
Each fault must show on exactly the captures it can affect (`SHOWS_ON`) and leave the others green.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conformance.core.paths import captured_dir, fixtures_dir
from conformance.plugin import SUITE_DIR

TABLE = json.loads((fixtures_dir() / "faults.json").read_text(encoding="utf-8"))
ROWS = [r for r in TABLE["rows"] + TABLE.get("found", []) if r["issue"] == 14 and "engine" in r["modes"]]
CODEX = captured_dir() / "codex"
OWN_MODULES = (str(SUITE_DIR / "test_replay.py"), str(SUITE_DIR / "test_protocol.py"))
REPLAY_ONLY = str(SUITE_DIR / "test_replay.py") + "::test_replay"
SMALL = Path(__file__).resolve().parent / "small"
# Summary ids recorded beside a specific wire rule: part of the same finding.
UMBRELLA = {"suite.stream.wellformed", "suite.response.wellformed", "suite.error.envelope"}
SAME_FINDING: dict[str, set[str]] = {}
# The captures a fault shows on (the others must stay green: a fault changes only what it names).
LOOPS = {"exec-loop", "apply-patch-loop", "multi-turn-reasoning", "namespace-call"}
SHOWS_ON = {
    "custom-tool-as-function": {"apply-patch-loop", "multi-turn-reasoning"},
    "custom-tool-dropped": {"apply-patch-loop", "multi-turn-reasoning"},
    "namespace-flattened": {"namespace-call"},
    "multi-turn-items-rejected": LOOPS,
    "foreign-reasoning-rejected": LOOPS,
    "hosted-tool-rejected": LOOPS | {"plain"},  # every request that offers web_search
    "terminal-event-missing": LOOPS | {"plain", "no-web-search"},
    "sequence-number-gap": LOOPS | {"plain", "no-web-search"},
    "done-text-mismatch": LOOPS | {"plain", "no-web-search"},
}
# The default run keeps the rows whose checks only the suite can see (a kind of call, an endpoint);
# the stream-grammar rows (proven at the byte level by tests/wire/test_responses.py) and the
# refusals (suite.request.accepted, shared with every wire) run with -m slow (~10 s each).
DEFAULT_ROWS = {"custom-tool-as-function", "custom-tool-dropped", "namespace-flattened", "responses-missing"}
MATRIX: dict[str, str] = {}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The bundled Codex captures, in one folder."""
    root = tmp_path_factory.mktemp("codex-corpus")
    for f in sorted(CODEX.glob("*/*.json")):
        shutil.copyfile(f, root / f.name)
    return root


def _cases_failing(run, check_id: str) -> set[str]:
    return {r.test_id.rsplit("/", 1)[-1].rstrip("]") for r in run.results
            if r.check_id == check_id and r.outcome in ("failed", "error")}


def _judge(run, row) -> tuple[set[str], set[str]]:
    failed = set(run.failed_checks)
    expected = set(row["checks"])
    rules = {c.rsplit(".", 1)[-1] for c in expected}
    same_rule = {c for c in failed if c.split(".")[0] == "responses" and c.rsplit(".", 1)[-1] in rules}
    related = expected | same_rule | SAME_FINDING.get(row["fault"], set()) | (
        UMBRELLA if any(c.split(".")[0] == "responses" for c in failed) else set())
    return failed & (expected | same_rule), failed - related


def test_conformant_engine_passes_the_codex_corpus(pytester, engine_url, suite, corpus):
    run = suite(pytester, engine_url, *OWN_MODULES, "--conformance-client=codex", captures=corpus)
    assert run.failed_checks == {}, run.outcome.stdout.str()[-3000:]
    counts = run.outcomes()
    assert counts.get("passed", 0) >= 12 and "failed" not in counts
    judged = {r.check_id for r in run.results if r.outcome == "passed"}
    # the Codex-specific rules were judged, not skipped
    assert {"tools.custom_tool_kept", "tools.namespace_kept", "suite.request.accepted"} <= judged, sorted(judged)
    MATRIX["(conformant)"] = f"green: {counts.get('passed')} passed"


PARAMS = [pytest.param(r, id=r["fault"], marks=[] if r["fault"] in DEFAULT_ROWS else [pytest.mark.slow]) for r in ROWS]


@pytest.mark.parametrize("row", PARAMS)
def test_responses_fault_detected(pytester, row, suite, corpus):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=[row["fault"]]) as url:
        # the replay judges every rule of the table's rows (test_protocol runs on the conformant engine)
        run = suite(pytester, url, REPLAY_ONLY, "--conformance-client=codex", captures=corpus)
    caught, unrelated = _judge(run, row)
    MATRIX[row["fault"]] = (f"{'CAUGHT' if caught else 'MISSED'} by {', '.join(sorted(caught)) or '-'}"
                            + (f"; unrelated: {', '.join(sorted(unrelated))}" if unrelated else ""))
    assert caught, f"{row['fault']} not detected; failed checks: {run.failed_checks}"
    assert not unrelated, f"{row['fault']}: unrelated checks failed: {unrelated}"
    if row["fault"] in SHOWS_ON:
        assert set().union(*(_cases_failing(run, c) for c in caught)) == SHOWS_ON[row["fault"]]
    assert run.outcome.ret == 1


def test_every_responses_fault_has_a_row():
    from conformance.engine.faults import FAULTS

    responses_faults = {"custom-tool-as-function", "custom-tool-dropped", "namespace-flattened",
                        "multi-turn-items-rejected", "foreign-reasoning-rejected", "hosted-tool-rejected",
                        "responses-missing", "terminal-event-missing", "sequence-number-gap", "done-text-mismatch"}
    assert {r["fault"] for r in ROWS} == responses_faults <= set(FAULTS)


def test_auto_skips_the_codex_corpus_on_a_chat_only_target_and_says_why(pytester, suite, corpus, tmp_path):
    from conformance.engine.launch import serve_engine_in_thread

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "plain.json").write_bytes((corpus / "plain.json").read_bytes())
    small = next(SMALL.glob("opencode/*/*.json"))
    (mixed / small.name).write_bytes(small.read_bytes())
    with serve_engine_in_thread(faults=["responses-missing"]) as url:
        run = suite(pytester, url, REPLAY_ONLY, captures=mixed)
    assert run.failed_checks == {} and run.outcome.ret == 0, run.failed_checks
    counts = run.outcomes()
    assert counts.get("skipped") == 1 and counts.get("passed") == 1, counts
    summary = (run.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "**codex corpus**: not run: the target does not serve POST /v1/responses" in summary, summary
    assert "--conformance-api responses" in summary


@pytest.mark.parametrize("selector", ["--conformance-client=codex",
                                      pytest.param("--conformance-api=responses", marks=pytest.mark.slow)])
def test_selected_codex_fails_on_a_chat_only_target(pytester, suite, corpus, selector):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=["responses-missing"]) as url:
        run = suite(pytester, url, str(SUITE_DIR / "test_replay.py") + "::test_replay", selector, captures=corpus)
    assert set(run.failed_checks) == {"suite.responses.available"}, run.failed_checks
    failure = next(r for r in run.results if r.check_id == "suite.responses.available" and r.outcome == "failed")
    assert "HTTP 404" in failure.message
    summary = (run.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "suite.responses.available" in summary and "not run" not in summary


def test_failure_folders_and_junit_properties_on_the_responses_wire(pytester, suite, corpus):
    from conformance.engine.launch import serve_engine_in_thread

    junit = pytester.path / "junit.xml"
    with serve_engine_in_thread(faults=["done-text-mismatch"]) as url:
        run = suite(pytester, url, str(SUITE_DIR / "test_replay.py") + "::test_replay", "--conformance-client=codex",
                    f"--junitxml={junit}", captures=corpus / "plain.json")
    assert "responses.stream.done_text" in run.failed_checks, run.failed_checks
    folders = sorted((run.report_dir / "failures").rglob("test_replay"))
    assert folders, "no failure folder"
    names = {p.name for p in folders[0].iterdir()}
    assert "curl.sh" in names and any(n.endswith(".response.chunks.jsonl") for n in names), names
    xml = junit.read_text(encoding="utf-8")
    for prop in ('name="check_id" value="responses.stream.done_text"', 'name="client" value="codex"',
                 'name="failure_folder" value="reports/failures/codex/0.171.0/plain/test_replay"'):
        assert prop in xml, (prop, xml[:1500])


def test_print_detection_matrix():
    """Printed with -s: the Responses rows of the detection matrix."""
    for fault, verdict in sorted(MATRIX.items()):
        print(f"{fault:32s} {verdict}")


def test_the_option_choices_are_the_configs():
    from conformance import plugin
    from conformance.suite import config

    assert plugin.APIS == config.APIS
    assert "responses" in config.APIS and "codex" in config.known_clients()
