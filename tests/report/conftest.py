"""Two real runs of the bundled suite through `conformance run` (the embedded reference engine as a
subprocess): clean, and with one engine fault. Made once per session and only read (a test that
changes a report folder copies it first); the trimmed captures keep each run a few seconds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.plugin import SUITE_DIR

SMALL = Path(__file__).resolve().parents[1] / "suite" / "small"
REPLAY = str(SUITE_DIR / "test_replay.py")


def conformance_run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "conformance.cli", "run", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def clean_run(tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("clean")
    proc = conformance_run(cwd, f"--conformance-captures={SMALL}", REPLAY, "-p", "no:cacheprovider")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return cwd / "reports"


@pytest.fixture(scope="session")
def faulty_run(tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("faulty")
    proc = conformance_run(cwd, "--fault", "stop-sequence-missing", f"--conformance-captures={SMALL}", REPLAY,
                           "-p", "no:cacheprovider")
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-3000:]
    return cwd / "reports"
