"""The one replay-one-capture (conformance/suite/replay.py): byte-exact unless the body had to
change, each change named; every model request of a capture, in order, sent by the caller and
judged; and what `conformance replay`, the suite and Locust build on it."""

from __future__ import annotations

import json

from conformance.capture.format import Capture, CapturedRequest, Exchange, save_capture
from conformance.commands.replay import replay_capture
from conformance.engine.launch import serve_engine_in_thread
from conformance.locust.judge import workload
from conformance.net.transport import Deadlines, RawExchange
from conformance.suite.replay import check, prepare, replay, steps
from conformance.wire import ANTHROPIC, CHAT

BODY = {"model": "claude-x", "max_tokens": 64, "stream": False,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "messages": [{"role": "user", "content": "say hi"}]}


def _exchange(path: str = "/v1/messages", body=BODY, method: str = "POST") -> Exchange:
    return Exchange(CapturedRequest(method, path, body=body))


def _capture(*exchanges: Exchange) -> Capture:
    return Capture("claude-code", "9.9.9", "case", list(exchanges))


def test_an_unchanged_request_is_sent_byte_exact():
    step = prepare(_exchange())
    assert step.data == _exchange().request.body_bytes() and step.changed == ()
    assert step.wire is ANTHROPIC and step.request == BODY


def test_a_model_rewrite_and_the_salt_are_named_and_reserialised():
    step = prepare(_exchange(), model=lambda captured: "served-model", salt="tok")
    assert step.changed == ("model claude-x -> served-model", "salted system prompt")
    sent = json.loads(step.data)
    assert sent["model"] == "served-model"
    assert sent["system"][0]["text"] == "[conformance-run tok] You are Claude Code."
    assert BODY["model"] == "claude-x", "the capture is never changed"
    same = prepare(_exchange(), model=lambda captured: captured)
    assert same.changed == () and same.data == _exchange().request.body_bytes()


def test_steps_are_the_model_requests_in_order_numbered_from_one():
    probe = _exchange("/", body=None, method="HEAD")
    text = Exchange(CapturedRequest("POST", "/v1/chat/completions", body_text="not json"))
    found = steps(_capture(probe, _exchange(), text))
    assert [(s.turn, s.wire) for s in found] == [(1, ANTHROPIC), (2, CHAT)]
    assert found[1].body is None and found[1].data == b"not json" and found[1].request == {}


def test_replay_sends_each_step_in_order_and_judges_what_came_back():
    sent: list[int] = []

    def send(step):
        sent.append(step.turn)
        return RawExchange("POST", "http://t" + step.exchange.request.path, {}, step.data, status=500)

    out = replay(_capture(_exchange(), _exchange()), send, lambda step, raw: check(step, raw, turn=step.turn))
    assert sent == [1, 2]
    assert [step.turn for step, _, _ in out] == [1, 2]
    assert all(not verdict.ok for _, _, verdict in out), "a 500 is judged, not swallowed"


def test_the_command_and_locust_replay_the_same_requests(tmp_path):
    capture = _capture(_exchange())
    with serve_engine_in_thread() as url:
        violations, notes, reached = replay_capture(capture, target=url, model_map={"*": "reference-model"},
                                                    salt=None, api_key="sk-1", deadlines=Deadlines())
    assert reached and not [v for v in violations if v.is_error], violations
    assert notes[0].startswith("#1 POST /v1/messages -> 200") and "model claude-x -> reference-model" in notes[0]
    save_capture(capture, tmp_path / "claude-code" / "9.9.9" / "case.json")
    (work,) = workload(tmp_path)
    assert work.case == "claude-code/9.9.9/case#1" and work.body == steps(capture)[0].data
    assert work.headers["anthropic-version"] == "2023-06-01"
