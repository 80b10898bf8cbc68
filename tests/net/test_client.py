"""The client helpers: headers sent the way each client sends the key, the run salt, the quoted
prompt, the target URL."""

from __future__ import annotations

from conformance.net.client import headers_for, salted, target_url
from conformance.wire import ANTHROPIC, CHAT


def test_headers_sent_the_way_each_client_sends_the_key():
    captured = {"x-api-key": "<redacted:api-key>", "anthropic-beta": "a,b", "content-length": "9",
                "accept-encoding": "gzip, br", "host": "x", "x-app": "cli"}
    h = headers_for(ANTHROPIC, "sk-1", captured)
    assert h["x-api-key"] == "sk-1" and "authorization" not in h
    assert h["anthropic-beta"] == "a,b" and h["x-app"] == "cli" and h["accept-encoding"] == "identity"
    assert "content-length" not in h and "host" not in h
    bearer = headers_for(ANTHROPIC, "sk-1", {"authorization": "<redacted:bearer>"})
    assert bearer["authorization"] == "Bearer sk-1" and "x-api-key" not in bearer
    oa = headers_for(CHAT, "sk-2", {"authorization": "<redacted>", "x-session-id": "ses_1"})
    assert oa["authorization"] == "Bearer sk-2" and oa["x-session-id"] == "ses_1"
    assert "x-api-key" not in headers_for(ANTHROPIC, None, captured)


def test_salt_goes_first_and_quoted_wraps_the_prompt():
    body = {"system": [{"type": "text", "text": "You are Claude Code."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                                      {"type": "text", "text": "say hi"}]}]}
    s = salted(body, ANTHROPIC, "abc123abc123")
    assert s["system"][0]["text"].startswith("[conformance-run abc123abc123] You are Claude Code.")
    assert body["system"][0]["text"] == "You are Claude Code."  # the original is untouched
    q = ANTHROPIC.quoted(body)
    assert q["messages"][0]["content"][1]["text"] == '"say hi"'
    assert q["messages"][0]["content"][0]["text"] == "<system-reminder>x</system-reminder>"
    oa = salted({"messages": [{"role": "user", "content": "hi"}]}, CHAT, "t0")
    assert oa["messages"][0] == {"role": "system", "content": "[conformance-run t0]"}
    assert target_url("http://h:1/v1/", "/v1/messages", "beta=true") == "http://h:1/v1/messages?beta=true"
