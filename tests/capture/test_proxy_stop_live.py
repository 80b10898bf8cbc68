"""The real clients through the recording proxy, stopped the instant the client exits (marker `live`).

Claude Code and opencode each run a multi-turn task through `conformance capture --upstream` to
the reference engine; the proxy gets SIGTERM the moment the client process has exited. Every
request the engine received must be in the capture, whole.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import httpx
import pytest

from conformance.capture.format import load_capture
from conformance.capture.proxy import STOPPED_NOTE
from conformance.clients.config import Settings
from conformance.clients.launch import ClientNotFound, find_binary, prepare, run
from conformance.clients.profile import profile
from conformance.engine.launch import serve_engine_in_thread
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
    runner = profile(client)
    try:
        exe = find_binary(runner)
    except ClientNotFound as exc:
        pytest.fail(str(exc), pytrace=False)  # opt-in tests: a missing client is a failure
    scenario = get_scenario("write-file")
    values = scenario.draw(random.Random(7))
    with serve_engine_in_thread() as engine:
        proxy, url = _proxy(engine, tmp_path / "out")
        try:
            prepared = prepare(runner, exe, wire=runner.wire, prompt=scenario.prompt, base_url=url,
                               api_key="sk-conformance-live", root=tmp_path, settings=Settings(model="reference-model"))
            Sandbox(prepared.project).seed(scenario.seed_files(values))
            finished = run(prepared, CLIENT_DEADLINE)
            t0 = time.monotonic()
            proxy.send_signal(signal.SIGTERM)  # the instant the client returned
            proxy.wait(timeout=30)
            took = time.monotonic() - t0
        finally:
            if proxy.poll() is None:
                proxy.kill()
        received = httpx.get(engine + "/_conformance/received").json()
    assert finished.returncode == 0 and not finished.timed_out, finished.stderr[-800:]
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
