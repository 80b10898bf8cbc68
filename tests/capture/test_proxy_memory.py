"""The recording proxy holds a bounded part of each response: the client gets every byte, the
record stops at the cap and says so (`truncated: {"kept", "of"}`), and the real `conformance
capture` process forwarding two 300 MB responses at once stays under 200 MB of resident memory."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from conformance.capture.format import capture_from_json, capture_to_json, load_capture
from conformance.capture.proxy import CaptureRecorder, CaseInfo, serve_proxy_in_thread

REPO = Path(__file__).resolve().parents[2]
BLOCK = b"data: " + b"x" * (1024 * 1024 - 8) + b"\n\n"  # one 1 MiB event


def streaming_upstream(megabytes: int) -> web.Application:
    """Answers every request with `megabytes` MiB of events, generated as it writes them."""

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for _ in range(megabytes):
            await resp.write(BLOCK)
        await resp.write_eof()
        return resp

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def drain(url: str, got: list[int]) -> None:
    size = 0
    with httpx.stream("POST", url, json={"stream": True}, timeout=120) as r:
        for chunk in r.iter_raw(1024 * 1024):
            size += len(chunk)
    got.append(size)


def test_a_body_past_the_cap_is_forwarded_whole_and_recorded_cut(tmp_path, serve_app):
    path = tmp_path / "cut.json"
    rec = CaptureRecorder(CaseInfo("cut"), path)
    with serve_app(streaming_upstream(3)) as upstream, \
            serve_proxy_in_thread(upstream, rec, max_body_bytes=1_500_000) as proxy:
        got: list[int] = []
        drain(proxy + "/v1/messages", got)
    assert got == [3 * len(BLOCK)]  # the client got every byte
    response = load_capture(path).exchanges[0].response
    assert len(response.body()) == 1_500_000 and response.body() == (BLOCK * 2)[:1_500_000]
    assert response.truncated == {"kept": 1_500_000, "of": 3 * len(BLOCK)}
    # the marker survives a round trip through the format; an uncut response has none
    again = capture_from_json(capture_to_json(load_capture(path)))
    assert again.exchanges[0].response.truncated == response.truncated
    assert '"truncated"' not in path.read_text(encoding="utf-8").split('"chunks"')[0]
    # a reader judging the record names the cut instead of judging the cut end as the target's
    from conformance.loop.live import judge_capture

    violations, n = judge_capture(load_capture(path), "http://127.0.0.1:1")
    assert n == 1 and [v.check_id for v in violations] == ["suite.limits.response_size"], violations


def test_a_malformed_cut_marker_is_refused_with_its_fix(tmp_path):
    from conformance.capture.format import CaptureFormatError

    doc = {"format": "conformance.capture", "version": 1, "client": {"name": "other", "version": "1"}, "case": "x",
           "exchanges": [{"request": {"method": "POST", "path": "/v1/messages"},
                          "response": {"status": 200, "chunks": [], "truncated": {"kept": "many"}}}]}
    with pytest.raises(CaptureFormatError, match="truncated.*kept.*capture-format.md"):
        capture_from_json(doc)


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024


@pytest.mark.slow
def test_two_300_mb_responses_pass_through_the_capture_process_under_200_mb(tmp_path, serve_app):
    """About 15-40 s: 600 MB through three loopback hops on a shared machine."""
    out = tmp_path / "out"
    with serve_app(streaming_upstream(300)) as upstream:
        proc = subprocess.Popen(
            [sys.executable, "-m", "conformance.cli", "capture", "--upstream", upstream, "--out", str(out),
             "--label", "big"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")})
        try:
            line = proc.stdout.readline()
            assert line.startswith("listening on "), (line, proc.stderr.read() if proc.poll() is not None else "")
            proxy = line.split()[-1]
            got: list[int] = []
            started = time.monotonic()
            clients = [threading.Thread(target=drain, args=(proxy + "/v1/messages", got)) for _ in range(2)]
            for c in clients:
                c.start()
            for c in clients:
                c.join(300)
            elapsed = time.monotonic() - started
            peak = peak_rss_mb(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    print(f"proxy peak RSS {peak:.0f} MB forwarding 2 x 300 MiB in {elapsed:.1f} s; "
          f"capture {(out / 'big.json').stat().st_size / 2**20:.1f} MiB")
    assert got == [300 * len(BLOCK)] * 2
    assert peak < 200, f"the capture proxy peaked at {peak:.0f} MB RSS"
    capture = load_capture(out / "big.json")
    assert [e.response.truncated["of"] for e in capture.exchanges] == [300 * len(BLOCK)] * 2
    assert (out / "big.json").stat().st_size < 40 * 1024 * 1024
