"""Locust's LoopUser as a soak: its session runs are the soak's records, merged into one verdict.

The fast test folds recorded session runs (as the workers write them) into the soak's report; the
slow one (about 20 s) runs a 2-worker Locust soak against the engine that dies under sustained
load and gets the verdict the in-process soak gives: load.soak_stable failed, at the time of death.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.checks.load import SOAK_STABLE
from conformance.core.results import read_results
from conformance.engine.launch import spawn_engine
from conformance.probes.soak import SoakRequest, SoakSession, merged_report, session_of_record, session_record

ROOT = Path(__file__).resolve().parents[2]
DIE_AFTER_S = 3


def test_session_records_round_trip_and_merge_on_one_clock():
    epoch = 1_700_000_000.0
    runs = [SoakSession(1, 0, "loop:a", epoch, epoch + 2.0, True, None,
                        [SoakRequest(1, 0, 1, epoch, 0.1, 0.01, 2.0, 12, None)]),
            SoakSession(2, 0, "loop:a", epoch + 5.0, epoch + 6.0, False, "5xx",
                        [SoakRequest(2, 0, 1, epoch + 5.0, None, None, 1.0, 0, "5xx")])]
    back = [session_of_record(session_record(r)) for r in runs]
    assert back == runs
    outcome = merged_report(back, sessions_in_flight=2).outcome()
    assert outcome.outcome == "failed" and outcome.details["first_failure_s"] == 6.0
    assert outcome.details["wall_s"] == 6.0 and outcome.details["session_runs"] == 2


@pytest.mark.slow
def test_a_two_worker_locust_soak_catches_the_engine_that_dies_under_sustained_load(tmp_path):
    pace = ("--prefill-rate", "20000", "--decode-rate", "200")
    with spawn_engine("--fault", "dies-under-sustained-load", "--die-after", str(DIE_AFTER_S), *pace) as engine:
        run = subprocess.run(
            [sys.executable, "-m", "locust", "-f", str(ROOT / "conformance" / "locust" / "locustfile.py"),
             "--headless", "--processes", "2", "-u", "4", "-r", "4", "-t", "10s", "-H", engine.url,
             "--only-summary", "--conformance-report-dir", str(tmp_path), "--conformance-api", "anthropic",
             "LoopUser"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode in (0, 1), run.stderr[-2000:]
    merged = subprocess.run([sys.executable, "-m", "conformance.locust", "merge", str(tmp_path)],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert f"{SOAK_STABLE}: FAILED: the first failure came" in merged.stdout
    verdict = [r for r in read_results(tmp_path / "results") if r.check_id == SOAK_STABLE and r.outcome == "failed"]
    assert len(verdict) == 1
    assert verdict[0].details["first_failure_s"] >= DIE_AFTER_S and verdict[0].details["sessions"] == 4
    again = subprocess.run([sys.executable, "-m", "conformance.locust", "merge", str(tmp_path)],
                           capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert again.returncode == 1
    assert len([r for r in read_results(tmp_path / "results") if r.check_id == SOAK_STABLE
                and r.outcome == "failed"]) == 1, "a second merge replaces the verdict"
