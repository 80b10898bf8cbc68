"""The Locust front end (conformance[locust]): real Locust, real local workers, the reference engine.

- Nothing in the plugin, the CLI or the judge imports locust or gevent (gevent monkey-patches).
- A master and two local workers (`--processes 2`) replay the captures for a bounded time; every
  worker writes its results record; `python -m conformance.locust merge` merges them, and the
  merged verdicts match a single-process run of the same judge over the same requests.
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


def _single_process(url: str) -> dict[str, set[str]]:
    """The same requests, one at a time, through the same judge: case -> failing check ids."""
    import time

    from conformance.locust.judge import judge, raw_exchange, workload

    out = {}
    with httpx.Client(timeout=60) as client:
        for work in workload():
            start = time.monotonic()
            chunks = []
            with client.stream("POST", url + work.path, content=work.body, headers=work.headers) as resp:
                for data in resp.iter_raw():
                    chunks.append((time.monotonic() - start, data))
                raw = raw_exchange(url + work.path, work, resp.status_code, dict(resp.headers), chunks,
                                   time.monotonic() - start)
            out[work.case] = set(judge(raw, work)[0])
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
def test_master_and_two_local_workers_replay_the_captures_and_merge_into_the_usual_reports(tmp_path):
    from conformance.engine.launch import spawn_engine

    with spawn_engine() as engine:
        proc = _locust(engine.url, tmp_path)
        assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
        single = _single_process(engine.url)
    records = sorted((tmp_path / "results").glob("results-locust-*.jsonl"))
    assert len(records) == 2, "each local worker writes its own results record"
    merged = _merge(tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "merged 2 worker record(s)" in merged.stdout
    assert (tmp_path / "summary.md").is_file()
    verdicts = _merged(tmp_path)
    assert len(verdicts) >= 10, "a bounded run still covers many captured requests"
    assert all(not ids for ids in verdicts.values()), verdicts
    assert {case: single[case] for case in verdicts} == verdicts, "the merged report matches a single-process run"


@pytest.mark.slow
def test_a_violation_is_a_locust_failure_named_by_its_check_id(tmp_path):
    from conformance.engine.launch import spawn_engine

    with spawn_engine("--fault", "stop-sequence-missing") as engine:
        proc = _locust(engine.url, tmp_path, seconds=6)
    assert proc.returncode == 1, "Locust exits 1 when requests failed"
    assert "anthropic.stream.stop_sequence_present" in proc.stdout + proc.stderr
    merged = _merge(tmp_path)
    assert merged.returncode == 1 and "anthropic.stream.stop_sequence_present" in merged.stdout
