"""Every captured client request (captured/ and the loop driver's bundled templates) is accepted
by the engine, and the official SDK streams, accumulates and finishes it; the raw stream passes
the wire core's checks."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
import pytest

from conformance.capture.corpus import load_captures
from conformance.core.paths import captured_dir
from conformance.wire.anthropic import grammar as anthropic_wire
from conformance.wire.chat import grammar as openai_wire

from .helpers import post


def _cases():
    caps = list(load_captures(captured_dir()))
    templates = Path(__file__).resolve().parents[2] / "conformance" / "loop" / "templates"
    if templates.is_dir():
        caps += load_captures(templates)
    out = []
    for cap in caps:
        for i, ex in enumerate(cap.main_exchanges()):
            if isinstance(ex.request.body, dict):
                out.append(pytest.param(ex.request, id=f"{cap.id}#{i}"))
    return out


CASES = _cases()


def _errors(vs):
    return [str(v) for v in vs if v.severity == "error"]


@pytest.mark.parametrize("req", CASES)
def test_capture_through_sdk_and_wire_core(engine_url, req):
    body = dict(req.body)
    path = req.path
    if path.endswith("/count_tokens"):
        c = anthropic.Anthropic(base_url=engine_url, api_key="sk-test", max_retries=0)
        rest = {k: v for k, v in body.items() if k not in ("model", "messages")}
        n = c.messages.count_tokens(model=body["model"], messages=body["messages"], extra_body=rest)
        assert n.input_tokens > 0
        return
    if path.endswith("/messages"):
        c = anthropic.Anthropic(base_url=engine_url, api_key="sk-test", max_retries=0)
        rest = {k: v for k, v in body.items() if k not in ("model", "messages", "max_tokens", "stream")}
        beta = req.headers.get("anthropic-beta")
        with c.messages.stream(model=body["model"], max_tokens=body["max_tokens"], messages=body["messages"],
                               extra_body=rest, extra_headers={"anthropic-beta": beta} if beta else None,
                               extra_query={"beta": "true"} if "beta=true" in req.query else None) as s:
            msg = s.get_final_message()
        assert msg.stop_reason in ("end_turn", "tool_use", "max_tokens")
        assert msg.model == body["model"]
        wire = dict(body, stream=True)
        status, _, chunks = post(engine_url, req.url_path, wire)
        report = anthropic_wire.check_stream(chunks, request=wire)
        assert status == 200 and report.complete and not _errors(report.violations), _errors(report.violations)
        return
    if path.endswith("/chat/completions"):
        c = openai.OpenAI(base_url=engine_url + "/v1", api_key="sk-test", max_retries=0)
        rest = {k: v for k, v in body.items() if k not in ("model", "messages", "stream", "stream_options")}
        with c.chat.completions.stream(model=body["model"], messages=body["messages"],
                                       stream_options={"include_usage": True}, extra_body=rest) as s:
            done = s.get_final_completion()
        assert done.choices[0].finish_reason in ("stop", "tool_calls", "length")
        wire = dict(body, stream=True)
        status, _, chunks = post(engine_url, "/v1/chat/completions", wire)
        report = openai_wire.check_stream(chunks, request=wire)
        assert status == 200 and report.complete and not _errors(report.violations), _errors(report.violations)
        return
    if path.endswith("/responses"):
        c = openai.OpenAI(base_url=engine_url + "/v1", api_key="sk-test", max_retries=0)
        rest = {k: v for k, v in body.items() if k not in ("model", "input", "stream")}
        with c.responses.stream(model=body["model"], input=body["input"], extra_body=rest) as s:
            assert s.get_final_response().status in ("completed", "incomplete")
        return
    pytest.fail(f"unexpected captured path {path}")


def test_there_are_captures_to_replay():
    assert CASES, "captured/ and the loop templates hold no model request"
