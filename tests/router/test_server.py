"""The reference router as a server: CLI, gateway surface, errors, and the translation report
through a real stack (reference router -> reference engine)."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx

from conformance.checks.exchange import check_exchange
from conformance.layers.hop import PROBE_WIRE, log_total, observe_hop, probe_requests
from conformance.net.transport import Deadlines, send_sync
from conformance.router.launch import serve_router_in_thread, spawn_router
from conformance.wire import CHAT

H = {"content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01"}


def _post(url, path, body):
    return send_sync("POST", url + path, headers=H, body=json.dumps(body).encode(), deadlines=Deadlines(5, 10, 20))


def test_cli_prints_its_url_and_serves(engine_url):
    with spawn_router("--upstream", engine_url, "--fault", "wrong-model") as proc:
        info = httpx.get(proc.url + "/_conformance/router", timeout=5).json()
        assert info["faults"] == ["wrong-model"] and info["upstream_api"] == "openai"
        assert info["claims"]["injection_route_strips_tools"] is True
        assert httpx.head(proc.url + "/", timeout=5).status_code == 200
    assert proc.proc.poll() is not None


def test_cli_refuses_an_unknown_fault():
    out = subprocess.run([sys.executable, "-m", "conformance.cli", "router", "--upstream", "http://127.0.0.1:9",
                          "--fault", "nope"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "known router faults" in out.stderr


def test_upstream_errors_come_back_as_anthropic_envelopes(engine_url):
    with serve_router_in_thread(engine_url) as router:
        raw = _post(router, "/v1/messages", {"model": "reference-model", "max_tokens": 10, "messages": "not a list"})
        assert raw.status == 400 and json.loads(raw.body())["type"] == "error"
        # the engine refuses max_tokens -1: status and message come back in Anthropic's envelope
        raw = _post(router, "/v1/messages", {"model": "reference-model", "max_tokens": -1, "messages": [{"role": "user", "content": "hi"}]})
        body = json.loads(raw.body())
        assert raw.status == 400 and body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        assert "max_tokens" in body["error"]["message"]
    with serve_router_in_thread("http://127.0.0.1:9") as router:  # nothing listens there
        raw = _post(router, "/v1/messages", {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]})
        assert raw.status == 500 and "unreachable" in json.loads(raw.body())["error"]["message"]


def test_translation_report_through_the_correct_stack(engine_url):
    body = probe_requests("reference-model")["turn2"]
    with serve_router_in_thread(engine_url) as router:
        since = log_total(engine_url)
        raw = _post(router, "/v1/messages", body)
        assert raw.ok
        verdict = check_exchange(raw, body, wire="anthropic")
        assert verdict.ok, verdict.violations
        hop, report = observe_hop(engine_url, body, verdict.message, client_wire=PROBE_WIRE, since=since,
                                    route=raw.response_headers.get("x-router-route"))
    assert hop is not None and hop.engine_wire is CHAT and report.engine_path == "/v1/chat/completions"
    assert not report.errors, report.format()
    text = report.format()
    assert "output_config.effort xhigh -> reasoning_effort high" in text and "lost or changed" in text
    # the engine's answer was obtained (replayed) and compared
    assert hop.engine_response is not None and hop.client_response is not None


def test_injection_route_strips_tools_unless_faulty(engine_url):
    body = probe_requests("reference-model", injection=True)["injection"]
    for faults, tools_arrive in (((), False), (("jailbreak-route-keeps-tools",), True)):
        with serve_router_in_thread(engine_url, faults=faults) as router:
            since = log_total(engine_url)
            raw = _post(router, "/v1/messages", body)
            assert raw.response_headers.get("x-router-route") == "injection"
            entries = httpx.get(engine_url + "/_conformance/received", timeout=5).json()["requests"]
            forwarded = [e for e in entries if e["seq"] >= since][-1]["body"]
            assert bool(forwarded.get("tools")) is tools_arrive
