"""The pre-flight: a dead target, a router that refuses every request (a missing key) and a web
server that is no LLM API stop the run with one line and exit 2; a working target is never stopped.

The misconfigured router is a real loopback server answering every request with the same error
(a test double of a router's misconfiguration, not of the thing under test); the working targets
are the reference engine and the reference router in front of it.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from aiohttp import web

from conformance.router.launch import serve_router_in_thread
from conformance.suite.config import SuiteConfig
from conformance.suite.preflight import check_target
from conformance.suite.session import SuiteSession
from tests.loopback import serve_app_in_thread, serve_handler_in_thread

SMALL = Path(__file__).resolve().parent / "small"


def _same_answer_app(status: int, body: str, content_type: str = "text/plain") -> web.Application:
    async def every(request: web.Request) -> web.Response:
        return web.Response(status=status, text=body, content_type=content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", every)
    return app


@contextlib.contextmanager
def _plain_web_server(folder: Path):
    """`python -m http.server` as a thread: GET answers HTML or 404, POST 501."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    with serve_handler_in_thread(handler) as url:
        yield url


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path: Path, target: str, *args: str) -> tuple[int, list[str]]:
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--target", target,
                           f"--conformance-captures={SMALL}", "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return proc.returncode, (proc.stdout + proc.stderr).splitlines()


def test_a_dead_target_is_one_cause_and_exit_2(tmp_path):
    code, lines = _run(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    assert code == 2, lines
    assert len(lines) <= 40, "\n".join(lines)
    assert any("the target is down" in line and "--target" in line for line in lines), lines
    assert not any("passed" in line or "FAILED" in line for line in lines), lines


def test_a_router_that_refuses_every_request_names_the_key_in_one_line(tmp_path):
    # LiteLLM with a master key and no database answers a request without the key this way
    with serve_app_in_thread(_same_answer_app(500, '{"error":{"message":"No connected db."}}',
                                              "application/json")) as url:
        code, lines = _run(tmp_path, url)
    assert code == 2, lines
    assert len(lines) < 150 and len(lines) <= 40, "\n".join(lines)
    first = "\n".join(lines[:40])
    assert "HTTP 500 'No connected db.'" in first and "--conformance-api-key" in first, first
    assert not any(" passed" in line for line in lines), lines


def test_the_same_unexplained_error_everywhere_is_one_cause_that_points_at_the_router(tmp_path):
    with serve_app_in_thread(_same_answer_app(500, "Internal Server Error")) as url:
        code, lines = _run(tmp_path, url, "--conformance-api", "anthropic")
    assert code == 2, lines
    text = "\n".join(lines)
    assert "every request got the same error" in text and "POST /v1/messages" in text, text
    assert "/v1/chat/completions" not in text  # the one wire the user named is the one asked


def test_a_401_everywhere_is_an_authentication_cause_under_pytest_too(tmp_path):
    with serve_app_in_thread(_same_answer_app(401, '{"error":"invalid x-api-key"}', "application/json")) as url:
        proc = subprocess.run([sys.executable, "-m", "pytest", f"--target={url}", f"--conformance-captures={SMALL}",
                               "-p", "no:cacheprovider"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = (proc.stdout + proc.stderr).splitlines()
    assert proc.returncode == 2, lines
    assert len(lines) <= 40 and any("refused the credentials" in line for line in lines), lines


def test_a_plain_web_server_is_no_llm_api(tmp_path):
    (tmp_path / "index.html").write_text("<html><body>hello</body></html>")
    with _plain_web_server(tmp_path) as url:
        code, lines = _run(tmp_path, url)
    assert code == 2, lines
    assert len(lines) <= 40 and any("serves no model API" in line for line in lines), lines


def _cause_for(url: str, **settings) -> object:
    return check_target(SuiteSession(SuiteConfig.resolve({"target": url, **settings})))


def test_a_working_engine_or_router_is_never_stopped(engine_url):
    assert _cause_for(engine_url) is None
    with serve_router_in_thread(engine_url) as router_url:
        assert _cause_for(router_url) is None


def test_a_target_with_no_model_list_but_one_working_wire_goes_on(engine_url):
    # /v1/models missing and two wires missing: the chat wire answers, so the tests judge the rest
    async def handler(request: web.Request) -> web.Response:
        if request.path == "/v1/chat/completions":
            return web.json_response({"id": "c", "object": "chat.completion", "model": "m", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]})
        return web.Response(status=404, text="not found")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    with serve_app_in_thread(app) as url:
        assert _cause_for(url) is None


@pytest.mark.parametrize("status", [404, 400])
def test_an_unknown_model_everywhere_names_the_model_options(status):
    body = '{"error":{"message":"model \\"nope\\" not found"}}'
    with serve_app_in_thread(_same_answer_app(status, body, "application/json")) as url:
        cause = _cause_for(url)
    assert cause is not None and cause.kind == "unknown model", cause
    assert "--conformance-model" in cause.line() and "--conformance-model-map" in cause.line()


def test_a_router_that_lists_models_but_refuses_every_generation_has_no_passing_test(tmp_path):
    # the pre-flight lets it through (GET /v1/models answers); every test then gets the same 500:
    # no test passes on "could not tell", and the one cause leads the output
    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "x"}]})

    async def refuse(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "No connected db."}}, status=500)

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_route("*", "/{tail:.*}", refuse)
    with serve_app_in_thread(app) as url:
        code, lines = _run(tmp_path, url, "-k", "test_replay or test_protocol")
    assert code == 1, lines
    summary_line = lines[-1] if lines else ""
    assert "failed" in summary_line and " passed" not in summary_line, summary_line
    first = "\n".join(lines[:40])
    assert "root cause" in first and "HTTP 500 'No connected db.'" in first and "--conformance-api-key" in first, first
    # each failure the cause explains points at it instead of repeating a feature-specific guess;
    # what stays a block of its own is the error envelope's finding (a 500 body in no wire's shape)
    assert sum(line.startswith("root cause 1 (above)") for line in lines) >= 9, lines
    guesses = [line for line in lines if "likely cause:" in line]
    assert guesses and all("error body" in line or "error envelope" in line for line in guesses), guesses
