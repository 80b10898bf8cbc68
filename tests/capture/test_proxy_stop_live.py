"""The real clients through the recording proxy, stopped the instant the client exits (marker `live`).

Claude Code and opencode each run a multi-turn task through `conformance capture --upstream` to
the reference engine; the proxy gets SIGTERM the moment the client process has exited. Every
request the engine received must be in the capture, whole.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time

import httpx
import pytest

from conformance.capture.format import load_capture
from conformance.capture.proxy import STOPPED_NOTE
from conformance.engine.launch import serve_engine_in_thread
from conformance.loop.live import ClientNotFound, _env_claude, _env_opencode, find_binary, opencode_config
from conformance.loop.sandbox import Sandbox
from conformance.loop.scenarios import get_scenario

pytestmark = pytest.mark.live

CLIENT_DEADLINE = 150.0


def _proxy(upstream: str, out) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-c", "import sys; from conformance.cli import main; sys.exit(main())",
           "capture", "--upstream", upstream, "--out", str(out), "--label", "live"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    line = proc.stdout.readline()
    assert line.startswith("listening on "), f"proxy did not start: {line!r}"
    return proc, line.split()[-1]


@pytest.mark.parametrize("client", ["claude-code", "opencode"])
def test_sigterm_the_moment_the_client_exits_loses_no_exchange(client, tmp_path):
    try:
        exe = find_binary(client)
    except ClientNotFound as exc:
        pytest.fail(str(exc), pytrace=False)  # opt-in tests: a missing client is a failure
    scenario = get_scenario("write-file")
    values = scenario.draw(random.Random(7))
    project, home = tmp_path / "project", tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    project.mkdir()
    Sandbox(project, client).seed(scenario.seed_files(values))
    with serve_engine_in_thread() as engine:
        proxy, url = _proxy(engine, tmp_path / "out")
        try:
            if client == "claude-code":
                env = _env_claude(home, url, "sk-conformance-live")
                cmd = [str(exe), "-p", scenario.prompt, "--output-format", "json", "--permission-mode",
                       "acceptEdits", "--disallowedTools", "Bash", "--model", "reference-model"]
            else:
                env = _env_opencode(home)
                (project / "opencode.json").write_text(
                    json.dumps(opencode_config(url, "sk-conformance-live", "reference-model")))
                cmd = [str(exe), "run", scenario.prompt]
            run = subprocess.run(cmd, cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                 timeout=CLIENT_DEADLINE)
            t0 = time.monotonic()
            proxy.send_signal(signal.SIGTERM)  # the instant the client returned
            proxy.wait(timeout=30)
            took = time.monotonic() - t0
        finally:
            if proxy.poll() is None:
                proxy.kill()
        received = httpx.get(engine + "/_conformance/received").json()
    assert run.returncode == 0, run.stderr[-800:]
    assert took < 5.0, f"the proxy took {took:.1f}s to stop"
    exchanges = load_capture(tmp_path / "out" / "live.json").exchanges
    assert received["total"] >= 2, "the task should take the client more than one request"
    assert len(exchanges) == received["total"], (
        f"recorded {len(exchanges)} of the {received['total']} requests the engine answered")
    for ex in exchanges:
        assert ex.response is not None and ex.response.status == 200, ex.note
        assert STOPPED_NOTE not in ex.note, "an exchange was still streaming when the proxy stopped"
        body = b"".join(c.data for c in ex.response.chunks)
        if isinstance(ex.request.body, dict) and ex.request.body.get("stream"):
            assert b"message_stop" in body or b"[DONE]" in body, f"a stream was recorded without its end: {ex.note}"
