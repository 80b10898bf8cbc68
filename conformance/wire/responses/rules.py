"""OpenAI Responses API wire (POST /v1/responses): the grammar as data — its rule ids, its
tables, and the rules both the stream and the non-stream judges apply.

Grammar (docs/wire-facts.md "OpenAI Responses"; OpenAI API reference "Streaming events"; the openai SDK's
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
violation. The machine that reads these tables is `stream.py` (its item half `items.py`); the
non-stream, error and first-content checks are `answer.py`.

Severity by consequence (docs/wire-responses.md has the table with the reasons): an error where
Codex CLI or the openai SDK breaks or loses data — Codex reads `type`, `response`, `item`, `delta`,
builds its history from `output_item.done` and fails a turn without `response.completed`; the
SDK's stream state raises on a content event before its item, a duplicate output_index, an
unfinished item at completion and a changed response id — and a warning where both tolerate it
(an output_index gap, a reasoning delta without its part, a `*.done` text sent without deltas).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.core.failures import Violation
from conformance.core.registry import violation
from conformance.wire.base import register_rule

# ----------------------------------------------------------------------------- check ids
STREAM = "responses.stream."
SEQUENCE = STREAM + "sequence_number"
GRAMMAR = STREAM + "grammar"
SCHEMA = STREAM + "event_schema"
INDEX = STREAM + "index"
ITEM_OPEN = STREAM + "item_open"
DONE_TEXT = STREAM + "done_text"
OUTPUT = STREAM + "output_matches"
STATUS = STREAM + "status"
USAGE = STREAM + "usage"
TERMINAL = STREAM + "terminal"
FAILED = STREAM + "failed"
UNKNOWN = STREAM + "unknown_event"
register_rule(SCHEMA, "each event is a JSON object matching its schema (conformance/wire/responses/schemas/responses.*.json)",
              likely_cause="the server writes non-JSON data lines or omits/mistypes event fields (Codex and the openai "
              "SDK read `type`, `item`, `delta`, `response` and the item's call_id and name)")
register_rule(SEQUENCE, "sequence_number increases by exactly one from event to event",
              likely_cause="a proxy dropped, duplicated or reordered events, or the server numbers them per item: a gap "
              "is an event the client never saw")
register_rule(GRAMMAR, "response.created first, then output items, then exactly one terminal event, nothing after it",
              likely_cause="the server emits events out of order, a second terminal event, or events for the wrong "
              "item kind (the openai SDK asserts on them)")
register_rule(INDEX, "output_index counts the items from 0; content_index / summary_index count an item's parts",
              likely_cause="the server numbers items or parts with gaps or duplicates (the openai SDK raises on a "
              "duplicate output_index and indexes message parts by content_index)")
register_rule(ITEM_OPEN, "every delta and done event names an item that was added and is not yet done; every added "
              "item is done before the terminal event",
              likely_cause="the server streams deltas for an item it never announced or already finished, or leaves an "
              "item unfinished (Codex builds its history from output_item.done: an unfinished item is lost)")
register_rule(DONE_TEXT, "a `*.done` text (output_text, arguments, input, part, item) equals the concatenated deltas",
              likely_cause="the server's final text differs from what it streamed: the client showed one answer and "
              "recorded another")
register_rule(OUTPUT, "the terminal response's `output` equals the items the stream finished",
              likely_cause="the server builds the final Response separately from the stream (the openai SDK returns "
              "`output`, Codex keeps the streamed items: the two disagree)")
register_rule(STATUS, "the terminal event, the response's status and incomplete_details agree (a cap is incomplete)",
              likely_cause="the server reports a cut answer as completed, or a status that contradicts the event")
register_rule(USAGE, "the terminal response carries usage with total_tokens = input_tokens + output_tokens",
              likely_cause="a layer drops or recomputes usage; Codex's context accounting reads it")
register_rule(TERMINAL, "the stream ends with response.completed, response.incomplete, response.failed or an error event",
              likely_cause="the stream was cut (engine crash, timeout, proxy closing early); Codex fails the turn: "
              "\"stream closed before response.completed\"")
register_rule(FAILED, "the generation does not fail (no response.failed or error event in a 200 stream)",
              likely_cause="the engine failed mid-generation (overload, crash, context overflow); see its log")
register_rule(UNKNOWN, "unknown event types are tolerated (noted)", severity="info",
              likely_cause="a vendor extension or a newer event; Codex and the openai SDK ignore it")
RESPONSE = "responses.response."
RESPONSE_SCHEMA = RESPONSE + "schema"
RESPONSE_USAGE = RESPONSE + "usage"
register_rule(RESPONSE_SCHEMA, "a non-stream response is a Response object (conformance/wire/responses/schemas/responses.response.json)",
              likely_cause="the endpoint returned an HTML/text page, an event stream for stream:false, or a Response "
              "with missing or mistyped fields")
register_rule(RESPONSE_USAGE, "a non-stream response carries usage with total_tokens = input_tokens + output_tokens",
              likely_cause="a layer drops or recomputes usage")
ENVELOPE = "responses.error.envelope"
register_rule(ENVELOPE, "an error answer is `{\"error\": {\"message\": ...}}` with a 4xx/5xx status",
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
RULES: dict[str, tuple[str, str]] = {
    START: (GRAMMAR, "the first event is response.created"),
    CREATED: (GRAMMAR, "after response.created: in_progress, output items, then one terminal event"),
    RUNNING: (GRAMMAR, "output items, then one terminal event"),
    ENDED: (GRAMMAR, "nothing follows the terminal event"),
    ERRORED: (GRAMMAR, "nothing follows an error event"),
}
# Where a wrong event is recovered to (judging goes on): an event before response.created is
# judged as if the response had started (the SDK raises there; the rest is still worth judging).
RECOVER: dict[tuple[str, str], str] = {(START, "item"): RUNNING, (START, "progress"): CREATED, (START, "terminal"): ENDED}


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


def normalised(resp: dict, output: list, status: str | None) -> dict[str, Any]:
    """The accumulated message: the Response's own fields with the finished output."""
    return {"id": resp.get("id"), "object": "response", "model": resp.get("model"),
            "status": status or resp.get("status"), "incomplete_details": resp.get("incomplete_details"),
            "error": resp.get("error"), "output": output, "usage": resp.get("usage")}


def usage_problems(usage: Any, check_id: str, base: str, **where: Any) -> list[Violation]:
    if not isinstance(usage, dict):
        return []
    i, o, t = (usage.get(k) for k in ("input_tokens", "output_tokens", "total_tokens"))
    out: list[Violation] = []
    if all(type(x) is int for x in (i, o, t)) and i + o != t:
        out.append(violation(check_id, f"usage.total_tokens {t} is not input_tokens {i} + output_tokens {o}",
                             expected=i + o, seen=t, pointer=f"{base}/total_tokens", **where))
    # A count of part of the output or the input, in its details, never exceeds the whole.
    for side, whole, key, what in (("output", o, "reasoning_tokens", "reasoning is"),
                                   ("input", i, "cached_tokens", "cached tokens are")):
        details = usage.get(f"{side}_tokens_details")
        part = details.get(key) if isinstance(details, dict) else None
        if type(part) is int and type(whole) is int and part > whole:
            out.append(violation(check_id, f"{key} {part} exceed {side}_tokens {whole} ({what} part of the {side})",
                                 severity="warning", expected=f"<= {whole}", seen=part,
                                 pointer=f"{base}/{side}_tokens_details/{key}", **where))
    return out
