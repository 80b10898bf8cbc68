"""A hung target ends the run in bounded time; a target that hangs only sometimes keeps its verdicts.

Real servers on loopback: the reference engine with its `hang` fault, and a small server that
hangs only on requests that carry a marker, answering everything else.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from aiohttp import web

from conformance.engine.launch import serve_engine_in_thread
from conformance.net.client import serialize
from conformance.suite.config import SuiteConfig
from conformance.suite.session import HANG_AFTER, SuiteSession
from conformance.wire import ANTHROPIC
from tests.loopback import serve_app_in_thread

FIRST_CONTENT = 0.4  # short deadlines keep this fast; the arithmetic scales with them


def _config(url: str, **options) -> SuiteConfig:
    return SuiteConfig(target=url, deadline_connect=2.0, deadline_first_content=FIRST_CONTENT, deadline_total=2.0,
                       raw_options={f"conformance_{k}": v for k, v in options.items()})


def _request(text: str) -> bytes:
    return serialize({"model": "reference-model", "max_tokens": 16, "stream": True,
                      "messages": [{"role": "user", "content": text}]})


def _send(session: SuiteSession, text: str, label: str):
    return session.send(ANTHROPIC, "/v1/messages", _request(text), label=label)


_SSE = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in [
    {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                          "model": "reference-model", "stop_reason": None,
                                          "usage": {"input_tokens": 3, "output_tokens": 0}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
    {"type": "message_stop"},
])


class SometimesHangs:
    """Hangs (headers, then nothing) on requests whose body contains HANG; answers the rest."""

    HANG = b"hang-me"

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def app(self) -> web.Application:
        async def handler(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            self.bodies.append(body)
            resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
            await resp.prepare(request)
            if self.HANG in body:
                await asyncio.sleep(30)
            await resp.write(_SSE)
            return resp

        app = web.Application()
        app.router.add_post("/v1/messages", handler)
        return app


def test_a_fully_hung_target_fails_the_rest_at_once_naming_the_hang_and_the_first_test():
    with serve_engine_in_thread(faults=("hang",)) as url:
        session = SuiteSession(_config(url))
        for n in range(HANG_AFTER):
            raw = _send(session, "hi", f"test_replay.py::test_{n}")
            assert raw.error_kind == "deadline_first_byte", raw.error
            assert "first-content deadline" in raw.error  # says which deadline fired
        assert session.target_hung() is not None
        t0 = time.monotonic()
        later = _send(session, "hi", "test_replay.py::test_later")
        took = time.monotonic() - t0
    # below the deadline it would otherwise wait, with room for a loaded machine
    assert took < FIRST_CONTENT / 2, f"a send after the hang was confirmed still took {took:.2f}s"
    assert later.error_kind == "deadline_first_byte"
    assert "the target hangs" in later.error and "test_replay.py::test_0" in later.error
    assert "--conformance-hang-after 0" in later.error


def test_a_target_that_hangs_only_on_some_requests_keeps_every_verdict():
    server = SometimesHangs()
    with serve_app_in_thread(server.app()) as url:
        session = SuiteSession(_config(url))
        for n in range(HANG_AFTER):
            assert _send(session, "hang-me", f"t{n}").error_kind == "deadline_first_byte"
        # the minimal request was sent, answered, and the target is not called hung
        assert len(server.bodies) == HANG_AFTER + 1
        minimal = json.loads(server.bodies[-1])
        assert minimal["max_tokens"] == 16 and minimal["stream"] is True
        assert session.target_hung() is None
        assert _send(session, "hello", "t-after").ok
        assert _send(session, "hang-me", "t-hangs-again").error_kind == "deadline_first_byte"


def test_an_answer_in_between_restarts_the_count():
    server = SometimesHangs()
    with serve_app_in_thread(server.app()) as url:
        session = SuiteSession(_config(url))
        for text in ["hang-me", "hang-me", "hello", "hang-me", "hang-me"]:
            _send(session, text, "t")
        assert len(server.bodies) == 5, "no minimal request: never K hangs in a row"


def test_endpoint_probes_do_not_count():
    server = SometimesHangs()
    with serve_app_in_thread(server.app()) as url:
        session = SuiteSession(_config(url))
        for _ in range(HANG_AFTER):
            _send(session, "hang-me", "probe /v1/messages")
        assert len(server.bodies) == HANG_AFTER and session.target_hung() is None


def test_the_option_turns_it_off():
    with serve_engine_in_thread(faults=("hang",)) as url:
        session = SuiteSession(_config(url, hang_after=0))
        for n in range(HANG_AFTER + 1):
            t0 = time.monotonic()
            raw = _send(session, "hi", f"t{n}")
            assert time.monotonic() - t0 >= FIRST_CONTENT * 0.9, "every exchange waits its own deadline"
            assert "the target hangs" not in (raw.error or "")
        assert session.target_hung() is None


@pytest.mark.parametrize("k", [1, 5])
def test_k_is_configurable(k):
    with serve_engine_in_thread(faults=("hang",)) as url:
        session = SuiteSession(_config(url, hang_after=k))
        for _ in range(k - 1):
            _send(session, "hi", "t")
        assert session.target_hung() is None
        _send(session, "hi", "t")
        assert session.target_hung() is not None


@pytest.mark.slow
def test_default_run_against_a_hung_target_is_bounded(tmp_path):
    """The whole default run, default options, against the engine's `hang` fault: under 5
    minutes (docs/contracts/options.md has the arithmetic: 3 x 60 s + 20 s, then milliseconds)."""
    import subprocess
    import sys

    from conformance.core.results import read_results
    from conformance.engine.launch import spawn_engine

    with spawn_engine("--port", "0", "--fault", "hang") as eng:
        t0 = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "pytest", f"--target={eng.url}", "-p", "no:cacheprovider", "-q",
                              f"--conformance-report-dir={tmp_path}"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=600)
        took = time.monotonic() - t0
    assert took < 300, f"the default run against a hung target took {took:.0f}s\n{run.stdout[-2000:]}"
    results = read_results(tmp_path / "results")
    deadlines = [r for r in results if r.check_id.startswith("suite.deadline.") and r.outcome == "failed"]
    assert len(deadlines) > HANG_AFTER
    fast = [r for r in deadlines if "the target hangs" in r.message]
    assert len(fast) >= len(deadlines) - HANG_AFTER - 1, "the exchanges after the hang should fail at once"
