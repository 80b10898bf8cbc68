"""`conformance engine` as a real process: one `listening on` line, clean stop on SIGTERM/SIGINT."""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx
import pytest

from conformance.engine.launch import EngineStartError, spawn_engine


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_engine_cli_starts_serves_and_stops_cleanly(sig):
    eng = spawn_engine("--model", "my-model", "--max-context", "5000")
    try:
        assert eng.url.startswith("http://127.0.0.1:")
        assert httpx.get(eng.url + "/v1/models", timeout=5).json()["data"][0] == {
            **httpx.get(eng.url + "/v1/models", timeout=5).json()["data"][0], "id": "my-model", "max_model_len": 5000}
        r = httpx.post(eng.url + "/v1/messages", json={"model": "my-model", "max_tokens": 20,
                                                       "messages": [{"role": "user", "content": "hi"}]}, timeout=5)
        assert r.status_code == 200 and r.json()["model"] == "my-model"
        eng.proc.send_signal(sig)
        assert eng.proc.wait(10) == 0
        rest = eng.proc.stdout.read()
        assert rest == ""  # exactly one line was printed
    finally:
        eng.stop()


def test_spawn_reports_bad_arguments():
    with pytest.raises(EngineStartError, match="conformance faults"):
        spawn_engine("--fault", "no-such-fault")


def test_cli_rejects_unknown_fault_with_exit_2():
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "engine", "--port", "0", "--fault", "nope"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "unknown fault" in r.stderr and r.stdout == ""


def test_scenarios_dir_option(tmp_path):
    (tmp_path / "x.json").write_text('{"format": "conformance.scenario", "id": "x", "trigger": "\\\\[task:x\\\\]",'
                                     ' "script": [{"text": "scripted x answer"}]}')
    with spawn_engine("--scenarios", str(tmp_path)) as eng:
        r = httpx.post(eng.url + "/v1/messages", json={"model": "m", "max_tokens": 50,
                                                       "messages": [{"role": "user", "content": "go [task:x]"}]}, timeout=5)
        assert r.json()["content"][0]["text"] == "scripted x answer"
