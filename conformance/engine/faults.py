"""Fault modes of the reference engine, switched on by name (`--fault NAME`, several at once).

Rules:
- Every engine-side row of the fault catalog (fixtures/faults.json mirrors its table) has a fault
  here with the same name, and
  every fault here is a row of fixtures/faults.json: a row of the catalog (docs/faults.md), or
  one of its `found` rows (a failure seen on a real stack that the catalog does not list, with
  its source).
- A fault changes only what it names; everything else stays conformant.
- The one-line descriptions below are what `conformance faults` prints and what docs/engine.md
  expands on.
"""

from __future__ import annotations

from conformance.engine.named import checked_names

# Past this many requests in flight at once, `crash-under-concurrency` kills the engine process.
CRASH_CONCURRENCY_LIMIT = 3
# `output-cap`: the engine never emits more output tokens than this, whatever max_tokens says.
OUTPUT_CAP_TOKENS = 24
# `hang` / `hang-with-pings`: give up after this long so nothing leaks forever.
HANG_CAP_SECONDS = 600.0
HANG_PING_INTERVAL = 0.5
# The name `wrong-model` answers with.
WRONG_MODEL_NAME = "fallback-small-model"

# The fault names, each written once: every module that switches on a fault uses these.
STOP_SEQUENCE_MISSING = "stop-sequence-missing"
NONSTREAM_STOP_SEQUENCE_OMITTED = "nonstream-stop-sequence-omitted"
MESSAGE_START_INCOMPLETE = "message-start-incomplete"
STRICT_UNKNOWN_FIELD = "strict-unknown-field"
STRICT_ADAPTIVE_EFFORT = "strict-adaptive-effort"
SYSTEM_ROLE_IN_MESSAGES = "system-role-in-messages"
TOOL_CALL_AS_TEXT = "tool-call-as-text"
TOOL_ARGS_INVALID_JSON = "tool-args-invalid-json"
TOOL_ARGS_NOT_STRING = "tool-args-not-string"
TOOL_STOP_REASON_WRONG = "tool-stop-reason-wrong"
TOOL_USE_START_WITHOUT_INPUT = "tool-use-start-without-input"
TOOL_CHOICE_IGNORED = "tool-choice-ignored"
BLOCK_INDEX_BROKEN = "block-index-broken"
STREAM_TRUNCATED = "stream-truncated"
ERROR_ENVELOPE_WRONG = "error-envelope-wrong"
STOP_REASON_WRONG_ON_STOP_STRING = "stop-reason-wrong-on-stop-string"
COUNT_TOKENS_MISSING = "count-tokens-missing"
WRONG_MODEL = "wrong-model"
OUTPUT_CAP = "output-cap"
UNBOUNDED_REASONING = "unbounded-reasoning"
CONTEXT_TRUNCATED = "context-truncated"
OVER_LIMIT_NOT_REFUSED = "over-limit-not-refused"
ADVERTISED_CONTEXT_WRONG = "advertised-context-wrong"
CRASH_UNDER_CONCURRENCY = "crash-under-concurrency"
BUFFERED_STREAM = "buffered-stream"
USAGE_INCONSISTENT = "usage-inconsistent"
HANG = "hang"
HANG_WITH_PINGS = "hang-with-pings"
CUSTOM_TOOL_AS_FUNCTION = "custom-tool-as-function"
CUSTOM_TOOL_DROPPED = "custom-tool-dropped"
NAMESPACE_FLATTENED = "namespace-flattened"
MULTI_TURN_ITEMS_REJECTED = "multi-turn-items-rejected"
FOREIGN_REASONING_REJECTED = "foreign-reasoning-rejected"
HOSTED_TOOL_REJECTED = "hosted-tool-rejected"
RESPONSES_MISSING = "responses-missing"
TERMINAL_EVENT_MISSING = "terminal-event-missing"
SEQUENCE_NUMBER_GAP = "sequence-number-gap"
DONE_TEXT_MISMATCH = "done-text-mismatch"
DEFERRED_TOOLS_EXPOSED = "deferred-tools-exposed"
TOOL_REFERENCE_DROPPED = "tool-reference-dropped"
STRICT_THINKING_DISPLAY = "strict-thinking-display"
EMPTY_SYSTEM_ENTRY_REJECTED = "empty-system-entry-rejected"
MAX_TOKENS_OVER_CONTEXT = "max-tokens-over-context"
MAX_TOKENS_SILENT_TRUNCATION = "max-tokens-silent-truncation"
FALLBACK_WORDING = "fallback-wording"
PARALLEL_CALLS_TRUNCATED = "parallel-calls-truncated"
TOOL_RESULT_IMAGE_REJECTED = "tool-result-image-rejected"
HISTORY_BLOCK_REJECTED = "history-block-rejected"
SCHEMA_GRAMMAR_FAIL = "schema-grammar-fail"
PREFIX_CACHE_DEFEATED = "prefix-cache-defeated"
NON_STREAM_FALLBACK = "non-stream-fallback"
DIES_UNDER_SUSTAINED_LOAD = "dies-under-sustained-load"

FAULTS: dict[str, str] = {
    STOP_SEQUENCE_MISSING: "stream: message_delta.delta lacks stop_sequence (required, nullable)",
    NONSTREAM_STOP_SEQUENCE_OMITTED: "non-stream Anthropic response omits stop_sequence when it is null",
    MESSAGE_START_INCOMPLETE: "stream: message_start.message lacks type, role and usage",
    STRICT_UNKNOWN_FIELD: "rejects unknown request fields such as context_management (closed request struct, 400)",
    STRICT_ADAPTIVE_EFFORT: "rejects thinking {type: adaptive} with output_config.effort; OpenAI side takes only low/medium/high",
    SYSTEM_ROLE_IN_MESSAGES: "Anthropic route rejects a {role: system} entry inside messages (400)",
    TOOL_CALL_AS_TEXT: "tool calls arrive as <tool_call>{...}</tool_call> text with end_turn / stop (no tool parser)",
    TOOL_ARGS_INVALID_JSON: "streamed/returned tool arguments are not valid JSON (closing brace lost)",
    TOOL_ARGS_NOT_STRING: "OpenAI chat: function.arguments sent as a JSON object, not a string",
    TOOL_STOP_REASON_WRONG: "a tool call is emitted but stop_reason is end_turn / finish_reason is stop",
    TOOL_USE_START_WITHOUT_INPUT: "stream: tool_use content_block_start lacks input: {}",
    TOOL_CHOICE_IGNORED: "a forced tool_choice (any / a named tool / required) is answered in plain text, end_turn / stop",
    BLOCK_INDEX_BROKEN: "stream: content block indices start at 1 (not contiguous from 0)",
    STREAM_TRUNCATED: "stream ends without message_stop / data: [DONE] / response.completed",
    ERROR_ENVELOPE_WRONG: "errors are not in the route's error envelope (vLLM-style object on Anthropic, {detail} on OpenAI)",
    STOP_REASON_WRONG_ON_STOP_STRING: "a matched stop sequence is reported as end_turn with stop_sequence null",
    COUNT_TOKENS_MISSING: "POST /v1/messages/count_tokens answers 404",
    WRONG_MODEL: f"responses name a different model ({WRONG_MODEL_NAME!r}) than the one asked for",
    OUTPUT_CAP: f"output is capped at {OUTPUT_CAP_TOKENS} tokens whatever max_tokens says (stop_reason max_tokens)",
    UNBOUNDED_REASONING: "reasoning eats the whole max_tokens budget: only thinking, no answer, stop_reason max_tokens",
    CONTEXT_TRUNCATED: "the engine silently drops the first quarter of a long prompt (a needle at depth 0 is lost)",
    OVER_LIMIT_NOT_REFUSED: "a prompt over --max-context is silently truncated and answered instead of refused",
    ADVERTISED_CONTEXT_WRONG: "/v1/models advertises max_model_len twice the context the engine accepts",
    CRASH_UNDER_CONCURRENCY: f"fine alone; past {CRASH_CONCURRENCY_LIMIT} requests in flight the engine process exits",
    DIES_UNDER_SUSTAINED_LOAD: ("after 4+ requests sharing one prefix stay in flight for 30 s (--die-after, "
                                "--die-at-inflight), every generation answers 500 and stays dead until restart"),
    BUFFERED_STREAM: "streams are buffered and released in one write at the end (no incremental delivery)",
    USAGE_INCONSISTENT: "usage contradicts itself (message_start output_tokens above the final count, input_tokens changing; totals wrong)",
    HANG: f"accepts the request, then never finishes (closed after {HANG_CAP_SECONDS:.0f} s)",
    HANG_WITH_PINGS: f"accepts the request, then sends only pings forever (closed after {HANG_CAP_SECONDS:.0f} s)",
    CUSTOM_TOOL_AS_FUNCTION: "Responses: a freeform custom tool call (apply_patch) is sent as a function_call with JSON arguments",
    CUSTOM_TOOL_DROPPED: "Responses: a freeform custom tool call is dropped; its input (the patch) comes back as message text",
    NAMESPACE_FLATTENED: "Responses: a call of a tool inside a namespace comes back as NAMESPACE__NAME with no namespace",
    MULTI_TURN_ITEMS_REJECTED: "Responses: 400 on function_call_output / custom_tool_call_output / reasoning input items",
    FOREIGN_REASONING_REJECTED: "Responses: 400 on a reasoning item whose encrypted_content this engine process did not mint",
    HOSTED_TOOL_REJECTED: "Responses: 400 on a hosted tool type (web_search) in tools",
    RESPONSES_MISSING: "POST /v1/responses answers 404 (a chat-only server)",
    TERMINAL_EVENT_MISSING: "Responses stream ends after the last output_item.done, without response.completed",
    SEQUENCE_NUMBER_GAP: "Responses stream: sequence_number skips one value after the first output_item.added",
    DONE_TEXT_MISMATCH: "Responses stream: output_text / reasoning *.done text lacks the last character of its deltas",
    # The Claude Code 2.1.332 wire (docs/wire-facts.md; `found` rows of fixtures/faults.json).
    DEFERRED_TOOLS_EXPOSED: "a defer_loading tool is offered to the model as callable before any tool_reference loads it",
    TOOL_REFERENCE_DROPPED: "tool_reference blocks in a tool_result are dropped silently (the tool never loads)",
    STRICT_THINKING_DISPLAY: "rejects thinking.display (closed thinking struct, 400)",
    EMPTY_SYSTEM_ENTRY_REJECTED: "rejects a {role: system} entry whose content is an empty list (400)",
    MAX_TOKENS_OVER_CONTEXT: "max_tokens above the context left is answered 500 instead of clamped or refused with a 4xx",
    MAX_TOKENS_SILENT_TRUNCATION: "max_tokens above the context left: the answer fills the context and claims end_turn / stop",
    FALLBACK_WORDING: "refuses {role: system} entries with a 400 whose text matches no client fallback pattern",
    PARALLEL_CALLS_TRUNCATED: "only the first of several tool calls in one turn is emitted",
    TOOL_RESULT_IMAGE_REJECTED: "rejects an image block inside a tool_result (400)",
    HISTORY_BLOCK_REJECTED: "rejects redacted_thinking / server_tool_use / *_tool_result blocks replayed in history (400)",
    SCHEMA_GRAMMAR_FAIL: "a forced tool whose schema uses `pattern` fails with 500 'failed to parse grammar'",
    PREFIX_CACHE_DEFEATED: "no prefix caching: every request re-prefills its whole prompt (cache_read_input_tokens 0)",
    NON_STREAM_FALLBACK: "streams arrive as text/plain with data: lines only (no event: lines): clients cannot use them",
}


class UnknownFault(ValueError):
    pass


def validate(names) -> frozenset[str]:
    """Return the set of fault names, or raise UnknownFault naming the bad ones and the valid ones."""
    return frozenset(checked_names(names, FAULTS, "fault", UnknownFault))
