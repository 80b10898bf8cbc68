"""OpenAI Responses API wire (POST /v1/responses): event state machine, accumulator, non-stream
and error checks.

Grammar (WIRE.md "OpenAI Responses API"; OpenAI API reference "Streaming events"; the openai SDK's
`types/responses/*_event.py` and `lib/streaming/responses/`):

    response.created (response.queued | response.in_progress)*
      ( per output item:
        response.output_item.added
          [ message:   (content_part.added (output_text.delta* output_text.done
                                            | refusal.delta* refusal.done) content_part.done)* ]
          [ function_call:    function_call_arguments.delta* function_call_arguments.done ]
          [ custom_tool_call: custom_tool_call_input.delta* custom_tool_call_input.done ]
          [ reasoning: (reasoning_summary_part.added reasoning_summary_text.delta*
                        reasoning_summary_text.done reasoning_summary_part.done)*
                       (content_part.added? reasoning_text.delta* reasoning_text.done content_part.done?)* ]
        response.output_item.done )*
    ( response.completed | response.incomplete | response.failed | error )

The response-level transitions are the table `TRANSITIONS` (state x event class -> state); the
item-level events are the table `ITEM_EVENTS` (event type -> what it does to which slot of which
item types). No `[DONE]` sentinel: the terminal event ends the stream (one that arrives anyway is a
warning: both clients tolerate it). Unknown event types and
unknown fields are valid (other item kinds, hosted tools, vendor extensions): noted, never a
violation.

Severity by consequence (docs/wire-responses.md has the table with the reasons): an error where
Codex CLI or the openai SDK breaks or loses data — Codex reads `type`, `response`, `item`, `delta`,
builds its history from `output_item.done` and fails a turn without `response.completed`; the
SDK's stream state raises on a content event before its item, a duplicate output_index, an
unfinished item at completion and a changed response id — and a warning where both tolerate it
(an output_index gap, a reasoning delta without its part, a `*.done` text sent without deltas).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from conformance.core.failures import Violation
from conformance.core.registry import register, violation
from conformance.wire.base import (
    StreamReport,
    body_preview,
    error_envelope_problems,
    judge_stream,
    load_json,
    schema_problems,
)
from conformance.wire.sse import SSEDecoder, SSEEvent, decode

# ----------------------------------------------------------------------------- check ids
_C = "responses.stream."
SEQUENCE = _C + "sequence_number"
GRAMMAR = _C + "grammar"
SCHEMA = _C + "event_schema"
INDEX = _C + "index"
ITEM_OPEN = _C + "item_open"
DONE_TEXT = _C + "done_text"
OUTPUT = _C + "output_matches"
STATUS = _C + "status"
USAGE = _C + "usage"
TERMINAL = _C + "terminal"
FAILED = _C + "failed"
UNKNOWN = _C + "unknown_event"
register(SCHEMA, "each event is a JSON object matching its schema (conformance/wire/responses/schemas/responses.*.json)",
         likely_cause="the server writes non-JSON data lines or omits/mistypes event fields (Codex and the openai "
         "SDK read `type`, `item`, `delta`, `response` and the item's call_id and name)")
register(SEQUENCE, "sequence_number increases by exactly one from event to event",
         likely_cause="a proxy dropped, duplicated or reordered events, or the server numbers them per item: a gap "
         "is an event the client never saw")
register(GRAMMAR, "response.created first, then output items, then exactly one terminal event, nothing after it",
         likely_cause="the server emits events out of order, a second terminal event, or events for the wrong "
         "item kind (the openai SDK asserts on them)")
register(INDEX, "output_index counts the items from 0; content_index / summary_index count an item's parts",
         likely_cause="the server numbers items or parts with gaps or duplicates (the openai SDK raises on a "
         "duplicate output_index and indexes message parts by content_index)")
register(ITEM_OPEN, "every delta and done event names an item that was added and is not yet done; every added "
         "item is done before the terminal event",
         likely_cause="the server streams deltas for an item it never announced or already finished, or leaves an "
         "item unfinished (Codex builds its history from output_item.done: an unfinished item is lost)")
register(DONE_TEXT, "a `*.done` text (output_text, arguments, input, part, item) equals the concatenated deltas",
         likely_cause="the server's final text differs from what it streamed: the client showed one answer and "
         "recorded another")
register(OUTPUT, "the terminal response's `output` equals the items the stream finished",
         likely_cause="the server builds the final Response separately from the stream (the openai SDK returns "
         "`output`, Codex keeps the streamed items: the two disagree)")
register(STATUS, "the terminal event, the response's status and incomplete_details agree (a cap is incomplete)",
         likely_cause="the server reports a cut answer as completed, or a status that contradicts the event")
register(USAGE, "the terminal response carries usage with total_tokens = input_tokens + output_tokens",
         likely_cause="a layer drops or recomputes usage; Codex's context accounting reads it")
register(TERMINAL, "the stream ends with response.completed, response.incomplete, response.failed or an error event",
         likely_cause="the stream was cut (engine crash, timeout, proxy closing early); Codex fails the turn: "
         "\"stream closed before response.completed\"")
register(FAILED, "the generation does not fail (no response.failed or error event in a 200 stream)",
         likely_cause="the engine failed mid-generation (overload, crash, context overflow); see its log")
register(UNKNOWN, "unknown event types are tolerated (noted)", severity="info",
         likely_cause="a vendor extension or a newer event; Codex and the openai SDK ignore it")
_R = "responses.response."
RESPONSE_SCHEMA = _R + "schema"
RESPONSE_USAGE = _R + "usage"
register(RESPONSE_SCHEMA, "a non-stream response is a Response object (conformance/wire/responses/schemas/responses.response.json)",
         likely_cause="the endpoint returned an HTML/text page, an event stream for stream:false, or a Response "
         "with missing or mistyped fields")
register(RESPONSE_USAGE, "a non-stream response carries usage with total_tokens = input_tokens + output_tokens",
         likely_cause="a layer drops or recomputes usage")
ENVELOPE = "responses.error.envelope"
register(ENVELOPE, "an error answer is `{\"error\": {\"message\": ...}}` with a 4xx/5xx status",
         likely_cause="the server answers errors as text/HTML or with a 200 status")

# ----------------------------------------------------------------------------- the grammar as data
START, CREATED, RUNNING, ENDED, ERRORED = "start", "created", "running", "ended", "errored"
LIFECYCLE = {"response.created": "created", "response.queued": "progress", "response.in_progress": "progress"}
TERMINALS = {"response.completed": "completed", "response.incomplete": "incomplete", "response.failed": "failed"}
TRANSITIONS: dict[tuple[str, str], str] = {
    (START, "created"): CREATED,
    (CREATED, "progress"): CREATED,
    (CREATED, "item"): RUNNING,
    (RUNNING, "item"): RUNNING,
    (RUNNING, "progress"): RUNNING,
    (CREATED, "terminal"): ENDED,
    (RUNNING, "terminal"): ENDED,
    (START, "error"): ERRORED,
    (CREATED, "error"): ERRORED,
    (RUNNING, "error"): ERRORED,
}
RULES = {
    START: "the first event is response.created",
    CREATED: "after response.created: in_progress, output items, then one terminal event",
    RUNNING: "output items, then one terminal event",
    ENDED: "nothing follows the terminal event",
    ERRORED: "nothing follows an error event",
}
# Where a wrong event is recovered to (judging goes on): an event before response.created is
# judged as if the response had started (the SDK raises there; the rest is still worth judging).
RECOVER = {(START, "item"): RUNNING, (START, "progress"): CREATED, (START, "terminal"): ENDED}


@dataclass(frozen=True)
class ItemEvent:
    """What one item-level event type does: `action` on `slot` of an item of one of `item_types`."""

    action: str  # delta | done | part_added | part_done | touch (item must be open, nothing accumulated)
    item_types: tuple[str, ...]  # the item kinds it may address ((): any)
    slot: str  # content | summary | arguments | input
    key: str = "text"  # the part / done field holding the text (text, refusal, arguments, input)
    index_key: str | None = None  # content_index / summary_index (None: the item's own field)
    part_type: str | None = None  # the part type a delta of this event fills
    # the openai SDK indexes this slot by its index and asserts the item kind: a mistake breaks it
    sdk_strict: bool = False


_MSG, _RS = ("message",), ("reasoning",)
ITEM_EVENTS: dict[str, ItemEvent] = {
    "response.content_part.added": ItemEvent("part_added", ("message", "reasoning"), "content", index_key="content_index"),
    "response.content_part.done": ItemEvent("part_done", ("message", "reasoning"), "content", index_key="content_index"),
    "response.output_text.delta": ItemEvent("delta", _MSG, "content", "text", "content_index", "output_text", True),
    "response.output_text.done": ItemEvent("done", _MSG, "content", "text", "content_index", "output_text", True),
    "response.refusal.delta": ItemEvent("delta", _MSG, "content", "refusal", "content_index", "refusal"),
    "response.refusal.done": ItemEvent("done", _MSG, "content", "refusal", "content_index", "refusal"),
    "response.reasoning_text.delta": ItemEvent("delta", _RS, "content", "text", "content_index", "reasoning_text"),
    "response.reasoning_text.done": ItemEvent("done", _RS, "content", "text", "content_index", "reasoning_text"),
    "response.reasoning_summary_part.added": ItemEvent("part_added", _RS, "summary", index_key="summary_index"),
    "response.reasoning_summary_part.done": ItemEvent("part_done", _RS, "summary", index_key="summary_index"),
    "response.reasoning_summary_text.delta": ItemEvent("delta", _RS, "summary", "text", "summary_index", "summary_text"),
    "response.reasoning_summary_text.done": ItemEvent("done", _RS, "summary", "text", "summary_index", "summary_text"),
    "response.function_call_arguments.delta": ItemEvent("delta", ("function_call",), "arguments", "arguments",
                                                        sdk_strict=True),
    "response.function_call_arguments.done": ItemEvent("done", ("function_call",), "arguments", "arguments",
                                                       sdk_strict=True),
    "response.custom_tool_call_input.delta": ItemEvent("delta", ("custom_tool_call",), "input", "input"),
    "response.custom_tool_call_input.done": ItemEvent("done", ("custom_tool_call",), "input", "input"),
    "response.output_text.annotation.added": ItemEvent("touch", _MSG, "content"),
}
ITEM_LIFECYCLE = ("response.output_item.added", "response.output_item.done")
# Event types with a schema of their own (conformance/wire/responses/schemas/responses.<type>.json).
SCHEMA_OF = {t: "responses." + t[len("response."):] for t in (*LIFECYCLE, *TERMINALS, *ITEM_LIFECYCLE, *ITEM_EVENTS)
             if t != "response.output_text.annotation.added"}
SCHEMA_OF["error"] = "responses.error_event"
# Item kinds whose text lives in a field of the item itself (not in parts).
ITEM_TEXT_FIELD = {"function_call": "arguments", "custom_tool_call": "input"}
CUT_REASONS = frozenset({"max_output_tokens", "content_filter"})


@dataclass
class _Part:
    text: list[str] = field(default_factory=list)
    deltas: int = 0
    text_done: bool = False
    done: bool = False
    added: bool = True


@dataclass
class _Item:
    item: dict  # the item as added, then as done
    output_index: int
    event: int  # the event that added it
    done: bool = False
    parts: dict[tuple[str, int], _Part] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)  # arguments / input deltas
    deltas: int = 0
    text_done: bool = False


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class StreamMachine:
    def __init__(self, request: dict | None = None) -> None:
        self.request = request or {}
        self.state = START
        self.events: list[SSEEvent] = []
        self.payloads: list[Any] = []
        self.violations: list[Violation] = []
        self.items: dict[str, _Item] = {}  # item id -> item
        self.by_index: dict[int, _Item] = {}
        self.order: list[_Item] = []
        self.last_seq: int | None = None
        self.response: dict | None = None  # the latest lifecycle response object
        self.terminal: str | None = None
        self.response_id: str | None = None
        self._noted_unknown = False
        self._noted_no_seq = False

    def _v(self, check_id: str, message: str, ev: SSEEvent | None, etype: str | None = None, **kw) -> None:
        self.violations.append(violation(check_id, message, event_index=ev.index if ev else None,
                                         event_type=etype, **kw))

    # ---- dispatch ------------------------------------------------------------------------
    def feed(self, ev: SSEEvent) -> None:
        self.events.append(ev)
        if ev.data.strip() == "[DONE]":
            # Chat completions' sentinel (LiteLLM sends it after response.completed): the openai SDK
            # stops reading at it and Codex skips a record it cannot parse, so both tolerate it; a
            # stream that ends on it early is caught by the terminal rule, not here.
            self._v(SCHEMA, f"event #{ev.index} is chat completions' `data: [DONE]` sentinel, which the Responses "
                    "wire does not have (tolerated: the openai SDK stops at it, Codex skips it)", ev, None,
                    severity="warning", expected="no [DONE] sentinel: the terminal event ends the stream",
                    seen="[DONE]")
            return
        data, err = load_json(ev.data)
        if err is not None or not isinstance(data, dict):
            self.payloads.append(None)
            self._v(SCHEMA, f"event #{ev.index} data is not a JSON object ({err or type(data).__name__})", ev,
                    ev.event or None, expected="a Responses stream event object", seen=ev.data[:200])
            return
        self.payloads.append(data)
        etype = data.get("type")
        if not isinstance(etype, str):
            etype = ev.event if isinstance(ev.event, str) and ev.event else None
            self._v(SCHEMA, f"event #{ev.index} has no `type` (Codex and the openai SDK dispatch on it)", ev, etype,
                    expected="a string `type`", seen=json.dumps(data)[:200], pointer="/type")
            if etype is None:
                return
        self._sequence(data, ev, etype)
        kind = self._kind(etype)
        if kind == "unknown":
            if not self._noted_unknown:
                self._noted_unknown = True
                self._v(UNKNOWN, f"event type {etype!r} is not one this judge knows (tolerated)", ev, etype,
                        seen=etype)
            return
        name = SCHEMA_OF.get(etype)
        if name is not None:
            for ptr, msg, expected, seen in schema_problems(name, data):
                check_id = SEQUENCE if ptr.startswith("/sequence_number") else SCHEMA
                if check_id == SEQUENCE and ptr == "/sequence_number" and "missing" in msg:
                    continue  # judged by _sequence (a warning)
                self._v(check_id, f"{etype}: {msg}", ev, etype, expected=expected, seen=seen, pointer=ptr)
        if isinstance(data.get("response"), dict):
            for ptr, msg, expected, seen in schema_problems("responses.response", data["response"]):
                self._v(SCHEMA, f"{etype}: response{ptr}: {msg}", ev, etype, expected=expected, seen=seen,
                        pointer="/response" + ptr)
        state = self.state
        nxt = TRANSITIONS.get((state, kind))
        if nxt is None:
            self._v(GRAMMAR, f"event #{ev.index} ({etype}) is not allowed in state {state!r}: {RULES[state]}", ev,
                    etype, expected=RULES[state], seen=etype)
            nxt = RECOVER.get((state, kind))
            if nxt is None:
                return  # after the end: not accumulated
        self.state = nxt
        if kind in ("created", "progress", "terminal"):
            self._lifecycle(etype, kind, data, ev)
        elif kind == "error":
            self._v(FAILED, f"the server sent an error event: {data.get('message')!r} (code {data.get('code')!r})",
                    ev, etype, expected="no error event", seen=ev.data[:300])
        elif etype in ITEM_LIFECYCLE:
            self._item_lifecycle(etype, data, ev)
        else:
            self._item_event(etype, ITEM_EVENTS[etype], data, ev)

    @staticmethod
    def _kind(etype: str) -> str:
        if etype in LIFECYCLE:
            return LIFECYCLE[etype]
        if etype in TERMINALS:
            return "terminal"
        if etype == "error":
            return "error"
        if etype in ITEM_LIFECYCLE or etype in ITEM_EVENTS:
            return "item"
        return "unknown"

    def _sequence(self, data: dict, ev: SSEEvent, etype: str) -> None:
        seq = data.get("sequence_number")
        if seq is None:
            if not self._noted_no_seq:
                self._noted_no_seq = True
                self._v(SEQUENCE, f"{etype} has no sequence_number (clients tolerate it; lost events go unnoticed)",
                        ev, etype, severity="warning", expected="an integer sequence_number on every event",
                        seen="none", pointer="/sequence_number")
            return
        if not isinstance(seq, int) or isinstance(seq, bool):
            return  # the schema reports the type
        last = self.last_seq
        self.last_seq = seq
        if last is None:
            return
        if seq <= last:
            self._v(SEQUENCE, f"sequence_number {seq} after {last}: not increasing (a duplicated or reordered event)",
                    ev, etype, expected=last + 1, seen=seq, pointer="/sequence_number")
        elif seq != last + 1:
            self._v(SEQUENCE, f"sequence_number jumps from {last} to {seq}: {seq - last - 1} event(s) missing", ev,
                    etype, expected=last + 1, seen=seq, pointer="/sequence_number")

    # ---- response lifecycle --------------------------------------------------------------
    def _lifecycle(self, etype: str, kind: str, data: dict, ev: SSEEvent) -> None:
        resp = data.get("response")
        if not isinstance(resp, dict):
            return  # the schema reported it
        rid = resp.get("id") if isinstance(resp.get("id"), str) else None
        if self.response_id is None:
            self.response_id = rid
        elif rid is not None and rid != self.response_id:
            self._v(GRAMMAR, f"{etype} names response {rid!r} but the stream is response {self.response_id!r} "
                    "(the openai SDK raises: lifecycle response identity changed)", ev, etype,
                    expected=self.response_id, seen=rid, pointer="/response/id")
        self.response = resp
        if kind != "terminal":
            return
        self.terminal = TERMINALS[etype]
        self._terminal(self.terminal, resp, ev, etype)

    def _terminal(self, status: str, resp: dict, ev: SSEEvent, etype: str) -> None:
        seen = resp.get("status")
        if seen != status:
            self._v(STATUS, f"{etype} carries a response with status {seen!r}", ev, etype, expected=repr(status),
                    seen=repr(seen), pointer="/response/status")
        details = resp.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if status == "incomplete" and not isinstance(reason, str):
            self._v(STATUS, "response.incomplete without incomplete_details.reason (the client cannot tell a cap "
                    "from a filter)", ev, etype, severity="warning", expected="incomplete_details.reason, e.g. "
                    "'max_output_tokens'", seen=json.dumps(details), pointer="/response/incomplete_details")
        if status == "completed" and isinstance(reason, str):
            self._v(STATUS, f"response.completed with incomplete_details.reason {reason!r}", ev, etype,
                    severity="warning", expected="incomplete_details null", seen=json.dumps(details),
                    pointer="/response/incomplete_details")
        if status == "failed":
            err = resp.get("error")
            self._v(FAILED, f"the response failed: {json.dumps(err)[:300]}", ev, etype,
                    expected="response.completed", seen=json.dumps(err)[:300], pointer="/response/error")
        for item in self.order:
            if not item.done:
                self._v(ITEM_OPEN, f"item {item.item.get('id')!r} (output_index {item.output_index}) was added at "
                        f"event #{item.event} but never done before {etype}", ev, etype,
                        expected="response.output_item.done for every added item", seen="no output_item.done",
                        pointer=f"/response/output/{item.output_index}")
        usage = resp.get("usage")
        if status in ("completed", "incomplete"):
            if not isinstance(usage, dict):
                self._v(USAGE, f"{etype} carries no usage (clients count tokens from it)", ev, etype,
                        severity="warning", expected="response.usage", seen=json.dumps(usage),
                        pointer="/response/usage")
            else:
                self.violations += _usage_problems(usage, USAGE, "/response/usage", event_index=ev.index,
                                                   event_type=etype)
            cap = self.request.get("max_output_tokens")
            out = usage.get("output_tokens") if isinstance(usage, dict) else None
            if (status == "incomplete" and reason == "max_output_tokens" and isinstance(cap, int)
                    and isinstance(out, int) and out < cap):
                self._v(STATUS, f"incomplete for max_output_tokens after {out} of {cap} output tokens", ev, etype,
                        severity="warning", expected=f"{cap} output tokens used", seen=out,
                        pointer="/response/usage/output_tokens")
        self._output_matches(resp.get("output"), ev, etype)

    def _output_matches(self, output: Any, ev: SSEEvent, etype: str) -> None:
        if output is None:
            return  # absent: the SDK recovers the finished items; nothing to compare
        if not isinstance(output, list):
            return  # the schema reported it
        done = [i.item for i in sorted(self.order, key=lambda i: i.output_index) if i.done]
        where = {"pointer": "/response/output"}
        if len(output) != len(done):
            self._v(OUTPUT, f"{etype}: output holds {len(output)} item(s), the stream finished {len(done)}", ev,
                    etype, expected=f"{len(done)} item(s): " + ", ".join(_label(i) for i in done),
                    seen=f"{len(output)}: " + ", ".join(_label(i) for i in output if isinstance(i, dict)), **where)
            return
        for n, (a, b) in enumerate(zip(done, output, strict=True)):
            diff = _item_difference(a, b) if isinstance(b, dict) else "not an object"
            if diff:
                self._v(OUTPUT, f"{etype}: output[{n}] differs from the streamed item: {diff}", ev, etype,
                        expected=_label(a), seen=_label(b) if isinstance(b, dict) else repr(b)[:100],
                        pointer=f"/response/output/{n}")

    # ---- items ---------------------------------------------------------------------------
    def _item_lifecycle(self, etype: str, data: dict, ev: SSEEvent) -> None:
        item, oi = data.get("item"), data.get("output_index")
        if not isinstance(item, dict) or not isinstance(oi, int):
            return  # the schema reported it
        iid = item.get("id") if isinstance(item.get("id"), str) else f"#output_index {oi}"
        if etype == "response.output_item.added":
            if oi in self.by_index:
                self._v(INDEX, f"output_index {oi} added twice (the openai SDK raises: duplicate output index)", ev,
                        etype, expected=f"output_index {len(self.order)}", seen=oi, pointer="/output_index")
                return
            if oi != len(self.order):
                self._v(INDEX, f"output_index {oi} but {len(self.order)} item(s) so far (a gap; clients tolerate it)",
                        ev, etype, severity="warning", expected=len(self.order), seen=oi, pointer="/output_index")
            st = _Item(copy.deepcopy(item), oi, ev.index)
            field_name = ITEM_TEXT_FIELD.get(item.get("type"))
            if field_name and isinstance(item.get(field_name), str) and item[field_name]:
                st.text.append(item[field_name])
            for slot in ("content", "summary"):
                for k, part in enumerate(item.get(slot) or [] if isinstance(item.get(slot), list) else []):
                    if isinstance(part, dict):
                        st.parts[(slot, k)] = _Part([_str(part.get("text") or part.get("refusal"))])
            self.items[iid] = st
            self.by_index[oi] = st
            self.order.append(st)
            return
        st = self.items.get(iid) or self.by_index.get(oi)
        if st is None:
            # Codex and the SDK take the done item as it is: tolerated, but nothing was streamed for it
            self._v(ITEM_OPEN, f"output_item.done for {iid!r} that was never added", ev, etype, severity="warning",
                    expected="response.output_item.added first", seen=iid, pointer="/item/id")
            st = _Item(copy.deepcopy(item), oi, ev.index)
            self.items[iid] = st
            self.by_index.setdefault(oi, st)
            self.order.append(st)
            st.done = True
            return
        if st.done:
            self._v(ITEM_OPEN, f"output_item.done for {iid!r} a second time (Codex records the item twice)", ev,
                    etype, expected="one output_item.done per item", seen=iid, pointer="/item/id")
            return
        if st.output_index != oi or (st.item.get("id") is not None and st.item.get("id") != item.get("id")) \
                or st.item.get("type") != item.get("type"):
            self._v(ITEM_OPEN, f"output_item.done changes the item's identity: added {_label(st.item)} at "
                    f"output_index {st.output_index}, done {_label(item)} at {oi} (the openai SDK raises)", ev, etype,
                    expected=_label(st.item), seen=_label(item), pointer="/item")
        st.done = True
        self._done_item_text(st, item, ev, etype)
        st.item = copy.deepcopy(item)

    def _done_item_text(self, st: _Item, item: dict, ev: SSEEvent, etype: str) -> None:
        """The done item's texts against what was streamed for it."""
        field_name = ITEM_TEXT_FIELD.get(item.get("type"))
        if field_name:
            if st.deltas or st.text_done:
                self._same(field_name, "".join(st.text), item.get(field_name), ev, etype, f"/item/{field_name}")
            return
        for (slot, k), part in st.parts.items():
            parts = item.get(slot)
            if not isinstance(parts, list):
                continue
            if k >= len(parts) or not isinstance(parts[k], dict):
                if part.deltas:
                    self._v(DONE_TEXT, f"the done item has no {slot}[{k}], which was streamed", ev, etype,
                            expected=f"{slot}[{k}] with the streamed text", seen=f"{len(parts)} part(s)",
                            pointer=f"/item/{slot}")
                continue
            if part.deltas or part.text_done:
                key = "refusal" if parts[k].get("type") == "refusal" else "text"
                self._same(f"{slot}[{k}].{key}", "".join(part.text), parts[k].get(key), ev, etype,
                           f"/item/{slot}/{k}/{key}")

    def _same(self, what: str, streamed: str, done: Any, ev: SSEEvent, etype: str, ptr: str) -> None:
        if isinstance(done, str) and done != streamed:
            self._v(DONE_TEXT, f"{etype}: {what} differs from the concatenated deltas", ev, etype,
                    expected=_preview_text(streamed), seen=_preview_text(done), pointer=ptr)

    def _item_event(self, etype: str, spec: ItemEvent, data: dict, ev: SSEEvent) -> None:
        iid, oi = data.get("item_id"), data.get("output_index")
        st = self.items.get(iid) if isinstance(iid, str) else None
        if st is None:
            self._v(ITEM_OPEN, f"{etype} for item {iid!r}, which was never added (the openai SDK raises)", ev, etype,
                    expected="response.output_item.added for the item first", seen=repr(iid), pointer="/item_id")
            return
        if st.done:
            self._v(ITEM_OPEN, f"{etype} for item {iid!r} after its output_item.done", ev, etype,
                    expected="every event of an item before its output_item.done", seen=repr(iid), pointer="/item_id")
            return
        if isinstance(oi, int) and oi != st.output_index:
            self._v(ITEM_OPEN, f"{etype} for item {iid!r} names output_index {oi}, the item is at "
                    f"{st.output_index} (the openai SDK looks items up by output_index)", ev, etype,
                    expected=st.output_index, seen=oi, pointer="/output_index")
        itype = st.item.get("type")
        if spec.item_types and itype not in spec.item_types:
            self._v(GRAMMAR, f"{etype} for a {itype!r} item (it belongs to " + " / ".join(spec.item_types)
                    + " items)", ev, etype, severity="error" if spec.sdk_strict else "warning",
                    expected=" / ".join(spec.item_types), seen=repr(itype), pointer="/item_id")
            return
        if spec.action == "touch":
            return
        if spec.index_key is None:  # the item's own text: arguments / input
            if spec.action == "delta":
                if st.text_done:
                    self._v(ITEM_OPEN, f"{etype} after the {spec.key} were done", ev, etype,
                            expected=f"no {spec.key} delta after its done event", seen="a delta", pointer="/delta")
                st.text.append(_str(data.get("delta")))
                st.deltas += 1
            else:
                if st.deltas or not isinstance(data.get(spec.key), str):
                    self._same(spec.key, "".join(st.text), data.get(spec.key), ev, etype, f"/{spec.key}")
                elif data[spec.key] and not "".join(st.text):
                    self._no_deltas(etype, spec.key, ev)
                if not st.deltas and isinstance(data.get(spec.key), str):
                    st.text = [data[spec.key]]
                st.text_done = True
            return
        k = data.get(spec.index_key)
        if not isinstance(k, int):
            return  # the schema reported it
        slot_key = (spec.slot, k)
        part = st.parts.get(slot_key)
        if spec.action == "part_added":
            count = sum(1 for s, _ in st.parts if s == spec.slot)
            if part is not None:
                self._v(INDEX, f"{spec.index_key} {k} of item {iid!r} added twice", ev, etype,
                        severity="error" if itype == "message" else "warning", expected=count, seen=k,
                        pointer=f"/{spec.index_key}")
                return
            if k != count:
                self._v(INDEX, f"{spec.index_key} {k} but item {iid!r} has {count} part(s) so far"
                        + (" (the openai SDK indexes message parts by it)" if itype == "message" else ""), ev, etype,
                        severity="error" if itype == "message" else "warning", expected=count, seen=k,
                        pointer=f"/{spec.index_key}")
            p = data.get("part") if isinstance(data.get("part"), dict) else {}
            st.parts[slot_key] = _Part([_str(p.get("text") or p.get("refusal"))])
            return
        if part is None:
            strict = spec.sdk_strict
            self._v(ITEM_OPEN, f"{etype} for {spec.slot} part {k} of item {iid!r}, which was never added"
                    + (" (the openai SDK indexes the message's parts and raises)" if strict else ""), ev, etype,
                    severity="error" if strict else "warning",
                    expected=f"the part's added event first ({spec.index_key} {k})", seen="no part",
                    pointer=f"/{spec.index_key}")
            part = st.parts[slot_key] = _Part(added=False)
        if spec.action == "part_done":
            p = data.get("part") if isinstance(data.get("part"), dict) else {}
            key = "refusal" if p.get("type") == "refusal" else "text"
            if part.done:
                self._v(ITEM_OPEN, f"{etype}: part {k} of item {iid!r} done twice", ev, etype, severity="warning",
                        expected="one done event per part", seen="a second one", pointer=f"/{spec.index_key}")
            if part.deltas or part.text_done:
                self._same(f"part {k}", "".join(part.text), p.get(key), ev, etype, f"/part/{key}")
            part.done = True
            return
        if part.done:
            self._v(ITEM_OPEN, f"{etype} for part {k} of item {iid!r} after its part was done", ev, etype,
                    expected="deltas before the part's done event", seen="a late event", pointer=f"/{spec.index_key}")
            return
        if spec.action == "delta":
            if part.text_done:
                self._v(ITEM_OPEN, f"{etype} after the text of part {k} was done", ev, etype,
                        expected="no delta after the text's done event", seen="a delta", pointer="/delta")
            part.text.append(_str(data.get("delta")))
            part.deltas += 1
            return
        done = data.get(spec.key)
        if part.deltas or not isinstance(done, str):
            self._same(f"{spec.slot}[{k}].{spec.key}", "".join(part.text), done, ev, etype, f"/{spec.key}")
        elif done and not "".join(part.text):
            self._no_deltas(etype, spec.key, ev)
        if not part.deltas and isinstance(done, str):
            part.text = [done]
        part.text_done = True

    def _no_deltas(self, etype: str, key: str, ev: SSEEvent) -> None:
        self._v(DONE_TEXT, f"{etype} carries the whole {key} but no delta streamed it (tolerated: nothing showed "
                "while it was generated)", ev, etype, severity="warning", expected="deltas before the done event",
                seen="none", pointer=f"/{key}")

    # ---- the end -------------------------------------------------------------------------
    def finish(self) -> StreamReport:
        end = self.events[-1] if self.events else None
        if self.state not in (ENDED, ERRORED):
            if end is None:
                self._v(TERMINAL, "the stream carried no event at all", None,
                        expected="response.created ... response.completed", seen="an empty body")
            else:
                self._v(TERMINAL, f"the stream ended in state {self.state!r} after event #{end.index} without a "
                        "terminal event (Codex: stream closed before response.completed)", end,
                        expected="response.completed | response.incomplete | response.failed", seen="end of stream")
        message = self._message() if self.events else None
        return StreamReport(self.events, self.violations, message, self.state == ENDED, self.payloads)

    def _message(self) -> dict[str, Any]:
        resp = self.response or {}
        items = [i.item for i in sorted(self.order, key=lambda i: i.output_index)]
        items = [_with_streamed_text(i, self.items) for i in items]
        return _normalised(resp, items, self.terminal)


def _with_streamed_text(item: dict, states: dict[str, _Item]) -> dict:
    """An item not done yet carries what was streamed into it (a cut stream keeps its partial text)."""
    st = states.get(item.get("id")) if isinstance(item.get("id"), str) else None
    if st is None or st.done:
        return item
    item = copy.deepcopy(item)
    field_name = ITEM_TEXT_FIELD.get(item.get("type"))
    if field_name:
        item[field_name] = "".join(st.text)
        return item
    for (slot, k), part in st.parts.items():
        parts = item.setdefault(slot, [])
        if not isinstance(parts, list):
            continue
        while len(parts) <= k:
            parts.append({"type": "output_text" if item.get("type") == "message" else
                          ("summary_text" if slot == "summary" else "reasoning_text"), "text": ""})
        if isinstance(parts[k], dict):
            parts[k]["refusal" if parts[k].get("type") == "refusal" else "text"] = "".join(part.text)
    return item


def _normalised(resp: dict, output: list, status: str | None) -> dict[str, Any]:
    """The accumulated message: the Response's own fields with the finished output."""
    return {"id": resp.get("id"), "object": "response", "model": resp.get("model"),
            "status": status or resp.get("status"), "incomplete_details": resp.get("incomplete_details"),
            "error": resp.get("error"), "output": output, "usage": resp.get("usage")}


def _label(item: dict) -> str:
    return f"{item.get('type')} {item.get('id') or item.get('call_id') or ''}".strip()


def _item_difference(a: dict, b: dict) -> str | None:
    """The first way output item `b` differs from the streamed item `a` (None: the same)."""
    for key in ("type", "id", "call_id", "name", "namespace", "arguments", "input"):
        if key in a or key in b:
            if a.get(key) != b.get(key) and not (key == "id" and (a.get(key) is None or b.get(key) is None)):
                return f"{key} {_preview_text(a.get(key))} vs {_preview_text(b.get(key))}"
    for slot in ("content", "summary"):
        pa, pb = a.get(slot), b.get(slot)
        if isinstance(pa, list) and isinstance(pb, list):
            ta = [p.get("text") or p.get("refusal") for p in pa if isinstance(p, dict)]
            tb = [p.get("text") or p.get("refusal") for p in pb if isinstance(p, dict)]
            if ta != tb:
                return f"{slot} texts {_preview_text(ta)} vs {_preview_text(tb)}"
    return None


def _preview_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text[:120] + ("…" if len(text) > 120 else ""))


def _usage_problems(usage: Any, check_id: str, base: str, **where: Any) -> list[Violation]:
    if not isinstance(usage, dict):
        return []
    i, o, t = (usage.get(k) for k in ("input_tokens", "output_tokens", "total_tokens"))
    out: list[Violation] = []
    if all(type(x) is int for x in (i, o, t)) and i + o != t:
        out.append(violation(check_id, f"usage.total_tokens {t} is not input_tokens {i} + output_tokens {o}",
                             expected=i + o, seen=t, pointer=f"{base}/total_tokens", **where))
    details = usage.get("output_tokens_details")
    r = details.get("reasoning_tokens") if isinstance(details, dict) else None
    if type(r) is int and type(o) is int and r > o:
        out.append(violation(check_id, f"reasoning_tokens {r} exceed output_tokens {o} (reasoning is part of the "
                             "output)", severity="warning", expected=f"<= {o}", seen=r,
                             pointer=f"{base}/output_tokens_details/reasoning_tokens", **where))
    cached = usage.get("input_tokens_details")
    c = cached.get("cached_tokens") if isinstance(cached, dict) else None
    if type(c) is int and type(i) is int and c > i:
        out.append(violation(check_id, f"cached_tokens {c} exceed input_tokens {i} (cached tokens are part of the "
                             "input)", severity="warning", expected=f"<= {i}", seen=c,
                             pointer=f"{base}/input_tokens_details/cached_tokens", **where))
    return out


def check_stream(chunks, *, request: dict | None = None) -> StreamReport:
    """Judge a whole Responses stream: bytes, or the transport's [(t, bytes)] chunks."""
    return judge_stream(SSEDecoder(), StreamMachine(request), chunks)


# ----------------------------------------------------------------------------- non-stream
def check_response(body, *, request: dict | None = None) -> tuple[dict | None, list[Violation]]:
    """Judge a non-stream Response object. Returns (the normalised message or None, violations)."""
    data, err = load_json(body)
    if err is not None or not isinstance(data, dict):
        return None, [violation(RESPONSE_SCHEMA, f"the response body is not a JSON object "
                                f"({err or type(data).__name__})", expected="a Response object",
                                seen=body_preview(body))]
    out = [violation(RESPONSE_SCHEMA, f"response: {msg}", expected=expected, seen=seen, pointer=ptr)
           for ptr, msg, expected, seen in schema_problems("responses.response", data)]
    status = data.get("status")
    if status not in ("completed", "incomplete", "failed", "in_progress", "queued", "cancelled", None):
        out.append(violation(RESPONSE_SCHEMA, f"unknown status {status!r}", expected="completed | incomplete | "
                             "failed", seen=repr(status), pointer="/status"))
    usage = data.get("usage")
    if status in ("completed", "incomplete") and not isinstance(usage, dict):
        out.append(violation(RESPONSE_USAGE, "the response carries no usage", severity="warning",
                             expected="usage", seen=json.dumps(usage), pointer="/usage"))
    out.extend(_usage_problems(usage, RESPONSE_USAGE, "/usage"))
    output = data.get("output") if isinstance(data.get("output"), list) else []
    return _normalised(data, [i for i in output if isinstance(i, dict)], None), out


# ----------------------------------------------------------------------------- errors
def check_error(status: int, body: bytes) -> list[Violation]:
    """Judge an error response: `{"error": {"message": str, "type": ..., "code": ...}}`."""
    return error_envelope_problems(ENVELOPE, "responses.error", status, body, '{"error": {"message": ...}}')[1]



# ----------------------------------------------------------------------------- first content
_CONTENT_EVENTS = frozenset({"response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta",
                             "response.reasoning_summary_text.delta", "response.function_call_arguments.delta",
                             "response.custom_tool_call_input.delta", "response.output_item.done", "error",
                             *TERMINALS})


def content_started(buf: bytes) -> bool:
    """True once `buf` holds content: a text / reasoning / tool delta, a finished item, a terminal
    or error event. The lifecycle events and an item's added event are not content. A body that is
    not an event stream (JSON response or error) is content from its first byte."""
    head = buf.lstrip()[:1]
    if not head:
        return False
    if head in (b"{", b"["):
        return True
    events, _ = decode(buf)
    for ev in events:
        data, _err = load_json(ev.data)
        if not isinstance(data, dict):
            return True  # garbage is an answer too: let the judge see it
        kind = data.get("type")
        if (isinstance(kind, str) and kind in _CONTENT_EVENTS) or ev.event in _CONTENT_EVENTS:
            return True
    return False
