"""A hostile target answering with JSON nested 1,500 levels deep (3 KB): `replay`, `check-stream`
and the suite give a verdict naming suite.limits.json_depth, never a traceback."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from conformance.core.results import read_results
from tests.commands.test_bad_input import conformance
from tests.loopback import serve_handler_in_thread

SMALL = Path(__file__).resolve().parents[1] / "suite" / "small"
DEEP = b"[" * 1_500 + b"]" * 1_500
QUIET = ("-o", "asyncio_default_fixture_loop_scope=function")


class DeepJson(BaseHTTPRequestHandler):
    """Every request: 200 and a deep JSON body; a streamed request: one event of it."""

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        streamed = b'"stream":true' in self.rfile.read(length).replace(b" ", b"")
        body = b"event: message_start\ndata: " + DEEP + b"\n\n" if streamed else DEEP
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if streamed else "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


@pytest.fixture(scope="module")
def hostile_url():
    with serve_handler_in_thread(DeepJson) as url:
        yield url


def test_replay_names_the_bound(hostile_url):
    capture = next(SMALL.rglob("*.json"))
    proc = conformance("replay", str(capture), "--target", hostile_url)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "suite.limits.json_depth" in proc.stdout and "Traceback" not in proc.stderr


@pytest.mark.parametrize("protocol", ["anthropic", "openai", "responses"])
def test_check_stream_names_the_bound(tmp_path, protocol):
    for name, body in (("deep.json", DEEP), ("deep.sse", b"data: " + DEEP + b"\n\n")):
        (tmp_path / name).write_bytes(body)
        proc = conformance("check-stream", str(tmp_path / name), "--protocol", protocol)
        assert proc.returncode == 1 and "suite.limits.json_depth" in proc.stdout, (name, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr


@pytest.mark.slow  # ~12 s: a whole suite session against the hostile target
def test_the_suite_records_the_bound_not_a_crash(pytester, hostile_url):
    run = pytester.runpytest_inprocess(f"--target={hostile_url}", f"--conformance-captures={SMALL}",
                                       "--conformance-api=anthropic", "-k", "test_replay and tool-loop and not thinking",
                                       "-p", "no:cacheprovider", *QUIET)
    results = read_results(pytester.path / "reports" / "results")
    assert results, run.stdout.str()[-3000:]
    assert not [r for r in results if r.check_id == "suite.judge.no_exception"], "a test crashed"
    assert any(r.check_id == "suite.limits.json_depth" and r.outcome == "failed" for r in results)
    assert "RecursionError" not in run.stdout.str()
