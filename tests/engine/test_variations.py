"""Valid variations of the reference engine (conformance/engine/variations.py): the catalog is
sound, `conformance variations` lists it, bad names and conflicting pairs are refused, and on
every wire each variation shows on the wire as described while the wire core's judge still
accepts the stream and the answer (content, calls, stop reason) stays the default engine's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zlib
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from conformance.engine import variations as V
from conformance.engine.launch import serve_engine_in_thread
from conformance.plugin import SUITE_DIR
from conformance.wire.anthropic import grammar as anthropic_grammar
from conformance.wire.chat import grammar as chat_grammar

from .helpers import CLAUDE_TOOLS, OPENAI_TOOLS, RESPONSES_TOOLS, sse_events

PROMPT = "Read the files left.txt and right.txt [task:parallel-reads]"
ANTHROPIC_BODY = {"model": "claude-x", "max_tokens": 4000, "stream": True,
                  "thinking": {"type": "enabled", "budget_tokens": 2048},
                  "messages": [{"role": "user", "content": "Say hello in a few words please"}], "tools": CLAUDE_TOOLS}
ANTHROPIC_TOOL_BODY = dict(ANTHROPIC_BODY, messages=[{"role": "user", "content": PROMPT}])
CHAT_BODY = {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "reasoning_effort": "high",
             "messages": [{"role": "user", "content": PROMPT}], "tools": OPENAI_TOOLS}
CHAT_TEXT_BODY = dict(CHAT_BODY, messages=[{"role": "user", "content": "Say hello in a few words please"}])
RESPONSES_BODY = {"model": "m", "stream": True, "input": "Say hello in a few words please", "tools": RESPONSES_TOOLS}
PATHS = {V.ANTHROPIC: "/v1/messages", V.CHAT: "/v1/chat/completions", V.RESPONSES: "/v1/responses"}
HEADERS = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01", "content-type": "application/json",
           "authorization": "Bearer sk-test", "accept-encoding": "gzip"}


def _raw(url: str, wire: str, body: dict) -> tuple[dict, bytes, int]:
    """(response headers, decoded body bytes, number of network reads)."""
    with httpx.Client(timeout=60) as c, c.stream("POST", url + PATHS[wire], json=body, headers=HEADERS) as r:
        chunks = list(r.iter_raw())
        headers = dict(r.headers)
    data = b"".join(chunks)
    if headers.get("content-encoding") == "gzip":
        data = zlib.decompressobj(31).decompress(data)
    return headers, data, len(chunks)


def _accumulate(wire: str, data: bytes, body: dict):
    """The wire core's verdict on the stream: (message, error texts)."""
    judge = anthropic_grammar if wire == V.ANTHROPIC else chat_grammar
    report = judge.check_stream([data], request=body)
    return report.message, [str(v) for v in report.violations if v.severity == "error"]


def _essence(wire: str, message: dict) -> object:
    """What a variation must not change: text, tool calls, stop reason."""
    if wire == V.ANTHROPIC:
        text = "".join(b.get("text", "") for b in message["content"] if b["type"] == "text")
        calls = [(b["name"], b["input"]) for b in message["content"] if b["type"] == "tool_use"]
        return text, calls, message["stop_reason"]
    m = message
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []]
    return m.get("content") or "", calls, m.get("finish_reason")


# ---- the catalog

def test_catalog_is_sound():
    for name, v in V.VARIATIONS.items():
        assert v.description and v.source and v.wires and set(v.wires) <= set(V.ALL_WIRES), name
        for other in v.excludes:
            assert other in V.VARIATIONS and other != name, (name, other)
    assert V.validate(V.COMPATIBLE) == frozenset(V.COMPATIBLE)
    assert V.conflicts(V.COMPATIBLE) == []
    # every variation left out of the compatible set conflicts with one in it
    for name in set(V.VARIATIONS) - set(V.COMPATIBLE):
        assert V.conflicts((*V.COMPATIBLE, name)), name


def test_validate_names_bad_names_and_conflicts():
    with pytest.raises(V.UnknownVariation, match="unknown variation name.*nope.*conformance variations"):
        V.validate(["nope"])
    with pytest.raises(V.UnknownVariation, match="instant \\+ slow"):
        V.validate(["slow", "instant"])


def test_cli_lists_variations_and_refuses_bad_ones():
    out = subprocess.run([sys.executable, "-m", "conformance.cli", "variations", "--json"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    listed = json.loads(out)
    assert set(listed["variations"]) == set(V.VARIATIONS) and listed["compatible"] == list(V.COMPATIBLE)
    assert listed["variations"]["crlf"]["excludes"] == ["cr"]
    text = subprocess.run([sys.executable, "-m", "conformance.cli", "variations"],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    assert all(name in text for name in V.VARIATIONS) and "compatible at once:" in text
    for args, needle in ((["--variation", "nope"], "unknown variation"),
                         (["--variation", "cr", "--variation", "crlf"], "cr + crlf")):
        p = subprocess.run([sys.executable, "-m", "conformance.cli", "engine", "--port", "0", *args],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and needle in p.stderr, p.stderr


# ---- on the wire

@pytest.fixture(scope="module")
def plain():
    """The default engine's answers, to compare against."""
    with serve_engine_in_thread() as url:
        yield {(w, k): _accumulate(w, _raw(url, w, b)[1], b)[0]
               for w, k, b in ((V.ANTHROPIC, "text", ANTHROPIC_BODY), (V.ANTHROPIC, "tools", ANTHROPIC_TOOL_BODY),
                               (V.CHAT, "tools", CHAT_BODY), (V.CHAT, "text", CHAT_TEXT_BODY))}


CASES = [(w, k, b) for w, k, b in ((V.ANTHROPIC, "text", ANTHROPIC_BODY), (V.ANTHROPIC, "tools", ANTHROPIC_TOOL_BODY),
                                   (V.CHAT, "tools", CHAT_BODY), (V.CHAT, "text", CHAT_TEXT_BODY))]
FAST = [n for n in V.VARIATIONS if n != "slow"]
# The compatible set (all but slow) in the default run; each variation alone in the slow step.
ONE_BY_ONE = [pytest.param("compatible-without-slow"), *(pytest.param(n, marks=pytest.mark.slow) for n in FAST)]


@pytest.mark.parametrize("name", ONE_BY_ONE)
def test_variation_keeps_the_answer_and_the_judge_green(plain, name):
    names = tuple(n for n in V.COMPATIBLE if n != "slow") if name == "compatible-without-slow" else (name,)
    with serve_engine_in_thread(variations=names) as url:
        for wire, kind, body in CASES:
            _headers, data, _reads = _raw(url, wire, body)
            message, errors = _accumulate(wire, data, body)
            assert not errors, (name, wire, kind, errors)
            assert _essence(wire, message) == _essence(wire, plain[(wire, kind)]), (name, wire, kind)


def _variation(name: str, wire: str, body: dict):
    with serve_engine_in_thread(variations=[name]) as url:
        return _raw(url, wire, body)


def test_line_endings():
    _, data, _ = _variation("crlf", V.ANTHROPIC, ANTHROPIC_BODY)
    assert b"\r\n\r\n" in data and data.count(b"\n") == data.count(b"\r\n")
    _, data, _ = _variation("cr", V.CHAT, CHAT_BODY)
    assert b"\n" not in data and b"\r\r" in data


def test_gzip_only_when_accepted_and_still_incremental():
    headers, data, reads = _variation("gzip", V.ANTHROPIC, ANTHROPIC_BODY)
    assert headers["content-encoding"] == "gzip" and b"message_stop" in data and reads > 3
    plain_body = {k: v for k, v in CHAT_BODY.items() if k not in ("stream", "stream_options")}
    with serve_engine_in_thread(variations=["gzip"]) as url:
        r = httpx.post(url + "/v1/chat/completions", json=plain_body,
                       headers={**HEADERS, "accept-encoding": "identity"})
        assert "content-encoding" not in r.headers and r.json()["object"] == "chat.completion"
        r = httpx.post(url + "/v1/chat/completions", json=plain_body, headers=HEADERS)
        assert r.headers["content-encoding"] == "gzip" and r.json()["object"] == "chat.completion"


def test_comments_retry_pings_and_unknown_events():
    _, data, _ = _variation("sse-comments-retry", V.CHAT, CHAT_BODY)
    assert data.startswith(b"retry: 3000\ndata: {") and b"\n: variation comment\n" in data
    _, data, _ = _variation("pings-everywhere", V.ANTHROPIC, ANTHROPIC_BODY)
    names = [n for n, _ in sse_events(data)]
    assert all("ping" in (names[i], names[i + 1]) for i in range(1, len(names) - 1))
    _, data, _ = _variation("pings-everywhere", V.CHAT, CHAT_BODY)
    assert data.count(b": ping\n\n") >= data.count(b"data: ") - 1
    _, data, _ = _variation("unknown-events", V.ANTHROPIC, ANTHROPIC_BODY)
    assert b"event: vendor_event\n" in data
    _, data, _ = _variation("unknown-events", V.RESPONSES, RESPONSES_BODY)
    assert b"event: response.vendor_event\n" in data and b"response.completed" in data


def test_unknown_fields_everywhere_but_tool_inputs():
    _, data, _ = _variation("unknown-fields", V.ANTHROPIC, ANTHROPIC_TOOL_BODY)
    events = [json.loads(d) for _, d in sse_events(data)]
    assert all(V.UNKNOWN_FIELD in e for e in events)
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert all(V.UNKNOWN_FIELD in b for b in starts)
    assert [b["input"] for b in starts if b["type"] == "tool_use"] == [{}, {}]
    with serve_engine_in_thread(variations=["unknown-fields"]) as url:
        r = httpx.post(url + "/v1/messages", json=dict(ANTHROPIC_BODY, stream=False), headers=HEADERS)
        assert V.UNKNOWN_FIELD in r.json() and V.UNKNOWN_FIELD in r.json()["usage"]


def test_write_boundaries():
    _, data, reads = _variation("one-byte-writes", V.CHAT, CHAT_TEXT_BODY)
    assert b"data: [DONE]" in data and reads > 50
    # split-utf8 ends writes inside multi-byte characters: seen here with the non-ASCII unknown
    # field; the bytes still decode as a whole.
    with serve_engine_in_thread(variations=["split-utf8", "unknown-fields"]) as url:
        with httpx.Client(timeout=30) as c, c.stream("POST", url + "/v1/messages", json=ANTHROPIC_BODY,
                                                     headers={**HEADERS, "accept-encoding": "identity"}) as r:
            data = b"".join(r.iter_raw())
    assert "✓".encode() in data and data.decode("utf-8")


def test_connection_close():
    headers, _, _ = _variation("connection-close", V.ANTHROPIC, ANTHROPIC_BODY)
    assert headers.get("connection", "").lower() == "close"
    headers, _, _ = _variation("gzip", V.ANTHROPIC, ANTHROPIC_BODY)
    assert headers.get("connection", "keep-alive").lower() == "keep-alive"


def test_content_variations_anthropic():
    _, data, _ = _variation("several-text-blocks", V.ANTHROPIC, ANTHROPIC_BODY)
    message, _ = _accumulate(V.ANTHROPIC, data, ANTHROPIC_BODY)
    assert [b["type"] for b in message["content"]].count("text") == 2
    _, data, _ = _variation("empty-text-deltas", V.ANTHROPIC, ANTHROPIC_BODY)
    deltas = [json.loads(d)["delta"] for n, d in sse_events(data) if n == "content_block_delta"]
    assert {"type": "text_delta", "text": ""} in deltas
    _, data, _ = _variation("thinking-omitted", V.ANTHROPIC, ANTHROPIC_BODY)
    message, _ = _accumulate(V.ANTHROPIC, data, ANTHROPIC_BODY)
    thinking = message["content"][0]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "" and thinking["signature"]
    _, data, _ = _variation("usage-without-cache", V.ANTHROPIC, ANTHROPIC_BODY)
    usage = [json.loads(d)["usage"] for n, d in sse_events(data) if n == "message_delta"][0]
    assert set(usage) == {"input_tokens", "output_tokens"}
    _, data, _ = _variation("usage-with-cache", V.ANTHROPIC, ANTHROPIC_BODY)
    usage = [json.loads(d)["usage"] for n, d in sse_events(data) if n == "message_delta"][0]
    assert "cache_creation" in usage and "cache_read_input_tokens" in usage
    headers, data, _ = _variation("other-id-formats", V.ANTHROPIC, ANTHROPIC_TOOL_BODY)
    message, _ = _accumulate(V.ANTHROPIC, data, ANTHROPIC_TOOL_BODY)
    assert message["id"].startswith("msg_bdrk_01") and "request-id" not in headers
    assert all(b["id"].startswith("toolu_bdrk_01") for b in message["content"] if b["type"] == "tool_use")


def test_content_variations_openai():
    _, data, _ = _variation("other-id-formats", V.CHAT, CHAT_BODY)
    chunks = [json.loads(d) for _, d in sse_events(data) if d != "[DONE]"]
    assert chunks[0]["id"].startswith("chatcmpl-") and len(chunks[0]["id"]) == len("chatcmpl-") + 32
    call_ids = [tc["id"] for c in chunks for ch in c["choices"] for tc in ch["delta"].get("tool_calls") or [] if "id" in tc]
    assert call_ids and all(i.startswith("chatcmpl-tool-") for i in call_ids)
    _, data, _ = _variation("usage-with-cache", V.CHAT, CHAT_BODY)
    usage = [json.loads(d)["usage"] for _, d in sse_events(data) if d != "[DONE]" and json.loads(d).get("usage")][0]
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0, "audio_tokens": 0}
    _, data, _ = _variation("empty-text-deltas", V.CHAT, CHAT_TEXT_BODY)
    deltas = [c["choices"][0]["delta"] for c in (json.loads(d) for _, d in sse_events(data) if d != "[DONE]") if c["choices"]]
    assert deltas.count({"content": ""}) >= 3
    _, data, _ = _variation("several-text-blocks", V.RESPONSES, RESPONSES_BODY)
    final = [json.loads(d) for n, d in sse_events(data) if n == "response.completed"][0]["response"]
    assert [len(o["content"]) for o in final["output"] if o["type"] == "message"] == [2]
    _, data, _ = _variation("usage-without-cache", V.RESPONSES, RESPONSES_BODY)
    final = [json.loads(d) for n, d in sse_events(data) if n == "response.completed"][0]["response"]
    assert "input_tokens_details" not in final["usage"]


def test_instant_is_one_burst_and_slow_waits_with_pings():
    with serve_engine_in_thread(variations=["instant"]) as url:
        t0 = time.monotonic()
        _, data, reads = _raw(url, V.ANTHROPIC, ANTHROPIC_BODY)
        assert time.monotonic() - t0 < 1.0 and reads <= 3 and b"message_stop" in data
    with serve_engine_in_thread(variations=["slow"]) as url:
        t0 = time.monotonic()
        _, data, _ = _raw(url, V.CHAT, CHAT_TEXT_BODY)
        elapsed = time.monotonic() - t0
    assert elapsed >= V.SLOW_GAPS * V.SLOW_GAP_SECONDS * 0.95
    assert data.count(b": ping\n\n") >= V.SLOW_GAPS * (V.SLOW_GAP_SECONDS / V.SLOW_PING_SECONDS - 1)


def test_conformance_run_passes_variations_to_the_embedded_engine(tmp_path):
    small = Path(__file__).resolve().parents[1] / "suite" / "small"
    run = [sys.executable, "-m", "conformance.cli", "run"]
    p = subprocess.run([*run, "--variation", "instant", "--variation", "crlf", f"--conformance-captures={small}",
                        str(SUITE_DIR / "test_replay.py") + "::test_stream_incremental", "-p", "no:cacheprovider"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "--variation instant --variation crlf" in (tmp_path / "reports" / "summary.md").read_text()
    p = subprocess.run([*run, "--variation", "nope"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "unknown variation" in p.stderr
    p = subprocess.run([*run, "--target", "http://127.0.0.1:1", "--variation", "instant"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "--variation" in p.stderr


# ---- through the official SDKs (what the real clients are built on)

def _sdk_answers(url: str) -> dict:
    out = {}
    a = anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0)
    body = {k: v for k, v in ANTHROPIC_TOOL_BODY.items() if k != "stream"}
    with a.messages.stream(**body) as s:
        m = s.get_final_message()
    out["anthropic"] = [(b.type, getattr(b, "text", None), getattr(b, "input", None)) for b in m.content
                        if b.type != "thinking"], m.stop_reason
    o = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
    text, args, finish = "", {}, None
    body = {k: v for k, v in CHAT_BODY.items() if k != "stream"}
    for chunk in o.chat.completions.create(stream=True, **body):
        for ch in chunk.choices:
            text += ch.delta.content or ""
            for tc in ch.delta.tool_calls or []:
                args[tc.index] = args.get(tc.index, "") + (tc.function.arguments or "")
            finish = ch.finish_reason or finish
    out["chat"] = text, args, finish
    final = None
    for ev in o.responses.create(stream=True, **{k: v for k, v in RESPONSES_BODY.items() if k != "stream"}):
        if ev.type == "response.completed":
            final = ev.response
    out["responses"] = final.output_text, [o.type for o in final.output]
    return out


@pytest.fixture(scope="module")
def sdk_plain():
    with serve_engine_in_thread() as url:
        yield _sdk_answers(url)


@pytest.mark.parametrize("name", ONE_BY_ONE)
def test_the_official_sdks_read_every_variation_alike(sdk_plain, name):
    """anthropic and openai (chat and Responses) accumulate the same answer under each variation."""
    names = tuple(n for n in V.COMPATIBLE if n != "slow") if name == "compatible-without-slow" else (name,)
    with serve_engine_in_thread(variations=names) as url:
        got = _sdk_answers(url)
    if "several-text-blocks" in names:  # the same text, in two blocks
        joined = "".join(t for typ, t, _ in got["anthropic"][0] if typ == "text")
        assert joined == "".join(t for typ, t, _ in sdk_plain["anthropic"][0] if typ == "text")
        got["anthropic"], sdk_plain = None, {**sdk_plain, "anthropic": None}
    assert got == sdk_plain, name
