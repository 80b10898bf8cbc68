"""Builds the byte fixtures in fixtures/streams/ (run: python tests/wire/make_stream_fixtures.py).

Each fixture is a raw response body as a client would receive it (an SSE stream, or a JSON body
for non-stream responses and errors), shaped like the real wire: Anthropic ids `msg_01...`,
`toolu_01...`, usage with cache fields, `event:` lines; OpenAI `chatcmpl-...` ids, a role-only
first chunk, the usage chunk and `data: [DONE]`. The invalid fixtures each inject ONE fault
class; `index.json` says which check ids must catch it (and the catalog row, docs/faults.md, if it is one).

tests/wire/test_wire_fixtures.py regenerates the set in memory and fails if the files on disk differ,
so the bytes and this builder never drift apart.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "streams"
MODEL = "claude-sonnet-4-5-20250929"
OAI_MODEL = "qwen3-coder-30b-a3b"


# ----------------------------------------------------------------------------- Anthropic
def a_event(data: dict, *, name: str | None = "", nl: str = "\n") -> bytes:
    """One Anthropic SSE event; name "" means the data's type, None means no event line."""
    name = data.get("type") if name == "" else name
    head = f"event: {name}{nl}" if name is not None else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'), ensure_ascii=False)}{nl}{nl}".encode()


def a_start(msg_id: str = "msg_01XFDUDYJgAACzvnptvVoYEL", **extra) -> dict:
    message = {
        "id": msg_id, "type": "message", "role": "assistant", "model": MODEL, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 1523, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 14873,
                  "output_tokens": 2, "service_tier": "standard"},
    }
    message.update(extra)
    return {"type": "message_start", "message": message}


def a_text_block(index: int, pieces: list[str]) -> list[dict]:
    out = [{"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}]
    out += [{"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}} for p in pieces]
    out.append({"type": "content_block_stop", "index": index})
    return out


def a_tool_block(index: int, tool_id: str, name: str, fragments: list[str]) -> list[dict]:
    out = [{"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}}]
    out += [{"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": f}}
            for f in fragments]
    out.append({"type": "content_block_stop", "index": index})
    return out


def a_thinking_block(index: int, pieces: list[str], signature: str) -> list[dict]:
    out = [{"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}]
    out += [{"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}}
            for p in pieces]
    out.append({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta",
                                                                        "signature": signature}})
    out.append({"type": "content_block_stop", "index": index})
    return out


def a_end(stop_reason: str = "end_turn", output_tokens: int = 57, stop_sequence=None) -> list[dict]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
         "usage": {"input_tokens": 1523, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 14873,
                   "output_tokens": output_tokens}},
        {"type": "message_stop"},
    ]


SIG = "EqQBCkYIBxgCKkB" + "x7Qm3F0a9" * 12 + "=="
READ_ARGS = ['', '{"file_path', '": "/work/proj', 'ect/src/main.py"', ', "limit": 200}']
WRITE_ARGS = ['{"file_path": "/work/project/notes.md", ', '"content": "# Notes\\n\\n- caf\\u00e9 \u2615 ok\\n"}']
CUT_ARGS = '"content": "# Notes\\n\\n- caf'  # the output cap hits here: the object never closes


def a_text_stream() -> list[dict]:
    return [a_start(), {"type": "ping"}, *a_text_block(0, ["Hello", "! I can help", " with that.\n\n", "Caf\u00e9 \u2615"]),
            *a_end()]


def a_tool_stream() -> list[dict]:
    return [a_start(), {"type": "ping"},
            *a_text_block(0, ["I'll read the file first."]),
            *a_tool_block(1, "toolu_01A09q90qw90lq917835lq9", "Read", READ_ARGS),
            *a_end("tool_use", 89)]


def a_thinking_stream(signature: str = SIG) -> list[dict]:
    return [a_start(), *a_thinking_block(0, ["The user wants the file", " read. I should call Read."], signature),
            *a_text_block(1, ["Reading it now."]),
            *a_tool_block(2, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "Read", READ_ARGS),
            *a_end("tool_use", 141)]


def sse(events: list[dict], *, nl: str = "\n", names: bool = True) -> bytes:
    return b"".join(a_event(e, nl=nl, name="" if names else None) for e in events)


def anthropic_fixtures() -> list[dict]:
    fx: list[dict] = []

    def valid(name, body, about, warnings=(), request=None):
        fx.append({"name": name, "protocol": "anthropic", "kind": "stream", "body": body, "valid": True,
                   "about": about, "warnings": list(warnings), "request": request})

    def invalid(name, body, checks, about, fault=None, kind="stream", status=200, request=None):
        fx.append({"name": name, "protocol": "anthropic", "kind": kind, "body": body, "valid": False,
                   "checks": checks, "fault": fault, "about": about, "status": status, "request": request})

    valid("text", sse(a_text_stream()), "plain text answer, stop_sequence null, a ping after message_start")
    valid("tool_use", sse(a_tool_stream()), "text then a tool_use block whose first partial_json is empty")
    valid("parallel_tool_calls", sse([
        a_start(), *a_text_block(0, ["Reading both files."]),
        *a_tool_block(1, "toolu_01Aa", "Read", ['{"file_path": "/work/project/a.py"}']),
        *a_tool_block(2, "toolu_01Bb", "Read", ['', '{"file_path": ', '"/work/project/b.py"}']),
        *a_tool_block(3, "toolu_01Cc", "Write", WRITE_ARGS),
        *a_end("tool_use", 201)]), "three tool_use blocks in one message (parallel tool calls)")
    valid("thinking_signature", sse(a_thinking_stream()), "thinking with signature, text, tool_use")
    valid("thinking_empty_signature", sse(a_thinking_stream(signature="")),
          "an empty thinking signature (open engines cannot mint one): a warning, not a failure",
          warnings=["anthropic.stream.thinking_signature"])
    valid("redacted_thinking", sse([
        a_start(),
        {"type": "content_block_start", "index": 0, "content_block": {
            "type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}},
        {"type": "content_block_stop", "index": 0},
        *a_text_block(1, ["Done."]), *a_end()]), "a redacted_thinking block that arrives whole, no deltas")
    valid("server_tool_result", sse([
        a_start(),
        {"type": "content_block_start", "index": 0, "content_block": {
            "type": "server_tool_use", "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "name": "web_search", "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": '{"query": "sse spec"}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {
            "type": "web_search_tool_result", "tool_use_id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB",
            "content": [{"type": "web_search_result", "title": "HTML Standard", "url": "https://html.spec.whatwg.org/",
                         "encrypted_content": "Eo8BCioIAhgBIiQ3YTk", "page_age": None}]}},
        {"type": "content_block_stop", "index": 1},
        *a_text_block(2, ["The spec says so."]), *a_end()]),
        "a server tool call and its result block that arrives whole")
    evs = a_text_stream()
    pinged: list[bytes] = []
    for i, e in enumerate(evs):
        pinged.append(a_event(e))
        if i < len(evs) - 1:
            pinged.append(a_event({"type": "ping"}) + b": keep-alive\n\n")
    valid("pings_and_comments", b": connected\n\n" + b"".join(pinged),
          "a ping and a `: keep-alive` comment between every two events")
    valid("crlf", sse(a_tool_stream(), nl="\r\n"), "CRLF line endings")
    valid("cr_only", sse(a_text_stream(), nl="\r"), "CR-only line endings (legal per WHATWG)")
    valid("bom", b"\xef\xbb\xbf" + sse(a_text_stream()),
          "a leading UTF-8 BOM: legal per WHATWG, a warning because the official SDKs lose the first event name",
          warnings=["sse.stream.bom"])
    evs = a_text_stream()
    valid("unknown_event_type", sse(evs[:2] + [{"type": "vendor_progress", "pct": 40}] + evs[2:]),
          "an event type the grammar does not know (tolerated, noted as info)")
    evs = a_text_stream()
    evs[0]["message"]["container"] = None
    evs[0]["message"]["x_vendor"] = {"node": "gpu-3"}
    evs[2]["content_block"]["citations"] = None
    evs[-2]["delta"]["stop_details"] = None
    evs[-2]["x_latency_ms"] = 812
    valid("extra_fields", sse(evs), "extra unknown fields in message, blocks and message_delta")
    valid("stop_sequence_string", sse([a_start(), *a_text_block(0, ["1, 2, 3, "]),
                                       *a_end("stop_sequence", 9, "4")]), "stop_reason stop_sequence with the string")
    valid("max_tokens_mid_tool", sse([a_start(), *a_tool_block(0, "toolu_01Z", "Write", WRITE_ARGS),
                                      *a_end("max_tokens", 64000)]),
          "a completed tool_use block cut by max_tokens (stop_reason need not be tool_use)")
    valid("max_tokens_inside_tool", sse([a_start(), *a_text_block(0, ["I'll write the notes."]),
                                         *a_tool_block(1, "toolu_01Y", "Write", WRITE_ARGS[:1] + [CUT_ARGS]),
                                         *a_end("max_tokens", 64)]),
          "max_tokens hit inside a tool_use block: content_block_stop, then stop_reason max_tokens, as the API "
          "does; the input never closes. Valid on the wire; the exchange warns (tools.call_cut)")
    valid("citations", sse([
        a_start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "", "citations": []}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "The grass is green."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": {
            "type": "char_location", "cited_text": "The grass is green.", "document_index": 0,
            "document_title": "Example", "start_char_index": 0, "end_char_index": 20}}},
        {"type": "content_block_stop", "index": 0}, *a_end()]), "a citations_delta in a text block")

    # --- invalid: one fault class each ---------------------------------------------------
    evs = a_text_stream()
    del evs[-2]["delta"]["stop_sequence"]
    invalid("stop_sequence_missing", sse(evs), ["anthropic.stream.stop_sequence_present"],
            "message_delta.delta without stop_sequence (exclude_unset)", "stop-sequence-missing")
    for field in ("type", "role", "usage"):
        evs = a_text_stream()
        del evs[0]["message"][field]
        invalid(f"message_start_no_{field}", sse(evs), ["anthropic.stream.message_start_complete"],
                f"message_start.message without {field}", "message-start-incomplete")
    evs = a_tool_stream()
    evs[-4]["delta"]["partial_json"] = ', "limit": 200}}'
    invalid("tool_input_trailing", sse(evs), ["anthropic.stream.tool_input_json"],
            "concatenated partial_json has a trailing `}`", "tool-args-invalid-json")
    evs = a_tool_stream()
    del evs[-4]
    invalid("tool_input_truncated", sse(evs), ["anthropic.stream.tool_input_json"],
            "concatenated partial_json stops before the object closes", "tool-args-invalid-json")
    evs = a_tool_stream()
    evs[-2]["delta"]["stop_reason"] = "end_turn"
    invalid("tool_use_end_turn", sse(evs), ["anthropic.stream.tool_use_stop_reason"],
            "a tool_use block but stop_reason end_turn", "tool-stop-reason-wrong")
    evs = a_text_stream()
    evs[-2]["delta"]["stop_reason"] = "tool_use"
    invalid("tool_use_reason_no_block", sse(evs), ["anthropic.stream.tool_use_stop_reason"],
            "stop_reason tool_use with no tool_use block", "tool-stop-reason-wrong")
    evs = a_tool_stream()
    del evs[5]["content_block"]["input"]
    invalid("tool_use_start_no_input", sse(evs), ["anthropic.stream.tool_use_start_input"],
            "tool_use content_block_start without input", "tool-use-start-without-input")
    evs = a_tool_stream()
    for e in evs[5:]:
        if "index" in e:
            e["index"] = 2
    invalid("block_index_gap", sse(evs), ["anthropic.stream.block_index"],
            "block indices 0 then 2", "block-index-broken")
    evs = a_tool_stream()
    evs.insert(5, {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "x"}})
    invalid("delta_unstarted_block", sse(evs), ["anthropic.stream.grammar"],
            "a delta for a block never started (between blocks)", "block-index-broken")
    evs = a_text_stream()
    evs.insert(3, {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "x"}})
    invalid("delta_type_mismatch", sse(evs), ["anthropic.stream.delta_block_type"],
            "thinking_delta inside a text block", "block-index-broken")
    evs = a_text_stream()
    evs.insert(2, a_start("msg_01second"))
    invalid("duplicate_message_start", sse(evs), ["anthropic.stream.grammar"],
            "message_start twice", "block-index-broken")
    evs = a_text_stream()
    invalid("truncated_no_message_stop", sse(evs[:-1]), ["anthropic.stream.complete"],
            "ends after message_delta, no message_stop", "stream-truncated")
    invalid("truncated_mid_block", sse(evs[:4]), ["anthropic.stream.complete"],
            "ends inside the text block", "stream-truncated")
    invalid("truncated_mid_event", sse(evs)[:-30], ["anthropic.stream.complete", "sse.stream.ends_mid_event"],
            "the connection closes in the middle of message_stop", "stream-truncated")
    evs = a_text_stream()
    del evs[-2]["usage"]
    invalid("usage_missing_delta", sse(evs), ["anthropic.stream.usage_consistent"],
            "message_delta without usage", "usage-inconsistent")
    evs = a_text_stream()
    evs[-2:-1] = [{"type": "message_delta", "delta": {"stop_reason": None, "stop_sequence": None},
                   "usage": {"output_tokens": 40}}, evs[-2]]
    evs[-2]["usage"]["output_tokens"] = 12
    invalid("usage_decreasing", sse(evs), ["anthropic.stream.usage_consistent"],
            "cumulative output_tokens go down between two message_delta events", "usage-inconsistent")
    invalid("error_envelope_fastapi", json.dumps({"detail": "Invalid request"}).encode(),
            ["anthropic.error.envelope"], "a FastAPI `detail` body for a 400", "error-envelope-wrong",
            kind="error", status=400)
    invalid("error_envelope_unknown_type", json.dumps(
        {"type": "error", "error": {"type": "BadRequestError", "message": "bad"}}).encode(),
        ["anthropic.error.envelope"], "an error type Anthropic does not define", "error-envelope-wrong",
        kind="error", status=400)
    invalid("error_envelope_wrong_status", json.dumps(
        {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long"}}).encode(),
        ["anthropic.error.envelope"], "invalid_request_error with HTTP 500", "error-envelope-wrong",
        kind="error", status=500)
    invalid("error_envelope_422", json.dumps(
        {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}).encode(),
        ["anthropic.error.envelope"], "HTTP 422, a status the Anthropic API does not use", "error-envelope-wrong",
        kind="error", status=422)
    msg = {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": MODEL,
           "content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 12, "output_tokens": 6}}
    invalid("nonstream_stop_sequence_omitted", json.dumps(msg).encode(),
            ["anthropic.response.stop_sequence_present"], "non-stream response without stop_sequence (exclude_none)",
            "nonstream-stop-sequence-omitted", kind="response")
    # invalid classes beyond the FAULTS rows
    evs = a_text_stream()
    invalid("no_event_names", sse(evs, names=False), ["sse.event.name_missing"],
            "data lines without `event:` names (an OpenAI-style writer on the Anthropic wire)")
    body = sse(a_text_stream()).replace("Caf\u00e9".encode(), b"Caf\xe9")
    invalid("not_utf8", body, ["sse.encoding.utf8"], "a latin-1 byte in the stream")
    invalid("event_after_stop", sse(a_text_stream() + [{"type": "ping"}]), ["anthropic.stream.nothing_after_stop"],
            "a ping after message_stop")
    evs = a_text_stream()
    invalid("error_event", sse(evs[:4] + [{"type": "error", "error": {"type": "overloaded_error",
                                                                     "message": "Overloaded"}}]),
            ["anthropic.stream.error_event"], "an error event after HTTP 200")
    evs = a_text_stream()
    evs[-2]["delta"]["stop_reason"] = "stop"
    invalid("stop_reason_openai", sse(evs), ["anthropic.stream.stop_reason_valid"],
            "finish reason `stop` passed through from OpenAI")
    evs = a_text_stream()
    body = b"".join(a_event(e, name="content_block_stop" if i == 4 else "") for i, e in enumerate(evs))
    invalid("event_name_mismatch", body, ["anthropic.stream.event_name_matches_type"],
            "the event: name says content_block_stop, the data is a content_block_delta")
    evs = a_text_stream()
    del evs[-2]
    invalid("message_delta_missing", sse(evs), ["anthropic.stream.grammar"], "message_stop without message_delta")
    return fx


# ----------------------------------------------------------------------------- OpenAI
def o_chunk(choices: list, *, usage=None, **extra) -> dict:
    d = {"id": "chatcmpl-9d3bf2a4c1e84b6f", "object": "chat.completion.chunk", "created": 1764400000,
         "model": OAI_MODEL, "system_fingerprint": None, "choices": choices}
    if usage is not None:
        d["usage"] = usage
    d.update(extra)
    return d


def o_delta(delta: dict, finish=None, index: int = 0) -> dict:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}


USAGE = {"prompt_tokens": 2011, "completion_tokens": 48, "total_tokens": 2059}


def o_tool_call(index: int, call_id: str, name: str, fragments: list[str]) -> list[dict]:
    out = [o_chunk([o_delta({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                             "function": {"name": name, "arguments": ""}}]})])]
    out += [o_chunk([o_delta({"tool_calls": [{"index": index, "function": {"arguments": f}}]})]) for f in fragments]
    return out


def o_text_stream(finish: str = "stop", usage: bool = True) -> list:
    out = [o_chunk([o_delta({"role": "assistant", "content": ""})])]
    out += [o_chunk([o_delta({"content": p})]) for p in ["Hello", "! How can", " I help? \u2615"]]
    out.append(o_chunk([o_delta({}, finish)]))
    if usage:
        out.append(o_chunk([], usage=USAGE))
    return [*out, "[DONE]"]


def o_tool_stream(finish: str = "tool_calls", calls: int = 1) -> list:
    out = [o_chunk([o_delta({"role": "assistant", "content": None})])]
    out += o_tool_call(0, "call_8f0a1b2c3d4e5f60", "read", ['{"filePath', '": "/work/project/src/main.py"}'])
    if calls > 1:
        out += o_tool_call(1, "call_1a2b3c4d5e6f7081", "glob", ['{"pattern": ', '"**/*.py"}'])
    out.append(o_chunk([o_delta({}, finish)]))
    out.append(o_chunk([], usage=USAGE))
    return [*out, "[DONE]"]


def o_sse(items: list, nl: str = "\n") -> bytes:
    return b"".join(
        (f"data: {item if isinstance(item, str) else json.dumps(item, separators=(',', ':'), ensure_ascii=False)}"
         f"{nl}{nl}").encode()
        for item in items)


REQ_AUTO = {"model": OAI_MODEL, "stream": True, "stream_options": {"include_usage": True}, "tool_choice": "auto",
            "messages": [{"role": "user", "content": "hi"}]}
REQ_NAMED = {**REQ_AUTO, "tool_choice": {"type": "function", "function": {"name": "read"}}}
REQ_NO_USAGE = {k: v for k, v in REQ_AUTO.items() if k != "stream_options"}


def openai_fixtures() -> list[dict]:
    fx: list[dict] = []

    def valid(name, body, about, request=REQ_AUTO, warnings=()):
        fx.append({"name": name, "protocol": "openai", "kind": "stream", "body": body, "valid": True,
                   "about": about, "warnings": list(warnings), "request": request})

    def invalid(name, body, checks, about, fault=None, kind="stream", status=200, request=REQ_AUTO):
        fx.append({"name": name, "protocol": "openai", "kind": kind, "body": body, "valid": False,
                   "checks": checks, "fault": fault, "about": about, "status": status, "request": request})

    valid("text", o_sse(o_text_stream()), "text answer, usage chunk, [DONE]")
    valid("tool_call", o_sse(o_tool_stream()), "one tool call in fragments, finish_reason tool_calls")
    valid("parallel_tool_calls", o_sse(o_tool_stream(calls=2)), "two tool calls, indices 0 and 1")
    valid("named_tool_choice_stop", o_sse(o_tool_stream(finish="stop")),
          "a named tool_choice finishing with stop (allowed)", request=REQ_NAMED)
    valid("no_usage_requested", o_sse(o_text_stream(usage=False)), "no include_usage: no usage chunk needed",
          request=REQ_NO_USAGE)
    items = o_text_stream()
    items[1:1] = [o_chunk([o_delta({"reasoning_content": "The user greets me."})]),
                  o_chunk([o_delta({"reasoning_content": " Answer briefly."})])]
    valid("reasoning_content", o_sse(items), "reasoning_content deltas before the answer")
    valid("crlf_and_comments", b": keep-alive\r\n\r\n" + o_sse(o_tool_stream(), nl="\r\n").replace(
        b"\r\n\r\ndata:", b"\r\n\r\n: keep-alive\r\n\r\ndata:", 3), "CRLF line endings and keep-alive comments")
    items = o_text_stream()
    items[2]["choices"][0]["delta"]["x_vendor"] = 1
    items[2]["x_trace"] = "abc"
    valid("extra_fields", o_sse(items), "extra unknown fields in chunks and deltas")
    items = o_text_stream()
    items.insert(0, {"choices": [], "created": 0, "id": "", "model": "", "object": "",
                     "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]})
    valid("empty_choices_first", o_sse(items), "an Azure-style first chunk with choices [] and no usage")
    items = [o_chunk([o_delta({"role": "assistant", "content": None})]),
             *o_tool_call(0, "call_5e6f708192a3b4c5", "write",
                          ['{"filePath": "/work/project/notes.md", ', '"content": "# Notes\\n\\n- caf']),
             o_chunk([o_delta({}, "length")]), o_chunk([], usage=USAGE), "[DONE]"]
    valid("length_inside_tool_call", o_sse(items),
          "finish_reason length inside a tool call's arguments: they never close. Valid on the wire; the "
          "exchange warns (tools.call_cut)")

    items = o_tool_stream()
    items[2]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = '{"filePath": /work'
    invalid("tool_args_invalid", o_sse(items), ["openai.stream.tool_arguments_json"],
            "arguments do not concatenate to valid JSON", "tool-args-invalid-json")
    items = o_tool_stream()
    items[1:4] = [o_chunk([o_delta({"tool_calls": [{"index": 0, "id": "call_8f0a1b2c3d4e5f60", "type": "function",
                                                    "function": {"name": "read", "arguments": {
                                                        "filePath": "/work/project/src/main.py"}}}]})])]
    invalid("tool_args_object", o_sse(items), ["openai.stream.tool_arguments_string"],
            "arguments sent as a JSON object (llama.cpp #20198)", "tool-args-not-string")
    invalid("tool_calls_finish_stop", o_sse(o_tool_stream(finish="stop")), ["openai.stream.finish_reason_tool_calls"],
            "tool calls under tool_choice auto, finish_reason stop", "tool-stop-reason-wrong")
    invalid("truncated_no_done", o_sse(o_text_stream()[:-1]), ["openai.stream.done"],
            "no data: [DONE]", "stream-truncated")
    invalid("truncated_mid_stream", o_sse(o_text_stream()[:3]), ["openai.stream.done"],
            "cut after two chunks", "stream-truncated")
    invalid("error_envelope_detail", json.dumps({"detail": [{"loc": ["body", "messages"], "msg": "field required",
                                                             "type": "value_error.missing"}]}).encode(),
            ["openai.error.envelope"], "a FastAPI validation body for a 422", "error-envelope-wrong",
            kind="error", status=422)
    invalid("tool_call_index_gap", o_sse(o_tool_stream(calls=2)).replace(b'"index":1,', b'"index":2,'),
            ["openai.stream.tool_call_index"], "the second call has index 2")
    items = o_tool_stream()
    del items[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"]
    invalid("tool_call_no_name", o_sse(items), ["openai.stream.tool_call_start"], "first tool-call delta without name")
    items = o_tool_stream()
    items[2]["choices"][0]["delta"]["tool_calls"][0]["id"] = "call_8f0a1b2c3d4e5f60"
    invalid("tool_call_id_repeated", o_sse(items), ["openai.stream.tool_call_once"],
            "the call id repeated in a later delta (SDKs concatenate it)")
    items = o_tool_stream()
    items[-3]["choices"][0]["delta"]["finish_reason"] = "tool_calls"
    items[-3]["choices"][0]["finish_reason"] = None
    invalid("finish_reason_in_delta", o_sse(items), ["openai.stream.finish_reason_placement"],
            "finish_reason inside delta, not on the choice")
    invalid("usage_chunk_missing", o_sse(o_text_stream(usage=False)), ["openai.stream.usage_chunk"],
            "include_usage asked, no usage chunk")
    invalid("chunk_after_done", o_sse(o_text_stream() + [o_chunk([o_delta({"content": "x"})])]),
            ["openai.stream.nothing_after_done"], "a chunk after [DONE]")
    invalid("finish_tool_calls_without_calls", o_sse(o_text_stream(finish="tool_calls")),
            ["openai.stream.finish_reason_tool_calls"], "finish_reason tool_calls with no call")
    items = o_text_stream()
    items.insert(2, {"error": {"message": "CUDA out of memory", "type": "InternalServerError", "code": 500}})
    invalid("error_payload", o_sse(items[:3]), ["openai.stream.error_event"], "an error payload after HTTP 200")
    items = o_text_stream()
    items[-2] = o_chunk([], usage={**USAGE, "total_tokens": USAGE["total_tokens"] + 17})
    invalid("usage_total_wrong", o_sse(items), ["openai.stream.usage_consistent"],
            "usage.total_tokens is not prompt_tokens + completion_tokens")
    resp = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1764400000, "model": OAI_MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": {"filePath": "a"}}}]},
                "finish_reason": "tool_calls"}], "usage": USAGE}
    invalid("nonstream_args_object", json.dumps(resp).encode(), ["openai.response.tool_arguments_string"],
            "non-stream response with arguments as an object", kind="response")
    return fx


def all_fixtures() -> list[dict]:
    return anthropic_fixtures() + openai_fixtures()


def render() -> dict[str, bytes]:
    """Every file of fixtures/streams/ (relative path -> bytes), index.json included."""
    files: dict[str, bytes] = {}
    index = []
    for f in all_fixtures():
        sub = "valid" if f["valid"] else "invalid"
        ext = "sse" if f["kind"] == "stream" else "json"
        rel = f"{f['protocol']}/{sub}/{f['name']}.{ext}"
        files[rel] = f["body"]
        entry = {k: copy.deepcopy(v) for k, v in f.items() if k not in ("body", "name")}
        entry = {"file": rel, **entry}
        if entry.get("request") is not None:
            req_rel = f"{f['protocol']}/{sub}/{f['name']}.request.json"
            files[req_rel] = (json.dumps(entry.pop("request"), indent=1) + "\n").encode()
            entry["request_file"] = req_rel
        else:
            entry.pop("request", None)
        index.append(entry)
    files["index.json"] = (json.dumps({
        "format": "conformance.stream-fixtures", "version": 1,
        "about": "Raw response bodies (SSE streams, JSON responses, error bodies). valid: must pass with no error "
                 "(warnings listed); invalid: must be flagged with at least one of `checks`; `fault` is the "
                 "fault catalog row (docs/faults.md) it reproduces. Built by tests/wire/make_stream_fixtures.py.",
        "fixtures": index}, indent=1) + "\n").encode()
    return files


def main() -> int:
    files = render()
    for rel, data in files.items():
        path = ROOT / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    print(f"wrote {len(files)} files under {ROOT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
