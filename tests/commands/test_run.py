"""`conformance run`: the embedded engine when no target is given, reports written, exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformance.plugin import SUITE_DIR

SMALL = Path(__file__).resolve().parents[1] / "suite" / "small"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "run", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def test_run_against_a_faulty_embedded_engine_fails_and_writes_reports(tmp_path):
    proc = _run(tmp_path, "--fault", "stop-sequence-missing", f"--conformance-captures={SMALL}",
                str(SUITE_DIR / "test_replay.py"), "-p", "no:cacheprovider")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "testing the embedded reference engine" in out
    assert "anthropic.stream.stop_sequence_present" in out and "likely cause:" in out
    reports = tmp_path / "reports"
    assert (reports / "junit.xml").is_file() and (reports / "summary.md").is_file()
    summary = (reports / "summary.md").read_text()
    assert "FAIL" in summary and "reference engine" in summary
    assert any((reports / "failures").rglob("failure.txt"))


def test_run_refuses_a_fault_with_a_target(tmp_path):
    proc = _run(tmp_path, "--target", "http://127.0.0.1:1", "--fault", "hang")
    assert proc.returncode == 2 and "cannot be combined" in proc.stderr
