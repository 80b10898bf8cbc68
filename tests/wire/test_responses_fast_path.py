"""The Responses stream machine's fast path (conformance/wire/responses/stream.py, "the fast
path") against its general path (`StreamMachine(fast=False)`): the same violations (every field,
in order), message, payloads and completeness on every stream.

Exhaustively, every way the delta the fast path would take can differ from the run before it
(each field set to each odd value, 1 as 1.0 or true included), every event that ends the run's
text, part, item or stream arriving inside the run, an item numbered oddly throughout, a run for
the wrong item kind: each guard of the fast path is needed by one of these. By property: valid
streams edited at random (fields, events duplicated, dropped, swapped, renumbered, replaced by
non-objects) and random runs of events over a small vocabulary of ids and indices."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import responses_streams as rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.wire.base import judge_stream, schema_path
from conformance.wire.responses import stream as machine
from conformance.wire.responses.rules import ITEM_EVENTS, SCHEMA_OF
from conformance.wire.sse import SSEDecoder

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DELTAS = sorted(t for t, spec in ITEM_EVENTS.items() if spec.action == "delta")
MISSING = "<missing>"  # a field value that removes the field
# the field's own value as another JSON type that Python finds equal: 1 -> 1.0, 0 / 1 -> False / True
AS_FLOAT, AS_BOOL = "<as float>", "<as bool>"
ODD = [0, 1, 2, -1, True, False, 1.0, "0", "x", "", None, [], {}, {"id": "resp_x"}, MISSING, AS_FLOAT, AS_BOOL,
       AS_FLOAT, AS_BOOL]
FIELDS = ["type", "sequence_number", "item_id", "output_index", "content_index", "summary_index", "delta",
          "response"]
NOT_OBJECTS = ["[DONE]", "not json", "[1]", '"text"', "{"]
REQUEST = {"model": "conformance-model", "stream": True, "input": "hi", "max_output_tokens": 50}


def long_stream(words: int = 25) -> list[dict]:
    """Every kind of delta run, one delta per character: summary, reasoning text, message text,
    refusal, arguments, input."""
    words = " ".join(f"w{i}" for i in range(words))
    refusal = {"id": "msg_refusal01", "type": "message", "status": "completed", "role": "assistant",
               "content": [{"type": "refusal", "refusal": words}]}
    events = rs.stream_events([rs.reasoning(words, text=words), rs.message(words, "msg_fixture0002"), refusal,
                               rs.function_call("read", json.dumps({"path": words})),
                               rs.custom_call("apply_patch", rs.PATCH + words)])
    return [piece for ev in events for piece in _per_character(ev)]


def _per_character(ev: dict) -> list[dict]:
    return [dict(ev, delta=c) for c in ev["delta"]] if ev["type"].endswith(".delta") else [ev]


STREAMS = [long_stream()] + [evs for evs, _ in rs.valid_streams().values()]


def numbered(events: list[dict], start: int = 0) -> list[Any]:
    return [{"type": e["type"], "sequence_number": start + n,
             **{k: v for k, v in e.items() if k not in ("type", "sequence_number")}}
            for n, e in enumerate(events)]


def encode(events: list[Any]) -> bytes:
    """An event is a dict (its data; `event:` named by a string type) or the raw text of its data."""
    out = []
    for ev in events:
        if isinstance(ev, str):
            out.append(f"data: {ev}\n\n")
        else:
            name = f"event: {ev['type']}\n" if isinstance(ev.get("type"), str) else ""
            out.append(f"{name}data: {json.dumps(ev, separators=(',', ':'))}\n\n")
    return "".join(out).encode()


def judged_both_ways(raw: bytes):
    fast = judge_stream(SSEDecoder(), machine.StreamMachine(REQUEST), raw)
    general = judge_stream(SSEDecoder(), machine.StreamMachine(REQUEST, fast=False), raw)
    assert [v.to_dict() for v in fast.violations] == [v.to_dict() for v in general.violations]
    assert fast.message == general.message
    assert fast.payloads == general.payloads
    assert (fast.complete, len(fast.events)) == (general.complete, len(general.events))
    return fast


def set_field(ev: dict, field: str, value: Any) -> None:
    current = ev.get(field)
    if value == MISSING:
        ev.pop(field, None)
    elif value == AS_FLOAT:
        if type(current) is int:
            ev[field] = float(current)
    elif value == AS_BOOL:
        if type(current) is int and current in (0, 1):
            ev[field] = bool(current)
    else:
        ev[field] = copy.deepcopy(value)


def edit(events: list[Any], op: str, at: int, field: str, value: Any) -> None:
    at %= len(events)
    if op == "set" and isinstance(events[at], dict):
        set_field(events[at], field, value)
    elif op == "duplicate":
        events.insert(at, copy.deepcopy(events[at]))
    elif op == "drop" and len(events) > 1:
        del events[at]
    elif op == "swap" and at + 1 < len(events):
        events[at], events[at + 1] = events[at + 1], events[at]
    elif op == "not-an-object":
        events.insert(at, value if isinstance(value, str) and value in NOT_OBJECTS else "[DONE]")
    elif op == "renumber":  # the events from here numbered again from `value`, when it is an int
        start = value if type(value) is int else 0
        for n, ev in enumerate(events[at:]):
            if isinstance(ev, dict):
                ev["sequence_number"] = start + n


EDITS = st.lists(st.tuples(st.sampled_from(["set", "set", "set", "duplicate", "drop", "swap", "not-an-object",
                                             "renumber"]),
                           st.integers(0, 10_000), st.sampled_from(FIELDS),
                           st.sampled_from(ODD + NOT_OBJECTS + DELTAS + ["fc_fixture0001", "msg_fixture0001"])),
                 min_size=1, max_size=5)


@PROPERTY
@given(which=st.integers(0, len(STREAMS) - 1), edits=EDITS)
def test_edited_valid_streams_are_judged_the_same_by_both_paths(which, edits):
    events = numbered(copy.deepcopy(STREAMS[which]))
    for op, at, field, value in edits:
        edit(events, op, at, field, value)
    judged_both_ways(encode(events))


SHORT = numbered(long_stream(3))
SECOND_DELTAS = [n for n, ev in enumerate(SHORT) if ev["type"].endswith(".delta") and SHORT[n - 1]["type"] == ev["type"]
                 and SHORT[n - 2]["type"] != ev["type"]]


@pytest.mark.parametrize("field", ["type", "sequence_number", "item_id", "output_index", "content_index",
                                   "summary_index", "delta", "response", "logprobs"])
def test_a_delta_run_broken_at_its_second_delta_is_judged_the_same_by_both_paths(field):
    """Every odd value of every field, on the delta the fast path would take, in every kind of run."""
    assert len(SECOND_DELTAS) == 6
    for at in SECOND_DELTAS:
        for value in ODD:
            events = copy.deepcopy(SHORT)
            set_field(events[at], field, value)
            if encode(events) != encode(SHORT):  # (1.0 == 1 and True == 1: compared as JSON)
                judged_both_ways(encode(events))


UNNUMBERED = long_stream(3)
FIRST_DELTAS = [n for n, ev in enumerate(UNNUMBERED)
                if ev["type"].endswith(".delta") and UNNUMBERED[n - 1]["type"] != ev["type"]]


def _of_item(ev: dict, iid: str) -> bool:
    return ev.get("item_id") == iid or (isinstance(ev.get("item"), dict) and ev["item"].get("id") == iid)


def test_a_delta_run_after_its_part_item_or_stream_ended_is_judged_the_same_by_both_paths():
    """Each event that ends the run's text, part or item, or the stream, moved (or copied) to
    just after the run's first delta: the deltas after it break a rule the fast path must not
    skip."""
    assert len(FIRST_DELTAS) == 6
    for first in FIRST_DELTAS:
        iid = UNNUMBERED[first]["item_id"]
        for n, ev in enumerate(UNNUMBERED[first + 1:], first + 1):
            if ev["type"].endswith(".delta") or not (_of_item(ev, iid) or "response" in ev):
                continue
            moved = UNNUMBERED[:first + 1] + [ev] + UNNUMBERED[first + 1:n] + UNNUMBERED[n + 1:]
            copied = UNNUMBERED[:first + 1] + [ev] + UNNUMBERED[first + 1:]
            for events in (moved, copied):
                judged_both_ways(encode(numbered(copy.deepcopy(events))))


@pytest.mark.parametrize("value", [-1, -2, 4, True, False, 1.0, 0.5, "0", None])
def test_an_item_numbered_oddly_throughout_is_judged_the_same_by_both_paths(value):
    """An odd output_index or part index on every event of one item, or on every delta of a run
    only (so the runs stay runs), and a stream numbered from below zero."""
    for first in FIRST_DELTAS:
        iid = UNNUMBERED[first]["item_id"]
        for field in ("output_index", "content_index", "summary_index"):
            for on_deltas_only in (False, True):
                events = copy.deepcopy(UNNUMBERED)
                for ev in events:
                    if _of_item(ev, iid) and field in ev and (ev["type"].endswith(".delta") or not on_deltas_only):
                        ev[field] = value
                judged_both_ways(encode(numbered(events)))
    if type(value) is int:
        judged_both_ways(encode(numbered(UNNUMBERED, start=value * 20)))


@pytest.mark.parametrize("where", ["every event", "the deltas", "the first delta of each run",
                                   "the second delta of each run", "the third delta of each run"])
@pytest.mark.parametrize("value", [MISSING, None])
def test_a_stream_without_sequence_numbers_is_judged_the_same_by_both_paths(where, value):
    events = numbered(UNNUMBERED)
    deltas = [n for n, ev in enumerate(events) if ev["type"].endswith(".delta")]
    chosen = {"every event": range(len(events)), "the deltas": deltas, "the first delta of each run": FIRST_DELTAS,
              "the second delta of each run": [n + 1 for n in FIRST_DELTAS],
              "the third delta of each run": [n + 2 for n in FIRST_DELTAS]}[where]
    for n in chosen:
        set_field(events[n], "sequence_number", value)
    report = judged_both_ways(encode(events))
    assert report.complete


@pytest.mark.parametrize("etype", DELTAS)
def test_a_run_of_deltas_for_another_item_kind_is_judged_the_same_by_both_paths(etype):
    for first in FIRST_DELTAS:
        events = copy.deepcopy(UNNUMBERED)
        for ev in events[first:]:
            if ev["type"] != UNNUMBERED[first]["type"]:
                break
            ev["type"] = etype
            ev.setdefault("content_index", 0)
        judged_both_ways(encode(numbered(events)))


# A stream that opens one item of each kind with its parts, then random runs of events over a
# small vocabulary: most runs are deltas that continue the run before, some break it one way.
IDS = ["msg_a", "fc_b", "rs_c", "ctc_d", "msg_never_added"]
OPEN = [{"type": "response.created", "response": rs._response("resp_a", "in_progress", [], None)},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "msg_a", "type": "message", "status": "in_progress", "role": "assistant", "content": []}},
        {"type": "response.content_part.added", "item_id": "msg_a", "output_index": 0, "content_index": 0,
         "part": {"type": "output_text", "text": "", "annotations": []}},
        {"type": "response.output_item.added", "output_index": 1,
         "item": {"id": "fc_b", "type": "function_call", "status": "in_progress", "call_id": "call_b",
                  "name": "read", "arguments": ""}},
        {"type": "response.output_item.added", "output_index": 2,
         "item": {"id": "rs_c", "type": "reasoning", "summary": [], "content": []}},
        {"type": "response.reasoning_summary_part.added", "item_id": "rs_c", "output_index": 2,
         "summary_index": 0, "part": {"type": "summary_text", "text": ""}},
        {"type": "response.content_part.added", "item_id": "rs_c", "output_index": 2, "content_index": 0,
         "part": {"type": "reasoning_text", "text": ""}},
        {"type": "response.output_item.added", "output_index": 3,
         "item": {"id": "ctc_d", "type": "custom_tool_call", "status": "in_progress", "call_id": "call_d",
                  "name": "apply_patch", "input": ""}}]
ITEM_AT = {"msg_a": 0, "fc_b": 1, "rs_c": 2, "ctc_d": 3, "msg_never_added": 4}
OTHER_TYPES = ["response.output_text.done", "response.content_part.done", "response.content_part.added",
               "response.function_call_arguments.done", "response.reasoning_summary_part.done",
               "response.reasoning_text.done", "response.output_item.done", "response.in_progress",
               "response.vendor.extension"]
KIND_DELTAS = {"msg_a": ["response.output_text.delta", "response.refusal.delta"],
               "fc_b": ["response.function_call_arguments.delta"],
               "rs_c": ["response.reasoning_text.delta", "response.reasoning_summary_text.delta"],
               "ctc_d": ["response.custom_tool_call_input.delta"], "msg_never_added": DELTAS}


@st.composite
def run_of_events(draw) -> list[Any]:
    iid = draw(st.sampled_from(IDS))
    etype = draw(st.sampled_from(KIND_DELTAS[iid] * 4 + DELTAS + OTHER_TYPES))
    ev: dict[str, Any] = {"type": etype, "item_id": iid, "output_index": ITEM_AT[iid],
                          "content_index": 0, "summary_index": 0, "delta": "d"}
    if etype.endswith(".done") or etype.endswith(".added"):
        ev.update(text="dd", arguments="dd", part={"type": "output_text", "text": "dd"},
                  item={"id": iid, "type": "message", "content": []})
    run: list[Any] = [dict(ev, delta=f"d{n}") for n in range(draw(st.integers(1, 5)))]
    # odd values on the whole run, or on one event of it (a run broken in its middle)
    targets = run if draw(st.booleans()) else [run[draw(st.integers(0, len(run) - 1))]]
    for field, value in draw(st.lists(st.tuples(st.sampled_from(FIELDS[2:]), st.sampled_from(ODD)), max_size=2)):
        for target in targets:
            set_field(target, field, value)
    if draw(st.integers(0, 9)) == 0:
        run.insert(draw(st.integers(0, len(run))), draw(st.sampled_from(NOT_OBJECTS)))
    return run


@PROPERTY
@given(runs=st.lists(run_of_events(), max_size=8), seq_edits=st.lists(
    st.tuples(st.integers(0, 10_000), st.sampled_from(ODD)), max_size=2), end=st.booleans())
def test_random_event_runs_are_judged_the_same_by_both_paths(runs, seq_edits, end):
    events: list[Any] = copy.deepcopy(OPEN) + [ev for run in runs for ev in run]
    if end:
        events.append({"type": "response.completed", "response": rs._response("resp_a", "completed", [], None)})
    events = [ev if isinstance(ev, str) else {"sequence_number": n, **ev} for n, ev in enumerate(events)]
    for at, value in seq_edits:  # a gap, a repeat or an odd sequence_number somewhere
        edit(events, "set", at, "sequence_number", value)
    judged_both_ways(encode(events))
    for at, value in seq_edits:  # and the numbering restarted there
        edit(events, "renumber", at, "sequence_number", value)
    judged_both_ways(encode(events))


def test_the_fast_path_takes_the_delta_runs(monkeypatch):
    """The comparisons above compare two paths: on a valid stream nearly every delta is applied
    without the general path, and the verdict is clean either way."""
    general = []
    original = machine.StreamMachine._event
    monkeypatch.setattr(machine.StreamMachine, "_event", lambda self, ev, data: (general.append(ev.index),
                                                                                   original(self, ev, data)))
    raw = rs.encode(long_stream())
    report = judged_both_ways(raw)
    assert report.ok and report.complete
    general.clear()
    judge_stream(SSEDecoder(), machine.StreamMachine(REQUEST), raw)
    deltas = sum(1 for p in report.payloads if p["type"].endswith(".delta"))
    assert deltas > 100
    assert len(general) <= len(report.events) - deltas + 6  # the first delta of each of the six runs


@pytest.mark.parametrize("etype", DELTAS)
def test_every_delta_schema_is_the_plain_shape_the_fast_path_checks(etype):
    schema = json.loads(schema_path(SCHEMA_OF[etype]).read_text(encoding="utf-8"))
    key = ITEM_EVENTS[etype].index_key
    assert etype in machine.plain_delta_types()
    assert machine.is_plain_delta_schema(schema, etype, key)
    # a schema that asks anything more leaves the event to the general path
    stricter = [
        {**schema, "additionalProperties": False},
        {**schema, "required": [*schema["required"], "obfuscation"]},
        {**schema, "properties": {**schema["properties"], "delta": {"type": "string", "minLength": 1}}},
        {**schema, "properties": {**schema["properties"], "logprobs": {"type": "array"}}},
    ]
    assert not any(machine.is_plain_delta_schema(s, etype, key) for s in stricter)
    assert not machine.is_plain_delta_schema(schema, "response.other.delta", key)
