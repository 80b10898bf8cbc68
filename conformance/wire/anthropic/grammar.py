"""Anthropic Messages wire: stream state machine, accumulator, non-stream and error checks.

Grammar (WIRE.md; Anthropic "streaming" docs; the SDK's raw_*_event types):

    message_start ( content_block_start content_block_delta* content_block_stop )*
    message_delta+ message_stop
    -- `ping` anywhere before message_stop; an `error` event ends the stream (recorded);
    -- unknown event types are tolerated and noted (info).

The transitions are the table `TRANSITIONS` below (state x event -> state). An event the table
does not allow is a violation naming the event number, the event, the state and the rule
(`RULES`); `RECOVER` says where the machine continues after a few illegal events, so one fault
is reported once instead of cascading.

Rules checked beside the grammar (each a registered check id):
- message_start.message is a full empty message: id, type "message", role "assistant", model,
  content [], stop_reason null, stop_sequence null, usage (vLLM #45367: missing type/role made
  Claude Code retry forever).
- Block indices start at 0 and are contiguous; a delta or stop names the open block. A block
  left open (the next content_block_start or message_delta came first) is reported by the
  grammar and then closed there, so its content is still judged (llama.cpp opens every
  parallel tool_use block before stopping any).
- A delta matches its block's type: text_delta/citations_delta -> text,
  input_json_delta -> tool_use/server_tool_use, thinking_delta/signature_delta -> thinking;
  blocks that arrive whole (redacted_thinking, server tool results) take no delta.
- tool_use content_block_start carries `input: {}`; the concatenated partial_json parses to one
  JSON object at content_block_stop with nothing trailing (the first fragment may be ""). Whether
  a broken input is a fault is only known at message_delta: when the max_tokens cap hits inside a
  tool_use block the API itself sends content_block_stop, then stop_reason max_tokens. So the
  violation is held at content_block_stop (with its event) and reported at the end, unless the
  block is the message's last tool block and the stop reason is a cut one (CUT_STOP_REASONS) —
  then the cap cut it and `tools.call_cut` reports it, as a warning. A stream that ends without
  any stop reason keeps the violation.
- message_delta has a valid stop_reason, stop_sequence present (nullable; vLLM #55324) and
  usage; output_tokens are cumulative and never go down.
- stop_reason tool_use needs a tool_use block; a completed tool_use block in a normally ended
  stream needs stop_reason tool_use (max_tokens, pause_turn, refusal and
  model_context_window_exceeded excepted: the turn was cut, not finished).
- An empty thinking signature is a warning: open engines cannot mint one; it only breaks a
  session later switched to Anthropic's API.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from conformance.core.failures import Violation
from conformance.core.registry import register, violation
from conformance.wire.base import (
    StreamReport,
    body_preview,
    check_for_pointer,
    compiled_validator,
    error_envelope_problems,
    fast_json,
    judge_stream,
    load_json,
    schema_problems,
)
from conformance.wire.sse import SSEDecoder, SSEEvent, decode, head_then_whole

# ----------------------------------------------------------------------------- check ids
_C = "anthropic.stream."
register(_C + "event_json", "every stream event's data is a JSON object with a `type`",
         likely_cause="the engine writes partial or non-JSON data lines, or a proxy rewrites the stream")
register(_C + "event_name_matches_type", "the SSE `event:` name equals the data's `type`",
         likely_cause="a router translating between wires writes the wrong event name; the SDKs dispatch on the name")
register(_C + "event_schema", "each stream event matches its JSON Schema (conformance/wire/anthropic/schemas/anthropic.*.json)",
         likely_cause="the engine's Anthropic endpoint serialises events with missing or mistyped fields")
register(_C + "grammar", "events follow message_start (block_start delta* block_stop)* message_delta+ message_stop",
         likely_cause="the engine or router emits events out of order (duplicate message_start, a delta "
         "outside a block, message_stop before message_delta): see LiteLLM #13373, #32357")
register(_C + "nothing_after_stop", "no event follows message_stop",
         likely_cause="the server keeps writing after message_stop (a second response, a trailing ping or an "
         "OpenAI-style `data: [DONE]` leaking from a translating router)")
register(_C + "complete", "the stream ends with message_stop",
         likely_cause="the stream was cut: the engine crashed or hit a timeout mid-generation, or a proxy closed "
         "the connection early (check the engine log around the last event)")
register(_C + "message_start_complete",
         "message_start.message has id, type, role, model, content [], stop_reason null, stop_sequence null, usage",
         likely_cause="the engine's Anthropic adapter builds message_start by hand and omits fields "
         "(vLLM #45367: no type/role, Claude Code retried forever while curl looked fine)")
register(_C + "block_index", "content block indices start at 0, are contiguous, and deltas/stops name the open block",
         likely_cause="a router merging or re-numbering blocks (e.g. thinking + text + tool_use translated from "
         "OpenAI chat) gets the index wrong: LiteLLM #13373, #32357")
register(_C + "delta_block_type", "each delta's type matches the type of the block it belongs to",
         likely_cause="a translating router sends thinking/text/tool deltas into the wrong block (LiteLLM #32357)")
register(_C + "tool_use_start_input", "a tool_use content_block_start carries `input: {}`",
         likely_cause="the engine (e.g. llama.cpp server) omits `input` at block start; strict clients reject the block")
register(_C + "tool_input_json",
         "a tool_use block's concatenated partial_json is one JSON object at content_block_stop, nothing trailing",
         likely_cause="the engine's tool parser streams malformed or partial arguments, or repeats the object "
         "(vLLM #35266, #41739; opencode #8102)")
register(_C + "stop_sequence_present", "message_delta.delta carries stop_sequence (required, nullable)",
         likely_cause="a layer serialises with exclude_unset/exclude_none and drops the nullable field "
         "(vLLM #55324, fixed in PR #55325); strict clients kill the stream at the last event")
register(_C + "stop_reason_valid", "message_delta carries a known, non-null stop_reason by message_stop",
         likely_cause="the engine maps its finish reason badly (e.g. passes OpenAI's `stop`/`length` through)")
register(_C + "usage_consistent",
         "usage is present in message_start and message_delta and consistent (cumulative, never decreasing)",
         likely_cause="a layer drops or recomputes usage between message_start and message_delta (LiteLLM #24176)")
register(_C + "tool_use_stop_reason",
         "stop_reason is tool_use exactly when the message ends with a completed tool_use block",
         likely_cause="the engine or router maps the finish reason without looking at the emitted tool calls "
         "(LiteLLM #34692: end_turn after a tool call, so the agent never runs the tool)")
register(_C + "thinking_signature", "a thinking block ends with a non-empty signature", severity="warning",
         likely_cause="an open engine cannot mint Anthropic signatures (llama.cpp sends \"\"): harmless on one engine, "
         "breaks a session later switched to Anthropic's API")
register(_C + "error_event", "no `error` event arrives in a 200 stream",
         likely_cause="the engine failed mid-generation (overload, crash, context overflow); see its log")
register(_C + "unknown_event", "unknown event types are tolerated (noted)", severity="info",
         likely_cause="a newer API feature or a vendor extension; clients must ignore unknown events")
register(_C + "unknown_block_type", "unknown content block or delta types are tolerated (noted)", severity="info",
         likely_cause="a newer API feature or a vendor extension")
_R = "anthropic.response."
register(_R + "json", "a non-stream response body is a JSON object",
         likely_cause="the endpoint returned an HTML/text error page or an event stream for stream:false")
register(_R + "schema", "a non-stream response matches the Messages response schema",
         likely_cause="the engine's Anthropic adapter omits or mistypes response fields")
register(_R + "stop_sequence_present", "a non-stream response carries stop_sequence (required, nullable)",
         likely_cause="the response is serialised with exclude_none, dropping stop_sequence when null (vLLM #56371)")
register(_R + "stop_reason_valid", "a non-stream response has a known, non-null stop_reason",
         likely_cause="the engine maps its finish reason badly (e.g. passes OpenAI's `stop`/`length` through)")
register(_R + "tool_use_stop_reason", "stop_reason is tool_use exactly when the response contains a tool_use block",
         likely_cause="the engine or router maps the finish reason without looking at the tool calls (LiteLLM #34692)")
register(_R + "thinking_signature", "a thinking block carries a non-empty signature", severity="warning",
         likely_cause="an open engine cannot mint Anthropic signatures: breaks a session later switched to Anthropic")
register("anthropic.error.envelope",
         "an error is {\"type\":\"error\",\"error\":{\"type\",\"message\"}} with a defined type and its HTTP status",
         likely_cause="the engine returns its framework's default error body (FastAPI `detail`, OpenAI `error` shape) "
         "or a status Anthropic does not use; Claude Code's recovery matches on type and wording")

# ----------------------------------------------------------------------------- the grammar as data
START, MESSAGE, BLOCK, DELTA, STOPPED, ERRORED = "start", "message", "block", "message_delta", "stopped", "errored"
EVENTS = ("message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
          "message_stop", "ping", "error")

TRANSITIONS: dict[tuple[str, str], str] = {
    (START, "message_start"): MESSAGE,
    (MESSAGE, "content_block_start"): BLOCK,
    (BLOCK, "content_block_delta"): BLOCK,
    (BLOCK, "content_block_stop"): MESSAGE,
    (MESSAGE, "message_delta"): DELTA,
    (DELTA, "message_delta"): DELTA,
    (DELTA, "message_stop"): STOPPED,
    # ping anywhere before message_stop; an error event ends the stream; unknown events are noted
    **{(s, "ping"): s for s in (START, MESSAGE, BLOCK, DELTA)},
    **{(s, "error"): ERRORED for s in (START, MESSAGE, BLOCK, DELTA)},
    **{(s, "unknown"): s for s in (START, MESSAGE, BLOCK, DELTA)},
}

# What each state allows, in words, and the check id an illegal event there is reported under.
RULES: dict[str, tuple[str, str]] = {
    START: (_C + "grammar", "a stream opens with message_start"),
    MESSAGE: (_C + "grammar", "after message_start or a content_block_stop come content_block_start or message_delta"),
    BLOCK: (_C + "grammar", "inside an open block come content_block_delta or content_block_stop"),
    DELTA: (_C + "grammar", "after message_delta come message_delta or message_stop"),
    STOPPED: (_C + "nothing_after_stop", "nothing follows message_stop"),
    ERRORED: (_C + "grammar", "nothing follows an error event"),
}

# After an illegal event, where the machine goes on (and the event is still applied), so a
# missing event is reported once. Pairs not listed: the event is ignored, the state kept.
RECOVER: dict[tuple[str, str], str] = {
    (START, "content_block_start"): BLOCK,  # message_start missing
    (START, "message_delta"): DELTA,
    (START, "message_stop"): STOPPED,
    (BLOCK, "content_block_start"): BLOCK,  # previous block never stopped
    (BLOCK, "message_delta"): DELTA,
    (BLOCK, "message_stop"): STOPPED,
    (MESSAGE, "message_stop"): STOPPED,  # message_delta missing
    (DELTA, "content_block_start"): BLOCK,  # a block after message_delta
}

# Which deltas each block type takes. Types listed with no deltas arrive whole.
BLOCK_DELTAS: dict[str, frozenset[str]] = {
    "text": frozenset({"text_delta", "citations_delta"}),
    "tool_use": frozenset({"input_json_delta"}),
    "server_tool_use": frozenset({"input_json_delta"}),
    "mcp_tool_use": frozenset({"input_json_delta"}),
    "thinking": frozenset({"thinking_delta", "signature_delta"}),
    "redacted_thinking": frozenset(),
}
# tuples, not sets: membership of an unhashable payload value (a list where a string belongs) must
# answer False, not raise
KNOWN_DELTAS = tuple(sorted(frozenset().union(*BLOCK_DELTAS.values())))
WHOLE_BLOCK_SUFFIX = "_tool_result"  # server tool results (web_search_tool_result, ...) arrive whole
TOOL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")

STOP_REASONS = ("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal",
                "model_context_window_exceeded")
# A turn cut short may end with a tool_use block without stop_reason tool_use.
CUT_STOP_REASONS = ("max_tokens", "pause_turn", "refusal", "model_context_window_exceeded")

# HTTP status <-> error type (WIRE.md, Anthropic "errors" docs).
ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

# Schema error pointer -> check id, per event type (first match wins).
SCHEMA_CHECKS: list[tuple[str, str, str]] = [
    ("message_start", "", _C + "message_start_complete"),
    ("message_delta", "/delta/stop_sequence", _C + "stop_sequence_present"),
    ("message_delta", "/delta/stop_reason", _C + "stop_reason_valid"),
    ("message_delta", "/usage", _C + "usage_consistent"),
    ("content_block_start", "/content_block/input", _C + "tool_use_start_input"),
    ("*", "/index", _C + "block_index"),
    ("error", "", "anthropic.error.envelope"),
]
RESPONSE_SCHEMA_CHECKS: list[tuple[str, str, str]] = [
    ("message", "/stop_sequence", _R + "stop_sequence_present"),
    ("message", "/stop_reason", _R + "stop_reason_valid"),
]


# ----------------------------------------------------------------------------- the stream machine
_EVENT_SET = frozenset(EVENTS)
_FAST: dict[str, Any] = {}  # event kind -> its schema's compiled predicate (filled on first use)


class StreamMachine:
    """Feed SSE events one at a time; `finish()` returns the report. Sans-IO."""

    def __init__(self, request: dict | None = None) -> None:
        self.request = request or {}
        self.state = START
        self.violations: list[Violation] = []
        self.events: list[SSEEvent] = []
        self.payloads: list[Any] = []
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
        self._handlers = {kind: getattr(self, "_on_" + kind) for kind in EVENTS}
        if not _FAST:
            _FAST.update({kind: compiled_validator("anthropic." + kind) for kind in EVENTS})

    # -- helpers --------------------------------------------------------------------------
    def _v(self, check_id: str, message: str, ev: SSEEvent | None = None, kind: str | None = None, **kw) -> None:
        self.violations.append(self._make(check_id, message, ev, kind, **kw))

    def _make(self, check_id: str, message: str, ev: SSEEvent | None = None, kind: str | None = None,
              **kw) -> Violation:
        if ev is not None:
            kw.setdefault("event_index", ev.index)
            kw.setdefault("byte_offset", ev.offset)
            kw.setdefault("event_type", kind or ev.event)
        return violation(check_id, message, **kw)

    def _hold_tool_input(self, pos: int, buf: str, message: str, ev: SSEEvent | None, expected: str) -> None:
        """A tool block's input is not one JSON object: a fault, or a cut (known at the stop reason)."""
        self.unparsed_tool_input[f"/content/{pos}/input"] = buf
        viol = self._make(_C + "tool_input_json", message, ev, "content_block_stop", expected=expected, seen=buf[:300])
        self.held_tool_input.append((pos, len(self.violations), viol))

    # -- one event ------------------------------------------------------------------------
    def feed(self, ev: SSEEvent) -> None:
        self.events.append(ev)
        try:
            data, err = fast_json(ev.data), None
        except ValueError:  # (msgspec's DecodeError is one) json.loads decides and words it
            data, err = load_json(ev.data)
        self.payloads.append(data)
        if err is not None or not isinstance(data, dict):
            self._v(_C + "event_json", f"event data is not a JSON object ({err or type(data).__name__})", ev,
                    expected="a JSON object with a `type`", seen=ev.data[:200])
            data = None
        dtype = data.get("type") if data is not None else None
        if data is not None and not isinstance(dtype, str):
            self._v(_C + "event_json", "event data has no string `type`", ev, expected="`type`: the event name",
                    seen=json.dumps(dtype), pointer="/type")
            dtype = None
        if ev.event is not None and dtype is not None and ev.event != dtype:
            self._v(_C + "event_name_matches_type", f"SSE event name {ev.event!r} but data type {dtype!r}", ev,
                    expected=f"event: {dtype}", seen=f"event: {ev.event}")
        name = dtype or ev.event or "unknown"
        kind = name if name in _EVENT_SET else "unknown"

        state = self.state
        nxt = TRANSITIONS.get((state, kind))
        apply = True
        if nxt is None:
            check_id, rule = RULES[state]
            self._v(check_id, f"event #{ev.index} {name} is not allowed in state {state!r}: {rule}", ev, name,
                    expected=rule, seen=name)
            nxt = RECOVER.get((state, kind))
            if nxt is None:
                nxt, apply = state, False
        self.state = nxt
        if kind == "unknown":
            if name not in self._noted_unknown:
                self._noted_unknown.add(name)
                self._v(_C + "unknown_event", f"unknown event type {name!r} (tolerated)", ev, name, seen=name)
            return
        if data is None:
            return
        fast = _FAST.get(kind)
        if fast is None or not fast(data):  # the compiled schema passed: nothing for jsonschema to word
            self._schema(kind, data, ev)
        if apply:
            self._handlers[kind](data, ev)

    def _schema(self, kind: str, data: dict, ev: SSEEvent) -> None:
        for ptr, msg, expected, seen in schema_problems("anthropic." + kind, data, memo=False):
            check_id = check_for_pointer(SCHEMA_CHECKS, kind, ptr, _C + "event_schema")
            self._v(check_id, f"{kind}: {msg}", ev, kind, expected=expected, seen=seen, pointer=ptr)

    # -- event handlers (accumulation + semantic rules) --------------------------------------
    def _on_message_start(self, data: dict, ev: SSEEvent) -> None:
        msg = data.get("message")
        self.message = copy.deepcopy(msg) if isinstance(msg, dict) else {}
        self.message["content"] = self.blocks
        usage = self.message.get("usage")
        self.start_usage = usage if isinstance(usage, dict) else None
        if isinstance(usage, dict):
            self.message["usage"] = dict(usage)

    def _on_ping(self, data: dict, ev: SSEEvent) -> None:
        pass

    def _on_error(self, data: dict, ev: SSEEvent) -> None:
        err = data.get("error") if isinstance(data.get("error"), dict) else {}
        self._v(_C + "error_event", f"the server sent an error event: {err.get('type')}: {err.get('message')}", ev,
                "error", expected="no error event", seen=json.dumps(data)[:300])

    def _on_content_block_start(self, data: dict, ev: SSEEvent) -> None:
        # The previous block was never stopped (the grammar rule said so): close it here, as the
        # SDKs' accumulators in effect do, so its input is judged on what it carried instead of
        # staying {} and showing up again as a schema failure.
        self._end_open_block(ev)
        index = data.get("index")
        expected = len(self.blocks)
        if index != expected:
            self._v(_C + "block_index", f"content_block_start index {index!r}, expected {expected} "
                    "(indices start at 0 and are contiguous)", ev, "content_block_start",
                    expected=expected, seen=index, pointer="/index")
        block = data.get("content_block")
        block = copy.deepcopy(block) if isinstance(block, dict) else {"type": "unknown"}
        btype = block.get("type")
        if not isinstance(btype, str) or (btype not in BLOCK_DELTAS and not btype.endswith(WHOLE_BLOCK_SUFFIX)):
            self._v(_C + "unknown_block_type", f"unknown content block type {btype!r} (tolerated)", ev,
                    "content_block_start", seen=btype, pointer="/content_block/type")
        if btype in TOOL_BLOCKS:
            inp = block.get("input")
            if isinstance(inp, dict) and inp:
                self._v(_C + "tool_use_start_input", "tool_use content_block_start carries a non-empty input; the "
                        "input should arrive as input_json_delta fragments", ev, "content_block_start",
                        severity="warning", expected="input: {}", seen=json.dumps(inp)[:200],
                        pointer="/content_block/input")
            if not isinstance(inp, dict):
                block["input"] = {}
            self.json_parts[len(self.blocks)] = []
        self.blocks.append(block)
        self.open = len(self.blocks) - 1
        self.open_sent_index = index

    def _open_block(self, data: dict, ev: SSEEvent, kind: str) -> dict | None:
        index = data.get("index")
        if self.open is None:
            return None
        if index != self.open_sent_index:
            self._v(_C + "block_index", f"{kind} for block {index!r} but the open block is {self.open_sent_index!r}",
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
            self._v(_C + "unknown_block_type", f"unknown delta type {dtype!r} (tolerated)", ev, "content_block_delta",
                    seen=dtype, pointer="/delta/type")
            return
        if allowed is None:  # unknown block type: cannot judge
            return
        if dtype not in allowed:
            want = ", ".join(sorted(allowed)) or "no delta (the block arrives whole)"
            self._v(_C + "delta_block_type", f"{dtype} inside a {btype} block", ev, "content_block_delta",
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

    def _join_text(self) -> None:
        for (pos, fld), parts in self.text_parts.items():
            block = self.blocks[pos]
            block[fld] = (block.get(fld) if isinstance(block.get(fld), str) else "") + "".join(parts)
        self.text_parts.clear()

    def _close_block(self, pos: int, ev: SSEEvent | None) -> None:
        self._join_text()
        block = self.blocks[pos]
        btype = block.get("type")
        if btype in TOOL_BLOCKS:
            buf = "".join(self.json_parts.get(pos, ()))
            if buf.strip():
                try:
                    value = json.loads(buf)
                except ValueError as exc:
                    self._hold_tool_input(pos, buf, f"the concatenated partial_json of {btype} block {pos} "
                                          f"({block.get('name')!r}) does not parse as one JSON value: {exc}", ev,
                                          "one JSON object, nothing trailing")
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
                self._v(_C + "thinking_signature", f"thinking block {pos} ends without a signature", ev,
                        "content_block_stop", expected="a non-empty signature_delta before content_block_stop",
                        seen=json.dumps(block.get("signature")))

    def _on_message_delta(self, data: dict, ev: SSEEvent) -> None:
        self._end_open_block(ev)  # a block still open (its stop was missing or misnumbered) ends here
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
                self._v(_C + "usage_consistent", f"output_tokens went down from {floor} to {out}; "
                        "usage in message_delta is cumulative", ev, "message_delta",
                        expected=f">= {floor}", seen=out, pointer="/usage/output_tokens")
            self.last_output_tokens = out
        inp = usage.get("input_tokens")
        start_inp = (self.start_usage or {}).get("input_tokens")
        if isinstance(inp, int) and isinstance(start_inp, int) and inp and start_inp and inp != start_inp:
            self._v(_C + "usage_consistent", f"input_tokens {inp} in message_delta contradicts {start_inp} "
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
                self._v(_C + "complete", "the stream carried no event at all", None,
                        expected="message_start ... message_stop", seen="an empty body")
            else:
                self._v(_C + "complete", f"the stream ended in state {self.state!r} after event "
                        f"#{end.index} without message_stop", None, event_index=end.index,
                        event_type=end.event, expected="message_stop as the last event",
                        seen=f"last event #{end.index} {end.event or ''}".strip())
        if complete and self.message is not None:
            reason = self.message.get("stop_reason")
            if reason is None and self.saw_message_delta:  # no message_delta at all: the grammar said so
                self._v(_C + "stop_reason_valid", "the stream ended with stop_reason null", None,
                        event_index=end.index, expected="one of " + ", ".join(STOP_REASONS), seen="null")
            has_tool_use = any(b.get("type") == "tool_use" for b in self.blocks)
            if reason == "tool_use" and not has_tool_use:
                self._v(_C + "tool_use_stop_reason", "stop_reason tool_use but the message has no tool_use block",
                        None, event_index=end.index, expected="a tool_use block", seen="stop_reason tool_use")
            elif self.completed_tool_use and reason != "tool_use" and reason not in CUT_STOP_REASONS:
                self._v(_C + "tool_use_stop_reason", f"a tool_use block was completed but stop_reason is {reason!r}",
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


# ----------------------------------------------------------------------------- non-stream
def check_response(body, *, request: dict | None = None) -> tuple[dict | None, list[Violation]]:
    """Judge a non-stream Messages response. Returns (the message or None, violations)."""
    data, err = load_json(body)
    out: list[Violation] = []
    if err is not None or not isinstance(data, dict):
        out.append(violation(_R + "json", f"the response body is not a JSON object ({err or type(data).__name__})",
                             expected="a Messages response object", seen=body_preview(body)))
        return None, out
    if data.get("type") == "error":
        out.append(violation(_R + "schema", "a 2xx response carries an error envelope",
                             expected='"type": "message"', seen=json.dumps(data)[:300], pointer="/type"))
        return None, out
    for ptr, msg, expected, seen in schema_problems("anthropic.message", data):
        check_id = check_for_pointer(RESPONSE_SCHEMA_CHECKS, "message", ptr, _R + "schema")
        out.append(violation(check_id, msg, expected=expected, seen=seen, pointer=ptr))
    content = data.get("content") if isinstance(data.get("content"), list) else []
    reason = data.get("stop_reason")
    has_tool_use = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
    if reason == "tool_use" and not has_tool_use:
        out.append(violation(_R + "tool_use_stop_reason", "stop_reason tool_use but no tool_use block",
                             expected="a tool_use block", seen="stop_reason tool_use", pointer="/stop_reason"))
    elif has_tool_use and reason != "tool_use" and reason not in CUT_STOP_REASONS:
        out.append(violation(_R + "tool_use_stop_reason", f"a tool_use block but stop_reason {reason!r}",
                             expected="stop_reason tool_use", seen=reason, pointer="/stop_reason"))
    for i, b in enumerate(content):
        if isinstance(b, dict) and b.get("type") == "thinking" and not b.get("signature"):
            out.append(violation(_R + "thinking_signature", f"thinking block {i} has no signature",
                                 expected="a non-empty signature", seen=json.dumps(b.get("signature")),
                                 pointer=f"/content/{i}/signature"))
    return data, out


# ----------------------------------------------------------------------------- errors
def check_error(status: int, body: bytes) -> list[Violation]:
    """Judge an error response: the envelope, a defined error type, and the status that goes with it."""
    cid = "anthropic.error.envelope"
    data, out = error_envelope_problems(cid, "anthropic.error", status, body,
                                        '{"type":"error","error":{"type":...,"message":...}}', error_status=False)
    if data is None:
        return out
    etype = data.get("error", {}).get("type") if isinstance(data.get("error"), dict) else None
    want = ERROR_STATUS.get(etype) if isinstance(etype, str) else None
    known_statuses = set(ERROR_STATUS.values())
    if want is not None and status != want and status in known_statuses:
        out.append(violation(cid, f"error type {etype!r} comes with HTTP {want}, not {status}",
                             expected=f"HTTP {want}", seen=f"HTTP {status}"))
    elif status not in known_statuses:
        # 5xx from a proxy in front (502/503) is a gateway matter: warn; other codes mislead clients.
        out.append(violation(cid, f"HTTP {status} is not a status the Anthropic API uses"
                             + (f" (error type {etype!r} goes with {want})" if want else ""),
                             expected="one of " + ", ".join(str(s) for s in sorted(known_statuses)),
                             seen=f"HTTP {status}", severity="warning" if status >= 500 else None))
    return out



# ----------------------------------------------------------------------------- first content
_CONTENT_EVENTS = frozenset({"content_block_start", "content_block_delta", "message_delta", "message_stop", "error"})


def content_started(buf: bytes) -> bool:
    """True once `buf` (the bytes so far) holds content: a block, a delta, the end or an error.

    message_start, pings and comments are not content (a target that sends only those is hung).
    A body that is not an event stream (a JSON response or error) is content from its first byte.
    """
    head = buf.lstrip()[:1]
    if not head:
        return False
    if head in (b"{", b"["):
        return True
    if not any(name.encode() in buf for name in _CONTENT_EVENTS):
        return False
    # Content comes early: judge a short head first (events of a prefix are the first events of
    # the whole, so a True there is the answer), the whole buffer only when the head has none.
    return any(_has_content(part) for part in head_then_whole(buf))


def _has_content(buf: bytes) -> bool:
    events, _ = decode(buf)
    for ev in events:
        name = ev.event
        if name is None:
            data, _err = load_json(ev.data)
            name = data.get("type") if isinstance(data, dict) else None
        if name in _CONTENT_EVENTS:
            return True
    return False
