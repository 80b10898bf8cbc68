"""The Locust front end (conformance[locust]): real Locust, real local workers, the reference engine.

- Nothing in the plugin, the CLI or the judge imports locust or gevent (gevent monkey-patches).
- A master and two local workers (`--processes 2`) replay the captures and run the agent-loop
  scenarios (both User classes) for a bounded time; every worker writes its results record;
  `python -m conformance.locust merge` merges them, and the merged verdicts match a
  single-process run of the same judge over the same requests and the same scenarios.
- Against a faulty engine the violation is a Locust failure named by its check id.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "conformance"


def test_nothing_outside_conformance_locust_imports_locust_or_gevent():
    bad = []
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(PACKAGE / "locust"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{path.relative_to(ROOT)}: {n}" for n in names
                    if n.split(".")[0] in ("locust", "gevent") or n.startswith("conformance.locust")]
    assert not bad, bad


def test_the_plugin_the_cli_and_the_judge_load_without_locust_or_gevent():
    code = ("import sys, conformance.plugin, conformance.cli, conformance.checks.exchange, conformance.suite.session\n"
            "from conformance.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('locust', 'gevent'))\n"
            "assert not bad, bad\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _locust(url: str, report_dir: Path, seconds: int = 8) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(PACKAGE / "locust" / "locustfile.py"), "--headless",
         "--processes", "2", "-u", "4", "-r", "4", "-t", f"{seconds}s", "-H", url, "--only-summary",
         "--conformance-report-dir", str(report_dir)],
        capture_output=True, text=True, timeout=180, cwd=ROOT)


def _merge(report_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance.locust", "merge", str(report_dir)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def _read(resp, start: float) -> list[tuple[float, bytes]]:
    import time

    return [(time.monotonic() - start, data) for data in resp.iter_raw()]


def _single_process(url: str, cases: set[str]) -> dict[str, set[str]]:
    """The same requests and scenarios, one at a time, through the same judge and driver, sent with
    httpx: case -> failing check ids (only the cases the Locust run reached)."""
    import time

    from conformance.locust.judge import (
        exchange_record,
        judge,
        loop_workload,
        raw_exchange,
        run_loop,
        workload,
    )

    out = {}
    with httpx.Client(timeout=60) as client:
        for work in workload():
            if work.case not in cases:
                continue
            start = time.monotonic()
            with client.stream("POST", url + work.path, content=work.body, headers=work.headers) as resp:
                raw = raw_exchange(url + work.path, work, resp.status_code, dict(resp.headers), _read(resp, start),
                                   time.monotonic() - start)
            out[work.case] = set(judge(raw, work)[0])

        def send(api, path, headers, body, stream):
            start = time.monotonic()
            with client.stream("POST", url + path, content=body, headers=headers) as resp:
                return exchange_record(url + path, api, headers, body, stream, resp.status_code, dict(resp.headers),
                                       _read(resp, start), time.monotonic() - start)

        for loop in loop_workload():
            if loop.case in cases:
                out[loop.case] = set(run_loop(loop, url, send)[0])
    return out


def _merged(report_dir: Path) -> dict[str, set[str]]:
    from conformance.core.results import read_results

    out: dict[str, set[str]] = {}
    for r in read_results(report_dir / "results"):
        out.setdefault(r.case, set())
        if r.outcome == "failed":
            out[r.case].add(r.check_id)
    return out


@pytest.mark.slow
def test_master_and_two_local_workers_replay_captures_and_loops_and_merge_into_the_usual_reports(tmp_path):
    from conformance.core.results import read_results
    from conformance.engine.launch import spawn_engine
    from conformance.locust.judge import loop_workload

    with spawn_engine() as engine:
        proc = _locust(engine.url, tmp_path, seconds=10)
        assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
        verdicts = _merged(tmp_path)
        single = _single_process(engine.url, set(verdicts))
    records = sorted((tmp_path / "results").glob("results-locust-*.jsonl"))
    assert len(records) == 2, "each local worker writes its own results record"
    merged = _merge(tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "merged 2 worker record(s)" in merged.stdout
    assert (tmp_path / "summary.md").is_file()
    loop_cases = {w.case for w in loop_workload()}
    ran_loops = [r for r in read_results(tmp_path / "results") if r.check_id == "loop.completed"]
    assert len({c for c in verdicts if c not in loop_cases}) >= 10, "a bounded run still covers many captured requests"
    assert len({r.case for r in ran_loops}) >= 3, "a bounded run still completes several agent-loop scenarios"
    assert all(r.details.get("turns", 0) >= 2 for r in ran_loops), "each loop ran turns: tool results went back"
    assert f"{len(ran_loops)} agent-loop run(s) (0 failed)" in merged.stdout
    assert "LOOP" in proc.stdout + proc.stderr, "each loop run is a Locust entry of its own"
    assert all(not ids for ids in verdicts.values()), verdicts
    assert single == verdicts, "the merged report matches a single-process run"


@pytest.mark.slow
def test_a_violation_is_a_locust_failure_named_by_its_check_id(tmp_path):
    from conformance.engine.launch import spawn_engine

    with spawn_engine("--fault", "stop-sequence-missing") as engine:
        proc = _locust(engine.url, tmp_path, seconds=6)
    assert proc.returncode == 1, "Locust exits 1 when requests failed"
    assert "anthropic.stream.stop_sequence_present" in proc.stdout + proc.stderr
    merged = _merge(tmp_path)
    assert merged.returncode == 1 and "anthropic.stream.stop_sequence_present" in merged.stdout
