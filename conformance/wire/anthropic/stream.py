"""Anthropic Messages wire: the stream state machine and its accumulator.

Rules:
- `StreamMachine` is fed SSE events one at a time (sans-IO) and walks the tables of `rules.py`:
  an event `TRANSITIONS` does not allow is reported under the state's rule (`RULES`) and the
  machine goes on where `RECOVER` says; each event is held to its JSON Schema (the compiled
  predicate first, jsonschema only to word a failure) and accumulated into the final message.
- The semantic rules beside the grammar (block indices, delta types, tool input JSON held until
  the stop reason is known, stop_reason vs tool_use, cumulative usage, thinking signatures) are
  the ones `rules.py` lists; `finish()` returns the StreamReport.
- Interleaved tool_use blocks (`start 0, start 1, stop 0, stop 1`: a tool_use block opened while
  another tool_use block is open, the earlier one stopped later) break the grammar, but only as
  a warning (`INTERLEAVED_TOOL_USE`): the real Claude Code 2.1.332 completes the parallel-reads
  task on exactly that stream (claude-code-router 3.1.1; docs/peers.md, "Severity checked against
  the real client"). The earlier block ends where the next one starts; its late stop is taken
  without a second report; a block whose stop never comes is still an error.
- The commonest event, a well-formed text, thinking or input_json delta of the open block, takes
  a fast path (`_feed_delta`) that does what the general path does when it finds nothing to
  report; anything else goes the general way (`fast = False`: always; the tests compare the two).
- Nothing here raises on a target's bytes: bad input is a violation.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.core.bounded_json import copy_value
from conformance.core.failures import Violation
from conformance.wire.anthropic.rules import (
    BLOCK,
    BLOCK_DELTAS,
    CUT_STOP_REASONS,
    ERRORED,
    EVENTS,
    KNOWN_DELTAS,
    RECOVER,
    RULES,
    SCHEMA_CHECKS,
    START,
    STOP_REASONS,
    STOPPED,
    STREAM,
    TOOL_BLOCKS,
    TRANSITIONS,
    WHOLE_BLOCK_SUFFIX,
)
from conformance.wire.base import (
    StreamMachineBase,
    StreamReport,
    check_for_pointer,
    compiled_validator,
    fast_json,
    json_check,
    judge_stream,
    load_json,
    parse_json,
    schema_problems,
)
from conformance.wire.sse import SSEDecoder, SSEEvent

_EVENT_SET = frozenset(EVENTS)
INTERLEAVED_TOOL_USE = ("tool_use blocks interleaved: content_block_start for block {new!r} while tool_use block "
                        "{open!r} is open (its content_block_stop comes later); tolerated by Claude Code 2.1.332")
_FAST: dict[str, Any] = {}  # event kind -> its schema's compiled predicate (filled on first use)
# The streamed deltas the fast path takes (`StreamMachine._feed_delta`): block type -> (the one
# streamed delta type it allows, the delta's text field, whether it goes to json_parts).
_STREAMED = {"text_delta": ("text", False), "thinking_delta": ("thinking", False),
             "input_json_delta": ("partial_json", True)}
_FAST_DELTA: dict[str, tuple[str, str, bool]] = {
    btype: (dtype, *_STREAMED[dtype]) for btype, allowed in BLOCK_DELTAS.items()
    for dtype in allowed if dtype in _STREAMED}
assert all(len(allowed & _STREAMED.keys()) <= 1 for allowed in BLOCK_DELTAS.values()), "one streamed delta per block"


class StreamMachine(StreamMachineBase):
    """Feed SSE events one at a time; `finish()` returns the report. Sans-IO."""

    TRANSITIONS, RULES, RECOVER = TRANSITIONS, RULES, RECOVER  # the grammar as data (rules.py)

    def __init__(self, request: dict | None = None) -> None:
        super().__init__(request, START)
        self.message: dict[str, Any] | None = None
        self.blocks: list[dict[str, Any]] = []
        self.open: int | None = None  # position in self.blocks of the open block
        self.open_sent_index: Any = None  # the index the server gave it
        # Streamed text is collected as lists and joined when a block closes: += on a growing
        # string inside a dict is quadratic over a long block.
        self.json_parts: dict[int, list[str]] = {}
        self.text_parts: dict[tuple[int, str], list[str]] = {}
        self.completed_tool_use = False
        # tool_input_json violations held until the stop reason is known: (block position, place in
        # self.violations, violation)
        self.held_tool_input: list[tuple[int, int, Violation]] = []
        self.unparsed_tool_input: dict[str, str] = {}
        self.start_usage: dict[str, Any] | None = None
        self.last_output_tokens: int | None = None
        self.saw_message_delta = False
        self._noted_unknown: set[str] = set()
        self.late_stops: set[Any] = set()  # sent indices of tool_use blocks ended early by an interleaved start
        self._handlers = {kind: getattr(self, "_on_" + kind) for kind in EVENTS}
        self._open_streams: tuple[str, str, bool] | None = None  # _FAST_DELTA of the open block's type
        # the list in json_parts or text_parts the open block's streamed text goes to, once a fast
        # delta looked it up (dropped with the open block and whenever text_parts is joined)
        self._open_parts: list[str] | None = None
        self.fast = True  # False: every event through the general path (the tests compare the two)
        if not _FAST:
            _FAST.update({kind: compiled_validator("anthropic." + kind) for kind in EVENTS})

    # -- helpers --------------------------------------------------------------------------
    def _hold_tool_input(self, pos: int, buf: str, message: str, ev: SSEEvent | None, expected: str,
                         reason: str | None = None) -> None:
        """A tool block's input is not one JSON object: a fault, or a cut (known at the stop reason);
        `reason`: the parse failure's, past the bound it is suite.limits.json_depth."""
        self.unparsed_tool_input[f"/content/{pos}/input"] = buf
        viol = self._make(json_check(reason, STREAM + "tool_input_json"), message, ev, "content_block_stop", expected=expected, seen=buf[:300])
        self.held_tool_input.append((pos, len(self.violations), viol))

    # -- one event ------------------------------------------------------------------------
    def feed(self, ev: SSEEvent) -> None:
        self.events.append(ev)
        try:
            data = fast_json(ev.data)
        except ValueError:  # not JSON, or past the bound: load_json says which
            data, err = load_json(ev.data)
        else:
            err = None
        self.payloads.append(data)
        if ev.event == "content_block_delta" and self.state == BLOCK and type(data) is dict and self.fast \
                and self._feed_delta(data):
            return
        if err is not None or not isinstance(data, dict):
            self._v(json_check(err, STREAM + "event_json"), f"event data is not a JSON object ({err or type(data).__name__})", ev,
                    expected="a JSON object with a `type`", seen=ev.data[:200])
            data = None
        dtype = data.get("type") if data is not None else None
        if data is not None and not isinstance(dtype, str):
            self._v(STREAM + "event_json", "event data has no string `type`", ev, expected="`type`: the event name",
                    seen=json.dumps(dtype), pointer="/type")
            dtype = None
        if ev.event is not None and dtype is not None and ev.event != dtype:
            self._v(STREAM + "event_name_matches_type", f"SSE event name {ev.event!r} but data type {dtype!r}", ev,
                    expected=f"event: {dtype}", seen=f"event: {ev.event}")
        name = dtype or ev.event or "unknown"
        kind = name if name in _EVENT_SET else "unknown"

        apply = self._interleaved_tool_use(kind, data, ev)
        if apply is None:
            apply = self._advance(kind, ev, name, shown=name, event_type=name)
        if kind == "unknown":
            if name not in self._noted_unknown:
                self._noted_unknown.add(name)
                self._v(STREAM + "unknown_event", f"unknown event type {name!r} (tolerated)", ev, name, seen=name)
            return
        if data is None:
            return
        fast = _FAST.get(kind)
        if fast is None or not fast(data):  # the compiled schema passed: nothing for jsonschema to word
            self._schema(kind, data, ev)
        if apply:
            self._handlers[kind](data, ev)

    def _feed_delta(self, data: dict) -> bool:
        """The fast path of the commonest event: a well-formed text, thinking or input_json delta
        for the open block, named content_block_delta, in state BLOCK. Taken only when the general
        path would find nothing to report: the name matches the type, BLOCK -> BLOCK, the
        interleaving rule does not apply to a delta, the schema holds (integer index >= 0, delta
        an object whose type's field is a string), the index is the open block's and the delta
        type is the one its block streams; then it appends the text as `_on_content_block_delta`
        does. False (nothing done): the general path judges the event."""
        streams = self._open_streams
        if streams is None or data.get("type") != "content_block_delta":
            return False
        index, delta = data.get("index"), data.get("delta")
        if type(index) is not int or index < 0 or index != self.open_sent_index or type(delta) is not dict:
            return False
        dtype, field, is_json = streams
        text = delta.get(field)
        if delta.get("type") != dtype or type(text) is not str:
            return False
        parts = self._open_parts
        if parts is None:  # the lists _on_content_block_delta appends to
            parts = self._open_parts = self.json_parts.setdefault(self.open, []) if is_json \
                else self.text_parts.setdefault((self.open, field), [])
        parts.append(text)
        return True

    def _interleaved_tool_use(self, kind: str, data: dict | None, ev: SSEEvent) -> bool | None:
        """The one tolerated break of the grammar (module rules): None when it does not apply, else
        whether the event's handler runs."""
        index = data.get("index") if data is not None else None
        if not isinstance(index, int):  # a malformed index is the block_index rule's to report
            return None
        if kind == "content_block_stop" and index in self.late_stops and index != self.open_sent_index:
            self.late_stops.discard(index)
            return False  # the block already ended where the next tool_use block started
        if kind != "content_block_start" or self.state != BLOCK or self.open is None \
                or not isinstance(self.open_sent_index, int):
            return None
        block = data.get("content_block")
        if self.blocks[self.open].get("type") not in TOOL_BLOCKS or not isinstance(block, dict) \
                or block.get("type") not in TOOL_BLOCKS:
            return None
        self._v(STREAM + "grammar", INTERLEAVED_TOOL_USE.format(new=index, open=self.open_sent_index), ev,
                "content_block_start", severity="warning", expected=RULES[BLOCK][1], seen="content_block_start")
        self.late_stops.add(self.open_sent_index)
        return True

    def _schema(self, kind: str, data: dict, ev: SSEEvent) -> None:
        for ptr, msg, expected, seen in schema_problems("anthropic." + kind, data, memo=False):
            check_id = check_for_pointer(SCHEMA_CHECKS, kind, ptr, STREAM + "event_schema")
            self._v(check_id, f"{kind}: {msg}", ev, kind, expected=expected, seen=seen, pointer=ptr)

    # -- event handlers (accumulation + semantic rules) --------------------------------------
    def _on_message_start(self, data: dict, ev: SSEEvent) -> None:
        msg = data.get("message")
        self.message = copy_value(msg) if isinstance(msg, dict) else {}
        self.message["content"] = self.blocks
        usage = self.message.get("usage")
        self.start_usage = usage if isinstance(usage, dict) else None
        if isinstance(usage, dict):
            self.message["usage"] = dict(usage)

    def _on_ping(self, data: dict, ev: SSEEvent) -> None:
        pass

    def _on_error(self, data: dict, ev: SSEEvent) -> None:
        err = data.get("error") if isinstance(data.get("error"), dict) else {}
        self._v(STREAM + "error_event", f"the server sent an error event: {err.get('type')}: {err.get('message')}", ev,
                "error", expected="no error event", seen=json.dumps(data)[:300])

    def _on_content_block_start(self, data: dict, ev: SSEEvent) -> None:
        # The previous block was never stopped (the grammar rule said so): close it here, as the
        # SDKs' accumulators in effect do, so its input is judged on what it carried instead of
        # staying {} and showing up again as a schema failure.
        self._end_open_block(ev)
        index = data.get("index")
        expected = len(self.blocks)
        if index != expected:
            self._v(STREAM + "block_index", f"content_block_start index {index!r}, expected {expected} "
                    "(indices start at 0 and are contiguous)", ev, "content_block_start",
                    expected=expected, seen=index, pointer="/index")
        block = data.get("content_block")
        block = copy_value(block) if isinstance(block, dict) else {"type": "unknown"}
        btype = block.get("type")
        if not isinstance(btype, str) or (btype not in BLOCK_DELTAS and not btype.endswith(WHOLE_BLOCK_SUFFIX)):
            self._v(STREAM + "unknown_block_type", f"unknown content block type {btype!r} (tolerated)", ev,
                    "content_block_start", seen=btype, pointer="/content_block/type")
        if btype in TOOL_BLOCKS:
            inp = block.get("input")
            if isinstance(inp, dict) and inp:
                self._v(STREAM + "tool_use_start_input", "tool_use content_block_start carries a non-empty input; the "
                        "input should arrive as input_json_delta fragments", ev, "content_block_start",
                        severity="warning", expected="input: {}", seen=json.dumps(inp)[:200],
                        pointer="/content_block/input")
            if not isinstance(inp, dict):
                block["input"] = {}
            self.json_parts[len(self.blocks)] = []
        self.blocks.append(block)
        self.open = len(self.blocks) - 1
        self.open_sent_index = index
        self._open_streams = _FAST_DELTA.get(btype) if isinstance(btype, str) else None
        self._open_parts = None

    def _open_block(self, data: dict, ev: SSEEvent, kind: str) -> dict | None:
        index = data.get("index")
        if self.open is None:
            return None
        if index != self.open_sent_index:
            self._v(STREAM + "block_index", f"{kind} for block {index!r} but the open block is {self.open_sent_index!r}",
                    ev, kind, expected=self.open_sent_index, seen=index, pointer="/index")
            return None
        return self.blocks[self.open]

    def _on_content_block_delta(self, data: dict, ev: SSEEvent) -> None:
        block = self._open_block(data, ev, "content_block_delta")
        delta = data.get("delta")
        if block is None or not isinstance(delta, dict):
            return
        dtype, btype = delta.get("type"), block.get("type")
        allowed = BLOCK_DELTAS.get(btype) if isinstance(btype, str) else None
        if allowed is None and isinstance(btype, str) and btype.endswith(WHOLE_BLOCK_SUFFIX):
            allowed = frozenset()
        if dtype not in KNOWN_DELTAS:
            self._v(STREAM + "unknown_block_type", f"unknown delta type {dtype!r} (tolerated)", ev, "content_block_delta",
                    seen=dtype, pointer="/delta/type")
            return
        if allowed is None:  # unknown block type: cannot judge
            return
        if dtype not in allowed:
            want = ", ".join(sorted(allowed)) or "no delta (the block arrives whole)"
            self._v(STREAM + "delta_block_type", f"{dtype} inside a {btype} block", ev, "content_block_delta",
                    expected=want, seen=dtype, pointer="/delta/type")
            return
        if dtype == "text_delta" and isinstance(delta.get("text"), str):
            self.text_parts.setdefault((self.open, "text"), []).append(delta["text"])
        elif dtype == "citations_delta" and isinstance(delta.get("citation"), dict):
            cites = block.get("citations")
            block["citations"] = (cites if isinstance(cites, list) else []) + [delta["citation"]]
        elif dtype == "thinking_delta" and isinstance(delta.get("thinking"), str):
            self.text_parts.setdefault((self.open, "thinking"), []).append(delta["thinking"])
        elif dtype == "signature_delta" and isinstance(delta.get("signature"), str):
            block["signature"] = delta["signature"]
        elif dtype == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            self.json_parts.setdefault(self.open, []).append(delta["partial_json"])

    def _on_content_block_stop(self, data: dict, ev: SSEEvent) -> None:
        if self._open_block(data, ev, "content_block_stop") is not None:
            self._end_open_block(ev)

    def _end_open_block(self, ev: SSEEvent | None) -> None:
        """Close the open block, if any: at its content_block_stop, or where a block left open ends."""
        if self.open is None:
            return
        self._close_block(self.open, ev)
        self.open = None
        self.open_sent_index = None
        self._open_streams = self._open_parts = None

    def _join_text(self) -> None:
        for (pos, fld), parts in self.text_parts.items():
            block = self.blocks[pos]
            block[fld] = (block.get(fld) if isinstance(block.get(fld), str) else "") + "".join(parts)
        self.text_parts.clear()
        self._open_parts = None

    def _close_block(self, pos: int, ev: SSEEvent | None) -> None:
        self._join_text()
        block = self.blocks[pos]
        btype = block.get("type")
        if btype in TOOL_BLOCKS:
            buf = "".join(self.json_parts.get(pos, ()))
            if buf.strip():
                try:
                    value = parse_json(buf)
                except ValueError as exc:
                    self._hold_tool_input(pos, buf, f"the concatenated partial_json of {btype} block {pos} "
                                          f"({block.get('name')!r}) does not parse as one JSON value: {exc}", ev,
                                          "one JSON object, nothing trailing", str(exc))
                else:
                    if isinstance(value, dict):
                        block["input"] = value
                    else:
                        self._hold_tool_input(pos, buf, f"the input of {btype} block {pos} parses to a "
                                              f"{type(value).__name__}, not an object", ev, "a JSON object")
            if btype == "tool_use":
                self.completed_tool_use = True
        elif btype == "thinking":
            if not block.get("signature"):
                self._v(STREAM + "thinking_signature", f"thinking block {pos} ends without a signature", ev,
                        "content_block_stop", expected="a non-empty signature_delta before content_block_stop",
                        seen=json.dumps(block.get("signature")))

    def _on_message_delta(self, data: dict, ev: SSEEvent) -> None:
        self._end_open_block(ev)  # a block still open (its stop was missing or misnumbered) ends here
        for index in sorted(self.late_stops):
            self._v(STREAM + "grammar", f"tool_use block {index!r} was never stopped (a later tool_use block started "
                    "inside it)", ev, "message_delta", expected=f"content_block_stop for block {index!r}",
                    seen="message_delta")
        self.late_stops.clear()
        delta = data.get("delta") if isinstance(data.get("delta"), dict) else {}
        self.saw_message_delta = True
        if self.message is None:
            self.message = {"content": self.blocks}
        if "stop_reason" in delta:
            self.message["stop_reason"] = delta["stop_reason"]
        if "stop_sequence" in delta:
            self.message["stop_sequence"] = delta["stop_sequence"]
        usage = data.get("usage")
        if not isinstance(usage, dict):
            return
        out = usage.get("output_tokens")
        if isinstance(out, int):
            floor = self.last_output_tokens
            if floor is None and self.start_usage and isinstance(self.start_usage.get("output_tokens"), int):
                floor = self.start_usage["output_tokens"]
            if floor is not None and out < floor:
                self._v(STREAM + "usage_consistent", f"output_tokens went down from {floor} to {out}; "
                        "usage in message_delta is cumulative", ev, "message_delta",
                        expected=f">= {floor}", seen=out, pointer="/usage/output_tokens")
            self.last_output_tokens = out
        inp = usage.get("input_tokens")
        start_inp = (self.start_usage or {}).get("input_tokens")
        if isinstance(inp, int) and isinstance(start_inp, int) and inp and start_inp and inp != start_inp:
            self._v(STREAM + "usage_consistent", f"input_tokens {inp} in message_delta contradicts {start_inp} "
                    "in message_start", ev, "message_delta", severity="warning",
                    expected=start_inp, seen=inp, pointer="/usage/input_tokens")
        merged = self.message.get("usage") if isinstance(self.message.get("usage"), dict) else {}
        for k, val in usage.items():
            if val is not None:
                merged[k] = val
        self.message["usage"] = merged

    def _on_message_stop(self, data: dict, ev: SSEEvent) -> None:
        pass

    # -- end of stream --------------------------------------------------------------------
    def finish(self) -> StreamReport:
        complete = self.state == STOPPED
        end = self.events[-1] if self.events else None
        if self.state not in (STOPPED, ERRORED):
            if not self.events:
                self._v(STREAM + "complete", "the stream carried no event at all", None,
                        expected="message_start ... message_stop", seen="an empty body")
            else:
                self._v(STREAM + "complete", f"the stream ended in state {self.state!r} after event "
                        f"#{end.index} without message_stop", None, event_index=end.index,
                        event_type=end.event, expected="message_stop as the last event",
                        seen=f"last event #{end.index} {end.event or ''}".strip())
        if complete and self.message is not None:
            reason = self.message.get("stop_reason")
            if reason is None and self.saw_message_delta:  # no message_delta at all: the grammar said so
                self._v(STREAM + "stop_reason_valid", "the stream ended with stop_reason null", None,
                        event_index=end.index, expected="one of " + ", ".join(STOP_REASONS), seen="null")
            has_tool_use = any(b.get("type") == "tool_use" for b in self.blocks)
            if reason == "tool_use" and not has_tool_use:
                self._v(STREAM + "tool_use_stop_reason", "stop_reason tool_use but the message has no tool_use block",
                        None, event_index=end.index, expected="a tool_use block", seen="stop_reason tool_use")
            elif self.completed_tool_use and reason != "tool_use" and reason not in CUT_STOP_REASONS:
                self._v(STREAM + "tool_use_stop_reason", f"a tool_use block was completed but stop_reason is {reason!r}",
                        None, event_index=end.index, expected="stop_reason tool_use", seen=reason)
        self._release_tool_input()
        self._join_text()  # blocks left open by a cut stream keep what arrived
        if self.message is not None:
            self.message["content"] = self.blocks
        return StreamReport(self.events, self.violations, self.message, complete, self.payloads,
                            dict(self.unparsed_tool_input))

    def _release_tool_input(self) -> None:
        """Report the held tool_input_json violations, in the place they were found, except the last
        tool block's when the stop reason says the output was cut (the cap ended it, not the parser)."""
        reason = self.message.get("stop_reason") if self.message is not None else None
        cut = isinstance(reason, str) and reason in CUT_STOP_REASONS
        last_tool = max((i for i, b in enumerate(self.blocks) if b.get("type") in TOOL_BLOCKS), default=None)
        for pos, at, viol in reversed(self.held_tool_input):  # from the back: earlier places stay valid
            if not (cut and pos == last_tool):
                self.violations.insert(at, viol)
        self.held_tool_input.clear()


def check_stream(chunks, *, request: dict | None = None) -> StreamReport:
    """Judge a whole Anthropic event stream: bytes, or the transport's [(t, bytes)] chunks."""
    return judge_stream(SSEDecoder(require_event_name=True), StreamMachine(request), chunks)
