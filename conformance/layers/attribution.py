"""Layer attribution: did the router or the engine break this exchange?

Rules:
- Input: the client's request and the wire it was sent on, the verdict the target (the router)
  got for it, and the URL of the engine behind the router. The request is replayed directly
  against the engine and judged with the same judge (`check_exchange`, plus any extra judge the
  caller passes for checks that live outside it, e.g. stream incrementality), then the two
  verdicts are compared. The target's verdict is the caller's: attribution judges only the
  engine's answers.
- First: did the request reach the engine at all? With a received log, the exchange is matched
  to what the engine received by its content (`conformance.layers.hop.reached_engine`: the body
  hash, else the client's own text), never by recency. When the log was read and nothing in it
  carries the request, the router answered without forwarding: the layer is `router`, said in
  those words, and nothing is replayed (no engine verdict is printed, and no unrelated logged
  request ever stands in for the client's).
- What is replayed, in order of faithfulness:
  1. `forwarded` (a request the router translates): the body the router actually sent for this
     exchange, from the engine's (or a recorder's) received log, on the same path — the engine's
     behaviour on exactly its input;
  2. `<wire>-direct` (`anthropic-direct`): the client's own request on the engine's route for
     the client's wire, when it serves one;
  3. `minimal-translation`: `conformance.layers.minimal.minimal_openai_request` on
     `/v1/chat/completions` (documented there), for a request the minimal translation takes
     (`minimal.translates`); any other request is replayed as it was on its own wire's endpoint
     (`<wire>-direct`: a Responses request on /v1/responses, a chat request on chat).
  A request on a non-generation path (count_tokens) is replayed as the router forwarded it, when
  the test's window of the received log shows where (`forwarded`, on any path: LiteLLM sends
  count_tokens to an upstream's /v1/responses/input_tokens); else on the same path (`same-path`),
  judged by that path's wire (the client's own wire for a path of no known wire). An engine that
  answers 404/405/501 on the path the router forwarded to does not serve it: the status the target
  relayed originated there (`engine`).
- Verdict (`layer`):
  * `router` — the engine passes: the router introduced the failure;
  * `engine` — the engine fails with every symptom the target shows (it originated there);
  * `both` — the engine fails too, but the target shows symptoms the engine does not;
  * `unknown` — the engine could not be asked (unreachable, nothing to replay), said so.
  Symptoms compare across dialects: `anthropic.stream.X` and `openai.stream.X` are one symptom,
  and the rows of SYMPTOMS join rules that are the same failure on the two wires. Across
  dialects (a translating router), wire-shape symptoms the router shows on top of a shared
  failure are the router relaying the engine's broken output (WIRE_CONSEQUENCES), not a 2nd bug.
- A forwarded body the engine *refuses* is replayed once more in the client's own form: when the
  engine accepts that, the router's translation broke the request -> `router`.
- Attribution returns data and never writes: an `Attribution` per exchange carries both sides'
  evidence (violations, status, error text, the first bytes of the engine's answer, what was
  replayed; `document()` and `evidence()` are what a failure folder holds), and
  `attribute_exchanges` folds a whole test's exchanges into one `LayerVerdict`. The caller (the
  suite's CheckContext) applies it: the layer on its records, the evidence in its folder.

Where the suite calls it: see docs/layers.md ("Wiring attribution into the suite").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.checks import suite as suite_checks
from conformance.checks.error_answer import check_error_answer
from conformance.checks.exchange import check_exchange
from conformance.core.failures import Violation
from conformance.layers import minimal
from conformance.layers.hop import REPLAY_DEADLINES, reached_engine, received_log, replay
from conformance.net.target import Target
from conformance.net.transport import Deadlines, RawExchange
from conformance.report.text import format_violation
from conformance.wire.dialect import Dialect
from conformance.wire.registry import DIALECTS, dialect, dialect_for_path, is_generation_path

LAYERS = ("router", "engine", "both", "unknown")
NOT_FORWARDED = "the router answered without forwarding"
ROUTE_PROBE_DEADLINES = Deadlines(connect=5, first_content=5, total=5)

# Same failure on the two wires (and the suite-level rule that restates it) -> one symptom.
SYMPTOMS: dict[str, str] = {
    "anthropic.stream.tool_input_json": "tool-arguments",
    "anthropic.response.tool_input_json": "tool-arguments",
    "openai.stream.tool_arguments_json": "tool-arguments",
    "openai.stream.tool_arguments_string": "tool-arguments",
    "openai.response.tool_arguments_json": "tool-arguments",
    "openai.response.tool_arguments_string": "tool-arguments",
    "tools.arguments_schema": "tool-arguments",
    "anthropic.stream.tool_use_stop_reason": "tool-stop-reason",
    "anthropic.response.tool_use_stop_reason": "tool-stop-reason",
    "openai.stream.finish_reason_tool_calls": "tool-stop-reason",
    "openai.response.finish_reason_tool_calls": "tool-stop-reason",
    "anthropic.stream.complete": "stream-incomplete",
    "openai.stream.done": "stream-incomplete",
    "anthropic.stream.error_event": "stream-incomplete",
    "openai.stream.error_event": "stream-incomplete",
    "suite.transport.complete": "stream-incomplete",
    "anthropic.error.envelope": "error-envelope",
    "openai.error.envelope": "error-envelope",
    "suite.error.envelope": "error-envelope",
    "anthropic.stream.grammar": "stream-grammar",
    "openai.stream.grammar": "stream-grammar",
    "suite.stream.wellformed": "stream-grammar",
    "suite.response.wellformed": "stream-grammar",
    # A hang is a hang: whether keep-alives pass a layer decides which deadline fires first.
    "suite.deadline.first_content": "deadline",
    "suite.deadline.total": "deadline",
}

# Wire-shape rules that fail on the router's side when it re-encodes an engine's broken output.
WIRE_CONSEQUENCES = {"stream.event_schema", "response.schema", "stream.event_json", "stream-grammar",
                     "stream.delta_block_type", "stream.chunk_schema"}

# judge(raw answer, the body sent, the wire it was judged on) -> violations
Judge = Callable[[RawExchange, dict, Dialect], list[Violation]]


def symptom(check_id: str) -> str:
    if check_id in SYMPTOMS:
        return SYMPTOMS[check_id]
    for wire in DIALECTS.values():  # a wire rule's id starts with its wire's prefix
        if check_id.startswith(wire.rule_prefix):
            return check_id[len(wire.rule_prefix):]
    return check_id


def violation_symptom(v: Violation) -> str:
    """The symptom of one violation. A refused invalid request has two different wrong answers
    under one check id: accepting it (2xx) and crashing on it (5xx); a router that crashes in
    front of an engine that accepts is two failures, not one."""
    if v.check_id == "suite.error.envelope":
        seen = str(v.seen or "")
        if seen.startswith("HTTP 2"):
            return "invalid-request-accepted"
        if seen.startswith("HTTP 5"):
            return "invalid-request-crashed"
    return symptom(v.check_id)


@dataclass
class Attribution:
    layer: str
    explanation: str
    target_violations: list[Violation] = field(default_factory=list)
    engine_violations: list[Violation] = field(default_factory=list)
    replayed: str = ""  # forwarded | <wire>-direct | minimal-translation | same-path | ""
    engine_url: str = ""
    engine_path: str = ""
    engine_request: dict | None = None
    engine_status: int | None = None
    engine_error: str | None = None
    engine_excerpt: str = ""
    reached_engine: bool | None = None  # did a request carrying this one reach the engine? (None: unknown)

    @property
    def target_symptoms(self) -> list[str]:
        return sorted({symptom(v.check_id) for v in self.target_violations if v.is_error})

    @property
    def engine_symptoms(self) -> list[str]:
        return sorted({symptom(v.check_id) for v in self.engine_violations if v.is_error})

    def summary(self) -> str:
        return f"layer: {self.layer} — {self.explanation}"

    def extra(self) -> dict[str, str]:
        """Context lines for format_failure / ConformanceFailure(extra=...)."""
        out = {"layer": f"{self.layer} — {self.explanation}"}
        if self.replayed:
            out["engine replay"] = f"{self.replayed} POST {self.engine_url.rstrip('/')}{self.engine_path} -> " + (
                f"HTTP {self.engine_status}" if self.engine_status is not None else (self.engine_error or "no answer"))
            out["engine verdict"] = ", ".join(sorted({v.check_id for v in self.engine_violations if v.is_error})) or "passes"
        return out

    def evidence(self) -> str:
        lines = [self.summary(), "", "through the router:"]
        lines += [format_violation(v, with_cause=False) for v in self.target_violations if v.is_error] or ["  (no errors)"]
        if self.reached_engine is False:
            return "\n".join(lines + ["", f"the engine ({self.engine_url}): nothing carrying this request reached it; "
                                       "not replayed (there is no engine verdict to compare)"])
        lines += ["", f"directly against the engine ({self.replayed or 'not replayed'} {self.engine_path}):"]
        if self.engine_error:
            lines.append(f"  transport: {self.engine_error}")
        lines += [format_violation(v, with_cause=False) for v in self.engine_violations if v.is_error] or ["  (no errors)"]
        if self.engine_excerpt:
            lines += ["", "engine answer (first bytes):", self.engine_excerpt]
        return "\n".join(lines)

    def details(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "explanation": self.explanation,
            "replayed": self.replayed,
            "reached_engine": self.reached_engine,
            "engine_path": self.engine_path,
            "engine_status": self.engine_status,
            "target_symptoms": self.target_symptoms,
            "engine_symptoms": self.engine_symptoms,
            "engine_violations": [v.to_dict() for v in self.engine_violations],
        }

    def document(self) -> dict[str, Any]:
        """Both sides' evidence as one JSON document (a failure folder's attribution-N.json)."""
        return dict(self.details(), target_violations=[v.to_dict() for v in self.target_violations],
                    engine_request=self.engine_request, engine_excerpt=self.engine_excerpt)


def decide(target: list[Violation], engine: list[Violation], *, engine_answered: bool,
           cross_dialect: bool = False) -> tuple[str, str]:
    """The layer from the two sides' error symptoms. `cross_dialect`: the engine was judged on
    another wire than the target (a translating router): the target's wire-shape symptoms that
    come with a shared failure are the router relaying the engine's bad output, not a second bug."""
    t = {violation_symptom(v) for v in target if v.is_error}
    e = {violation_symptom(v) for v in engine if v.is_error}
    if cross_dialect and t & e:
        t = {x for x in t if x not in WIRE_CONSEQUENCES} | (t & e)
    if not t:
        return "unknown", "the target shows no error to attribute"
    if not engine_answered and not e:
        return "unknown", "the engine could not be asked"
    if not e:
        return "router", f"introduced by the router: the engine passes the same request directly (router shows {sorted(t)})"
    if t <= e:
        return "engine", f"originated in the engine: it fails the same way directly ({sorted(t)})"
    shared = sorted(t & e)
    return "both", (f"both layers: the engine fails directly ({sorted(e)}) and the router adds {sorted(t - e)}"
                    + (f"; shared: {shared}" if shared else ""))


def serves_route(engine_url: str, wire: Dialect) -> bool:
    """Does the engine serve `wire`'s generation route? (an empty body must get an answer other
    than 404/405/501)"""
    raw = Target(engine_url, deadlines=ROUTE_PROBE_DEADLINES).send_sync(
        wire, wire.generation_path, b"{}", content_started=False,
        headers={"content-type": "application/json", **dict(wire.default_headers)})
    return raw.status is not None and raw.status not in (404, 405, 501)


def _target_violations(target_verdict: Any) -> list[Violation]:
    if target_verdict is None:
        return []
    if isinstance(target_verdict, Iterable) and not hasattr(target_verdict, "violations"):
        return list(target_verdict)
    return list(target_verdict.violations)


def attribute(
    request: dict,
    target_verdict: Any,
    engine_url: str,
    *,
    wire: Dialect | str,
    expect_model: str | None = None,
    since: int | None = None,
    extra_judge: Judge | None = None,
    deadlines: Deadlines = REPLAY_DEADLINES,
    api_key: str = "sk-conformance",
    client_path: str | None = None,
    judge: Judge | None = None,
    sent_sha256: str | None = None,
) -> Attribution:
    """Replay `request` (sent on `wire`) against the engine and say which layer broke (see the
    module rules).

    `target_verdict`: an ExchangeVerdict (or a list of Violations) for the exchange through the
    router. `since`: the engine's received-log `total` taken before the exchange (narrows the
    search for the forwarded body; optional). `client_path`: the path the client used (default:
    the wire's generation path); a non-generation path (count_tokens) is replayed on the same
    engine path as it was. `extra_judge(raw, body, wire)` adds violations for checks that live
    outside check_exchange (it is applied to the engine replay; the caller already applied it to
    the target). `sent_sha256`: the hash of the bytes the client sent (`hop.body_sha256`),
    matched against a received log that carries hashes. `judge(raw, body, wire)`: judges the
    engine's answer instead of check_exchange, for an exchange that is not meant to succeed (a deliberately invalid request:
    `checks.error_answer`); the target's violations must then come from the same judge.
    """
    wire = dialect(wire)
    client_path = client_path or wire.generation_path
    # The minimal translation joins two wires: a request it takes can be replayed on the engine's
    # route for its own wire or translated to chat; any other is replayed as it was.
    translatable = minimal.translates(wire)
    target = _target_violations(target_verdict)
    att = Attribution(layer="unknown", explanation="", target_violations=target, engine_url=engine_url)
    if not any(v.is_error for v in target):
        att.explanation = "the target shows no error to attribute"
        return att
    path, body = "", None
    if not is_generation_path(client_path):
        path, body, att.replayed = client_path, dict(request), "same-path"
        if since is not None:  # where did the router send it? only this test's window can tell
            att.reached_engine, entry = reached_engine(received_log(engine_url), request, since, wire=wire,
                                                       sent_sha256=sent_sha256, any_path=True)
            if att.reached_engine is False:
                return _not_forwarded(att)
            if entry is not None:
                path, body, att.replayed = str(entry["path"]).split("?", 1)[0], entry["body"], "forwarded"
    else:  # matched by content, never by recency: an unrelated logged request never stands in
        att.reached_engine, entry = reached_engine(received_log(engine_url), request, since, wire=wire,
                                                   sent_sha256=sent_sha256)
        if att.reached_engine is False:
            return _not_forwarded(att)
        if entry is not None and translatable:  # any other request reached the engine as it was sent: replay that
            path, body, att.replayed = str(entry["path"]).split("?", 1)[0], entry["body"], "forwarded"
    if body is None and translatable and serves_route(engine_url, wire):
        path, body, att.replayed = wire.generation_path, dict(request), f"{wire}-direct"
    if body is None:
        body = minimal.minimal_openai_request(request) if translatable else dict(request)
        path = minimal.TARGET.generation_path if translatable else wire.generation_path
        att.replayed = "minimal-translation" if translatable else f"{wire}-direct"
    att.engine_path, att.engine_request = path, body
    # A path of no known wire (only a same-path replay can have one) is the client's own.
    replay_wire = dialect_for_path(path) or wire
    raw = replay(engine_url, path, body, wire=replay_wire, deadlines=deadlines, api_key=api_key)
    att.engine_status = raw.status
    att.engine_error = raw.error
    att.engine_excerpt = raw.body()[:600].decode("utf-8", "replace")
    if raw.error_kind == "connect":
        att.explanation = f"the engine at {engine_url} could not be reached: {raw.error}"
        return att
    cross = replay_wire is not wire
    if judge is not None:  # an expected refusal: both sides judged by the same rule, nothing more
        att.engine_violations = list(judge(raw, body, replay_wire))
        att.layer, att.explanation = decide(target, att.engine_violations, engine_answered=raw.status is not None,
                                            cross_dialect=cross)
        return att
    # The forwarded body names the engine's model; the client's expectation is about the target.
    verdict = check_exchange(raw, body, wire=replay_wire, expect_model=None if att.replayed == "forwarded" else expect_model)
    engine_violations = list(verdict.violations)
    if extra_judge is not None:
        engine_violations += extra_judge(raw, body, replay_wire)
    att.engine_violations = engine_violations
    att.layer, att.explanation = decide(target, engine_violations, engine_answered=raw.status is not None, cross_dialect=cross)
    if _unserved_where_forwarded(att, raw, client_path, target):
        return att
    refused = any(v.check_id == suite_checks.REQUEST_ACCEPTED for v in engine_violations)
    if att.replayed == "forwarded" and refused and att.layer in ("engine", "both"):
        _retry_own_form(att, request, wire, raw, verdict.error_text, engine_url=engine_url, translatable=translatable,
                        expect_model=expect_model, deadlines=deadlines, api_key=api_key)
    return att


def _not_forwarded(att: Attribution) -> Attribution:
    """Nothing carrying the request reached the engine: the router's, and nothing to replay."""
    att.layer, att.replayed, att.engine_path, att.engine_request = "router", "", "", None
    att.explanation = (f"{NOT_FORWARDED}: no request carrying this one reached the engine at {att.engine_url} "
                       "(if the router uses another engine, point --conformance-engine-url at that one)")
    return att


def _unserved_where_forwarded(att: Attribution, raw: RawExchange, client_path: str, target: list[Violation]) -> bool:
    """A non-generation request the router forwarded to another path, which the engine does not
    serve (404/405/501 directly): the status the target shows originated in the engine."""
    if att.replayed != "forwarded" or is_generation_path(client_path) or att.engine_path == client_path:
        return False
    if raw.status not in (404, 405, 501) or not any(v.is_error and f"HTTP {raw.status}" in str(v.seen or "")
                                                    for v in target):
        return False
    att.layer = "engine"
    att.explanation = (f"originated in the engine: the router sends {client_path} to the engine's {att.engine_path}, "
                       f"which the engine does not serve (HTTP {raw.status} directly)")
    return True


def _retry_own_form(att: Attribution, request: dict, wire: Dialect, refused: RawExchange, refusal: str, *,
                    engine_url: str, translatable: bool, expect_model: str | None, deadlines: Deadlines,
                    api_key: str) -> None:
    """The engine refuses what the router sent. Does it accept the client's own request? Then the
    router's translation broke the request (the translation report says how): `router`."""
    if translatable and not serves_route(engine_url, wire):
        o_path, o_body = minimal.TARGET.generation_path, minimal.minimal_openai_request(request)
    else:
        o_path, o_body = wire.generation_path, dict(request)
    o_wire = dialect_for_path(o_path) or wire
    o_raw = replay(engine_url, o_path, o_body, wire=o_wire, deadlines=deadlines, api_key=api_key)
    o_verdict = check_exchange(o_raw, o_body, wire=o_wire, expect_model=expect_model)
    if not any(v.check_id == suite_checks.REQUEST_ACCEPTED for v in o_verdict.errors):
        att.layer = "router"
        att.explanation = (f"introduced by the router: the engine refuses the request the router sent it "
                           f"(HTTP {refused.status}: {refusal}) but accepts the client's request directly "
                           f"on {o_path} (HTTP {o_raw.status}): the router's translation broke it")


def combine(layers: list[str]) -> str:
    """One layer for a test from its exchanges' layers: router + engine across exchanges is both."""
    known = {x for x in layers if x != "unknown"}
    if not known:
        return "unknown"
    if "both" in known or known == {"router", "engine"}:
        return "both"
    return known.pop()


@dataclass(frozen=True)
class JudgedExchange:
    """One exchange of a test as the suite judged it: what attribution needs of it."""

    request: dict
    wire: Dialect  # the wire the client sent it on
    path: str  # the path it was sent to (a non-generation path is replayed as it was)
    violations: tuple[Violation, ...]  # the target's verdict on it
    expect_model: str | None = None
    refusal: bool = False  # a deliberately invalid request: the engine is judged by the error-answer rule
    sent_sha256: str = ""  # the hash of the bytes sent (matched against the engine's received log)
    since: int | None = None  # the received log's total before the test sent anything


@dataclass(frozen=True)
class LayerVerdict:
    """Which layer broke a test, from the attributions of its failing exchanges."""

    layer: str
    exchanges: tuple[Attribution, ...]

    @property
    def explanation(self) -> str:
        return "; ".join(dict.fromkeys(a.explanation for a in self.exchanges))

    def line(self) -> str:
        """The failure text's `layer:` line."""
        return f"{self.layer} — {self.explanation}"

    def details(self) -> list[dict[str, Any]]:
        """What a results record carries (`details["attribution"]`)."""
        return [a.details() for a in self.exchanges]


def _engine_refusal_judge(raw: RawExchange, body: dict, wire: Dialect) -> list[Violation]:
    return check_error_answer(raw, wire)


def attribute_exchanges(exchanges: Iterable[JudgedExchange], test_errors: list[Violation], engine_url: str, *,
                        deadlines: Deadlines = REPLAY_DEADLINES) -> LayerVerdict | None:
    """Attribute every exchange of a test whose verdict has errors (a deliberately invalid request
    by the error-answer rule on both sides); a failure that belongs to no single exchange, such as
    an agent loop that never completed, is attributed on the last exchange with the test's errors.
    None when there is no exchange to attribute."""
    exchanges = list(exchanges)
    out: list[Attribution] = []
    for ex in exchanges:
        if not any(v.is_error for v in ex.violations):
            continue
        out.append(attribute(ex.request, list(ex.violations), engine_url, wire=ex.wire, expect_model=ex.expect_model,
                             client_path=ex.path, deadlines=deadlines, since=ex.since, sent_sha256=ex.sent_sha256,
                             judge=_engine_refusal_judge if ex.refusal else None))
    if not out and exchanges:
        last = exchanges[-1]
        out.append(attribute(last.request, test_errors, engine_url, wire=last.wire, expect_model=last.expect_model,
                             client_path=last.path, deadlines=deadlines, since=last.since,
                             sent_sha256=last.sent_sha256))
    if not out:
        return None
    return LayerVerdict(combine([a.layer for a in out]), tuple(out))
