"""Layer attribution: did the router or the engine break this exchange?

Rules:
- Input: the client's request, the verdict the target (the router) got for it, and the URL of
  the engine behind the router. The request is replayed directly against the engine and judged
  with the same judge (`check_exchange`, plus any extra judge the caller passes for checks that
  live outside it, e.g. stream incrementality), then the two verdicts are compared.
- What is replayed, in order of faithfulness:
  1. `forwarded`: the body the router actually sent for this exchange, from the engine's (or a
     recorder's) received log, on the same path — the engine's behaviour on exactly its input;
  2. `anthropic-direct`: the client's own request on the engine's `/v1/messages`, when it has one;
  3. `minimal-translation`: `conformance.layers.minimal.minimal_openai_request` on
     `/v1/chat/completions` (documented there).
- Verdict (`layer`):
  * `router` — the engine passes: the router introduced the failure;
  * `engine` — the engine fails with every symptom the target shows (it originated there);
  * `both` — the engine fails too, but the target shows symptoms the engine does not;
  * `unknown` — the engine could not be asked (unreachable, nothing to replay), said so.
  Symptoms compare across dialects: `anthropic.stream.X` and `openai.stream.X` are one symptom,
  and the rows of SYMPTOMS join rules that are the same failure on the two wires. Across
  dialects (a translating router), wire-shape symptoms the router shows on top of a shared
  failure are the router relaying the engine's broken output (WIRE_CONSEQUENCES), not a 2nd bug.
- The replay forms a client's request has are asked of the two wires the minimal translation
  joins (`minimal.SOURCE` Anthropic -> `minimal.TARGET` OpenAI chat): a request on the source
  wire has all three; any other request is replayed as it was, on its own wire's endpoint (a
  Responses request on /v1/responses, judged by the Responses grammar).
- A forwarded body the engine *refuses* is replayed once more in the client's own form: when the
  engine accepts that, the router's translation broke the request -> `router`.
- The Attribution carries both sides' evidence (violations, status, error text, the first bytes
  of the engine's answer, what was replayed) and can write it into a failure folder.

Where the suite calls it: see docs/layers.md ("Wiring attribution into the suite").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from conformance.core.failures import Violation
from conformance.layers import minimal
from conformance.net.transport import Deadlines, RawExchange
from conformance.report.text import format_violation
from conformance.wire.dialect import DIALECTS, is_generation_path

LAYERS = ("router", "engine", "both", "unknown")
REPLAY_DEADLINES = Deadlines(connect=5, first_content=60, total=120)

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
REQUEST_ACCEPTED = "suite.request.accepted"

Judge = Callable[[RawExchange, dict, str], list[Violation]]


def symptom(check_id: str) -> str:
    if check_id in SYMPTOMS:
        return SYMPTOMS[check_id]
    for prefix in (f"{name}." for name in DIALECTS):  # a wire rule's id starts with its dialect
        if check_id.startswith(prefix):
            return check_id[len(prefix):]
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
    replayed: str = ""  # forwarded | anthropic-direct | minimal-translation | ""
    engine_url: str = ""
    engine_path: str = ""
    engine_request: dict | None = None
    engine_status: int | None = None
    engine_error: str | None = None
    engine_excerpt: str = ""

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
            "engine_path": self.engine_path,
            "engine_status": self.engine_status,
            "target_symptoms": self.target_symptoms,
            "engine_symptoms": self.engine_symptoms,
            "engine_violations": [v.to_dict() for v in self.engine_violations],
        }

    def write(self, folder: Path | str) -> Path:
        """Write both sides' evidence into a failure folder (attribution.json, attribution.txt)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        doc = dict(self.details(), target_violations=[v.to_dict() for v in self.target_violations],
                   engine_request=self.engine_request, engine_excerpt=self.engine_excerpt)
        (folder / "attribution.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        (folder / "attribution.txt").write_text(self.evidence() + "\n", encoding="utf-8")
        return folder


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


def has_messages_route(engine_url: str, timeout: float = 5.0) -> bool:
    """Does the engine serve the minimal translation's source wire (Anthropic /v1/messages)?
    (an empty body must get 4xx other than 404/405)"""
    source = minimal.SOURCE
    try:
        resp = httpx.post(engine_url.rstrip("/") + source.generation_path, content=b"{}",
                          headers={"content-type": "application/json", **dict(source.default_headers)}, timeout=timeout)
    except httpx.HTTPError:
        return False
    return resp.status_code not in (404, 405, 501)


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
    api: str = "anthropic",
    expect_model: str | None = None,
    engine_model: str | None = None,
    since: int | None = None,
    engine_api: str = "auto",
    extra_judge: Judge | None = None,
    deadlines: Deadlines = REPLAY_DEADLINES,
    api_key: str = "sk-conformance",
    turn: int | None = None,
    client_path: str = "/v1/messages",
    judge: Judge | None = None,
) -> Attribution:
    """Replay `request` against the engine and say which layer broke (see the module rules).

    `target_verdict`: an ExchangeVerdict (or a list of Violations) for the exchange through the
    router. `since`: the engine's received-log `total` taken before the exchange (narrows the
    search for the forwarded body; optional). `engine_api`: auto | forwarded | anthropic | openai
    forces a replay form. `client_path`: the path the client used; a non-generation path
    (count_tokens) is replayed on the same engine path as it was. `extra_judge(raw, body, api)` adds violations for checks that live
    outside check_exchange (it is applied to the engine replay; the caller already applied it to
    the target). `engine_model`: the model name to ask the engine for when the replay is built
    from the client request (a router usually maps the client's model name). `judge(raw, body,
    api)`: judges the engine's answer instead of check_exchange, for an exchange that is not
    meant to succeed (a deliberately invalid request: `checks.error_answer`); the target's
    violations must then come from the same judge.
    """
    from conformance.checks.exchange import check_exchange
    from conformance.layers.hop import find_forwarded, judge_api, received_log, replay
    from conformance.layers.minimal import minimal_openai_request

    # The minimal translation joins two wires: a request on its source wire (Anthropic) can be
    # replayed on the engine's source route or translated to the target (chat); any other as it was.
    translatable = DIALECTS.get(api) is minimal.SOURCE
    target = _target_violations(target_verdict)
    att = Attribution(layer="unknown", explanation="", target_violations=target, engine_url=engine_url)
    if not any(v.is_error for v in target):
        att.explanation = "the target shows no error to attribute"
        return att
    if not translatable:  # the client spoke the target wire: the router forwarded it as it was
        engine_api = minimal.TARGET.name if engine_api == "auto" else engine_api

    path, body = "", None
    if not is_generation_path(client_path):
        path, body, att.replayed = client_path, dict(request), "same-path"
    if body is None and engine_api in ("auto", "forwarded"):
        log = received_log(engine_url)
        entry = find_forwarded(log["requests"], request, since) if log else None
        if entry is not None:
            path, body, att.replayed = str(entry["path"]).split("?", 1)[0], entry["body"], "forwarded"
    if body is None and translatable and engine_api in ("auto", "forwarded", minimal.SOURCE.name) \
            and has_messages_route(engine_url):
        path, body, att.replayed = minimal.SOURCE.generation_path, dict(request), "anthropic-direct"
    if body is None and engine_api != minimal.SOURCE.name:  # unless the caller forced the source wire
        # A request on another wire than the translation's source goes to its own endpoint (a
        # Responses request to /v1/responses); one on the source wire is translated to chat.
        own = DIALECTS.get(api)
        body = minimal_openai_request(request) if translatable else dict(request)
        path = minimal.TARGET.generation_path if translatable or own is None else own.generation_path
        att.replayed = "minimal-translation" if translatable else f"{judge_api(path)}-direct"
    if body is None:
        att.explanation = "nothing to replay: the engine serves no /v1/messages and no translation was allowed"
        return att
    if engine_model and att.replayed != "forwarded":
        body = dict(body, model=engine_model)
    att.engine_path, att.engine_request = path, body
    replay_api = judge_api(path)
    raw = replay(engine_url, path, body, deadlines=deadlines, api_key=api_key)
    att.engine_status = raw.status
    att.engine_error = raw.error
    att.engine_excerpt = raw.body()[:600].decode("utf-8", "replace")
    if raw.error_kind == "connect":
        att.explanation = f"the engine at {engine_url} could not be reached: {raw.error}"
        return att
    if judge is not None:  # an expected refusal: both sides judged by the same rule, nothing more
        att.engine_violations = list(judge(raw, body, replay_api))
        att.layer, att.explanation = decide(target, att.engine_violations, engine_answered=raw.status is not None,
                                            cross_dialect=replay_api != api)
        return att
    # The forwarded body names the engine's model; the client's expectation is about the target.
    verdict = check_exchange(raw, body, wire=replay_api, expect_model=None if att.replayed == "forwarded" else expect_model, turn=turn)
    engine_violations = list(verdict.violations)
    if extra_judge is not None:
        engine_violations += extra_judge(raw, body, replay_api)
    att.engine_violations = engine_violations
    cross = replay_api != api
    att.layer, att.explanation = decide(target, engine_violations, engine_answered=raw.status is not None, cross_dialect=cross)
    refused = any(v.check_id == REQUEST_ACCEPTED for v in engine_violations)
    if att.replayed == "forwarded" and refused and att.layer in ("engine", "both"):
        # The engine refuses what the router sent. Does it accept the client's own request?
        # Then the router's translation broke the request (the translation report says how).
        own_path = DIALECTS[api].generation_path if api in DIALECTS else minimal.TARGET.generation_path
        o_path, o_body = (minimal.SOURCE.generation_path, dict(request)) if translatable and has_messages_route(engine_url) else (
            (minimal.TARGET.generation_path, minimal_openai_request(request)) if translatable else (own_path, dict(request)))
        if engine_model:
            o_body = dict(o_body, model=engine_model)
        o_raw = replay(engine_url, o_path, o_body, deadlines=deadlines, api_key=api_key)
        o_verdict = check_exchange(o_raw, o_body, wire=judge_api(o_path), expect_model=expect_model, turn=turn)
        if not any(v.check_id == REQUEST_ACCEPTED for v in o_verdict.errors):
            att.layer = "router"
            att.explanation = (f"introduced by the router: the engine refuses the request the router sent it "
                               f"(HTTP {raw.status}: {verdict.error_text}) but accepts the client's request directly "
                               f"on {o_path} (HTTP {o_raw.status}): the router's translation broke it")
    return att


_RANK = {"engine": 1, "router": 1, "both": 2, "unknown": 0}


def combine(layers: list[str]) -> str:
    """One layer for a test from its exchanges' layers: router + engine across exchanges is both."""
    known = {x for x in layers if x != "unknown"}
    if not known:
        return "unknown"
    if "both" in known or known == {"router", "engine"}:
        return "both"
    return known.pop()


def attribute_context(ctx, engine_url: str | None = None) -> list[Attribution]:
    """Integration shim for `conformance.suite.check_context.CheckContext.finish()` (see docs/layers.md).

    For a test with errors and an engine URL: attribute every failing exchange of the test
    (re-judged with check_exchange; a failure that belongs to no single exchange, such as an
    agent loop that never completed, is attributed on the last exchange with the test's errors),
    put the verdict into the failure text (`ctx.extra`), write both sides' evidence into the
    failure folder (attribution-N.json / .txt) and set `layer` on the test's failed records.
    """
    from urllib.parse import urlsplit

    from conformance.checks.error_answer import check_error_answer
    from conformance.checks.exchange import check_exchange

    engine_url = engine_url or getattr(ctx.settings, "engine_url", None)
    if not engine_url or not ctx.errors:
        return []
    out: list[Attribution] = []
    for sent in ctx.exchanges:
        expect = ctx.settings.served_model((sent.request or {}).get("model"))
        if getattr(sent, "expect_error", False) and sent.raw.status is not None:
            # A deliberately invalid request: a refusal is right, so both sides are judged by the
            # error-answer rule (a 400 from the engine is a pass there, not "request refused").
            wrong = check_error_answer(sent.raw, sent.wire.name)
            if not any(v.is_error for v in wrong):
                continue
            out.append(attribute(sent.request, wrong, engine_url, api=sent.wire.name, expect_model=expect,
                                 client_path=urlsplit(sent.raw.url).path, deadlines=ctx.settings.deadlines,
                                 judge=lambda raw, body, api: check_error_answer(raw, api)))
            continue
        verdict = check_exchange(sent.raw, sent.request, wire=sent.wire, expect_model=expect)
        if verdict.ok:
            continue
        out.append(attribute(sent.request, verdict, engine_url, api=sent.wire.name, expect_model=expect,
                             client_path=urlsplit(sent.raw.url).path, deadlines=ctx.settings.deadlines))
    if not out and ctx.exchanges:
        last = ctx.exchanges[-1]
        out.append(attribute(last.request, ctx.errors, engine_url, api=last.wire.name,
                             expect_model=ctx.settings.served_model((last.request or {}).get("model")),
                             client_path=urlsplit(last.raw.url).path, deadlines=ctx.settings.deadlines))
    if not out:
        return out
    layer = combine([a.layer for a in out])
    ctx.extra["layer"] = f"{layer} — " + "; ".join(dict.fromkeys(a.explanation for a in out))
    folder = ctx.session.failure_dir(ctx.test_id)
    for n, att in enumerate(out, 1):
        (folder / f"attribution-{n}.json").write_text(
            json.dumps(dict(att.details(), target_violations=[v.to_dict() for v in att.target_violations],
                            engine_request=att.engine_request, engine_excerpt=att.engine_excerpt),
                       ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        (folder / f"attribution-{n}.txt").write_text(att.evidence() + "\n", encoding="utf-8")
    for record in getattr(ctx, "_results", []):  # the context keeps its records until finish() writes them
        if record.outcome in ("failed", "error"):
            record.layer = layer
            record.details.setdefault("attribution", [a.details() for a in out])
    return out
