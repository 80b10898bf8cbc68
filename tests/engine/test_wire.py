"""The conformant engine on the wire: streams and responses pass the wire core's checks, and our
own small assertions pin the engine's promises (awkward splits, pings, first partial_json "",
limits, errors, robustness)."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from conformance.wire.anthropic import grammar as anthropic_wire
from conformance.wire.chat import grammar as openai_wire

from .conftest import engine
from .helpers import CLAUDE_TOOLS, OPENAI_TOOLS, RESPONSES_TOOLS, anthropic_events, post, sse_events

CLAUDE_PROMPT = "Create a file named hello.txt whose only content is the text: hello conformance [task:write-static]"


def _a_body(**kw):
    body = {"model": "claude-x", "max_tokens": 4000, "stream": True,
            "messages": [{"role": "user", "content": [{"type": "text", "text": CLAUDE_PROMPT,
                                                       "cache_control": {"type": "ephemeral"}}]}],
            "tools": CLAUDE_TOOLS}
    body.update(kw)
    return body


def _o_body(**kw):
    body = {"model": "local/m", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "system", "content": "Working directory: /tmp/p"},
                         {"role": "user", "content": CLAUDE_PROMPT}], "tools": OPENAI_TOOLS}
    body.update(kw)
    return body


def _errors(report_or_violations):
    vs = getattr(report_or_violations, "violations", report_or_violations)
    return [v for v in vs if v.severity == "error"]


REQUESTS = {
    "tool-call": _a_body(),
    "thinking-adaptive-xhigh": _a_body(thinking={"type": "adaptive"}, output_config={"effort": "xhigh"},
                                       context_management={"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}),
    "thinking-enabled": _a_body(thinking={"type": "enabled", "budget_tokens": 2048}),
    "plain-text": _a_body(messages=[{"role": "user", "content": "hello"}], tools=[]),
    "stop-sequence": _a_body(messages=[{"role": "user", "content": "hello"}], stop_sequences=["five"]),
    "max-tokens": _a_body(messages=[{"role": "user", "content": "Write a long answer please."}], max_tokens=50),
    "parallel": _a_body(messages=[{"role": "user", "content": "Read the files left.txt and right.txt [task:parallel-reads]"}]),
}


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_anthropic_stream_passes_wire_core(engine_url, name):
    body = REQUESTS[name]
    status, headers, chunks = post(engine_url, "/v1/messages?beta=true", body)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    report = anthropic_wire.check_stream(chunks, request=body)
    assert report.complete and not _errors(report), [str(v) for v in _errors(report)]
    body2 = dict(body, stream=False)
    status, _, chunks2 = post(engine_url, "/v1/messages", body2)
    msg, violations = anthropic_wire.check_response(b"".join(chunks2), request=body2)
    assert status == 200 and not _errors(violations), [str(v) for v in violations]
    # stream and non-stream agree on content
    assert [b["type"] for b in report.message["content"]] == [b["type"] for b in msg["content"]]
    assert report.message["stop_reason"] == msg["stop_reason"]


@pytest.mark.parametrize("name", ["tool-call", "plain", "stop", "length", "reasoning"])
def test_openai_stream_passes_wire_core(engine_url, name):
    body = {"tool-call": _o_body(), "plain": _o_body(tools=None),
            "stop": _o_body(messages=[{"role": "user", "content": "hello"}], stop=["five"]),
            "length": _o_body(messages=[{"role": "user", "content": "a long answer"}], max_tokens=30),
            "reasoning": _o_body(reasoning_effort="high")}[name]
    body = {k: v for k, v in body.items() if v is not None}
    status, _, chunks = post(engine_url, "/v1/chat/completions", body)
    assert status == 200
    report = openai_wire.check_stream(chunks, request=body)
    assert report.complete and not _errors(report), [str(v) for v in _errors(report)]
    nb = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    status, _, chunks2 = post(engine_url, "/v1/chat/completions", nb)
    msg, violations = openai_wire.check_response(b"".join(chunks2), request=nb)
    assert status == 200 and not _errors(violations), [str(v) for v in violations]
    expected_finish = {"tool-call": "tool_calls", "plain": "stop", "stop": "stop", "length": "length",
                       "reasoning": "tool_calls"}[name]
    assert report.message["finish_reason"] == expected_finish == msg["finish_reason"]


def test_stream_is_split_awkwardly_with_pings(engine_url):
    status, _, chunks = post(engine_url, "/v1/messages", _a_body(thinking={"type": "adaptive"}))
    data = b"".join(chunks)
    events = anthropic_events(data)
    types = [e["type"] for e in events]
    assert types[0] == "message_start" and types[1] == "ping" and types.count("ping") >= 2
    tool_start = next(i for i, e in enumerate(events) if e["type"] == "content_block_start"
                      and e["content_block"]["type"] == "tool_use")
    assert events[tool_start]["content_block"]["input"] == {}
    jd = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"
          and e["delta"]["type"] == "input_json_delta"]
    assert jd[0] == "" and len(jd) > 5 and json.loads("".join(jd))["content"] == "hello conformance\n"
    sig = [e for e in events if e["type"] == "content_block_delta" and e["delta"]["type"] == "signature_delta"]
    assert len(sig) == 1 and sig[0]["delta"]["signature"]
    # bytes were written in many pieces that split lines and events
    assert len(chunks) > 20
    assert any(not c.endswith(b"\n\n") for c in chunks)


def test_stop_sequence_honoured(engine_url):
    body = _a_body(messages=[{"role": "user", "content": "hi"}], stream=False, stop_sequences=["seven", "four"])
    _, _, chunks = post(engine_url, "/v1/messages", body)
    msg = json.loads(b"".join(chunks))
    assert msg["stop_reason"] == "stop_sequence" and msg["stop_sequence"] == "four"
    assert msg["content"][0]["text"].endswith("three ")
    status, _, chunks = post(engine_url, "/v1/chat/completions",
                             {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stop": "four"})
    out = json.loads(b"".join(chunks))
    assert out["choices"][0]["finish_reason"] == "stop" and "four" not in out["choices"][0]["message"]["content"]


def test_max_tokens_honoured_and_usage(engine_url):
    body = _a_body(messages=[{"role": "user", "content": "Please write a long essay."}], max_tokens=40, stream=False)
    msg = json.loads(b"".join(post(engine_url, "/v1/messages", body)[2]))
    assert msg["stop_reason"] == "max_tokens" and msg["usage"]["output_tokens"] == 40
    events = anthropic_events(b"".join(post(engine_url, "/v1/messages", dict(body, stream=True))[2]))
    start = events[0]["message"]["usage"]
    end = [e for e in events if e["type"] == "message_delta"][0]
    assert end["delta"] == {"stop_reason": "max_tokens", "stop_sequence": None}
    assert end["usage"]["input_tokens"] == start["input_tokens"] and end["usage"]["output_tokens"] == 40


def test_needle_recall(engine_url):
    filler = " ".join(f"Line {i} of filler." for i in range(300))
    prompt = f'The secret phrase is "violet harbor 42". {filler}\nWhat is the secret phrase?'
    msg = json.loads(b"".join(post(engine_url, "/v1/messages", {"model": "m", "max_tokens": 200,
                                                                 "messages": [{"role": "user", "content": prompt}]})[2]))
    assert msg["content"][0]["text"] == "The secret phrase is violet harbor 42."


def test_count_tokens_matches_usage(engine_url):
    body = {"model": "m", "messages": [{"role": "user", "content": "hello there 123"}], "tools": CLAUDE_TOOLS}
    status, _, chunks = post(engine_url, "/v1/messages/count_tokens?beta=true", body)
    n = json.loads(b"".join(chunks))["input_tokens"]
    msg = json.loads(b"".join(post(engine_url, "/v1/messages", dict(body, max_tokens=100))[2]))
    assert status == 200 and n == msg["usage"]["input_tokens"] > 0


def test_thinking_without_signature_refused(engine_url):
    msgs = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "x"}]},
            {"role": "user", "content": "again"}]
    status, _, chunks = post(engine_url, "/v1/messages", {"model": "m", "max_tokens": 100, "messages": msgs})
    body = b"".join(chunks)
    assert status == 400 and b"signature" in body and not anthropic_wire.check_error(status, body)


@pytest.mark.parametrize("body, needle", [
    ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
    ({"model": "m", "max_tokens": 5, "messages": "nope"}, "messages"),
    ({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_nope", "content": "x"}]}]}, "toolu_nope"),
    ({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "bogus"}]}]}, "bogus"),
])
def test_anthropic_invalid_requests(engine_url, body, needle):
    status, _, chunks = post(engine_url, "/v1/messages", body)
    data = b"".join(chunks)
    assert status == 400 and needle.encode() in data and not anthropic_wire.check_error(status, data)
    assert json.loads(data)["error"]["type"] == "invalid_request_error"


def test_openai_strictness_follows_vllm(engine_url):
    base = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for effort in ("none", "minimal", "low", "medium", "high", "xhigh", "max"):
        assert post(engine_url, "/v1/chat/completions", dict(base, reasoning_effort=effort))[0] == 200
    status, _, chunks = post(engine_url, "/v1/chat/completions", dict(base, reasoning_effort="extreme"))
    assert status == 400 and not openai_wire.check_error(status, b"".join(chunks))
    status, _, chunks = post(engine_url, "/v1/chat/completions", dict(base, messages=[
        {"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_x", "content": "r"}]))
    assert status == 400 and b"call_x" in b"".join(chunks)
    assert post(engine_url, "/v1/chat/completions", dict(base, stream_options={"include_usage": True}))[0] == 400


def test_over_limit_refused_fast():
    with engine(max_context=2000) as url:
        t0 = time.monotonic()
        status, _, chunks = post(url, "/v1/messages", {"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "word " * 3000}]})
        data = json.loads(b"".join(chunks))
        assert status == 400 and time.monotonic() - t0 < 2
        assert "2000" in data["error"]["message"] and "3007" in data["error"]["message"]
        status, _, chunks = post(url, "/v1/chat/completions", {"model": "m", "messages": [
            {"role": "user", "content": "word " * 3000}]})
        assert status == 400 and b"2000" in b"".join(chunks)
        models = httpx.get(url + "/v1/models").json()
        assert models["data"][0]["max_model_len"] == 2000


def test_models_health_and_head(engine_url):
    assert httpx.head(engine_url + "/").status_code == 200
    assert httpx.get(engine_url + "/health").status_code == 200
    m = httpx.get(engine_url + "/v1/models").json()
    assert m["data"][0]["id"] == "reference-model" and m["data"][0]["max_model_len"] == 131072


def test_received_log_redacts_secrets(engine_url):
    httpx.delete(engine_url + "/_conformance/received")
    post(engine_url, "/v1/messages?beta=true", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
         headers={"x-api-key": "sk-ant-supersecret", "authorization": "Bearer sk-other", "anthropic-beta": "a,b",
                  "content-type": "application/json"})
    got = httpx.get(engine_url + "/_conformance/received?n=1").json()["requests"][0]
    assert got["path"] == "/v1/messages?beta=true" and got["body"]["model"] == "m"
    text = json.dumps(got)
    assert "supersecret" not in text and "sk-other" not in text and got["headers"]["anthropic-beta"] == "a,b"


def test_robustness_bad_bodies_do_not_kill_the_server(engine_url):
    s, _, c = post(engine_url, "/v1/messages", None, raw=b'{"model": "m", "max_tok')
    assert s == 400 and not anthropic_wire.check_error(s, b"".join(c))
    s, _, c = post(engine_url, "/v1/chat/completions", None, raw=b"[1,2")
    assert s == 400 and not openai_wire.check_error(s, b"".join(c))
    s, _, c = post(engine_url, "/v1/messages", None, raw=b"{}", headers={"content-type": "text/plain", "x-api-key": "k"})
    assert s == 400 and not anthropic_wire.check_error(s, b"".join(c))
    big = b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"' + b"a" * (33 * 1024 * 1024) + b'"}]}'
    s, _, c = post(engine_url, "/v1/messages", None, raw=big)
    assert s == 413 and json.loads(b"".join(c))["error"]["type"] == "request_too_large"
    s, _, c = post(engine_url, "/v1/chat/completions", None, raw=big)
    assert s == 413 and "error" in json.loads(b"".join(c))
    # a client that disconnects mid-stream
    host, port = engine_url.split("//")[1].split(":")
    body = json.dumps({"model": "m", "max_tokens": 9000, "stream": True,
                       "messages": [{"role": "user", "content": "a long answer"}]}).encode()
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        sock.recv(200)
    assert httpx.get(engine_url + "/health").status_code == 200
    msg = json.loads(b"".join(post(engine_url, "/v1/messages", {"model": "m", "max_tokens": 50, "messages": [
        {"role": "user", "content": "hi"}]})[2]))
    assert msg["type"] == "message"


def test_responses_stream_grammar(engine_url):
    body = {"model": "m", "stream": True, "input": "Read the files left.txt and right.txt [task:parallel-reads]",
            "tools": RESPONSES_TOOLS, "reasoning": {"effort": "high"}}
    status, _, chunks = post(engine_url, "/v1/responses", body)
    evs = [(n, json.loads(d)) for n, d in sse_events(b"".join(chunks))]
    assert all(n == d["type"] for n, d in evs)
    assert [d["sequence_number"] for _, d in evs] == list(range(len(evs)))
    types = [d["type"] for _, d in evs]
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == "response.completed"
    assert types.count("response.output_item.added") == types.count("response.output_item.done") == 3
    assert "response.reasoning_text.delta" in types
    done = [d for _, d in evs if d["type"] == "response.function_call_arguments.done"]
    assert [json.loads(d["arguments"]) for d in done] == [{"filePath": "left.txt"}, {"filePath": "right.txt"}]
    final = evs[-1][1]["response"]
    assert final["status"] == "completed" and [o["type"] for o in final["output"]] == ["reasoning", "function_call", "function_call"]
    assert final["usage"]["total_tokens"] == final["usage"]["input_tokens"] + final["usage"]["output_tokens"]


def test_parallel_tool_use_can_be_disabled(engine_url):
    prompt = "Read the files left.txt and right.txt [task:parallel-reads]"
    a = {"model": "m", "max_tokens": 500, "tools": CLAUDE_TOOLS, "messages": [{"role": "user", "content": prompt}]}
    msg = json.loads(b"".join(post(engine_url, "/v1/messages", a)[2]))
    assert [b["type"] for b in msg["content"]] == ["tool_use", "tool_use"]
    a["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
    msg = json.loads(b"".join(post(engine_url, "/v1/messages", a)[2]))
    assert [b["type"] for b in msg["content"]] == ["tool_use"]
    o = {"model": "m", "tools": OPENAI_TOOLS, "parallel_tool_calls": False,
         "messages": [{"role": "user", "content": prompt}]}
    out = json.loads(b"".join(post(engine_url, "/v1/chat/completions", o)[2]))
    assert len(out["choices"][0]["message"]["tool_calls"]) == 1
