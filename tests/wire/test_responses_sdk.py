"""The official openai SDK as the independent cross-check of the Responses judge: every stream the
judge calls valid (hand-built fixtures and the reference engine's), served over loopback HTTP, is
accepted by `client.responses.create(stream=True)` and `client.responses.stream(...)`, and the SDK's
final Response holds the same output our accumulator built. A stream the SDK's stream state
rejects (a content event before its item, a duplicate output_index, an unfinished item at
completion) is an error of ours too.

Entry points, read from the installed package (openai 3.x): `Responses.create(stream=True)` ->
`Stream[ResponseStreamEvent]`; `Responses.stream()` -> `ResponseStreamManager`, whose
`get_final_response()` runs `lib/streaming/responses/_responses.py::ResponseStreamState`.
"""

from __future__ import annotations

import copy
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import openai
import pytest
import responses_streams as rs

from conformance.engine.launch import serve_engine_in_thread
from conformance.wire.responses import grammar as responses
from conformance.wire.responses import rules

VALID = rs.valid_streams()


class _Serve:
    """A loopback HTTP server answering POST /v1/responses with the bytes of `self.body`."""

    def __init__(self) -> None:
        outer = self
        self.body = b""

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def served():
    with _Serve() as s:
        yield s


def _client(url: str):
    return openai.OpenAI(base_url=url, api_key="sk-conformance", max_retries=0, timeout=10)


def _comparable(items: list) -> list[dict]:
    out = []
    for item in items:
        d = item if isinstance(item, dict) else item.to_dict()
        entry = {k: d.get(k) for k in ("type", "id", "call_id", "name", "namespace", "arguments", "input")}
        for slot in ("content", "summary"):
            entry[slot] = [p.get("text") or p.get("refusal") for p in d.get(slot) or []]
        out.append(entry)
    return out


def _sdk_final(served, raw: bytes):
    """The event types `create(stream=True)` yields and the final Response: `get_final_response()`
    of `stream()` for a completed response (the helper only completes on response.completed),
    else the terminal event's response as `stream()` hands it over."""
    served.body = raw
    client = _client(served.url)
    types = [ev.type for ev in client.responses.create(model="m", input="hi", stream=True)]
    with client.responses.stream(model="m", input="hi") as stream:
        last = None
        for ev in stream:
            last = ev
        if last is not None and last.type in ("response.incomplete", "response.failed"):
            return types, last.response
        final = stream.get_final_response()
    return types, final


@pytest.mark.parametrize("name", sorted(VALID))
def test_the_sdk_accepts_every_valid_fixture_and_accumulates_the_same_output(served, name):
    raw = rs.encode(VALID[name][0], start=1 if name == "sequence-from-one" else 0)
    ours = responses.check_stream(raw)
    assert not ours.errors
    types, final = _sdk_final(served, raw)
    assert types[0] == "response.created" and types[-1] == "response." + ours.message["status"]
    assert _comparable(final.output) == _comparable(ours.message["output"])
    assert final.status == ours.message["status"]


ENGINE_REQUESTS = {
    "text": {"input": "say hi"},
    "reasoning": {"input": "say hi", "reasoning": {"effort": "low"}},
    "tool-call": {"input": [{"role": "user", "content": "read the file a.txt"}], "tool_choice": "required",
                  "tools": [{"type": "function", "name": "read",
                             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]},
    "capped": {"input": "write a long story about the sea", "max_output_tokens": 5},
}


def test_the_sdk_accepts_the_reference_engine_streams(served):
    with serve_engine_in_thread() as url:
        for name, extra in ENGINE_REQUESTS.items():
            raw = httpx.post(url + "/v1/responses", json={"model": "m", "stream": True, **extra}, timeout=30).content
            ours = responses.check_stream(raw)
            assert ours.violations == [], name
            _types, final = _sdk_final(served, raw)
            assert _comparable(final.output) == _comparable(ours.message["output"]), name


def _events():
    return copy.deepcopy(VALID["reasoning-then-exec"][0])


def _before_item(evs):
    i = [k for k, e in enumerate(evs) if e["type"] == "response.function_call_arguments.delta"][0]
    evs[i]["output_index"] = 7
    evs[i]["item_id"] = "fc_never_added"
    return evs


def _duplicate_index(evs):
    for k, e in enumerate(evs):
        if e["type"] == "response.output_item.added" and e["output_index"] == 1:
            evs[k]["output_index"] = 0
    return evs


def _unfinished(evs):
    k = [k for k, e in enumerate(evs) if e["type"] == "response.output_item.done"][1]
    del evs[k]
    evs[-1]["response"]["output"] = evs[-1]["response"]["output"][:1]
    return evs


def _identity(evs):
    evs[-1]["response"]["id"] = "resp_other"
    return evs


@pytest.mark.parametrize("mutate, check_id", [
    (_before_item, rules.ITEM_OPEN), (_duplicate_index, rules.INDEX), (_unfinished, rules.ITEM_OPEN),
    (_identity, rules.GRAMMAR),
], ids=["content-before-item", "duplicate-output-index", "unfinished-item", "response-identity-changed"])
def test_what_the_sdk_rejects_is_an_error_of_ours(served, mutate, check_id):
    raw = rs.encode(mutate(_events()))
    assert check_id in {v.check_id for v in responses.check_stream(raw).errors}
    with pytest.raises(RuntimeError):
        _sdk_final(served, raw)
