"""reports/summary.md: check names in the header rows, one table per area (syrupy snapshot)."""

from __future__ import annotations

from conformance.core.registry import registered as load_all
from conformance.core.results import Result
from conformance.report.summary import normalize, render

load_all()


def _records() -> list[Result]:
    rows = [("claude-code", "2.1.197", "default"), ("opencode", "1.18.33", "openai-plain")]
    checks = {"suite.request.accepted": "passed", "suite.stream.wellformed": "passed",
              "anthropic.stream.stop_sequence_present": "failed", "tools.call.offered": "passed",
              "identity.model_matches": "unverifiable"}
    out = []
    for client, version, case in rows:
        for check, outcome in checks.items():
            if client == "opencode" and check.startswith("anthropic."):
                continue
            out.append(Result(test_id=f"test_replay.py::test_replay[{client}/{version}/{case}]", check_id=check,
                              outcome=outcome, client=client, client_version=version, case=case,
                              message="stop_sequence missing" if outcome == "failed" else "",
                              artifacts="reports/failures/x" if outcome == "failed" else ""))
    out.append(Result(test_id="test_load.py::test_concurrency_ramp", check_id="load.throughput", outcome="info"))
    return out


def test_summary_snapshot(snapshot):
    text = normalize(render(_records(), {"generated": "now", "target": "http://127.0.0.1:4000", "api": "anthropic"}))
    assert text == snapshot


def test_header_rows_are_check_names_split_by_area():
    text = render(_records(), {})
    assert "| c1 |" not in text and "c1:" not in text
    tables = [block for block in text.split("### ")[1:]]
    areas = [t.split("\n", 1)[0] for t in tables]
    assert areas == ["anthropic", "identity", "load", "suite", "tools"]
    suite = next(t for t in tables if t.startswith("suite"))
    assert "| capture / test | request.accepted | stream.wellformed |" in suite
    # an area's table has only the rows it judged: opencode sent no Anthropic request
    anthropic = next(t for t in tables if t.startswith("anthropic"))
    assert "opencode" not in anthropic.split("\n\n")[1]
    assert "- `anthropic.stream.stop_sequence_present`: message_delta.delta carries stop_sequence" in text
