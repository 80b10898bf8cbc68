"""OpenAI Responses API wire: the event state machine and its accumulator.

Rules:
- `StreamMachine` is fed SSE events one at a time (sans-IO): each event is parsed, its
  sequence_number checked, held to its schema, and classified (lifecycle, item, terminal, error,
  unknown) to walk the response-level table of `rules.py` (`TRANSITIONS`; an illegal event is
  reported under `GRAMMAR` and the machine goes on where `RECOVER` says). Item-level events go to
  the `ItemTracker` (items.py).
- At the terminal event: status and incomplete_details agree, every added item is done, usage
  adds up, and the Response's `output` equals the items the stream finished.
- `finish()` returns the StreamReport; its message is the Response normalised with the streamed
  items (an unfinished item keeps what was streamed into it).
- Nothing here raises on a target's bytes: bad input is a violation.
- The fast path: nearly every event of a real stream is the next delta of the item and part the
  previous event streamed into. After the general path applies a delta of a type whose schema is
  the plain delta shape (`plain_delta_types`: the six `*.delta` events), the machine keeps where
  the next one would go (`ItemTracker.delta_target`); an event that is that next delta — the
  same type, item id, output_index and part index, `sequence_number` the last one + 1, a string
  `delta`, no `response` — is valid for its schema and applied as the general path would apply it
  (its payload kept, the text appended, the count and the last sequence number moved), with no
  report. Anything else goes the general path, which drops what was kept. `fast=False`: the
  general path only (the tests compare the two).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from conformance.core.registry import violation
from conformance.wire.base import (
    StreamMachineBase,
    StreamReport,
    fast_json,
    json_check,
    judge_stream,
    load_json,
    schema_path,
    schema_problems,
)
from conformance.wire.responses.items import ItemTracker, item_difference, label, with_streamed_text
from conformance.wire.responses.rules import (
    ENDED,
    ERRORED,
    FAILED,
    GRAMMAR,
    ITEM_EVENTS,
    ITEM_LIFECYCLE,
    ITEM_OPEN,
    LIFECYCLE,
    OUTPUT,
    RECOVER,
    RULES,
    SCHEMA,
    SCHEMA_OF,
    SEQUENCE,
    START,
    STATUS,
    TERMINAL,
    TERMINALS,
    TRANSITIONS,
    UNKNOWN,
    USAGE,
    normalised,
    usage_problems,
)
from conformance.wire.sse import SSEDecoder, SSEEvent

_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description"})


def is_plain_delta_schema(schema: Any, etype: str, index_key: str | None) -> bool:
    """Whether `schema` asks no more of a delta event than the fast path checks: an object whose
    only constraints are `type` = `etype`, `sequence_number`, `output_index` and `index_key` (when
    the event has one) integers >= 0, `item_id` and `delta` strings, some of them required."""
    if not isinstance(schema, dict):
        return False
    count = {"type": "integer", "minimum": 0}
    plain = {"type": {"const": etype}, "sequence_number": count, "item_id": {"type": "string"},
             "output_index": count, **({index_key: count} if index_key else {}), "delta": {"type": "string"}}
    rest = {k: v for k, v in schema.items() if k not in _ANNOTATIONS}
    required = rest.pop("required", [])
    return rest == {"type": "object", "properties": plain} and isinstance(required, list) \
        and set(required) <= set(plain)


@cache
def plain_delta_types() -> frozenset[str]:
    """The delta event types whose schema file is the plain delta shape (`is_plain_delta_schema`):
    only these take the fast path. A schema that asks anything more leaves its event to the
    general path."""
    return frozenset(
        etype for etype, spec in ITEM_EVENTS.items()
        if spec.action == "delta" and etype in SCHEMA_OF and is_plain_delta_schema(
            json.loads(schema_path(SCHEMA_OF[etype]).read_text(encoding="utf-8")), etype, spec.index_key))


class StreamMachine(StreamMachineBase):
    """Feed SSE events one at a time; `finish()` returns the report. Sans-IO."""

    TRANSITIONS, RULES, RECOVER = TRANSITIONS, RULES, RECOVER  # the grammar as data (rules.py)

    def __init__(self, request: dict | None = None, *, fast: bool = True) -> None:
        super().__init__(request, START)
        self._plain_deltas = plain_delta_types() if fast else frozenset()
        # where the next delta goes (module rules, "the fast path"): (type, item id, output_index,
        # part index key, part index, the state its text goes to), or None
        self._next_delta: tuple[str, str, int, str | None, int | None, Any] | None = None
        self.tracker = ItemTracker(self._v)  # the output items: added, streamed into, done
        self.last_seq: int | None = None
        self.response: dict | None = None  # the latest lifecycle response object
        self.terminal: str | None = None
        self.response_id: str | None = None
        self._noted_unknown = False
        self._noted_no_seq = False

    def _v(self, check_id: str, message: str, ev: SSEEvent | None, etype: str | None = None, **kw) -> None:
        """A violation located by the event's number and its type (`etype`, kept without an
        event too); unlike the other wires', without a byte offset."""
        self.violations.append(violation(check_id, message, event_index=ev.index if ev else None,
                                         event_type=etype, **kw))

    # ---- dispatch ------------------------------------------------------------------------
    def feed(self, ev: SSEEvent) -> None:
        self.events.append(ev)
        try:
            data = fast_json(ev.data)
        except ValueError:  # not JSON, or past the bound: _not_an_object words it
            data = None
        if type(data) is not dict:
            self._next_delta = None
            self._not_an_object(ev)
            return
        nxt = self._next_delta
        if nxt is not None:
            etype, iid, oi, index_key, k, target = nxt
            seq, delta = data.get("sequence_number"), data.get("delta")
            # Equivalent to the general path (module rules, "the fast path"): with `type`, item_id,
            # output_index and the part index those of the delta before, exact ints where ints,
            # and sequence_number the last + 1, the schema holds and nothing is reported.
            if (type(seq) is int and seq == self.last_seq + 1 and type(delta) is str
                    and data.get("type") == etype and data.get("item_id") == iid
                    and type(oi_seen := data.get("output_index")) is int and oi_seen == oi
                    and (index_key is None or (type(k_seen := data.get(index_key)) is int and k_seen == k))
                    and "response" not in data):
                self.payloads.append(data)
                self.last_seq = seq
                target.text.append(delta)
                target.deltas += 1
                return
            self._next_delta = None
        self._event(ev, data)

    def _not_an_object(self, ev: SSEEvent) -> None:
        """An event whose data is not a JSON object: `[DONE]`, or a violation."""
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
        self.payloads.append(None)
        self._v(json_check(err, SCHEMA), f"event #{ev.index} data is not a JSON object ({err or type(data).__name__})", ev,
                ev.event or None, expected="a Responses stream event object", seen=ev.data[:200])

    def _event(self, ev: SSEEvent, data: dict) -> None:
        """The general path: one event whose data is a JSON object."""
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
        if not self._advance(kind, ev, etype, shown=f"({etype})", event_type=etype):
            return  # after the end: not accumulated
        if kind in ("created", "progress", "terminal"):
            self._lifecycle(etype, kind, data, ev)
        elif kind == "error":
            self._v(FAILED, f"the server sent an error event: {data.get('message')!r} (code {data.get('code')!r})",
                    ev, etype, expected="no error event", seen=ev.data[:300])
        elif etype in ITEM_LIFECYCLE:
            self.tracker.lifecycle(etype, data, ev)
        else:
            spec = ITEM_EVENTS[etype]
            self.tracker.event(etype, spec, data, ev)
            if etype in self._plain_deltas and self.last_seq is not None and self.last_seq >= 0:
                target = self.tracker.delta_target(spec, data)
                if target is not None:
                    self._next_delta = (etype, data["item_id"], target[0], spec.index_key, target[1], target[2])

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
        for item in self.tracker.order:
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
                self.violations += usage_problems(usage, USAGE, "/response/usage", event_index=ev.index,
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
        done = [i.item for i in sorted(self.tracker.order, key=lambda i: i.output_index) if i.done]
        where = {"pointer": "/response/output"}
        if len(output) != len(done):
            self._v(OUTPUT, f"{etype}: output holds {len(output)} item(s), the stream finished {len(done)}", ev,
                    etype, expected=f"{len(done)} item(s): " + ", ".join(label(i) for i in done),
                    seen=f"{len(output)}: " + ", ".join(label(i) for i in output if isinstance(i, dict)), **where)
            return
        for n, (a, b) in enumerate(zip(done, output, strict=True)):
            diff = item_difference(a, b) if isinstance(b, dict) else "not an object"
            if diff:
                self._v(OUTPUT, f"{etype}: output[{n}] differs from the streamed item: {diff}", ev, etype,
                        expected=label(a), seen=label(b) if isinstance(b, dict) else repr(b)[:100],
                        pointer=f"/response/output/{n}")

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
        items = [i.item for i in sorted(self.tracker.order, key=lambda i: i.output_index)]
        items = [with_streamed_text(i, self.tracker.items) for i in items]
        return normalised(resp, items, self.terminal)


def check_stream(chunks, *, request: dict | None = None) -> StreamReport:
    """Judge a whole Responses stream: bytes, or the transport's [(t, bytes)] chunks."""
    return judge_stream(SSEDecoder(), StreamMachine(request), chunks)
