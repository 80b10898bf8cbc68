"""Capture -> replay round trip against the reference engine, replay exit codes, format version."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from conformance.capture.format import CaptureFormatError, load_capture
from conformance.capture.proxy import CaptureRecorder, CaseInfo, serve_proxy_in_thread
from conformance.cli import main
from conformance.core.paths import captured_dir
from conformance.engine.launch import serve_engine_in_thread

CC_DEFAULT = captured_dir() / "claude-code/2.1.197/default.json"


@pytest.fixture(scope="module")
def engine():
    with serve_engine_in_thread() as url:
        yield url


@pytest.fixture(scope="module")
def faulty_engine():
    with serve_engine_in_thread(faults=("stop-sequence-missing",)) as url:
        yield url


def _send_through_proxy(proxy: str, body: dict, headers: dict) -> bytes:
    with httpx.stream("POST", proxy + "/v1/messages?beta=true", content=json.dumps(body).encode(),
                      headers=headers, timeout=30) as r:
        assert r.status_code == 200
        return r.read()


def test_capture_then_replay_round_trip(engine, faulty_engine, tmp_path, capsys):
    # A real Claude Code request body from the corpus, sent through the proxy to the engine.
    source = load_capture(CC_DEFAULT).main_exchanges()[0].request
    path = tmp_path / "roundtrip.json"
    rec = CaptureRecorder(CaseInfo("roundtrip"), path)
    headers = {k: v for k, v in source.headers.items() if k not in ("content-length", "host", "x-api-key")}
    headers["x-api-key"] = "sk-ant-roundtrip-SECRET-123456"
    with serve_proxy_in_thread(engine, rec) as proxy:
        streamed = _send_through_proxy(proxy, source.body, headers)
    assert b"sk-ant-roundtrip-SECRET" not in path.read_bytes()
    cap = load_capture(path)
    assert cap.client == "claude-code" and cap.client_version == "2.1.197"
    ex = cap.main_exchanges()[0]
    assert ex.request.body == source.body
    assert ex.response.body() == streamed  # what the client got is what was recorded
    assert b"message_stop" in streamed

    assert main(["replay", str(path), "--target", engine]) == 0
    assert "PASS claude-code/2.1.197/roundtrip" in capsys.readouterr().out

    assert main(["replay", str(path), "--target", faulty_engine]) == 1
    out = capsys.readouterr().out
    assert "FAIL claude-code/2.1.197/roundtrip" in out
    assert "anthropic.stream.stop_sequence_present" in out and "reproduce:" in out


def test_replay_model_map_and_salt_say_not_byte_exact(engine, capsys):
    code = main(["replay", str(CC_DEFAULT), "--target", engine + "/v1", "--model-map", "*=reference-model",
                 "--salt", "s1"])
    assert code == 0
    out = capsys.readouterr().out
    assert "PASS" in out


def test_replay_exit_2_on_bad_input(engine, tmp_path, capsys):
    assert main(["replay", str(tmp_path / "missing.json"), "--target", engine]) == 2
    bad = json.loads(CC_DEFAULT.read_text())
    bad["version"] = 2
    p = tmp_path / "future.json"
    p.write_text(json.dumps(bad))
    assert main(["replay", str(p), "--target", engine]) == 2
    err = capsys.readouterr().err
    assert "capture format version 2 is not supported" in err
    with pytest.raises(CaptureFormatError, match="version 2"):
        load_capture(p)
    assert main(["replay", str(CC_DEFAULT), "--target", engine, "--model-map", "nonsense"]) == 2
    # nothing listening: nothing was judged
    assert main(["replay", str(CC_DEFAULT), "--target", "http://127.0.0.1:9"]) == 2
    assert "cannot connect" in capsys.readouterr().err


def test_capture_cli_with_embedded_engine(tmp_path):
    """`conformance capture --engine` end to end: a real process, a real request, Ctrl-C, a file."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "capture", "--engine", "--out", str(tmp_path),
                             "--label", "cli", "--secret", "my-private-text"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line + proc.stderr.read()
        url = line.split()[-1]
        body = {"model": "m", "max_tokens": 64, "stream": True,
                "messages": [{"role": "user", "content": "hello my-private-text"}]}
        _send_through_proxy(url, body, {"x-api-key": "sk-cli-SECRET-987654321", "anthropic-version": "2023-06-01",
                                        "content-type": "application/json"})
        deadline = time.monotonic() + 10
        while not (tmp_path / "cli.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    assert proc.returncode == 0, proc.stderr.read()
    data = (tmp_path / "cli.json").read_bytes()
    assert b"sk-cli-SECRET" not in data and b"my-private-text" not in data
    cap = load_capture(tmp_path / "cli.json")
    assert cap.case == "cli" and cap.meta["upstream"] == "reference-engine"
    assert cap.exchanges[0].response.status == 200
