"""Before the first test: is the target an LLM API that answers this run at all?

Rules:
- Asked once, by the controller, before any test: GET /v1/models, and only when that is not a
  2xx JSON document, one minimal valid one-turn request on each wire the run may test (the forced
  one, else every registered wire). A target that lists its models costs one GET.
- The run stops (exit 2, one line naming the cause and the option to change) only when nothing
  answered and the answers say one thing about the setup (`conformance.report.causes`):
  - a refused connection: the target is down;
  - the same status and error text on every request: that answer is the cause (a missing key, an
    unknown model, a router that fails before forwarding);
  - every model path answered "no such path" or non-JSON: the target serves no model API.
  Anything else (one wire answers, answers differ and say nothing about the setup, a deadline)
  lets the run go on: the tests judge it, and a false stop is as bad as a missed fault.
- Every request has short deadlines and goes through the session's one sender.
"""

from __future__ import annotations

import json

from conformance.core.bounded_json import parse as parse_json
from conformance.net.client import headers_for
from conformance.net.target import Target
from conformance.net.transport import Deadlines, RawExchange
from conformance.report.causes import Cause, classify, error_message, setup_cause, short
from conformance.suite.session import SuiteSession
from conformance.wire import CHAT
from conformance.wire.registry import DIALECTS

PREFLIGHT_DEADLINES = Deadlines(connect=3.0, first_content=15.0, total=20.0)
_NO_PATH = (404, 405, 501)


def _text(raw: RawExchange) -> str:
    return short(error_message(raw.body().decode("utf-8", errors="replace")), 100)


def _is_json(raw: RawExchange) -> bool:
    try:
        parse_json(raw.body() or b"")
    except ValueError:  # not JSON, or past the parser's bounds (a hostile body): not a model API's answer
        return False
    return True


def _answered(raw: RawExchange) -> bool:
    return raw.status is not None and 200 <= raw.status < 300 and _is_json(raw)


def check_target(session: SuiteSession) -> Cause | None:
    """The cause that makes the whole run pointless, or None when the run should go on."""
    cfg = session.config
    if not cfg.target:
        return None
    target = session.target
    url = cfg.target
    models = target.send_sync(None, "/v1/models", method="GET", headers=_get_headers(session),
                              deadlines=PREFLIGHT_DEADLINES)
    if models.error_kind == "connect":
        return setup_cause("down", short(models.error or f"cannot connect to {url}", 160))
    if _answered(models) or models.status is None:
        return None  # it lists its models, or it hangs: the session's hang rule judges that
    wires = [session.forced_wire] if session.forced_wire is not None else list(DIALECTS.values())
    model = cfg.model or "model"
    sent: list[tuple[str, RawExchange]] = [("GET /v1/models", models)]
    for wire in wires:
        body = json.dumps(wire.one_turn_request(model, "Answer in one word.", "Say ok.", max_tokens=16,
                                                stream=False), separators=(",", ":")).encode()
        raw = target.send_sync(wire, wire.generation_path, body, deadlines=PREFLIGHT_DEADLINES)
        if raw.error_kind == "connect":
            return setup_cause("down", short(raw.error or f"cannot connect to {url}", 160))
        if _answered(raw) or raw.status is None:
            return None  # an answer, or a deadline: the tests judge it
        sent.append((f"POST {wire.generation_path}", raw))
    answers = {(raw.status, _text(raw)) for _, raw in sent}
    if len(answers) == 1:
        status, text = answers.pop()
        kind = classify(status, text) or "same answer"
        if kind == "base path":  # every path, /v1/models included, is missing: no model API here
            kind = "not an LLM API"
        what = (f"{', '.join(n for n, _ in sent)} all got HTTP {status}" + (f" {text!r}" if text else "")
                + f" from {url}" + _engine_evidence(session))
        return setup_cause(kind, what)
    posts = [raw for name, raw in sent if name.startswith("POST")]
    if all(raw.status in _NO_PATH or not _is_json(raw) for raw in posts):
        seen = ", ".join(f"{name} HTTP {raw.status}" for name, raw in sent)
        return setup_cause("not an LLM API", f"{url} answered {seen}")
    kinds = {classify(raw.status, _text(raw)) for _, raw in sent}
    if kinds == {"auth"}:
        seen = ", ".join(f"{name} HTTP {raw.status}" for name, raw in sent)
        return setup_cause("auth", f"{url} refused every request ({seen})")
    return None


def _get_headers(session: SuiteSession) -> dict[str, str]:
    """The headers of the session's own GETs (the key as a bearer token, as /v1/models takes it)."""
    key = session.config.api_key
    return headers_for(CHAT, key, {}) if key else {"accept-encoding": "identity"}


def _engine_evidence(session: SuiteSession) -> str:
    """With the engine behind the router known: does it answer directly? Then the router is the layer."""
    engine_url = session.config.engine_url
    if not engine_url:
        return ""
    raw = Target(engine_url, None, PREFLIGHT_DEADLINES).send_sync(
        None, "/v1/models", method="GET", headers={"accept-encoding": "identity"}, deadlines=PREFLIGHT_DEADLINES)
    if _answered(raw):
        return f"; the engine behind it ({engine_url}) answers GET /v1/models directly: the router is the layer"
    return ""
