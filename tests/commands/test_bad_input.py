"""Every bad input to the `conformance` command is one line on stderr and exit 2, never a
traceback: each case runs the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = next((ROOT / "captured").rglob("*.json"))


def conformance(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def assert_one_line_exit_2(proc: subprocess.CompletedProcess, *words: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize(("args", "words"), [
    (("replay", str(CAPTURE), "--target", "http://[::1"), ("--target", "not a URL")),
    (("replay", str(CAPTURE), "--target", "notaurl"), ("--target", "http://")),
    (("replay", str(CAPTURE), "--target", "ftp://example.com/"), ("--target", "'ftp'")),
    (("replay", str(CAPTURE), "--target", "http://127.0.0.1:1", "--deadline-scale", "-1"),
     ("--deadline-scale", "above 0")),
    (("replay", str(CAPTURE), "--target", "http://127.0.0.1:1", "--deadline-scale", "nan"), ("--deadline-scale",)),
    (("engine", "--port", "99999"), ("--port", "65535")),
    (("router", "--port", "99999", "--upstream", "http://127.0.0.1:1"), ("--port", "65535")),
    (("router", "--upstream", "localhost:8000"), ("--upstream", "http://")),
    (("capture", "--engine", "--out", "/proc/no-such-folder/x"), ("--out",)),
    (("capture", "--engine", "--out", "x", "--listen", "127.0.0.1:99999"), ("--listen", "65535")),
    (("run", "--target", "notaurl"), ("--target",)),
])
def test_bad_argument(args, words):
    assert_one_line_exit_2(conformance(*args), *words)


def test_capture_out_under_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    assert_one_line_exit_2(conformance("capture", "--engine", "--out", str(tmp_path / "file" / "caps")),
                           "--out", "which is a file")


def test_capture_on_a_port_in_use(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = conformance("capture", "--engine", "--out", str(tmp_path), "--listen", f"127.0.0.1:{port}")
    assert_one_line_exit_2(proc, f"127.0.0.1:{port}", "cannot listen")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("line", [b"\xff\xfe not utf-8\n", b"[1, 2]\n", b'{"test_id": "x"}\n', b"{" * 5000 + b"\n"])
def test_report_commands_on_a_bad_results_line(tmp_path, line):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "results-1-abc.jsonl").write_bytes(line)
    assert_one_line_exit_2(conformance("report", "html", str(tmp_path)), "results-1-abc.jsonl")
    assert_one_line_exit_2(conformance("report", "compare", str(tmp_path), str(tmp_path), "--out",
                                       str(tmp_path / "cmp")), "results-1-abc.jsonl")


def test_baseline_migrate_on_bad_input(tmp_path):
    bad = tmp_path / "baseline.json"
    bad.write_text("not json")
    assert_one_line_exit_2(conformance("baseline", "migrate", str(bad)), "baseline.json")
    assert_one_line_exit_2(conformance("baseline", "migrate", str(tmp_path / "missing.json")), "missing.json")


def test_run_with_a_report_folder_under_a_file_or_not_the_suites(tmp_path):
    (tmp_path / "file").write_text("x")
    assert_one_line_exit_2(conformance("run", "--target", "http://127.0.0.1:1",
                                       f"--conformance-report-dir={tmp_path / 'file' / 'reports'}"), "which is a file")
    assert_one_line_exit_2(conformance("run", "--target", "http://127.0.0.1:1",
                                       f"--conformance-report-dir={tmp_path}"), "did not write")
    assert (tmp_path / "file").read_text() == "x"
