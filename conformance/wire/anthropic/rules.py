"""Anthropic Messages wire: the grammar as data — its rule ids and its tables.

Grammar (docs/wire-facts.md; Anthropic "streaming" docs; the SDK's raw_*_event types):

    message_start ( content_block_start content_block_delta* content_block_stop )*
    message_delta+ message_stop
    -- `ping` anywhere before message_stop; an `error` event ends the stream (recorded);
    -- unknown event types are tolerated and noted (info).

The transitions are the table `TRANSITIONS` below (state x event -> state). An event the table
does not allow is a violation naming the event number, the event, the state and the rule
(`RULES`); `RECOVER` says where the machine continues after a few illegal events, so one fault
is reported once instead of cascading. The machine that reads these tables is `stream.py`; the
non-stream, error and first-content checks are `answer.py`.

Rules checked beside the grammar (each a registered check id, scope wire, judging the stack):
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

from conformance.wire.base import register_rule

# ----------------------------------------------------------------------------- check ids
STREAM = "anthropic.stream."
register_rule(STREAM + "event_json", "every stream event's data is a JSON object with a `type`",
              likely_cause="the engine writes partial or non-JSON data lines, or a proxy rewrites the stream")
register_rule(STREAM + "event_name_matches_type", "the SSE `event:` name equals the data's `type`",
              likely_cause="a router translating between wires writes the wrong event name; the SDKs dispatch on the name")
register_rule(STREAM + "event_schema", "each stream event matches its JSON Schema (conformance/wire/anthropic/schemas/anthropic.*.json)",
              likely_cause="the engine's Anthropic endpoint serialises events with missing or mistyped fields")
# Interleaved tool_use blocks (start 0, start 1, stop 0, stop 1) are reported under this rule as a
# warning: the real Claude Code 2.1.332 completes the parallel-reads task on such a stream from
# claude-code-router 3.1.1 (docs/wire-facts.md; the tolerance is stream.py's _interleaved_tool_use).
register_rule(STREAM + "grammar", "events follow message_start (block_start delta* block_stop)* message_delta+ message_stop",
              likely_cause="the engine or router emits events out of order (duplicate message_start, a delta "
              "outside a block, message_stop before message_delta): see LiteLLM #13373, #32357")
register_rule(STREAM + "nothing_after_stop", "no event follows message_stop",
              likely_cause="the server keeps writing after message_stop (a second response, a trailing ping or an "
              "OpenAI-style `data: [DONE]` leaking from a translating router)")
register_rule(STREAM + "complete", "the stream ends with message_stop",
              likely_cause="the stream was cut: the engine crashed or hit a timeout mid-generation, or a proxy closed "
              "the connection early (check the engine log around the last event)")
register_rule(STREAM + "message_start_complete",
              "message_start.message has id, type, role, model, content [], stop_reason null, stop_sequence null, usage",
              likely_cause="the engine's Anthropic adapter builds message_start by hand and omits fields "
              "(vLLM #45367: no type/role, Claude Code retried forever while curl looked fine)")
register_rule(STREAM + "block_index", "content block indices start at 0, are contiguous, and deltas/stops name the open block",
              likely_cause="a router merging or re-numbering blocks (e.g. thinking + text + tool_use translated from "
              "OpenAI chat) gets the index wrong: LiteLLM #13373, #32357")
register_rule(STREAM + "delta_block_type", "each delta's type matches the type of the block it belongs to",
              likely_cause="a translating router sends thinking/text/tool deltas into the wrong block (LiteLLM #32357)")
register_rule(STREAM + "tool_use_start_input", "a tool_use content_block_start carries `input: {}`",
              likely_cause="the engine (e.g. llama.cpp server) omits `input` at block start; strict clients reject the block")
register_rule(STREAM + "tool_input_json",
              "a tool_use block's concatenated partial_json is one JSON object at content_block_stop, nothing trailing",
              likely_cause="the engine's tool parser streams malformed or partial arguments, or repeats the object "
              "(vLLM #35266, #41739; opencode #8102)")
register_rule(STREAM + "stop_sequence_present", "message_delta.delta carries stop_sequence (required, nullable)",
              likely_cause="a layer serialises with exclude_unset/exclude_none and drops the nullable field "
              "(vLLM #55324, fixed in PR #55325); strict clients kill the stream at the last event")
register_rule(STREAM + "stop_reason_valid", "message_delta carries a known, non-null stop_reason by message_stop",
              likely_cause="the engine maps its finish reason badly (e.g. passes OpenAI's `stop`/`length` through)")
register_rule(STREAM + "usage_consistent",
              "usage is present in message_start and message_delta and consistent (cumulative, never decreasing)",
              likely_cause="a layer drops or recomputes usage between message_start and message_delta (LiteLLM #24176)")
register_rule(STREAM + "tool_use_stop_reason",
              "stop_reason is tool_use exactly when the message ends with a completed tool_use block",
              likely_cause="the engine or router maps the finish reason without looking at the emitted tool calls "
              "(LiteLLM #34692: end_turn after a tool call, so the agent never runs the tool)")
register_rule(STREAM + "thinking_signature", "a thinking block ends with a non-empty signature", severity="warning",
              likely_cause="an open engine cannot mint Anthropic signatures (llama.cpp sends \"\"): harmless on one engine, "
              "breaks a session later switched to Anthropic's API")
register_rule(STREAM + "error_event", "no `error` event arrives in a 200 stream",
              likely_cause="the engine failed mid-generation (overload, crash, context overflow); see its log")
register_rule(STREAM + "unknown_event", "unknown event types are tolerated (noted)", severity="info",
              likely_cause="a newer API feature or a vendor extension; clients must ignore unknown events")
register_rule(STREAM + "unknown_block_type", "unknown content block or delta types are tolerated (noted)", severity="info",
              likely_cause="a newer API feature or a vendor extension")
RESPONSE = "anthropic.response."
ENVELOPE = "anthropic.error.envelope"
register_rule(RESPONSE + "json", "a non-stream response body is a JSON object",
              likely_cause="the endpoint returned an HTML/text error page or an event stream for stream:false")
register_rule(RESPONSE + "schema", "a non-stream response matches the Messages response schema",
              likely_cause="the engine's Anthropic adapter omits or mistypes response fields")
register_rule(RESPONSE + "stop_sequence_present", "a non-stream response carries stop_sequence (required, nullable)",
              likely_cause="the response is serialised with exclude_none, dropping stop_sequence when null (vLLM #56371)")
register_rule(RESPONSE + "stop_reason_valid", "a non-stream response has a known, non-null stop_reason",
              likely_cause="the engine maps its finish reason badly (e.g. passes OpenAI's `stop`/`length` through)")
register_rule(RESPONSE + "tool_use_stop_reason", "stop_reason is tool_use exactly when the response contains a tool_use block",
              likely_cause="the engine or router maps the finish reason without looking at the tool calls (LiteLLM #34692)")
register_rule(RESPONSE + "thinking_signature", "a thinking block carries a non-empty signature", severity="warning",
              likely_cause="an open engine cannot mint Anthropic signatures: breaks a session later switched to Anthropic")
register_rule(ENVELOPE,
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
    START: (STREAM + "grammar", "a stream opens with message_start"),
    MESSAGE: (STREAM + "grammar", "after message_start or a content_block_stop come content_block_start or message_delta"),
    BLOCK: (STREAM + "grammar", "inside an open block come content_block_delta or content_block_stop"),
    DELTA: (STREAM + "grammar", "after message_delta come message_delta or message_stop"),
    STOPPED: (STREAM + "nothing_after_stop", "nothing follows message_stop"),
    ERRORED: (STREAM + "grammar", "nothing follows an error event"),
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

# HTTP status <-> error type (docs/wire-facts.md, Anthropic "errors" docs).
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
    ("message_start", "", STREAM + "message_start_complete"),
    ("message_delta", "/delta/stop_sequence", STREAM + "stop_sequence_present"),
    ("message_delta", "/delta/stop_reason", STREAM + "stop_reason_valid"),
    ("message_delta", "/usage", STREAM + "usage_consistent"),
    ("content_block_start", "/content_block/input", STREAM + "tool_use_start_input"),
    ("*", "/index", STREAM + "block_index"),
    ("error", "", ENVELOPE),
]
RESPONSE_SCHEMA_CHECKS: list[tuple[str, str, str]] = [
    ("message", "/stop_sequence", RESPONSE + "stop_sequence_present"),
    ("message", "/stop_reason", RESPONSE + "stop_reason_valid"),
]

