"""OpenAI chat-completions wire: chunk state machine, accumulator, non-stream and error checks.

Grammar (WIRE.md; OpenAI API reference "chat.completion.chunk" and "stream_options"):

    chunk* (a chunk whose choice has finish_reason) usage-chunk? data: [DONE]
    -- chunks with `choices: []` and no usage (e.g. Azure's prompt-filter chunk) are allowed
    -- before the end; an `{"error": ...}` payload ends the stream (recorded).

The transitions are the table `TRANSITIONS` (state x event -> state); an illegal event is a
violation naming the event number, the event, the state and the rule (`RULES`).

Rules beside the grammar (each a registered check id):
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
"""

from __future__ import annotations

import json
from typing import Any

from conformance.core.failures import Violation
from conformance.core.registry import register, violation
from conformance.wire.base import (
    StreamReport,
    body_preview,
    check_for_pointer,
    error_envelope_problems,
    fast_json,
    judge_stream,
    load_json,
    schema_problems,
)
from conformance.wire.sse import SSEDecoder, SSEEvent, decode, head_then_whole

# ----------------------------------------------------------------------------- check ids
_C = "openai.stream."
register(_C + "chunk_json", "every stream data line is a JSON object or the final `[DONE]`",
         likely_cause="the server writes partial or non-JSON data lines, or a proxy rewrites the stream")
register(_C + "chunk_schema", "each chunk matches the chat.completion.chunk schema (conformance/wire/chat/schemas/openai.chunk.json)",
         likely_cause="the engine's OpenAI-compatible endpoint omits or mistypes chunk fields")
register(_C + "grammar", "chunks, then the finishing chunk, then the usage chunk (if asked), then [DONE]",
         likely_cause="the server writes chunks after finish_reason or after the usage chunk, or [DONE] too early")
register(_C + "nothing_after_done", "nothing follows `data: [DONE]`",
         likely_cause="the server keeps writing after [DONE] (a second response or trailing chunks)")
register(_C + "done", "the stream ends with `data: [DONE]`",
         likely_cause="the stream was cut (engine crash, timeout, proxy closing early) or the server never sends "
         "[DONE]; OpenAI clients wait for it")
register(_C + "usage_chunk", "with stream_options.include_usage, a last chunk has `choices: []` and usage",
         likely_cause="a router drops stream_options before the engine, or the engine ignores include_usage")
register(_C + "tool_call_index", "each tool_calls delta has an `index`; a new call's index is the number of calls so far",
         likely_cause="the engine's tool parser numbers parallel calls wrongly or omits index")
register(_C + "tool_call_start", "the first delta of a tool call carries id, type \"function\" and a non-empty name",
         likely_cause="the engine's tool parser starts a call without its id or name (clients cannot route the call)")
register(_C + "tool_call_once", "a tool call's id and name appear once (in its first delta)",
         likely_cause="the server repeats id/name in every delta; the openai SDK concatenates them (\"ReadRead\")")
register(_C + "tool_arguments_string", "function.arguments fragments are strings",
         likely_cause="the server sends arguments as a JSON object instead of a JSON string (llama.cpp #20198)")
register(_C + "tool_arguments_json", "a tool call's concatenated arguments parse as one JSON object",
         likely_cause="the engine's tool parser streams malformed or partial arguments (vLLM #35266, #41739; "
         "opencode #8102)")
register(_C + "finish_reason_placement", "finish_reason is on the choice, not inside delta",
         likely_cause="a hand-written chunk serialiser puts finish_reason into delta; clients never see it")
register(_C + "finish_reason_valid", "every choice finishes with a known finish_reason",
         likely_cause="the engine sends a non-standard finish reason or none at all")
register(_C + "finish_reason_tool_calls",
         "finish_reason is tool_calls exactly when calls were made (a named tool_choice may end with stop)",
         likely_cause="the engine or router maps the finish reason without looking at the emitted tool calls "
         "(LiteLLM #34692): the agent ends the turn instead of running the tool")
register(_C + "usage_consistent", "usage.total_tokens equals prompt_tokens + completion_tokens",
         likely_cause="a layer recomputes or merges usage (e.g. a router adding its own counts) and breaks the sum; "
         "cost and context accounting in the client go wrong (LiteLLM #24176)")
register(_C + "error_event", "no error payload arrives in a 200 stream",
         likely_cause="the engine failed mid-generation (overload, crash, context overflow); see its log")
register(_C + "unknown_event", "unknown payloads are tolerated (noted)", severity="info",
         likely_cause="a vendor extension; clients ignore it")
_R = "openai.response."
register(_R + "json", "a non-stream response body is a JSON object",
         likely_cause="the endpoint returned an HTML/text error page or an event stream for stream:false")
register(_R + "schema", "a non-stream response matches the chat.completion schema",
         likely_cause="the engine's OpenAI-compatible endpoint omits or mistypes response fields")
register(_R + "tool_arguments_string", "function.arguments is a string",
         likely_cause="the server sends arguments as a JSON object instead of a JSON string (llama.cpp #20198)")
register(_R + "tool_arguments_json", "function.arguments parses as one JSON object",
         likely_cause="the engine's tool parser produced malformed arguments (vLLM #35266)")
register(_R + "finish_reason_tool_calls", "finish_reason is tool_calls exactly when the message has tool calls",
         likely_cause="the engine or router maps the finish reason without looking at the tool calls (LiteLLM #34692)")
register(_R + "usage_consistent", "usage.total_tokens equals prompt_tokens + completion_tokens",
         likely_cause="a layer recomputes or merges usage and breaks the sum (LiteLLM #24176)")
register("openai.error.envelope", "an error body is {\"error\": {\"message\", \"type\", ...}}",
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
    START: (_C + "grammar", "the stream opens with a chunk"),
    STREAMING: (_C + "grammar", "before a choice finishes come chunks, then a chunk with finish_reason"),
    FINISHED: (_C + "grammar", "after finish_reason come the usage chunk (choices []) or [DONE]"),
    USAGE: (_C + "grammar", "the usage chunk is the last chunk before [DONE]"),
    DONE: (_C + "nothing_after_done", "nothing follows [DONE]"),
    ERRORED: (_C + "grammar", "nothing follows an error payload"),
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
    ("chunk", "/choices/*/delta/tool_calls/*/index", _C + "tool_call_index"),
    ("chunk", "/choices/*/delta/tool_calls/*/function/arguments", _C + "tool_arguments_string"),
    ("chunk", "/choices/*/finish_reason", _C + "finish_reason_valid"),
]
RESPONSE_SCHEMA_CHECKS: list[tuple[str, str, str]] = [
    ("response", "/choices/*/message/tool_calls/*/function/arguments", _R + "tool_arguments_string"),
]


def is_cut(reason: Any) -> bool:
    """finish_reason length / content_filter: the output was cut short, not finished."""
    return isinstance(reason, str) and reason in CUT_FINISH_REASONS


def _named_tool_choice(request: dict) -> bool:
    tc = request.get("tool_choice")
    return isinstance(tc, dict) and (tc.get("type") == "function" or "function" in tc)


def _include_usage(request: dict) -> bool:
    so = request.get("stream_options")
    return isinstance(so, dict) and bool(so.get("include_usage"))


class _Choice:
    def __init__(self) -> None:
        self.role: str | None = None
        self.content: list[str] = []
        self.has_content = False
        self.reasoning: list[str] = []
        self.has_reasoning = False
        self.calls: list[dict[str, Any]] = []
        self.positions: dict[int, int] = {}  # index the server sent -> position in calls
        self.finish_reason: str | None = None
        self.finished_at: int | None = None


class StreamMachine:
    """Feed SSE events one at a time; `finish()` returns the report. Sans-IO."""

    def __init__(self, request: dict | None = None) -> None:
        self.request = request or {}
        self.state = START
        self.violations: list[Violation] = []
        self.events: list[SSEEvent] = []
        self.payloads: list[Any] = []
        self.choices: dict[int, _Choice] = {}
        self.id: str | None = None
        self.model: str | None = None
        self.usage: dict | None = None
        self.saw_usage_chunk = False
        self._noted_unknown = False

    def _v(self, check_id: str, message: str, ev: SSEEvent | None = None, kind: str | None = None, **kw) -> None:
        if ev is not None:
            kw.setdefault("event_index", ev.index)
            kw.setdefault("byte_offset", ev.offset)
            kw.setdefault("event_type", kind)
        self.violations.append(violation(check_id, message, **kw))

    def _classify(self, ev: SSEEvent) -> tuple[str, Any]:
        if ev.data.strip() == "[DONE]":
            return "done", None
        try:
            data, err = fast_json(ev.data), None
        except ValueError:  # (msgspec's DecodeError is one) json.loads decides and words it
            data, err = load_json(ev.data)
        if err is not None or not isinstance(data, dict):
            self._v(_C + "chunk_json", f"data is neither a JSON object nor [DONE] ({err or type(data).__name__})",
                    ev, "chunk", expected="a chat.completion.chunk object or [DONE]", seen=ev.data[:200])
            return "invalid", None
        if "error" in data or ev.event == "error":
            return "error", data
        choices = data.get("choices")
        if choices == []:
            return ("usage" if isinstance(data.get("usage"), dict) else "empty"), data
        if isinstance(choices, list):
            if any(isinstance(c, dict) and c.get("finish_reason") is not None for c in choices):
                return "finish", data
            return "chunk", data
        if data.get("object") == "chat.completion.chunk":
            return "chunk", data  # choices missing or mistyped: the schema reports it
        return "unknown", data

    def feed(self, ev: SSEEvent) -> None:
        self.events.append(ev)
        kind, data = self._classify(ev)
        self.payloads.append(data)
        if kind == "invalid":
            return
        state = self.state
        nxt = TRANSITIONS.get((state, kind))
        apply = True
        if nxt is None:
            check_id, rule = RULES[state]
            label = "[DONE]" if kind == "done" else kind
            self._v(check_id, f"event #{ev.index} ({label}) is not allowed in state {state!r}: {rule}", ev, kind,
                    expected=rule, seen=label)
            nxt = RECOVER.get((state, kind))
            if nxt is None:
                nxt, apply = state, False
        self.state = nxt
        if kind == "unknown":
            if not self._noted_unknown:
                self._noted_unknown = True
                self._v(_C + "unknown_event", "a payload that is not a chunk (tolerated)", ev, kind,
                        seen=ev.data[:200])
            return
        if kind == "done":
            return
        if kind == "error":
            self._v(_C + "error_event", f"the server sent an error payload: {json.dumps(data.get('error'))[:300]}",
                    ev, "error", expected="no error payload", seen=ev.data[:300])
            return
        if kind == "empty":
            return  # e.g. Azure's prompt-filter chunk: not a completion chunk, nothing to judge
        for ptr, msg, expected, seen in schema_problems("openai.chunk", data):
            check_id = check_for_pointer(SCHEMA_CHECKS, "chunk", ptr, _C + "chunk_schema")
            self._v(check_id, f"chunk: {msg}", ev, kind, expected=expected, seen=seen, pointer=ptr)
        if not apply:
            return
        if kind == "usage":
            self.saw_usage_chunk = True
        if isinstance(data.get("id"), str) and self.id is None:
            self.id = data["id"]
        if isinstance(data.get("model"), str) and self.model is None:
            self.model = data["model"]
        if isinstance(data.get("usage"), dict):
            self.usage = data["usage"]
        choices = data.get("choices")
        # a non-list `choices` is already reported by the chunk schema; nothing to accumulate
        for ci, choice in enumerate(choices if isinstance(choices, list) else []):
            if isinstance(choice, dict):
                self._choice(choice, ci, ev, kind)

    def _choice(self, choice: dict, ci: int, ev: SSEEvent, kind: str) -> None:
        idx = choice.get("index", 0)
        if not isinstance(idx, int):
            return
        st = self.choices.setdefault(idx, _Choice())
        base = f"/choices/{ci}"
        delta = choice.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        if st.finished_at is not None and (delta.get("content") or delta.get("tool_calls")
                                           or choice.get("finish_reason") is not None):
            self._v(_C + "grammar", f"choice {idx} continues after it finished at event #{st.finished_at}", ev, kind,
                    expected="nothing more for a finished choice", seen=json.dumps(delta)[:200], pointer=base)
            return
        if "finish_reason" in delta:
            self._v(_C + "finish_reason_placement", "finish_reason inside delta", ev, kind,
                    expected="choices[].finish_reason", seen=json.dumps(delta.get("finish_reason")),
                    pointer=f"{base}/delta/finish_reason")
        if isinstance(delta.get("role"), str) and st.role is None:
            st.role = delta["role"]
        if isinstance(delta.get("content"), str):
            st.content.append(delta["content"])
            st.has_content = True
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str):
                st.reasoning.append(delta[key])
                st.has_reasoning = True
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for ti, tc in enumerate(calls):
                if isinstance(tc, dict):
                    self._tool_delta(st, tc, f"{base}/delta/tool_calls/{ti}", ev, kind)
        reason = choice.get("finish_reason")
        if reason is not None:
            st.finish_reason = reason
            st.finished_at = ev.index
            self._finish_choice(idx, st, ev, kind)

    def _tool_delta(self, st: _Choice, tc: dict, ptr: str, ev: SSEEvent, kind: str) -> None:
        index = tc.get("index")
        if not isinstance(index, int):
            return  # the schema reported it under tool_call_index
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
        args = fn.get("arguments")
        if args is not None and not isinstance(args, str):
            args = json.dumps(args)  # reported by the schema (tool_arguments_string); keep judging
        n = len(st.calls)
        if index not in st.positions and index != n:
            self._v(_C + "tool_call_index", f"tool call index {index} but {n} call(s) so far", ev, kind,
                    expected=f"{n} (a new call) or an existing index < {n}", seen=index, pointer=f"{ptr}/index")
        if index not in st.positions:
            st.positions[index] = n
            missing = []
            if not (isinstance(tc.get("id"), str) and tc["id"]):
                missing.append("id")
            if tc.get("type") != "function":
                missing.append('type "function"')
            if not (isinstance(fn.get("name"), str) and fn["name"]):
                missing.append("function.name")
            if missing:
                self._v(_C + "tool_call_start", f"the first delta of tool call {index} lacks " + ", ".join(missing),
                        ev, kind, expected='id, type "function", function.name', seen=json.dumps(tc)[:200],
                        pointer=ptr)
            call = {"id": tc.get("id") or "", "type": "function",
                    "function": {"name": fn.get("name") or "", "arguments": args or ""}, "_event": ev.index}
            st.calls.append(call)
            return
        call = st.calls[st.positions[index]]
        repeated = [k for k, val in (("id", tc.get("id")), ("function.name", fn.get("name"))) if val]
        if repeated:
            self._v(_C + "tool_call_once", f"tool call {index} repeats " + " and ".join(repeated)
                    + " after its first delta (clients concatenate them)", ev, kind,
                    expected="id and name only in the first delta", seen=json.dumps(tc)[:200], pointer=ptr)
        if args:
            call["function"]["arguments"] += args

    def _finish_choice(self, idx: int, st: _Choice, ev: SSEEvent | None, kind: str | None) -> None:
        reason = st.finish_reason
        for i, call in enumerate(st.calls):
            args = call["function"]["arguments"]
            where = {"pointer": f"/choices/{idx}/tool_calls/{i}/function/arguments"}
            if not args.strip():
                self._v(_C + "tool_arguments_json", f"tool call {i} ({call['function']['name']!r}) has empty "
                        "arguments", ev, kind, severity="warning", expected='a JSON object, at least "{}"',
                        seen='""', **where)
                continue
            if is_cut(reason) and i == len(st.calls) - 1:
                continue  # cut by the cap, not malformed by the parser: tools.call_cut judges it
            try:
                value = json.loads(args)
            except ValueError as exc:
                self._v(_C + "tool_arguments_json", f"tool call {i} ({call['function']['name']!r}): the "
                        f"concatenated arguments do not parse: {exc}", ev, kind,
                        expected="one JSON object", seen=args[:300], **where)
                continue
            if not isinstance(value, dict):
                self._v(_C + "tool_arguments_json", f"tool call {i} arguments parse to a {type(value).__name__}",
                        ev, kind, expected="a JSON object", seen=args[:300], **where)
        if reason is None:
            return
        if reason not in FINISH_REASONS:
            return  # the schema reported it
        if st.calls:
            allowed = {"tool_calls"} | CUT_FINISH_REASONS
            if _named_tool_choice(self.request):
                allowed.add("stop")
            if reason not in allowed:
                self._v(_C + "finish_reason_tool_calls", f"{len(st.calls)} tool call(s) were made but "
                        f"finish_reason is {reason!r}", ev, kind, expected=" or ".join(sorted(allowed)),
                        seen=reason, pointer=f"/choices/{idx}/finish_reason")
        elif reason == "tool_calls":
            self._v(_C + "finish_reason_tool_calls", "finish_reason tool_calls but no tool call was made", ev, kind,
                    expected="stop (or length)", seen=reason, pointer=f"/choices/{idx}/finish_reason")

    def finish(self) -> StreamReport:
        complete = self.state == DONE
        end = self.events[-1] if self.events else None
        if self.state not in (DONE, ERRORED):
            if end is None:
                self._v(_C + "done", "the stream carried no event at all", expected="chunks then data: [DONE]",
                        seen="an empty body")
            else:
                self._v(_C + "done", f"the stream ended in state {self.state!r} after event #{end.index} without "
                        "data: [DONE]", event_index=end.index, expected="data: [DONE] as the last event",
                        seen=f"last event #{end.index}")
        for idx, st in self.choices.items():
            if st.finished_at is None:
                self._finish_choice(idx, st, None, None)
                if self.state == DONE:
                    self._v(_C + "finish_reason_valid", f"choice {idx} never got a finish_reason",
                            event_index=end.index if end else None, expected="finish_reason on the last chunk",
                            seen="none", pointer=f"/choices/{idx}/finish_reason")
        if _include_usage(self.request) and not self.saw_usage_chunk and self.state in (DONE, USAGE, FINISHED):
            self._v(_C + "usage_chunk", "stream_options.include_usage was asked but no usage chunk "
                    "(choices: [] with usage) arrived", event_index=end.index if end else None,
                    expected='a chunk {"choices": [], "usage": {...}} before [DONE]', seen="none")
        for v in _usage_problems(self.usage, _C + "usage_consistent"):
            self.violations.append(v)
        message = self._message() if self.events else None
        return StreamReport(self.events, self.violations, message, complete, self.payloads)

    def _message(self) -> dict[str, Any]:
        st = self.choices.get(0) or (next(iter(self.choices.values())) if self.choices else _Choice())
        msg: dict[str, Any] = {
            "id": self.id,
            "model": self.model,
            "role": st.role or "assistant",
            "content": "".join(st.content) if st.has_content else None,
        }
        if st.has_reasoning:
            msg["reasoning_content"] = "".join(st.reasoning)
        msg["tool_calls"] = [{k: v for k, v in c.items() if k != "_event"} for c in st.calls]
        msg["finish_reason"] = st.finish_reason
        msg["usage"] = self.usage
        return msg


def check_stream(chunks, *, request: dict | None = None) -> StreamReport:
    """Judge a whole chat-completions stream: bytes, or the transport's [(t, bytes)] chunks."""
    return judge_stream(SSEDecoder(), StreamMachine(request), chunks)


# ----------------------------------------------------------------------------- non-stream
def check_response(body, *, request: dict | None = None) -> tuple[dict | None, list[Violation]]:
    """Judge a non-stream chat.completion. Returns (the normalised message or None, violations)."""
    request = request or {}
    data, err = load_json(body)
    out: list[Violation] = []
    if err is not None or not isinstance(data, dict):
        out.append(violation(_R + "json", f"the response body is not a JSON object ({err or type(data).__name__})",
                             expected="a chat.completion object", seen=body_preview(body)))
        return None, out
    for ptr, msg, expected, seen in schema_problems("openai.chat_completion", data):
        check_id = check_for_pointer(RESPONSE_SCHEMA_CHECKS, "response", ptr, _R + "schema")
        out.append(violation(check_id, msg, expected=expected, seen=seen, pointer=ptr))
    choices = data.get("choices") if isinstance(data.get("choices"), list) else []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    m = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    calls_in = m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else []
    reason = choice.get("finish_reason")
    # the last call of a turn cut by the cap may be cut too: tools.call_cut judges it, not this rule
    last = max((i for i, c in enumerate(calls_in) if isinstance(c, dict)), default=None)
    calls = []
    for i, c in enumerate(calls_in):
        if not isinstance(c, dict):
            continue
        fn = c.get("function") if isinstance(c.get("function"), dict) else {}
        args = fn.get("arguments")
        if isinstance(args, str) and not (i == last and is_cut(reason)):
            try:
                value = json.loads(args)
                if not isinstance(value, dict):
                    raise ValueError(f"parses to a {type(value).__name__}, not an object")
            except ValueError as exc:
                out.append(violation(_R + "tool_arguments_json", f"tool call {i} arguments do not parse: {exc}",
                                     expected="one JSON object", seen=args[:300],
                                     pointer=f"/choices/0/message/tool_calls/{i}/function/arguments"))
        elif args is not None and not isinstance(args, str):
            args = json.dumps(args)
        calls.append({"id": c.get("id"), "type": c.get("type", "function"),
                      "function": {"name": fn.get("name"), "arguments": args if args is not None else ""}})
    if calls:
        allowed = {"tool_calls"} | CUT_FINISH_REASONS | ({"stop"} if _named_tool_choice(request) else set())
        if reason not in allowed:
            out.append(violation(_R + "finish_reason_tool_calls", f"{len(calls)} tool call(s) but finish_reason "
                                 f"{reason!r}", expected=" or ".join(sorted(allowed)), seen=reason,
                                 pointer="/choices/0/finish_reason"))
    elif reason == "tool_calls":
        out.append(violation(_R + "finish_reason_tool_calls", "finish_reason tool_calls but no tool calls",
                             expected="stop (or length)", seen=reason, pointer="/choices/0/finish_reason"))
    out.extend(_usage_problems(data.get("usage"), _R + "usage_consistent"))
    message: dict[str, Any] = {"id": data.get("id"), "model": data.get("model"), "role": m.get("role", "assistant"),
                               "content": m.get("content")}
    for key in ("reasoning_content", "reasoning"):
        if isinstance(m.get(key), str):
            message["reasoning_content"] = m[key]
            break
    message["tool_calls"] = calls
    message["finish_reason"] = reason
    message["usage"] = data.get("usage")
    return message, out


def _usage_problems(usage, check_id: str) -> list[Violation]:
    if not isinstance(usage, dict):
        return []
    p, c, t = (usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens"))
    if all(type(x) is int for x in (p, c, t)) and p + c != t:
        return [violation(check_id, f"total_tokens {t} is not prompt_tokens {p} + completion_tokens {c}",
                          expected=p + c, seen=t, pointer="/usage/total_tokens")]
    return []


# ----------------------------------------------------------------------------- errors
def check_error(status: int, body: bytes) -> list[Violation]:
    """Judge an error response: `{"error": {"message": str, "type": ..., ...}}`."""
    return error_envelope_problems("openai.error.envelope", "openai.error", status, body,
                                   '{"error": {"message": ..., "type": ...}}')[1]



# ----------------------------------------------------------------------------- first content
def content_started(buf: bytes) -> bool:
    """True once `buf` holds content: text, reasoning, a tool call, a finish, [DONE] or an error.

    A role-only first chunk, empty chunks and comments are not content. A body that is not an
    event stream (JSON response or error) is content from its first byte.
    """
    head = buf.lstrip()[:1]
    if not head:
        return False
    if head in (b"{", b"["):
        return True
    return any(_has_content(part) for part in head_then_whole(buf))  # (see anthropic.content_started)


def _has_content(buf: bytes) -> bool:
    events, _ = decode(buf)
    for ev in events:
        if ev.data.strip() == "[DONE]" or ev.event == "error":
            return True
        data, _err = load_json(ev.data)
        if not isinstance(data, dict):
            return True  # garbage is an answer too: let the judge see it
        if "error" in data:
            return True
        for c in data.get("choices") or []:
            if not isinstance(c, dict):
                continue
            d = c.get("delta") if isinstance(c.get("delta"), dict) else {}
            if c.get("finish_reason") or d.get("content") or d.get("tool_calls") or d.get("reasoning_content") \
                    or d.get("reasoning"):
                return True
    return False
