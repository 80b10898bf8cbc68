"""Suite-level checks (`suite.*`): acceptance, transport and deadlines, variants, endpoints, and
the first four checks of the exchange judge, which report them.

Rules:
- Registered here once. The exchange checks (scope "exchange", run by `checks/exchange.py` in
  `order`) carry their code here, each under the id it is principally about; the other ids they
  report are registered beside them without code:
  10 transport (`suite.transport.complete`): connect -> `suite.target.reachable`; no status ->
     `suite.transport.complete`; deadlines -> `suite.deadline.*`; size caps -> `suite.limits.*`
     (checks/limits.py); each ends judging (a stream cut by a deadline is not judged further, so a
     hang is reported as a hang, not as a truncated stream).
  20 status (`suite.request.accepted`): a non-2xx fails it with the target's error text and the
     request field it names (checks/refusal.py) — count_tokens 404/405/501 fails
     `suite.count_tokens.available`, a 404/405 on a wire a server may lack entirely
     `suite.responses.available` — and ends judging; a connection broken after a 2xx is
     `suite.transport.complete` on top.
  30 endpoint (`suite.count_tokens.available`): count_tokens is judged by its body and ends
     judging; a path other than the generation ones ends judging with a note.
  40 grammar (`suite.stream.wellformed`): the wire grammar (stream or not, decided by the
     request's `stream`; a stream:true request answered without an event stream fails
     `suite.stream.content_type`), which yields the accumulated message later checks read; each
     wire rule's violations keep their order, and the summary is `suite.stream.wellformed` or
     `suite.response.wellformed`.
- The ids a suite test reports itself (variants, incremental streams, stop sequences, the error
  envelope, the corpus) have scope "suite".
- Every id here judges the stack (the wire and the protocol the router or engine produced).
- `likely_cause` is the harness-side explanation printed with every failure (the one table).
- A target that cannot be reached is `suite.target.reachable`; once it fails, the session marks
  the target down and the remaining tests fail fast naming the first failure.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.checks.exchange_state import ExchangeState
from conformance.checks.limits import LIMIT_CHECK
from conformance.checks.refusal import error_text, named_field
from conformance.core.bounded_json import parse as parse_json
from conformance.core.registry import check, register
from conformance.core.verdict import Verdict
from conformance.net.transport import RawExchange
from conformance.wire.registry import dialect_for_path, is_generation_path

# Registered with their code below (the exchange checks).
REQUEST_ACCEPTED = "suite.request.accepted"
TRANSPORT_COMPLETE = "suite.transport.complete"
COUNT_TOKENS = "suite.count_tokens.available"
STREAM_WELLFORMED = "suite.stream.wellformed"

TARGET_REACHABLE = register(
    "suite.target.reachable",
    "the target accepts TCP connections",
    likely_cause="the router or engine is not running, crashed, or listens on another host/port",
    scope="exchange",
    judges="stack",
).id

# An exception that escaped a test (the judge, the loop's sandbox, the suite's own code): the
# test is still recorded, with its failure folder, so it appears in every report.
NO_EXCEPTION = register(
    "suite.judge.no_exception",
    "the suite judges every exchange without an exception",
    description=("An exception escaped the test's own code: the judge, the loop's sandbox or the suite. The "
                 "test is recorded failed with the exception and its traceback's last frames in failure.txt."),
    likely_cause="bytes from the target the judge does not yet handle, or a bug in the suite (report it)",
    scope="suite",
    judges="stack",
).id

DEADLINE_TOTAL = register(
    "suite.deadline.total",
    "the whole exchange finishes within the total deadline",
    description=(
        "Wall-clock deadline around the whole exchange. httpx read timeouts reset on every "
        "byte, so a target sending pings forever is only caught here."
    ),
    likely_cause=(
        "the target accepted the request and never finished it (a stuck scheduler, a deadlocked "
        "worker, Ollama #13949), or keeps the stream open with ping events and no content"
    ),
    scope="exchange",
    judges="stack",
).id

DEADLINE_FIRST_CONTENT = register(
    "suite.deadline.first_content",
    "the first content arrives within the time-to-first-content deadline",
    description="Pings, SSE comments and headers are not content.",
    likely_cause=(
        "the target queued the request behind others, is loading the model, or sends only "
        "keep-alive pings"
    ),
    scope="exchange",
    judges="stack",
).id

STREAM_CONTENT_TYPE = register(
    "suite.stream.content_type",
    "a stream:true request is answered with text/event-stream",
    likely_cause="a router ignores `stream: true` and returns a complete JSON response",
    scope="exchange",
    judges="stack",
).id

RESPONSE_WELLFORMED = register(
    "suite.response.wellformed",
    "the non-stream response has the API's shape (every rule of the wire core)",
    description=(
        "Summary check recorded when a non-stream response passes every rule of "
        "conformance.wire; a failing response is recorded under the specific rule."
    ),
    scope="exchange",
    judges="stack",
).id

STREAM_INCREMENTAL = register(
    "suite.stream.incremental",
    "stream content arrives spread over time, not all at the end",
    likely_cause=(
        "a router or reverse proxy buffers the stream and releases it at the end (nginx "
        "proxy_buffering on, a gateway that awaits the whole upstream response); the Claude Code "
        "gateway contract requires streaming without buffering"
    ),
    scope="suite",
    judges="stack",
).id

VARIANTS_VERDICT = register(
    "suite.variants.verdict_agrees",
    "the prompt wrapped in literal double quotes gets the same verdict as the bare prompt",
    description=(
        "opencode wraps every argument containing a space in literal double quotes; a stack "
        "must treat both wire variants alike."
    ),
    likely_cause="a router or engine treats the quoted prompt differently (routing rules, prompt parsing)",
    scope="suite",
    judges="stack",
).id

VARIANTS_SAME_MODEL = register(
    "suite.variants.same_model",
    "the same model (or tier) answers the bare and the quoted prompt",
    likely_cause=(
        "a router picks a model or tier from the prompt text (complexity, keyword or length "
        "routing) and the two quote characters opencode adds change the route"
    ),
    scope="suite",
    judges="stack",
).id

RESPONSES_AVAILABLE = register(
    "suite.responses.available",
    "POST /v1/responses is served when the Codex corpus (the Responses API) is selected",
    description="Codex CLI speaks only the Responses API to a custom provider (`wire_api = \"responses\"`; "
    "\"chat\" is a config error): a target without /v1/responses cannot serve Codex at all.",
    likely_cause=(
        "the engine or router serves only /v1/chat/completions (or /v1/messages): vLLM, llama.cpp, SGLang, Ollama "
        "and LiteLLM serve /v1/responses in their recent releases; an older release, a router with no route for "
        "it, or a mount prefix other than the client's base_url answers 404/405"
    ),
    scope="exchange",
    judges="stack",
).id

STOP_SEQUENCE = register(
    "suite.stop_sequence.honoured",
    "a matched stop sequence ends generation with stop_reason stop_sequence and the matched string",
    likely_cause=(
        "the engine reports a matched stop string as end_turn or drops the matched string "
        "(vLLM PR #45807; llama.cpp)"
    ),
    scope="suite",
    judges="stack",
).id

ERROR_ENVELOPE = register(
    "suite.error.envelope",
    "a deliberately invalid request is refused with a 4xx in the API's error envelope",
    likely_cause=(
        "the router or engine accepts invalid requests or rewrites upstream errors; Claude "
        "Code's recovery matches on the error envelope and wording, so a gateway must pass "
        "upstream errors through unchanged"
    ),
    scope="suite",
    judges="stack",
).id

CORPUS_PRESENT = register(
    "suite.corpus.present",
    "the selected captures directory holds at least one capture to replay",
    likely_cause="--conformance-captures points at an empty folder, or --conformance-client filtered out every capture",
    scope="suite",
    judges="stack",
).id


def unserved_endpoint(path: str, status: int) -> str | None:
    """The check a 404/405 on `path` fails when the path is a wire's endpoint that a target may
    lack entirely (the Responses API): `suite.responses.available`; None otherwise (a refusal)."""
    wire = dialect_for_path(path)
    if status in (404, 405) and wire is not None and wire.may_be_absent:
        return RESPONSES_AVAILABLE
    return None


_DEADLINE_CHECK = {
    "deadline_total": DEADLINE_TOTAL,
    "deadline_first_content": DEADLINE_FIRST_CONTENT,
    "deadline_first_byte": DEADLINE_FIRST_CONTENT,
}


# ----------------------------------------------------------------------------- the exchange checks
@check(
    TRANSPORT_COMPLETE,
    "the response arrives without the connection breaking",
    likely_cause=(
        "the target closed the connection mid-response: an engine crash (out of memory, a "
        "killed worker) or a proxy idle timeout"
    ),
    scope="exchange",
    judges="stack",
    order=10,
)
def transport(state: ExchangeState) -> list[Verdict]:
    """No answer, or a deadline, or a size cap: nothing after it is judged (a hang is a hang, not a
    truncated stream)."""
    raw = state.raw
    if raw.error_kind == "connect" or (raw.status is None and raw.error_kind in ("read", "protocol")):
        return state.end(TRANSPORT_COMPLETE, state.fail(
            TARGET_REACHABLE if raw.error_kind == "connect" else TRANSPORT_COMPLETE,
            raw.error or "no answer", expected="an HTTP answer", seen=raw.error_kind))
    if raw.error_kind in _DEADLINE_CHECK:
        return state.end(TRANSPORT_COMPLETE, state.fail(
            _DEADLINE_CHECK[raw.error_kind], raw.error or raw.error_kind,
            expected="the exchange to finish within its deadlines",
            seen=f"{len(raw.chunks)} chunks ({len(raw.body())} bytes) in {raw.elapsed:.1f}s, status {raw.status}"))
    if raw.error_kind in LIMIT_CHECK:
        return state.end(TRANSPORT_COMPLETE, state.fail(
            LIMIT_CHECK[raw.error_kind], raw.error or raw.error_kind,
            expected="a response within the suite's size limits",
            seen=f"status {raw.status}, {len(raw.chunks)} chunks kept ({len(raw.body())} bytes) of a longer body"))
    if raw.status is None:
        return state.end(TRANSPORT_COMPLETE, state.fail(
            TRANSPORT_COMPLETE, raw.error or "no status", expected="an HTTP answer", seen=raw.error_kind))
    return []


@check(
    REQUEST_ACCEPTED,
    "the target accepts the request the real client sent (2xx)",
    description=(
        "A captured request, replayed byte for byte, must be answered 2xx. On a 4xx the failure "
        "shows the target's error text and names the request field it complains about."
    ),
    likely_cause=(
        "a router or engine validates requests against a closed struct or an older API version: "
        "400 on context_management ('Extra inputs are not permitted') → the router declares a "
        "closed request struct (claude-code #21612, LiteLLM #26240); 400 on thinking "
        "{type: adaptive} with output_config.effort → the layer predates adaptive thinking "
        "(claude-code #68551); 400 on a role 'system' entry inside messages → the engine's chat "
        "template rejects mid-conversation system messages (vLLM #44000)"
    ),
    scope="exchange",
    judges="stack",
    order=20,
)
def status(state: ExchangeState) -> list[Verdict]:
    """A non-2xx ends judging with the target's error text (and the request field it names);
    a 2xx is accepted, and a connection broken after it is reported on top."""
    raw = state.raw
    if not 200 <= raw.status < 300:
        text = error_text(raw.body())
        state.error_text = text
        if state.is_count_tokens and raw.status in (404, 405, 501):
            return state.end(REQUEST_ACCEPTED, state.fail(
                COUNT_TOKENS, f"count_tokens is not served: HTTP {raw.status}",
                expected="200 with {input_tokens}", seen=f"HTTP {raw.status}: {text}"))
        unserved = unserved_endpoint(state.path, raw.status)
        if unserved is not None:
            return state.end(REQUEST_ACCEPTED, state.fail(
                unserved, f"{state.path} is not served: HTTP {raw.status}", expected="2xx",
                seen=f"HTTP {raw.status}: {text}"))
        ptr = named_field(text, state.request)
        field_note = f" — the error names the request field {ptr}" if ptr else ""
        return state.end(REQUEST_ACCEPTED, state.fail(
            REQUEST_ACCEPTED, f"the target refused the request: HTTP {raw.status}{field_note}",
            expected="2xx", seen=f"HTTP {raw.status}: {text}", pointer=ptr))
    out = [Verdict(REQUEST_ACCEPTED, "passed")]
    if raw.error_kind in ("read", "protocol"):
        out.append(state.fail(TRANSPORT_COMPLETE, raw.error or raw.error_kind,
                              expected="the whole response", seen=f"{len(raw.body())} bytes before the break"))
    return out


@check(
    COUNT_TOKENS,
    "POST /v1/messages/count_tokens answers {input_tokens} for the client's request",
    description="Claude Code calls count_tokens (e.g. /context); the gateway contract requires it.",
    likely_cause=(
        "the router or engine does not serve /v1/messages/count_tokens (Claude Code LLM "
        "gateway contract: serve /v1/messages and /v1/messages/count_tokens)"
    ),
    scope="exchange",
    judges="stack",
    order=30,
)
def endpoint(state: ExchangeState) -> list[Verdict]:
    """count_tokens is judged by its body and ends judging; other paths than generation are not
    judged beyond acceptance (a note says so)."""
    if state.is_count_tokens:
        doc = _body_json(state.raw)
        if isinstance(doc, dict) and isinstance(doc.get("input_tokens"), int) and doc["input_tokens"] >= 0:
            return state.end(COUNT_TOKENS, Verdict(COUNT_TOKENS, "passed"))
        return state.end(COUNT_TOKENS, state.fail(
            COUNT_TOKENS, "count_tokens answered without an integer input_tokens",
            expected='{"input_tokens": N}', seen=state.raw.body()[:300].decode("utf-8", "replace"),
            pointer="/input_tokens"))
    if not is_generation_path(state.path):
        return state.end(COUNT_TOKENS, Verdict(
            STREAM_WELLFORMED, None, note=f"{state.path} is not judged beyond acceptance by this release"))
    return []


def _body_json(raw: RawExchange) -> Any:
    try:
        return parse_json(raw.body())
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError):
        return None


@check(
    STREAM_WELLFORMED,
    "the stream follows the wire grammar to the last event (every rule of the wire core)",
    description=(
        "Summary check recorded when a stream passes every rule of conformance.wire; a "
        "failing stream is recorded under the specific rule that broke."
    ),
    scope="exchange",
    judges="stack",
    order=40,
)
def grammar(state: ExchangeState) -> list[Verdict]:
    """The wire core's grammar (stream or not, decided by the request's `stream`), and the
    accumulated message every later check reads. Each rule's violations keep their order; a rule
    is failed when any of its violations is an error."""
    raw, turn = state.raw, state.turn
    out: list[Verdict] = []
    media = state.wire.stream_media_type
    streamed = media in raw.content_type.lower()
    if state.stream and not streamed:
        out.append(state.fail(STREAM_CONTENT_TYPE,
                              "a stream:true request was answered without an event stream",
                              expected=f"content-type: {media}",
                              seen=f"content-type: {raw.content_type or '(none)'}"))
    if state.stream and streamed:
        report = state.wire.check_stream(raw.chunks, request=state.request)
        found = [x.at(turn=turn) for x in report.violations]
        state.message = report.message
        state.events = list(report.events)
        state.unparsed_input = report.unparsed_tool_input
        summary_id = STREAM_WELLFORMED
    else:
        message, found = state.wire.check_response(raw.body(), request=state.request)
        found = [x.at(turn=turn) for x in found]
        state.message = message
        summary_id = RESPONSE_WELLFORMED
    verdict: dict[str, str] = {}
    for g in found:  # an error fails its rule; otherwise the rule's first finding says warning or info
        if g.is_error:
            verdict[g.check_id] = "failed"
        else:
            verdict.setdefault(g.check_id, "warning" if g.severity == "warning" else "info")
    out.extend(Verdict(g.check_id, verdict[g.check_id], (g,)) for g in found)
    # a warning alone leaves the summary passed (it is recorded under its own rule)
    out.append(Verdict(summary_id, "failed" if any(g.is_error for g in found) else "passed"))
    return out
