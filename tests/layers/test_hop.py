"""Building the hop: the forwarded request found in an engine's received log (read through the
client wire's Dialect), the engine wire told by the path, the log fetched with a deadline."""

from __future__ import annotations

import json

from conformance.layers.hop import (
    PROBE_WIRE,
    find_forwarded,
    log_total,
    observe_hop,
    probe_requests,
    received_log,
)
from conformance.layers.minimal import minimal_openai_request
from conformance.net.client import serialize
from conformance.net.target import Target
from conformance.net.transport import Deadlines
from conformance.wire import ANTHROPIC, CHAT, RESPONSES
from conformance.wire.registry import dialect_for_path

TURN1 = probe_requests("m")["turn1"]
TURN2 = probe_requests("m")["turn2"]


def test_find_forwarded_tells_the_turns_of_one_loop_apart():
    entries = [{"seq": 0, "method": "POST", "path": "/v1/chat/completions", "body": minimal_openai_request(TURN1)},
               {"seq": 1, "method": "POST", "path": "/v1/chat/completions", "body": minimal_openai_request(TURN2)},
               {"seq": 2, "method": "GET", "path": "/v1/models", "body": None}]
    assert find_forwarded(entries, TURN2, wire=ANTHROPIC)["seq"] == 1
    later_turn1 = dict(entries[0], seq=3)
    assert find_forwarded(entries + [later_turn1], TURN2, wire=ANTHROPIC)["seq"] == 1  # the newer turn-1 request is not it
    assert find_forwarded(entries, TURN1, since=2, wire=ANTHROPIC) is None


def test_find_forwarded_reads_a_responses_client_through_its_dialect():
    """The user's text and the last call output of a Responses request are found in what a router
    sent on (here a chat translation of the same conversation)."""
    client = {"model": "m", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the files"}]},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"cmd\": \"ls\"}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.txt b.txt"}]}
    first = {"model": "m", "messages": [{"role": "user", "content": "list the files"}]}
    second = dict(first, messages=first["messages"] + [{"role": "tool", "tool_call_id": "c1", "content": "a.txt b.txt"}])
    entries = [{"seq": 0, "path": "/v1/chat/completions", "body": second},
               {"seq": 1, "path": "/v1/chat/completions", "body": first}]
    assert find_forwarded(entries, client, wire=RESPONSES)["seq"] == 0  # the one holding its last item
    assert find_forwarded(entries, dict(client, input="list the files"), wire=RESPONSES)["seq"] == 1


def test_only_requests_on_a_generation_path_are_a_hop_and_each_has_its_wire():
    body = minimal_openai_request(TURN1)
    for path, wire in (("/v1/messages", ANTHROPIC), ("/v1/chat/completions", CHAT), ("/openai/v1/responses", RESPONSES),
                       ("/chat/completions?x=1", CHAT)):
        assert dialect_for_path(path) is wire
        assert find_forwarded([{"seq": 0, "path": path, "body": body}], TURN1, wire=ANTHROPIC) is not None, path
    for path in ("/v1/models", "/v1/messages/count_tokens", "/_conformance/received"):
        assert find_forwarded([{"seq": 0, "path": path, "body": body}], TURN1, wire=ANTHROPIC) is None, path
    assert dialect_for_path("/v1/models") is None


def test_the_hop_is_built_from_the_engines_received_log(engine_url):
    assert PROBE_WIRE is ANTHROPIC
    since = log_total(engine_url)
    forwarded = minimal_openai_request(dict(TURN1, model="reference-model"))
    raw = Target(engine_url, "k", Deadlines(5, 30, 60)).send_sync(CHAT, CHAT.generation_path, serialize(forwarded))
    assert raw.ok, raw
    assert received_log(engine_url)["total"] == since + 1
    hop, report = observe_hop(engine_url, TURN1, None, client_wire=ANTHROPIC, since=since)
    assert hop is not None and hop.engine_wire is CHAT and hop.client_wire is ANTHROPIC and not hop.exact
    assert hop.engine_request == forwarded and hop.engine_response is not None  # replayed on the engine
    assert report.engine_path == "/v1/chat/completions" and not report.errors, report.format()
    assert json.dumps(report.details())  # what the results record carries


def test_no_log_and_no_forwarded_request_are_said():
    hop, report = observe_hop("http://127.0.0.1:9", TURN1, None, client_wire=ANTHROPIC, since=0)
    assert hop is None and "no /_conformance/received log" in report.note
    assert received_log("http://127.0.0.1:9") is None and log_total("http://127.0.0.1:9") is None


def test_nothing_forwarded_is_said(engine_url):
    hop, report = observe_hop(engine_url, TURN2, None, client_wire=ANTHROPIC, since=log_total(engine_url))
    assert hop is None and "the router answered itself" in report.note
