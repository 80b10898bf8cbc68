"""The Responses wire judge (conformance/wire/responses/): valid streams pass — the reference
engine's and hand-built ones of every item kind —, each mutation is caught by its check id, any
split of the bytes gives the same verdict, and nothing a target sends makes the judge raise."""

from __future__ import annotations

import copy
import json

import httpx
import pytest
import responses_streams as rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.cli import main
from conformance.engine.launch import serve_engine_in_thread
from conformance.wire import RESPONSES
from conformance.wire.responses import grammar as responses
from conformance.wire.responses import rules

VALID = rs.valid_streams()


def _raw(name: str) -> bytes:
    events, _ = VALID[name]
    return rs.encode(events, start=1 if name == "sequence-from-one" else 0)


def _errors(report) -> list[str]:
    return sorted({v.check_id for v in report.violations if v.is_error})


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_hand_built_streams_pass(name):
    report = responses.check_stream(_raw(name), request=VALID[name][1])
    assert _errors(report) == [], [v.message for v in report.violations]
    assert report.complete
    warnings = [v for v in report.violations if v.severity == "warning"]
    assert warnings == [], [v.message for v in warnings]
    # the accumulated output is the stream's items, in order
    events = VALID[name][0]
    assert report.message["output"] == events[-1]["response"]["output"]


def test_unknown_events_are_noted_not_failed():
    report = responses.check_stream(_raw("unknown-events-and-fields"))
    assert [v.check_id for v in report.violations] == [rules.UNKNOWN]
    assert report.violations[0].severity == "info"


def test_a_done_sentinel_and_null_optional_fields_are_tolerated():
    """What LiteLLM's /v1/responses sends (a chat-style `data: [DONE]` after response.completed,
    `namespace: null` on a function_call): the openai SDK and Codex both read it, so at most a
    warning, never an error."""
    name = sorted(VALID)[0]
    events = copy.deepcopy(VALID[name][0])
    for ev in events:
        item = ev.get("item")
        if isinstance(item, dict):
            item["namespace"] = None
    for item in events[-1]["response"]["output"]:
        item["namespace"] = None
    raw = rs.encode(events) + b"data: [DONE]\n\n"
    report = responses.check_stream(raw, request=VALID[name][1])
    assert _errors(report) == [], [v.message for v in report.violations]
    assert [(v.check_id, v.severity) for v in report.violations] == [(rules.SCHEMA, "warning")]
    assert "[DONE]" in report.violations[0].message


# ----------------------------------------------------------------------------- the reference engine
ENGINE_REQUESTS = {
    "text": {"input": "say hi"},
    "reasoning": {"input": "say hi", "reasoning": {"effort": "low"}},
    "tool-call": {"input": [{"role": "user", "content": "read the file a.txt"}], "tool_choice": "required",
                  "tools": [{"type": "function", "name": "read",
                             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]},
    "capped": {"input": "write a long story about the sea", "max_output_tokens": 5},
}


@pytest.fixture(scope="module")
def engine_bodies():
    out = {}
    with serve_engine_in_thread() as url:
        for name, extra in ENGINE_REQUESTS.items():
            for stream in (True, False):
                body = {"model": "conformance-model", "stream": stream, **extra}
                r = httpx.post(url + "/v1/responses", json=body, timeout=30)
                out[(name, stream)] = (body, r.status_code, r.content)
        bad = httpx.post(url + "/v1/responses", json={"model": "m", "input": "x", "max_output_tokens": "many"},
                         timeout=30)
        out["error"] = (None, bad.status_code, bad.content)
    return out


@pytest.mark.parametrize("name", sorted(ENGINE_REQUESTS))
def test_reference_engine_streams_and_responses_pass(engine_bodies, name):
    body, status, raw = engine_bodies[(name, True)]
    assert status == 200
    report = responses.check_stream(raw, request=body)
    assert report.violations == [], [v.message for v in report.violations]
    nbody, nstatus, nraw = engine_bodies[(name, False)]
    message, found = responses.check_response(nraw, request=nbody)
    assert nstatus == 200 and found == []
    # stream and non-stream accumulate to the same answer, read the same by the Dialect
    assert RESPONSES.text(message) == RESPONSES.text(report.message)
    assert RESPONSES.stop_reason(message) == RESPONSES.stop_reason(report.message)
    assert [c.name for c in RESPONSES.tool_calls(message)] == [c.name for c in RESPONSES.tool_calls(report.message)]


def test_reference_engine_error_envelope_passes(engine_bodies):
    _, status, raw = engine_bodies["error"]
    assert status == 400 and responses.check_error(status, raw) == []
    assert [v.check_id for v in responses.check_error(400, b"<html>oops</html>")] == [rules.ENVELOPE]
    assert [v.check_id for v in responses.check_error(200, raw)] == [rules.ENVELOPE]


def test_dialect_reads_the_engine_answers(engine_bodies):
    _, _, raw = engine_bodies[("tool-call", True)]
    msg = responses.check_stream(raw).message
    [call] = RESPONSES.tool_calls(msg)
    assert call.kind == "function" and call.name == "read" and isinstance(call.arguments, dict)
    assert RESPONSES.stop_reason(msg) == "tool_call" and RESPONSES.anthropic_stop(msg) == "tool_use"
    _, _, raw = engine_bodies[("capped", True)]
    msg = responses.check_stream(raw).message
    assert RESPONSES.cut_reason(msg) == "max_output_tokens"
    _, _, raw = engine_bodies[("reasoning", True)]
    assert RESPONSES.thinking(responses.check_stream(raw).message)


# ----------------------------------------------------------------------------- mutations
def _events(name: str = "reasoning-then-exec") -> list[dict]:
    return copy.deepcopy(VALID[name][0])


def _find(events: list[dict], etype: str, nth: int = 0) -> int:
    return [i for i, e in enumerate(events) if e["type"] == etype][nth]


def _drop_terminal(evs):
    return evs[:-1], None


def _skip_sequence_number(evs):
    return None, rs.encode(evs[:5]) + rs.encode(evs[5:], start=6)


def _alter_done_text(evs):
    i = _find(evs, "response.function_call_arguments.done")
    evs[i]["arguments"] = json.dumps({"cmd": "rm -rf /"})
    return evs, None


def _alter_summary_done(evs):
    i = _find(evs, "response.reasoning_summary_text.done")
    evs[i]["text"] = "Something else entirely."
    return evs, None


def _duplicate_output_index(evs):
    i = _find(evs, "response.output_item.added", 1)
    for e in evs[i:]:
        if e.get("output_index") == 1:
            e["output_index"] = 0
    return evs, None


def _delta_for_unknown_item(evs):
    i = _find(evs, "response.function_call_arguments.delta")
    evs[i]["item_id"] = "fc_never_added"
    return evs, None


def _delta_after_item_done(evs):
    i = _find(evs, "response.output_item.done", 1)
    delta = copy.deepcopy(evs[_find(evs, "response.function_call_arguments.delta")])
    evs.insert(i + 1, delta)
    return evs, None


def _item_never_done(evs):
    i = _find(evs, "response.output_item.done", 1)
    del evs[i]
    evs[-1]["response"]["output"] = evs[-1]["response"]["output"][:1]
    return evs, None


def _event_before_created(evs):
    evs.insert(0, evs.pop(2))
    return evs, None


def _event_after_terminal(evs):
    evs.append(copy.deepcopy(evs[-1]))
    return evs, None


def _final_output_differs(evs):
    evs[-1]["response"]["output"][1]["arguments"] = json.dumps({"cmd": "other"})
    return evs, None


def _final_output_empty(evs):
    evs[-1]["response"]["output"] = []
    return evs, None


def _status_contradicts_event(evs):
    evs[-1]["response"]["status"] = "incomplete"
    return evs, None


def _usage_inconsistent(evs):
    evs[-1]["response"]["usage"]["total_tokens"] += 17
    return evs, None


def _usage_fields_missing(evs):
    del evs[-1]["response"]["usage"]["total_tokens"]
    return evs, None


def _call_without_call_id(evs):
    i = _find(evs, "response.output_item.added", 1)
    del evs[i]["item"]["call_id"]
    return evs, None


def _message_delta_on_call(evs):
    i = _find(evs, "response.function_call_arguments.delta")
    evs[i] = {"type": "response.output_text.delta", "item_id": evs[i]["item_id"], "output_index": 1,
              "content_index": 0, "delta": "x", "logprobs": []}
    return evs, None


def _not_json(evs):
    raw = rs.encode(evs)
    return None, raw.replace(b"data: {", b"data: {{", 1)


def _identity_changed(evs):
    evs[-1]["response"]["id"] = "resp_other"
    return evs, None


def _failed(evs):
    evs[-1]["type"] = "response.failed"
    evs[-1]["response"]["status"] = "failed"
    evs[-1]["response"]["error"] = {"code": "server_error", "message": "boom"}
    return evs, None


def _error_event(evs):
    return evs[:-1] + [{"type": "error", "code": "server_error", "message": "overloaded", "param": None}], None


def _text_part_index_gap(evs):
    evs = _events("text")
    for e in evs:
        if e.get("content_index") == 0:
            e["content_index"] = 1
    return evs, None


MUTATIONS = {
    "drop-terminal": (_drop_terminal, rules.TERMINAL),
    "skip-a-sequence-number": (_skip_sequence_number, rules.SEQUENCE),
    "alter-done-arguments": (_alter_done_text, rules.DONE_TEXT),
    "alter-done-summary": (_alter_summary_done, rules.DONE_TEXT),
    "duplicate-output-index": (_duplicate_output_index, rules.INDEX),
    "delta-for-unknown-item": (_delta_for_unknown_item, rules.ITEM_OPEN),
    "delta-after-item-done": (_delta_after_item_done, rules.ITEM_OPEN),
    "item-never-done": (_item_never_done, rules.ITEM_OPEN),
    "event-before-created": (_event_before_created, rules.GRAMMAR),
    "event-after-terminal": (_event_after_terminal, rules.GRAMMAR),
    "response-identity-changed": (_identity_changed, rules.GRAMMAR),
    "text-delta-on-a-function-call": (_message_delta_on_call, rules.GRAMMAR),
    "final-output-differs": (_final_output_differs, rules.OUTPUT),
    "final-output-empty": (_final_output_empty, rules.OUTPUT),
    "status-contradicts-event": (_status_contradicts_event, rules.STATUS),
    "usage-inconsistent": (_usage_inconsistent, rules.USAGE),
    "usage-fields-missing": (_usage_fields_missing, rules.SCHEMA),
    "call-without-call-id": (_call_without_call_id, rules.SCHEMA),
    "not-json": (_not_json, rules.SCHEMA),
    "response-failed": (_failed, rules.FAILED),
    "error-event": (_error_event, rules.FAILED),
    "message-part-index-gap": (_text_part_index_gap, rules.INDEX),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_mutation_is_caught_by_its_id(name):
    mutate, check_id = MUTATIONS[name]
    evs, raw = mutate(_events())
    raw = raw if raw is not None else rs.encode(evs)
    report = responses.check_stream(raw)
    assert check_id in _errors(report), [(v.check_id, v.message) for v in report.violations]


def test_a_sequence_gap_is_one_violation_with_the_count():
    evs = _events()
    raw = rs.encode(evs[:4]) + rs.encode(evs[4:], start=6)
    found = [v for v in responses.check_stream(raw).violations]
    assert [v.check_id for v in found] == [rules.SEQUENCE]
    assert "2 event(s) missing" in found[0].message and found[0].where.event_index == 5  # events count from 1


@pytest.mark.parametrize("mutation, check_id", [
    ("output-index-gap", rules.INDEX), ("no-sequence-numbers", rules.SEQUENCE),
    ("reasoning-delta-without-part", rules.ITEM_OPEN), ("done-without-deltas", rules.DONE_TEXT),
    ("incomplete-without-reason", rules.STATUS), ("no-usage", rules.USAGE),
])
def test_what_clients_tolerate_is_a_warning(mutation, check_id):
    evs = _events()
    numbered = True
    if mutation == "output-index-gap":
        for e in evs:
            if e.get("output_index") == 1:
                e["output_index"] = 2
        evs[-1]["response"]["output"] = evs[-1]["response"]["output"]
    elif mutation == "no-sequence-numbers":
        numbered = False
    elif mutation == "reasoning-delta-without-part":
        evs = [e for e in evs if e["type"] not in ("response.reasoning_summary_part.added",
                                                   "response.reasoning_summary_part.done")]
    elif mutation == "done-without-deltas":
        evs = [e for e in evs if e["type"] != "response.function_call_arguments.delta"]
    elif mutation == "incomplete-without-reason":
        evs[-1]["type"] = "response.incomplete"
        evs[-1]["response"]["status"] = "incomplete"
    elif mutation == "no-usage":
        evs[-1]["response"]["usage"] = None
    report = responses.check_stream(rs.encode(evs, numbered=numbered))
    assert _errors(report) == [], [(v.check_id, v.message) for v in report.violations if v.is_error]
    assert check_id in {v.check_id for v in report.violations if v.severity == "warning"}


def test_a_cut_stream_keeps_what_was_streamed():
    evs = _events("text")
    cut = evs[:_find(evs, "response.output_text.done")]
    report = responses.check_stream(rs.encode(cut))
    assert _errors(report) == [rules.TERMINAL] and not report.complete
    assert RESPONSES.text(report.message) == "Hello there, friend."


@pytest.mark.parametrize("index", [-1, -2, -7])
def test_a_negative_part_index_is_a_schema_error_not_a_crash(index):
    """A negative content_index names no part: the schema reports it, the done item's parts are
    not read from the end (Python's negative indexing), and a cut stream keeps its parts as sent."""
    evs = _events("text")
    for e in evs:
        if "content_index" in e:
            e["content_index"] = index
    report = responses.check_stream(rs.encode(evs))
    assert rules.SCHEMA in _errors(report)
    assert [v.message for v in report.violations if v.check_id == rules.DONE_TEXT] == [
        f"the done item has no content[{index}], which was streamed"]
    cut = responses.check_stream(rs.encode(evs[:_find(evs, "response.output_text.done")]))
    assert rules.TERMINAL in _errors(cut)
    assert cut.message["output"][0]["content"] == []


def test_custom_tool_input_is_raw_text_and_namespace_kept_apart():
    msg = responses.check_stream(_raw("apply-patch-freeform")).message
    [call] = RESPONSES.tool_calls(msg)
    assert (call.kind, call.raw, call.arguments, call.parse_error) == ("custom", rs.PATCH, None, None)
    msg = responses.check_stream(_raw("namespaced-call")).message
    [call] = RESPONSES.tool_calls(msg)
    assert (call.name, call.namespace, call.arguments) == ("spawn_agent", "multi_agent_v1", {"task": "x"})


def test_non_stream_response_rules():
    ok = VALID["text"][0][-1]["response"]
    message, found = responses.check_response(json.dumps(ok).encode())
    assert found == [] and RESPONSES.text(message) == "Hello there, friend."
    bad = dict(ok, usage=dict(ok["usage"], total_tokens=1))
    assert [v.check_id for v in responses.check_response(json.dumps(bad))[1]] == [rules.RESPONSE_USAGE]
    assert [v.check_id for v in responses.check_response(b"<html>")[1]] == [rules.RESPONSE_SCHEMA]
    no_id = {k: v for k, v in ok.items() if k != "id"}
    assert rules.RESPONSE_SCHEMA in {v.check_id for v in responses.check_response(json.dumps(no_id))[1]}


def test_content_started():
    raw = _raw("text")
    cut = raw.index(b"response.output_text.delta")
    assert not responses.content_started(raw[:cut - 7])
    assert responses.content_started(raw)
    assert responses.content_started(b'{"error": {"message": "x"}}')


# ----------------------------------------------------------------------------- chunking and robustness
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(VALID) + sorted(MUTATIONS)), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_any_split_of_the_bytes_gives_the_same_verdict(name, cuts):
    if name in VALID:
        raw = _raw(name)
    else:
        evs, raw = MUTATIONS[name][0](_events())
        raw = raw if raw is not None else rs.encode(evs)
    whole = responses.check_stream(raw)
    points = sorted({c % (len(raw) + 1) for c in cuts})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    split = responses.check_stream([(i * 0.01, p) for i, p in enumerate(pieces)])
    assert [(v.check_id, v.message) for v in split.violations] == [(v.check_id, v.message) for v in whole.violations]
    assert split.message == whole.message


TYPES = st.sampled_from([
    "response.created", "response.in_progress", "response.completed", "response.incomplete", "response.failed",
    "response.output_item.added", "response.output_item.done", "response.content_part.added",
    "response.output_text.delta", "response.output_text.done", "response.function_call_arguments.delta",
    "response.custom_tool_call_input.done", "response.reasoning_summary_text.delta", "error", "x"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=6) | TYPES,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "sequence_number", "item_id", "output_index", "content_index", "summary_index",
                         "item", "response", "delta", "text", "arguments", "input", "part", "id", "status",
                         "output", "usage", "content", "summary"]), children, max_size=5),
    max_leaves=20)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TYPES, JSON), max_size=10))
def test_arbitrary_events_never_raise(evs):
    events = []
    for etype, payload in evs:
        if isinstance(payload, dict):
            payload = {"type": etype, **payload}
        events.append(f"data: {json.dumps(payload)}\n\n")
    raw = "".join(events).encode()
    report = responses.check_stream(raw, request={"max_output_tokens": 3})
    assert isinstance(report.violations, list)
    responses.check_response(raw)
    responses.content_started(raw)
    if report.message is not None:
        RESPONSES.text(report.message)
        RESPONSES.tool_calls(report.message)
        RESPONSES.stop_reason(report.message)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(raw):
    responses.check_stream(raw)
    responses.check_response(raw)
    responses.check_error(500, raw)
    responses.content_started(raw)


# ----------------------------------------------------------------------------- check-stream
def test_check_stream_judges_saved_responses_bodies(tmp_path, capsys):
    good, cut = tmp_path / "good.sse", tmp_path / "cut.sse"
    good.write_bytes(_raw("apply-patch-freeform"))
    cut.write_bytes(rs.encode(_events()[:-1]))
    assert main(["check-stream", str(good), "--protocol", "responses"]) == 0
    assert "ok:" in capsys.readouterr().out
    assert main(["check-stream", str(cut), "--protocol", "responses", "--json"]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["protocol"] == "responses" and not verdict["complete"]
    assert [v["check_id"] for v in verdict["violations"]] == [rules.TERMINAL]
    body = tmp_path / "response.json"
    body.write_text(json.dumps(VALID["text"][0][-1]["response"]))
    assert main(["check-stream", str(body), "--protocol", "responses"]) == 0
    err = tmp_path / "error.json"
    err.write_text('{"detail": "nope"}')
    assert main(["check-stream", str(err), "--protocol", "responses", "--status", "400"]) == 1
    assert rules.ENVELOPE in capsys.readouterr().out


def test_a_part_of_the_output_or_input_larger_than_the_whole_is_a_warning():
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
             "output_tokens_details": {"reasoning_tokens": 6}, "input_tokens_details": {"cached_tokens": 11}}
    found = rules.usage_problems(usage, rules.RESPONSE_USAGE, "/usage")
    assert [(v.severity, v.where.pointer, v.seen) for v in found] == [
        ("warning", "/usage/output_tokens_details/reasoning_tokens", "6"),
        ("warning", "/usage/input_tokens_details/cached_tokens", "11")]
    assert found[0].message == "reasoning_tokens 6 exceed output_tokens 5 (reasoning is part of the output)"
    assert found[1].message == "cached_tokens 11 exceed input_tokens 10 (cached tokens are part of the input)"
    within = {**usage, "output_tokens_details": {"reasoning_tokens": 5}, "input_tokens_details": {"cached_tokens": 10}}
    assert rules.usage_problems(within, rules.RESPONSE_USAGE, "/usage") == []
