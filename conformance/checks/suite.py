"""Suite-level checks (`suite.*`): acceptance, transport and deadlines, variants, endpoints.

Rules:
- Registered here once; the code that decides each verdict lives in `checks/exchange.py` (one
  exchange) and in the suite tests (`conformance/suite/`) that compare exchanges.
- `likely_cause` is the harness-side explanation printed with every failure (the one table).
- A target that cannot be reached is `suite.target.reachable`; once it fails, the session marks
  the target down and the remaining tests fail fast naming the first failure.
"""

from __future__ import annotations

from conformance.core.registry import register
from conformance.wire.dialect import dialect_for_path

REQUEST_ACCEPTED = register(
    "suite.request.accepted",
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
).id

TARGET_REACHABLE = register(
    "suite.target.reachable",
    "the target accepts TCP connections",
    likely_cause="the router or engine is not running, crashed, or listens on another host/port",
).id

TRANSPORT_COMPLETE = register(
    "suite.transport.complete",
    "the response arrives without the connection breaking",
    likely_cause=(
        "the target closed the connection mid-response: an engine crash (out of memory, a "
        "killed worker) or a proxy idle timeout"
    ),
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
).id

DEADLINE_FIRST_CONTENT = register(
    "suite.deadline.first_content",
    "the first content arrives within the time-to-first-content deadline",
    description="Pings, SSE comments and headers are not content.",
    likely_cause=(
        "the target queued the request behind others, is loading the model, or sends only "
        "keep-alive pings"
    ),
).id

STREAM_CONTENT_TYPE = register(
    "suite.stream.content_type",
    "a stream:true request is answered with text/event-stream",
    likely_cause="a router ignores `stream: true` and returns a complete JSON response",
).id

STREAM_WELLFORMED = register(
    "suite.stream.wellformed",
    "the stream follows the wire grammar to the last event (every rule of the wire core)",
    description=(
        "Summary check recorded when a stream passes every rule of conformance.wire; a "
        "failing stream is recorded under the specific rule that broke."
    ),
).id

RESPONSE_WELLFORMED = register(
    "suite.response.wellformed",
    "the non-stream response has the API's shape (every rule of the wire core)",
    description=(
        "Summary check recorded when a non-stream response passes every rule of "
        "conformance.wire; a failing response is recorded under the specific rule."
    ),
).id

STREAM_INCREMENTAL = register(
    "suite.stream.incremental",
    "stream content arrives spread over time, not all at the end",
    likely_cause=(
        "a router or reverse proxy buffers the stream and releases it at the end (nginx "
        "proxy_buffering on, a gateway that awaits the whole upstream response); the Claude Code "
        "gateway contract requires streaming without buffering"
    ),
).id

VARIANTS_VERDICT = register(
    "suite.variants.verdict_agrees",
    "the prompt wrapped in literal double quotes gets the same verdict as the bare prompt",
    description=(
        "opencode wraps every argument containing a space in literal double quotes; a stack "
        "must treat both wire variants alike."
    ),
    likely_cause="a router or engine treats the quoted prompt differently (routing rules, prompt parsing)",
).id

VARIANTS_SAME_MODEL = register(
    "suite.variants.same_model",
    "the same model (or tier) answers the bare and the quoted prompt",
    likely_cause=(
        "a router picks a model or tier from the prompt text (complexity, keyword or length "
        "routing) and the two quote characters opencode adds change the route"
    ),
).id

COUNT_TOKENS = register(
    "suite.count_tokens.available",
    "POST /v1/messages/count_tokens answers {input_tokens} for the client's request",
    description="Claude Code calls count_tokens (e.g. /context); the gateway contract requires it.",
    likely_cause=(
        "the router or engine does not serve /v1/messages/count_tokens (Claude Code LLM "
        "gateway contract: serve /v1/messages and /v1/messages/count_tokens)"
    ),
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
).id


def unserved_endpoint(path: str, status: int) -> str | None:
    """The check a 404/405 on `path` fails when the path is a wire's endpoint that a target may
    lack entirely (the Responses API): `suite.responses.available`; None otherwise (a refusal)."""
    wire = dialect_for_path(path)
    if status in (404, 405) and wire is not None and wire.may_be_absent:
        return RESPONSES_AVAILABLE
    return None


STOP_SEQUENCE = register(
    "suite.stop_sequence.honoured",
    "a matched stop sequence ends generation with stop_reason stop_sequence and the matched string",
    likely_cause=(
        "the engine reports a matched stop string as end_turn or drops the matched string "
        "(vLLM PR #45807; llama.cpp)"
    ),
).id

ERROR_ENVELOPE = register(
    "suite.error.envelope",
    "a deliberately invalid request is refused with a 4xx in the API's error envelope",
    likely_cause=(
        "the router or engine accepts invalid requests or rewrites upstream errors; Claude "
        "Code's recovery matches on the error envelope and wording, so a gateway must pass "
        "upstream errors through unchanged"
    ),
).id

CORPUS_PRESENT = register(
    "suite.corpus.present",
    "the selected captures directory holds at least one capture to replay",
    likely_cause="--conformance-captures points at an empty folder, or --conformance-client filtered out every capture",
).id
