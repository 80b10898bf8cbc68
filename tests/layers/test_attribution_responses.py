"""Attribution on the Responses wire: a Codex request whose answer breaks is replayed on the
engine's /v1/responses and judged by the Responses grammar (no longer skipped), so the layer that
broke is named: the engine when its own answer breaks the same way, the layer in front of it when
the engine answers cleanly."""

from __future__ import annotations

import json

from conformance.checks.exchange import check_exchange
from conformance.core.paths import captured_dir
from conformance.engine.launch import serve_engine_in_thread
from conformance.layers.attribution import attribute
from conformance.layers.hop import replay
from conformance.wire import RESPONSES

PLAIN = json.loads((captured_dir() / "codex" / "0.171.0" / "plain.json").read_text(encoding="utf-8"))
BODY = next(ex["request"]["body"] for ex in PLAIN["exchanges"] if ex["request"]["path"] == "/v1/responses")


def _attribute(target_url: str, engine_url: str):
    raw = replay(target_url, "/v1/responses", BODY, wire=RESPONSES)
    verdict = check_exchange(raw, BODY, wire=RESPONSES)
    assert "responses.stream.done_text" in verdict.failed_checks, verdict.failed_checks
    return attribute(BODY, verdict, engine_url, wire=RESPONSES, client_path="/v1/responses")


def test_a_clean_engine_behind_a_broken_answer_puts_the_fault_in_front_of_it():
    with serve_engine_in_thread(faults=["done-text-mismatch"]) as target, serve_engine_in_thread() as engine:
        assert replay(engine, "/v1/responses", BODY, wire=RESPONSES).ok  # what the layer in front forwarded
        att = _attribute(target, engine)
    assert att.engine_path == "/v1/responses" and att.replayed == "responses-direct", (att.engine_path, att.replayed)
    assert att.engine_status == 200 and not [v for v in att.engine_violations if v.is_error]
    assert att.layer == "router", att.explanation


def test_an_engine_that_breaks_the_same_way_is_named():
    with serve_engine_in_thread(faults=["done-text-mismatch"]) as url:
        att = _attribute(url, url)
    assert "responses.stream.done_text" in {v.check_id for v in att.engine_violations if v.is_error}
    assert att.layer == "engine", att.explanation
