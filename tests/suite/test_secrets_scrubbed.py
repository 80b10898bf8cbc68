"""No known secret in any byte the suite writes: a real loopback target that echoes every
credential it receives (the key, the Basic credential of the target URL's userinfo, the value
of a key environment variable) in its 401 body and in a response header, run with the key and a
`--target` with userinfo; then every file under the report folder, junit.xml and the console
output are searched for each secret in every spelling."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

import pytest
from aiohttp import web
from loopback import serve_app_in_thread

from conformance.plugin import SUITE_DIR

SMALL = Path(__file__).resolve().parent / "small"
# the default run's test files that send to the target (the opt-in areas need real clients or take long)
SUITE_TESTS = ("test_replay.py", "test_protocol.py", "test_loop.py")
KEY = "sk-echoed-SECRET-key-7f3a9c"
USER = "alice"
PASSWORD = "PASS-word-9d81"
ENV_NAME = "CONFORMANCE_SCRUB_TEST_TOKEN"
ENV_VALUE = "env-token-SECRET-4c2e"


def echoing_app() -> web.Application:
    """Every generation route answers 401 and echoes what it was sent: the headers' credentials
    and the environment key, in the body (JSON error) and in a header. The model list answers
    (echoing them in a header too), as a router that checks keys only on generations does, so the
    run's pre-flight lets the tests go on and each test records its 401s."""

    async def handle(request: web.Request) -> web.Response:
        seen = " ".join(request.headers.get(h, "") for h in ("x-api-key", "authorization"))
        if request.method == "GET" and request.path.rstrip("/").endswith("/models"):
            return web.json_response({"object": "list", "data": [{"id": "echo-model", "object": "model"}]},
                                     headers={"x-echo-credentials": seen, "x-echo-env": ENV_VALUE})
        text = f"invalid credentials: {seen} (also known: {ENV_VALUE}; user {USER}:{PASSWORD})"
        body = json.dumps({"type": "error", "error": {"type": "authentication_error", "message": text}})
        return web.Response(status=401, text=body, content_type="application/json",
                            headers={"x-echo-credentials": seen, "x-echo-env": ENV_VALUE})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def spellings(value: str) -> set[bytes]:
    return {value.encode(), json.dumps(value)[1:-1].encode(), quote(value, safe="").encode()}


def test_no_secret_in_any_written_byte(pytester, suite, monkeypatch):
    monkeypatch.setenv(ENV_NAME, ENV_VALUE)
    with serve_app_in_thread(echoing_app()) as url:
        target = url.replace("http://", f"http://{USER}:{PASSWORD}@")
        run = suite(pytester, target, *(str(SUITE_DIR / t) for t in SUITE_TESTS), "--conformance-api=auto",
                    f"--conformance-api-key={KEY}", "--junitxml=junit.xml", "-rA", captures=SMALL / "claude-code")
    console = (run.outcome.stdout.str() + run.outcome.stderr.str()).encode()
    assert run.outcome.ret != 0, "a target refusing every request must fail the run"
    failures = run.report_dir / "failures"
    assert failures.is_dir() and any(failures.rglob("*.response.raw")), "the 401 answers must be recorded"
    written = {p: p.read_bytes() for p in [*run.report_dir.rglob("*"), pytester.path / "junit.xml"] if p.is_file()}
    assert {"summary.md", "report.html", "junit.xml", "run.json", "failure.txt", "curl.sh"} <= {p.name for p in written}
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    secrets = {KEY, PASSWORD, ENV_VALUE, basic, f"{USER}:{PASSWORD}"}
    sources = {str(p.relative_to(pytester.path)): data for p, data in written.items()} | {"console": console}
    leaks = sorted({(name, s) for name, data in sources.items() for s in secrets
                    for spelled in spellings(s) if spelled in data})
    assert not leaks, leaks
    # the placeholders say what was there
    everything = b"".join(written.values())
    assert b"<redacted:api-key>" in everything and b"<redacted:env:" + ENV_NAME.encode() + b">" in everything
    assert b"<redacted:target-" in everything


@pytest.mark.parametrize("cut", [3, 10, 20])
def test_a_secret_cut_across_chunks_is_found(cut):
    from conformance.core.secrets import Scrubber

    scrubber = Scrubber({"api-key": KEY})
    data = f"before {KEY} after".encode()
    chunks = [(0.0, data[:cut]), (0.1, data[cut:cut + 9]), (0.2, data[cut + 9:])]
    out = scrubber.chunks(chunks)
    assert len(out) == 3 and [t for t, _ in out] == [0.0, 0.1, 0.2]
    assert b"".join(d for _t, d in out) == b"before <redacted:api-key> after"


def test_a_scrubbed_skip_report_keeps_the_shape_pytest_relies_on():
    from _pytest.reports import TestReport

    from conformance.core import secrets
    from conformance.suite.hooks import scrub_report

    secrets.register(api_key=KEY)
    try:
        skip = TestReport("t.py::x", ("t.py", 1, "x"), {}, "skipped", ("t.py", 3, f"Skipped: said {KEY}"), "call",
                          sections=[("Captured stdout call", f"key {KEY}")])
        scrub_report(skip)
    finally:
        secrets.register()
    assert skip.longrepr == ("t.py", 3, "Skipped: said <redacted:api-key>")
    assert skip.sections == [("Captured stdout call", "key <redacted:api-key>")]
