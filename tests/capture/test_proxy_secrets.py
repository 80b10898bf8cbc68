"""The recording proxy and secrets known by their name or given in the upstream URL: query
parameters and JSON fields named like credentials, `token=` in response text, and upstream
userinfo, which becomes the upstream's Basic credentials and is never stored or printed."""

from __future__ import annotations

import base64
import json

import httpx
from aiohttp import web

from conformance.capture.format import load_capture
from conformance.capture.proxy import CaptureRecorder, CaseInfo, serve_proxy_in_thread
from conformance.core import secrets

PLANTED = {"key": "qs-key-PLANTED-1", "access_token": "qs-access-PLANTED-2", "token": "qs-token-PLANTED-3"}
BODY = {"model": "m", "api_key": "body-apikey-PLANTED-4", "password": "body-password-PLANTED-5",
        "nested": {"secret": "body-secret-PLANTED-6"}, "max_tokens": 7, "messages": []}
RESPONSE_TOKEN = "resp-token-PLANTED-7"
USER, PASSWORD = "proxyuser", "up-PASS-PLANTED-8"


def recording_upstream(seen: list) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        seen.append({"headers": dict(request.headers), "query": request.query_string, "body": await request.read()})
        text = f'{{"next": "https://cdn.example/x?token={RESPONSE_TOKEN}&size=1"}}'
        return web.Response(text=text, content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def test_named_secrets_in_query_body_and_response_text_are_redacted(tmp_path, serve_app):
    seen: list = []
    path = tmp_path / "named.json"
    rec = CaptureRecorder(CaseInfo("named"), path)
    with serve_app(recording_upstream(seen)) as upstream, serve_proxy_in_thread(upstream, rec) as proxy:
        r = httpx.post(proxy + "/v1/messages", params={**PLANTED, "beta": "true"}, json=BODY, timeout=10)
        assert r.status_code == 200 and RESPONSE_TOKEN in r.text  # the client gets the real bytes
    assert seen[0]["query"].count("PLANTED") == 3 and json.loads(seen[0]["body"]) == BODY  # so does the upstream
    written = path.read_text(encoding="utf-8")
    assert "PLANTED" not in written
    ex = load_capture(path).exchanges[0]
    assert ex.request.query == ("key=<redacted:key>&access_token=<redacted:access_token>&token=<redacted:token>"
                                "&beta=true")
    assert ex.request.body["api_key"] == "<redacted:api_key>" and ex.request.body["max_tokens"] == 7
    assert ex.request.body["nested"] == {"secret": "<redacted:secret>"}
    assert b"token=<redacted:token>&size=1" in ex.response.body()


def test_upstream_credentials_are_sent_as_basic_auth_and_never_stored(tmp_path, serve_app):
    seen: list = []
    path = tmp_path / "creds.json"
    rec = CaptureRecorder(CaseInfo("creds", meta={"upstream": "see the capture command"}), path)
    logged: list[str] = []
    with serve_app(recording_upstream(seen)) as upstream:
        with_creds = upstream.replace("http://", f"http://{USER}:{PASSWORD}@")
        secrets.register(urls={"upstream": with_creds})
        try:
            with serve_proxy_in_thread(with_creds, rec, log=logged.append) as proxy:
                # a client that sends its own Authorization: used to get HTTP 500 and no record
                r = httpx.post(proxy + "/v1/messages", json={"model": "m"}, timeout=10,
                               headers={"Authorization": "Bearer client-bearer-1234", "x-api-key": "client-key-1"})
                plain = httpx.post(proxy + "/v1/models", timeout=10)
        finally:
            secrets.register()
    assert r.status_code == 200 and plain.status_code == 200
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert [s["headers"].get("Authorization") for s in seen] == [basic, basic]
    assert seen[0]["headers"]["x-api-key"] == "client-key-1"  # the rest goes up unchanged
    written = path.read_text(encoding="utf-8")
    assert PASSWORD not in written and basic.split()[1] not in written and PASSWORD not in "".join(logged)
    cap = load_capture(path)
    assert len(cap.exchanges) == 2
    assert cap.exchanges[0].request.headers["authorization"] == "Bearer <redacted:token>"  # as the client sent it


def test_the_capture_command_never_stores_or_prints_the_upstream_credentials(tmp_path, serve_app):
    """`conformance capture --upstream http://user:pass@host`: meta.upstream, the file and the console."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    seen: list = []
    repo = Path(__file__).resolve().parents[2]
    with serve_app(recording_upstream(seen)) as upstream:
        with_creds = upstream.replace("http://", f"http://{USER}:{PASSWORD}@")
        proc = subprocess.Popen(
            [sys.executable, "-m", "conformance.cli", "capture", "--upstream", with_creds, "--out", str(tmp_path),
             "--label", "creds"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(repo) + os.pathsep + os.environ.get("PYTHONPATH", "")})
        try:
            proxy = proc.stdout.readline().split()[-1]
            r = httpx.post(proxy + "/v1/messages", json={"model": "m"}, headers={"Authorization": "Bearer c-1234"},
                           timeout=10)
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
    assert r.status_code == 200 and seen[0]["headers"]["Authorization"].startswith("Basic ")
    cap = load_capture(tmp_path / "creds.json")
    assert cap.meta["upstream"] == upstream and len(cap.exchanges) == 1
    basic = seen[0]["headers"]["Authorization"].split()[1]
    for text in ((tmp_path / "creds.json").read_text(encoding="utf-8"), out, err):
        assert PASSWORD not in text and basic not in text
    assert "forwarding to " + upstream in err
