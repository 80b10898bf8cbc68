"""OpenAI chat-completions wire: the grammar as data — its rule ids, its tables, and the small
rules both the stream and the non-stream judges apply.

Grammar (docs/wire-facts.md; OpenAI API reference "chat.completion.chunk" and "stream_options"):

    chunk* (a chunk whose choice has finish_reason) usage-chunk? data: [DONE]
    -- chunks with `choices: []` and no usage (e.g. Azure's prompt-filter chunk) are allowed
    -- before the end; an `{"error": ...}` payload ends the stream (recorded).

The transitions are the table `TRANSITIONS` (state x event -> state); an illegal event is a
violation naming the event number, the event, the state and the rule (`RULES`). The machine that
reads these tables is `stream.py`; the non-stream, error and first-content checks are `answer.py`.

Rules beside the grammar (each a registered check id, scope wire, judging the stack):
- tool_calls deltas: `index` required; the first delta of an index carries id, type "function"
  and a non-empty function.name; id and name appear once (the openai SDK concatenates repeated
  strings, so a repeated id becomes "call_1call_1"); a new call's index = number of calls so far;
  `arguments` are string fragments (llama.cpp #20198 once sent an object) that concatenate to
  JSON that parses (vLLM #35266, #41739) — except the last call of a choice that finished with
  length / content_filter: the cap ended the output inside it, which is no wire fault
  (`tools.call_cut` reports it, as a warning).
- finish_reason sits on the choice, never in delta; it is tool_calls when calls were made (a
  named tool_choice may finish with stop — read from the request; length and content_filter
  cut a turn short and are accepted), and never tool_calls without calls.
- With `stream_options.include_usage` (from the request) one chunk with `choices: []` and usage
  comes last before `data: [DONE]`; `data: [DONE]` ends every stream.
- usage.total_tokens = prompt_tokens + completion_tokens (stream and non-stream).
"""

from __future__ import annotations

from typing import Any

from conformance.core.failures import Violation
from conformance.core.registry import violation
from conformance.wire.base import register_rule

# ----------------------------------------------------------------------------- check ids
STREAM = "openai.stream."
register_rule(STREAM + "chunk_json", "every stream data line is a JSON object or the final `[DONE]`",
              likely_cause="the server writes partial or non-JSON data lines, or a proxy rewrites the stream")
register_rule(STREAM + "chunk_schema", "each chunk matches the chat.completion.chunk schema (conformance/wire/chat/schemas/openai.chunk.json)",
              likely_cause="the engine's OpenAI-compatible endpoint omits or mistypes chunk fields")
register_rule(STREAM + "grammar", "chunks, then the finishing chunk, then the usage chunk (if asked), then [DONE]",
              likely_cause="the server writes chunks after finish_reason or after the usage chunk, or [DONE] too early")
register_rule(STREAM + "nothing_after_done", "nothing follows `data: [DONE]`",
              likely_cause="the server keeps writing after [DONE] (a second response or trailing chunks)")
register_rule(STREAM + "done", "the stream ends with `data: [DONE]`",
              likely_cause="the stream was cut (engine crash, timeout, proxy closing early) or the server never sends "
              "[DONE]; OpenAI clients wait for it")
register_rule(STREAM + "usage_chunk", "with stream_options.include_usage, a last chunk has `choices: []` and usage",
              likely_cause="a router drops stream_options before the engine, or the engine ignores include_usage")
register_rule(STREAM + "tool_call_index", "each tool_calls delta has an `index`; a new call's index is the number of calls so far",
              likely_cause="the engine's tool parser numbers parallel calls wrongly or omits index")
register_rule(STREAM + "tool_call_start", "the first delta of a tool call carries id, type \"function\" and a non-empty name",
              likely_cause="the engine's tool parser starts a call without its id or name (clients cannot route the call)")
register_rule(STREAM + "tool_call_once", "a tool call's id and name appear once (in its first delta)",
              likely_cause="the server repeats id/name in every delta; the openai SDK concatenates them (\"ReadRead\")")
register_rule(STREAM + "tool_arguments_string", "function.arguments fragments are strings",
              likely_cause="the server sends arguments as a JSON object instead of a JSON string (llama.cpp #20198)")
register_rule(STREAM + "tool_arguments_json", "a tool call's concatenated arguments parse as one JSON object",
              likely_cause="the engine's tool parser streams malformed or partial arguments (vLLM #35266, #41739; "
              "opencode #8102)")
register_rule(STREAM + "finish_reason_placement", "finish_reason is on the choice, not inside delta",
              likely_cause="a hand-written chunk serialiser puts finish_reason into delta; clients never see it")
register_rule(STREAM + "finish_reason_valid", "every choice finishes with a known finish_reason",
              likely_cause="the engine sends a non-standard finish reason or none at all")
register_rule(STREAM + "finish_reason_tool_calls",
              "finish_reason is tool_calls exactly when calls were made (a named tool_choice may end with stop)",
              likely_cause="the engine or router maps the finish reason without looking at the emitted tool calls "
              "(LiteLLM #34692): the agent ends the turn instead of running the tool")
register_rule(STREAM + "usage_consistent", "usage.total_tokens equals prompt_tokens + completion_tokens",
              likely_cause="a layer recomputes or merges usage (e.g. a router adding its own counts) and breaks the sum; "
              "cost and context accounting in the client go wrong (LiteLLM #24176)")
register_rule(STREAM + "error_event", "no error payload arrives in a 200 stream",
              likely_cause="the engine failed mid-generation (overload, crash, context overflow); see its log")
register_rule(STREAM + "unknown_event", "unknown payloads are tolerated (noted)", severity="info",
              likely_cause="a vendor extension; clients ignore it")
RESPONSE = "openai.response."
ENVELOPE = "openai.error.envelope"
register_rule(RESPONSE + "json", "a non-stream response body is a JSON object",
              likely_cause="the endpoint returned an HTML/text error page or an event stream for stream:false")
register_rule(RESPONSE + "schema", "a non-stream response matches the chat.completion schema",
              likely_cause="the engine's OpenAI-compatible endpoint omits or mistypes response fields")
register_rule(RESPONSE + "tool_arguments_string", "function.arguments is a string",
              likely_cause="the server sends arguments as a JSON object instead of a JSON string (llama.cpp #20198)")
register_rule(RESPONSE + "tool_arguments_json", "function.arguments parses as one JSON object",
              likely_cause="the engine's tool parser produced malformed arguments (vLLM #35266)")
register_rule(RESPONSE + "finish_reason_tool_calls", "finish_reason is tool_calls exactly when the message has tool calls",
              likely_cause="the engine or router maps the finish reason without looking at the tool calls (LiteLLM #34692)")
register_rule(RESPONSE + "usage_consistent", "usage.total_tokens equals prompt_tokens + completion_tokens",
              likely_cause="a layer recomputes or merges usage and breaks the sum (LiteLLM #24176)")
register_rule(ENVELOPE, "an error body is {\"error\": {\"message\", \"type\", ...}}",
              likely_cause="the server returns its framework's default error body (FastAPI `detail`, plain text) instead "
              "of the OpenAI error shape; clients show an unhelpful message")

# ----------------------------------------------------------------------------- the grammar as data
START, STREAMING, FINISHED, USAGE, DONE, ERRORED = "start", "streaming", "finished", "usage", "done", "errored"
KINDS = ("chunk", "finish", "usage", "empty", "done", "error", "unknown")

TRANSITIONS: dict[tuple[str, str], str] = {
    (START, "chunk"): STREAMING,
    (STREAMING, "chunk"): STREAMING,
    (START, "finish"): FINISHED,
    (STREAMING, "finish"): FINISHED,
    # n > 1: other choices may still stream and finish (per-choice order is checked separately)
    (FINISHED, "chunk"): FINISHED,
    (FINISHED, "finish"): FINISHED,
    (FINISHED, "usage"): USAGE,
    (FINISHED, "done"): DONE,
    (USAGE, "done"): DONE,
    **{(s, "empty"): s for s in (START, STREAMING, FINISHED, USAGE)},
    **{(s, "unknown"): s for s in (START, STREAMING, FINISHED, USAGE)},
    **{(s, "error"): ERRORED for s in (START, STREAMING, FINISHED, USAGE)},
}
RULES: dict[str, tuple[str, str]] = {
    START: (STREAM + "grammar", "the stream opens with a chunk"),
    STREAMING: (STREAM + "grammar", "before a choice finishes come chunks, then a chunk with finish_reason"),
    FINISHED: (STREAM + "grammar", "after finish_reason come the usage chunk (choices []) or [DONE]"),
    USAGE: (STREAM + "grammar", "the usage chunk is the last chunk before [DONE]"),
    DONE: (STREAM + "nothing_after_done", "nothing follows [DONE]"),
    ERRORED: (STREAM + "grammar", "nothing follows an error payload"),
}
RECOVER: dict[tuple[str, str], str] = {
    (START, "done"): DONE,
    (STREAMING, "done"): DONE,
    (START, "usage"): USAGE,
    (STREAMING, "usage"): USAGE,
    (USAGE, "chunk"): FINISHED,
    (USAGE, "finish"): FINISHED,
}

FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "function_call")
CUT_FINISH_REASONS = frozenset({"length", "content_filter"})

SCHEMA_CHECKS: list[tuple[str, str, str]] = [
    ("chunk", "/choices/*/delta/tool_calls/*/index", STREAM + "tool_call_index"),
    ("chunk", "/choices/*/delta/tool_calls/*/function/arguments", STREAM + "tool_arguments_string"),
    ("chunk", "/choices/*/finish_reason", STREAM + "finish_reason_valid"),
]
RESPONSE_SCHEMA_CHECKS: list[tuple[str, str, str]] = [
    ("response", "/choices/*/message/tool_calls/*/function/arguments", RESPONSE + "tool_arguments_string"),
]


def is_cut(reason: Any) -> bool:
    """finish_reason length / content_filter: the output was cut short, not finished."""
    return isinstance(reason, str) and reason in CUT_FINISH_REASONS


def named_tool_choice(request: dict) -> bool:
    """The request forces one named function (such a turn may finish with `stop`)."""
    tc = request.get("tool_choice")
    return isinstance(tc, dict) and (tc.get("type") == "function" or "function" in tc)


def include_usage(request: dict) -> bool:
    """The request asks for the usage chunk (`stream_options.include_usage`)."""
    so = request.get("stream_options")
    return isinstance(so, dict) and bool(so.get("include_usage"))


def usage_problems(usage, check_id: str) -> list[Violation]:
    """total_tokens that is not prompt_tokens + completion_tokens, under `check_id`."""
    if not isinstance(usage, dict):
        return []
    p, c, t = (usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens"))
    if all(type(x) is int for x in (p, c, t)) and p + c != t:
        return [violation(check_id, f"total_tokens {t} is not prompt_tokens {p} + completion_tokens {c}",
                          expected=p + c, seen=t, pointer="/usage/total_tokens")]
    return []
