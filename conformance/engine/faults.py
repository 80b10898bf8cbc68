"""Fault modes of the reference engine, switched on by name (`--fault NAME`, several at once).

Rules:
- Every engine-side row of the fault catalog (fixtures/faults.json mirrors its table) has a fault
  here with the same name, and
  every fault here is a row of fixtures/faults.json: a FAULTS.md row, or one of its `found` rows
  (a failure seen on a real stack that FAULTS.md does not list, with its source).
- A fault changes only what it names; everything else stays conformant.
- The one-line descriptions below are what `conformance faults` prints and what docs/engine.md
  expands on.
"""

from __future__ import annotations

# Past this many requests in flight at once, `crash-under-concurrency` kills the engine process.
CRASH_CONCURRENCY_LIMIT = 3
# `output-cap`: the engine never emits more output tokens than this, whatever max_tokens says.
OUTPUT_CAP_TOKENS = 24
# `hang` / `hang-with-pings`: give up after this long so nothing leaks forever.
HANG_CAP_SECONDS = 600.0
HANG_PING_INTERVAL = 0.5
# The name `wrong-model` answers with.
WRONG_MODEL_NAME = "fallback-small-model"

FAULTS: dict[str, str] = {
    "stop-sequence-missing": "stream: message_delta.delta lacks stop_sequence (required, nullable)",
    "nonstream-stop-sequence-omitted": "non-stream Anthropic response omits stop_sequence when it is null",
    "message-start-incomplete": "stream: message_start.message lacks type, role and usage",
    "strict-unknown-field": "rejects unknown request fields such as context_management (closed request struct, 400)",
    "strict-adaptive-effort": "rejects thinking {type: adaptive} with output_config.effort; OpenAI side takes only low/medium/high",
    "system-role-in-messages": "Anthropic route rejects a {role: system} entry inside messages (400)",
    "tool-call-as-text": "tool calls arrive as <tool_call>{...}</tool_call> text with end_turn / stop (no tool parser)",
    "tool-args-invalid-json": "streamed/returned tool arguments are not valid JSON (closing brace lost)",
    "tool-args-not-string": "OpenAI chat: function.arguments sent as a JSON object, not a string",
    "tool-stop-reason-wrong": "a tool call is emitted but stop_reason is end_turn / finish_reason is stop",
    "tool-use-start-without-input": "stream: tool_use content_block_start lacks input: {}",
    "tool-choice-ignored": "a forced tool_choice (any / a named tool / required) is answered in plain text, end_turn / stop",
    "block-index-broken": "stream: content block indices start at 1 (not contiguous from 0)",
    "stream-truncated": "stream ends without message_stop / data: [DONE] / response.completed",
    "error-envelope-wrong": "errors are not in the route's error envelope (vLLM-style object on Anthropic, {detail} on OpenAI)",
    "stop-reason-wrong-on-stop-string": "a matched stop sequence is reported as end_turn with stop_sequence null",
    "count-tokens-missing": "POST /v1/messages/count_tokens answers 404",
    "wrong-model": f"responses name a different model ({WRONG_MODEL_NAME!r}) than the one asked for",
    "output-cap": f"output is capped at {OUTPUT_CAP_TOKENS} tokens whatever max_tokens says (stop_reason max_tokens)",
    "unbounded-reasoning": "reasoning eats the whole max_tokens budget: only thinking, no answer, stop_reason max_tokens",
    "context-truncated": "the engine silently drops the first quarter of a long prompt (a needle at depth 0 is lost)",
    "over-limit-not-refused": "a prompt over --max-context is silently truncated and answered instead of refused",
    "advertised-context-wrong": "/v1/models advertises max_model_len twice the context the engine accepts",
    "crash-under-concurrency": f"fine alone; past {CRASH_CONCURRENCY_LIMIT} requests in flight the engine process exits",
    "buffered-stream": "streams are buffered and released in one write at the end (no incremental delivery)",
    "usage-inconsistent": "usage contradicts itself (message_start output_tokens above the final count, input_tokens changing; totals wrong)",
    "hang": f"accepts the request, then never finishes (closed after {HANG_CAP_SECONDS:.0f} s)",
    "hang-with-pings": f"accepts the request, then sends only pings forever (closed after {HANG_CAP_SECONDS:.0f} s)",
    "custom-tool-as-function": "Responses: a freeform custom tool call (apply_patch) is sent as a function_call with JSON arguments",
    "custom-tool-dropped": "Responses: a freeform custom tool call is dropped; its input (the patch) comes back as message text",
    "namespace-flattened": "Responses: a call of a tool inside a namespace comes back as NAMESPACE__NAME with no namespace",
    "multi-turn-items-rejected": "Responses: 400 on function_call_output / custom_tool_call_output / reasoning input items",
    "foreign-reasoning-rejected": "Responses: 400 on a reasoning item whose encrypted_content this engine process did not mint",
    "hosted-tool-rejected": "Responses: 400 on a hosted tool type (web_search) in tools",
    "responses-missing": "POST /v1/responses answers 404 (a chat-only server)",
    "terminal-event-missing": "Responses stream ends after the last output_item.done, without response.completed",
    "sequence-number-gap": "Responses stream: sequence_number skips one value after the first output_item.added",
    "done-text-mismatch": "Responses stream: output_text / reasoning *.done text lacks the last character of its deltas",
    # The Claude Code 2.1.332 wire (FAULTS.md "Proposed"; fixtures/faults.json `found` rows).
    "deferred-tools-exposed": "a defer_loading tool is offered to the model as callable before any tool_reference loads it",
    "tool-reference-dropped": "tool_reference blocks in a tool_result are dropped silently (the tool never loads)",
    "strict-thinking-display": "rejects thinking.display (closed thinking struct, 400)",
    "empty-system-entry-rejected": "rejects a {role: system} entry whose content is an empty list (400)",
    "max-tokens-over-context": "max_tokens above the context left is answered 500 instead of clamped or refused with a 4xx",
    "max-tokens-silent-truncation": "max_tokens above the context left: the answer fills the context and claims end_turn / stop",
    "fallback-wording": "refuses {role: system} entries with a 400 whose text matches no client fallback pattern",
    "parallel-calls-truncated": "only the first of several tool calls in one turn is emitted",
    "tool-result-image-rejected": "rejects an image block inside a tool_result (400)",
    "history-block-rejected": "rejects redacted_thinking / server_tool_use / *_tool_result blocks replayed in history (400)",
    "schema-grammar-fail": "a forced tool whose schema uses `pattern` fails with 500 'failed to parse grammar'",
    "prefix-cache-defeated": "no prefix caching: every request re-prefills its whole prompt (cache_read_input_tokens 0)",
    "non-stream-fallback": "streams arrive as text/plain with data: lines only (no event: lines): clients cannot use them",
}


class UnknownFault(ValueError):
    pass


def validate(names) -> frozenset[str]:
    """Return the set of fault names, or raise UnknownFault naming the bad ones and the valid ones."""
    names = [n.strip() for n in names if n and n.strip()]
    bad = [n for n in names if n not in FAULTS]
    if bad:
        raise UnknownFault(
            f"unknown fault name(s): {', '.join(bad)}; run `conformance faults` to list the "
            f"{len(FAULTS)} valid names"
        )
    return frozenset(names)
