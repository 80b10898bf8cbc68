"""Reports: JUnit properties, summary.md (syrupy snapshot of its normalized form), failure folders
that reproduce the failure without leaking the key, and the baseline gate (fails on any change
either way)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.plugin import SUITE_DIR

HERE = Path(__file__).resolve().parent
SMALL = HERE / "small"
DATA = HERE / "data"
OWN = (str(SUITE_DIR / "test_replay.py"), str(SUITE_DIR / "test_protocol.py"))
SECRET = "sk-conformance-SECRET-must-not-leak-42"


@pytest.fixture(scope="module")
def stop_missing_engine():
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=["stop-sequence-missing"]) as url:
        yield url


def test_junit_properties(pytester, engine_url, suite):
    run = suite(pytester, engine_url, *OWN, "--junitxml=junit.xml", "--conformance-router-version=router 1.2",
                captures=SMALL)
    assert run.outcome.ret == 0
    root = ET.parse(pytester.path / "junit.xml").getroot()
    suite_props = {p.get("name"): p.get("value") for p in root.iter("testsuite").__next__().find("properties")}
    for name in ("target", "api", "model", "engine_version", "router_version", "suite_version"):
        assert name in suite_props, name
    assert suite_props["target"] == engine_url and suite_props["router_version"] == "router 1.2"
    case = next(tc for tc in root.iter("testcase") if "test_replay[claude-code/tool-loop-small]" in tc.get("name"))
    props = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert props["client"] == "claude-code" and props["client_version"] == "2.1.197"
    assert props["capture"].endswith("tool-loop-small.json") and props["severity"] == "none"
    assert "suite.request.accepted" in props["check_id"]


def test_summary_matrix_snapshot(pytester, engine_url, suite, snapshot):
    from conformance.report.summary import normalize

    run = suite(pytester, engine_url, *OWN, captures=DATA)
    assert run.outcome.ret == 0, run.outcome.stdout.str()[-2000:]
    text = (run.report_dir / "summary.md").read_text(encoding="utf-8")
    assert "| claude-code/2.1.197/default |" in text and "`suite.request.accepted`" in text
    # the version lines depend on the environment: the snapshot holds the matrix itself
    matrix = normalize(text).split("verdicts:", 1)[1]
    assert matrix == snapshot


def test_failure_folder_reproduces_without_the_key(pytester, stop_missing_engine, suite):
    from conformance.checks.exchange import check_exchange
    from conformance.net.transport import send_sync

    run = suite(pytester, stop_missing_engine, *OWN, f"--conformance-api-key={SECRET}", captures=SMALL)
    assert run.outcome.ret == 1
    out = run.outcome.stdout.str()
    assert "anthropic.stream.stop_sequence_present" in out and "likely cause:" in out
    folder = run.report_dir / "failures" / "claude-code" / "2.1.197" / "tool-loop-small" / "test_replay"
    names = {p.name for p in folder.iterdir()}
    assert {"failure.txt", "violations.json", "curl.sh", "reproduce.txt", "versions.json",
            "1.request.json", "1.request.body", "1.response.raw", "1.response.chunks.jsonl"} <= names
    assert "conformance replay" in (folder / "reproduce.txt").read_text()
    assert "stop_sequence" in (folder / "failure.txt").read_text()
    for path in run.report_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"the key leaked into {path}"
    # the folder reproduces it: re-send the exact bytes with the recorded headers
    req = json.loads((folder / "1.request.json").read_text())
    headers = {k: v for k, v in req["headers"].items() if "<redacted" not in v}
    headers["x-api-key"] = SECRET
    raw = send_sync("POST", req["url"], headers=headers, body=(folder / "1.request.body").read_bytes())
    again = check_exchange(raw, req["body"], wire="anthropic")
    assert "anthropic.stream.stop_sequence_present" in again.failed_checks
    chunks = [json.loads(line) for line in (folder / "1.response.chunks.jsonl").read_text().splitlines()]
    assert chunks[0]["status"] == 200 and all("t" in c for c in chunks[1:])


def test_baseline_gate_fails_on_any_change(pytester, engine_url, stop_missing_engine, suite):
    from conformance.engine.launch import serve_engine_in_thread

    baseline = pytester.path / "baseline.json"
    first = suite(pytester, stop_missing_engine, *OWN, f"--conformance-baseline-write={baseline}", captures=SMALL)
    assert first.outcome.ret == 1
    doc = json.loads(baseline.read_text())
    assert doc["format"] == "conformance.baseline"
    entry = next(e for e in doc["known_failures"] if "tool-loop-small" in e["test"] and "test_replay[" in e["test"])
    assert "anthropic.stream.stop_sequence_present" in entry["checks"] and entry["reason"].startswith("TODO")
    # a human writes the reason; re-writing the baseline keeps it
    for e in doc["known_failures"]:
        e["reason"] = "vLLM #55324, fixed in PR #55325"
    baseline.write_text(json.dumps(doc))

    same = suite(pytester, stop_missing_engine, *OWN, f"--conformance-baseline={baseline}", captures=SMALL)
    assert same.outcome.ret == 0, same.outcome.stdout.str()[-2000:]
    assert same.outcomes().get("xfailed", 0) >= 1

    fixed = suite(pytester, engine_url, *OWN, f"--conformance-baseline={baseline}", captures=SMALL)
    assert fixed.outcome.ret == 1
    assert "update the baseline" in fixed.outcome.stdout.str()

    with serve_engine_in_thread(faults=["stop-sequence-missing", "tool-call-as-text"]) as url:
        new = suite(pytester, url, *OWN, f"--conformance-baseline={baseline}",
                    f"--conformance-baseline-write={baseline}", captures=SMALL)
    assert new.outcome.ret == 1
    assert "new failure(s) not in the baseline" in new.outcome.stdout.str()
    rewritten = json.loads(baseline.read_text())
    kept = next(e for e in rewritten["known_failures"] if "tool-loop-small" in e["test"] and "test_replay[" in e["test"])
    assert kept["reason"] == "vLLM #55324, fixed in PR #55325"
    assert "tools.call_structured" in kept["checks"]
