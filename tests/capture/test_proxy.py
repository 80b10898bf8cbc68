"""The recording proxy: no buffering, byte-for-byte, secrets never on disk, disconnects recorded."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from conformance.capture.format import load_capture
from conformance.capture.proxy import CaptureRecorder, CaseInfo, serve_proxy_in_thread


def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


CHUNKS = [
    sse("message_start", {"type": "message_start", "message": {"id": "msg_1", "content": []}}),
    sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"text": "héllo"}}),
    sse("message_stop", {"type": "message_stop"}),
]

# Planted secrets and identifiers: none of these may appear in any written file.
API_KEY = "sk-ant-api03-PLANTEDsecretKEY0123456789"
BEARER = "PLANTEDbearerTOKEN9876543210"
SESSION = "5f0e7a52-1c1b-4c7e-9a55-0d4c2b8e9f11"
DEVICE = "ab" * 32
OC_SESSION = "ses_dd655b01bffeBYfRHv8L6KaVNy"
BODY_SECRET = "sk-proj-PLANTEDinBODYabcdef123456"
COOKIE = "sessionid=PLANTEDcookieVALUE42"


def _planted_body() -> dict:
    return {
        "model": "claude-opus-4-8",
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": f"my key is {BODY_SECRET} and my session {SESSION} [task:write-file]"}]}],
        "system": [{"type": "text", "text": f"cwd /home/u/.claude/projects/{SESSION}.jsonl"}],
        "metadata": {"user_id": json.dumps({"device_id": DEVICE, "account_uuid": "", "session_id": SESSION},
                                           separators=(",", ":"))},
        "stream": True,
    }


def _planted_headers() -> dict:
    return {
        "x-api-key": API_KEY,
        "authorization": f"Bearer {BEARER}",
        "cookie": COOKIE,
        "x-claude-code-session-id": SESSION,
        "x-session-id": OC_SESSION,
        "x-session-affinity": OC_SESSION,
        "user-agent": "claude-cli/2.1.197 (external, sdk-cli)",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }


def test_first_byte_reaches_client_before_upstream_finishes(slow_upstream, tmp_path):
    up, serving = slow_upstream(CHUNKS, gap=1.0)
    rec = CaptureRecorder(CaseInfo("nobuffer"), tmp_path / "nobuffer.json")
    with serving as upstream, serve_proxy_in_thread(upstream, rec) as proxy:
        start = time.monotonic()
        arrivals = []
        received = b""
        with httpx.stream("POST", proxy + "/v1/messages", json={"stream": True}, timeout=10) as r:
            for chunk in r.iter_raw():
                arrivals.append(time.monotonic() - start)
                received += chunk
        assert up.finished_at, "upstream did not finish"
        upstream_done = up.finished_at[0] - start
    # the first chunk reached the client well before the upstream finished (two gaps of 1 s later)
    assert arrivals[0] < upstream_done - 1.0, (arrivals, upstream_done)
    assert received == b"".join(CHUNKS)  # byte for byte
    cap = load_capture(tmp_path / "nobuffer.json")
    chunks = cap.exchanges[0].response.chunks
    assert b"".join(c.data for c in chunks) == b"".join(CHUNKS)
    assert len(chunks) == 3 and chunks[2].t - chunks[0].t > 1.5  # arrival times kept
    assert r.headers["content-type"] == "text/event-stream"


def test_planted_secrets_and_identifiers_never_reach_disk(slow_upstream, tmp_path):
    up, serving = slow_upstream(CHUNKS, gap=0.0)
    out = tmp_path / "out"
    rec = CaptureRecorder(CaseInfo("secrets"), out / "secrets.json")
    with serving as upstream, serve_proxy_in_thread(upstream, rec) as proxy:
        for _ in range(2):  # two requests of one session must still group together
            r = httpx.post(proxy + "/v1/messages?beta=true", headers=_planted_headers(),
                           content=json.dumps(_planted_body()).encode(), timeout=10)
            assert r.status_code == 200
    # the upstream got the real values (the proxy redacts the record, not the traffic)
    assert up.received[0]["headers"]["x-api-key"] == API_KEY
    assert json.loads(up.received[0]["body"]) == _planted_body()
    written = b"".join(p.read_bytes() for p in out.rglob("*"))
    for planted in (API_KEY, BEARER, "PLANTEDcookieVALUE42", SESSION, DEVICE, OC_SESSION, BODY_SECRET,
                    "PLANTED"):
        assert planted.encode() not in written, planted
    cap = load_capture(out / "secrets.json")
    assert cap.client == "claude-code" and cap.client_version == "2.1.197"
    e1, e2 = cap.exchanges
    h = e1.request.headers
    assert h["x-api-key"] == "<redacted:api-key>"
    assert h["authorization"] == "Bearer <redacted:token>"
    assert h["cookie"] == "<redacted:cookie>"
    assert h["anthropic-version"] == "2023-06-01"
    # consistent pseudonyms: same value -> same pseudonym across requests and places
    assert h["x-claude-code-session-id"] == e2.request.headers["x-claude-code-session-id"]
    assert h["x-session-id"] == h["x-session-affinity"] and h["x-session-id"].startswith("ses_")
    assert len(h["x-session-id"]) == len(OC_SESSION)
    uid = json.loads(e1.request.body["metadata"]["user_id"])
    assert list(uid) == ["device_id", "account_uuid", "session_id"]
    assert uid["session_id"] == h["x-claude-code-session-id"]
    assert len(uid["device_id"]) == 64 and uid["account_uuid"] == ""
    assert e1.request.body["metadata"] == e2.request.body["metadata"]
    assert h["x-claude-code-session-id"] in e1.request.body["system"][0]["text"]
    assert "[task:write-file]" in e1.request.body["messages"][0]["content"][0]["text"]
    assert e1.request.query == "beta=true"


def test_client_disconnect_mid_stream_leaves_a_valid_record(slow_upstream, tmp_path):
    up, serving = slow_upstream(CHUNKS, gap=1.0)
    path = tmp_path / "disconnect.json"
    rec = CaptureRecorder(CaseInfo("disconnect"), path)
    with serving as upstream, serve_proxy_in_thread(upstream, rec) as proxy:
        with httpx.stream("POST", proxy + "/v1/messages", json={"stream": True}, timeout=10) as r:
            first = next(r.iter_raw())
        assert first == CHUNKS[0]
        deadline = time.monotonic() + 8
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    cap = load_capture(path)
    ex = cap.exchanges[0]
    assert ex.note == "client disconnected mid-stream"
    assert ex.response.status == 200
    got = ex.response.body()
    assert got.startswith(CHUNKS[0]) and got != b"".join(CHUNKS)
    assert up.disconnected.wait(5), "the proxy did not close the upstream after the client left"


def test_upstream_breaking_mid_stream_is_recorded_and_passed_on(tmp_path, serve_app):
    import asyncio

    from aiohttp import web

    async def broken(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(CHUNKS[0])
        await asyncio.sleep(0.2)
        request.transport.close()  # the engine dies mid-answer
        return resp

    app = web.Application()
    app.router.add_post("/v1/messages", broken)
    path = tmp_path / "broken.json"
    rec = CaptureRecorder(CaseInfo("broken"), path)
    with serve_app(app) as upstream, serve_proxy_in_thread(upstream, rec) as proxy:
        got = b""
        with pytest.raises(httpx.HTTPError):  # the client sees the cut too, not a clean end
            with httpx.stream("POST", proxy + "/v1/messages", json={}, timeout=10) as r:
                for chunk in r.iter_raw():
                    got += chunk
    assert got == CHUNKS[0]
    ex = load_capture(path).exchanges[0]
    assert ex.note.startswith("upstream broke") and ex.response.body() == CHUNKS[0]


def test_redaction_of_a_chunk_split_inside_a_character():
    from conformance.capture.redact import Redactor

    data = "key sk-ant-abcdefgh123456 é".encode()[:-1]  # ends inside é
    out = Redactor().redact_bytes(data)
    assert b"sk-ant" not in out and out.endswith(b"\xc3")


def test_unreachable_upstream_answers_502_and_is_recorded(tmp_path):
    path = tmp_path / "down.json"
    rec = CaptureRecorder(CaseInfo("down"), path)
    with serve_proxy_in_thread("http://127.0.0.1:9", rec) as proxy:
        r = httpx.post(proxy + "/v1/messages", json={"x": 1}, timeout=10)
    assert r.status_code == 502
    assert r.json()["type"] == "error"
    ex = load_capture(path).exchanges[0]
    assert ex.response.status == 502 and ex.note.startswith("upstream unreachable")


@pytest.mark.parametrize("ua,expected", [
    ("claude-cli/2.1.197 (external, sdk-cli)", ("claude-code", "2.1.197")),
    ("opencode/1.18.33 ai-sdk/provider-utils/4.0.23 runtime/bun/1.3.14", ("opencode", "1.18.33")),
    ("curl/8.0", ("other", "unknown")),
])
def test_client_is_inferred_from_user_agent(ua, expected, tmp_path):
    rec = CaptureRecorder(CaseInfo("ua"), None)
    rec.record(rec.next_seq(), method="POST", path="/v1/messages", query="", headers={"user-agent": ua},
               body=b'{"messages": []}', response=None)
    cap = rec.capture()
    assert (cap.client, cap.client_version) == expected and "identification" not in cap.meta


def _tools_request(names: list[str]) -> bytes:
    tools = [{"name": n, "description": "d", "input_schema": {"type": "object"}} for n in names]
    return json.dumps({"model": "m", "system": "You are an agent.", "tools": tools,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()


def test_a_borrowed_user_agent_is_recorded_as_the_client_the_body_names(slow_upstream, tmp_path):
    """Claude Code's User-Agent and x-app, opencode's tools: the capture is opencode's, and says why.
    A probe before it (User-Agent only) does not decide; `--client` still overrides."""
    up, serving = slow_upstream(CHUNKS, gap=0.0)
    borrowed = {"user-agent": "claude-cli/0.24.4 (external, cli)", "x-app": "cli", "content-type": "application/json"}
    rec = CaptureRecorder(CaseInfo("borrowed"), tmp_path / "borrowed.json")
    with serving as upstream, serve_proxy_in_thread(upstream, rec) as proxy:
        httpx.get(proxy + "/v1/models", headers=borrowed, timeout=10)
        assert rec.capture().client == "claude-code"  # the User-Agent alone names it, until a body decides
        httpx.post(proxy + "/v1/messages", headers=borrowed, content=_tools_request(["read", "write", "edit", "bash"]),
                   timeout=10)
        httpx.post(proxy + "/v1/messages", headers=borrowed, content=_tools_request(["Read", "Bash"]), timeout=10)
    cap = load_capture(tmp_path / "borrowed.json")
    assert (cap.client, cap.client_version) == ("opencode", "unknown")  # the first body decided
    assert "sent Claude Code's User-Agent `claude-cli/0.24.4 (external, cli)`" in cap.meta["identification"]
    rec.begin_case(CaseInfo("override", client="my-client", client_version="9"), None)
    rec.record(rec.next_seq(), method="POST", path="/v1/messages", query="", headers=borrowed,
               body=_tools_request(["read", "write", "edit"]), response=None)
    cap = rec.capture()
    assert (cap.client, cap.client_version) == ("my-client", "9") and "identification" not in cap.meta


def test_an_exchange_finishing_after_its_case_ended_is_not_filed_under_the_next_case(tmp_path):
    rec = CaptureRecorder(CaseInfo("one"), tmp_path / "one.json")
    late = rec.next_seq()
    rec.begin_case(CaseInfo("two"), tmp_path / "two.json")
    kwargs = dict(method="POST", path="/v1/messages", query="", headers={}, body=b"{}", response=None)
    assert rec.record(late, **kwargs) is None
    assert rec.record(rec.next_seq(), **kwargs) is not None
    assert [c.case for c in [rec.capture()]] == ["two"] and len(rec.capture().exchanges) == 1
