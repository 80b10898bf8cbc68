"""One test per fault: the fault produces its symptom, judged by the wire core / the suite's
exchange judge where a check exists, and nothing else (no other error-level check id fails)."""

from __future__ import annotations

import concurrent.futures
import json
import time

import httpx
import pytest

from conformance.checks.exchange import check_exchange
from conformance.cli import main
from conformance.core.paths import fixtures_dir
from conformance.engine.faults import FAULTS, OUTPUT_CAP_TOKENS, WRONG_MODEL_NAME, UnknownFault, validate
from conformance.engine.launch import spawn_engine
from conformance.net.transport import Deadlines, send_sync
from conformance.wire.anthropic import grammar as anthropic_wire
from conformance.wire.chat import grammar as openai_wire

from .conftest import engine
from .helpers import CLAUDE_TOOLS, OPENAI_TOOLS, RESPONSES_TOOLS, anthropic_events, post
from .test_faults_responses import TESTED as RESPONSES_FAULTS_TESTED

TOOL_PROMPT = "Create a file named hello.txt whose only content is the text: hello conformance [task:write-static]"
A_TOOL = {"model": "claude-x", "max_tokens": 4000, "stream": True, "tools": CLAUDE_TOOLS,
          "messages": [{"role": "user", "content": TOOL_PROMPT}]}
A_TEXT = {"model": "claude-x", "max_tokens": 4000, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
O_TOOL = {"model": "local/m", "stream": True, "stream_options": {"include_usage": True}, "tools": OPENAI_TOOLS,
          "messages": [{"role": "user", "content": TOOL_PROMPT}]}
O_TEXT = {"model": "local/m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
O_TOOL_NONSTREAM = {k: v for k, v in O_TOOL.items() if k != "stream_options"} | {"stream": False}
R_TOOL = {"model": "local/m", "tools": RESPONSES_TOOLS, "input": TOOL_PROMPT}
# Forced tool choices on a scenario turn that calls a tool under auto too (write-static writes).
A_FORCED = [dict(A_TOOL, tool_choice={"type": "any"}),
            dict(A_TOOL, stream=False, tool_choice={"type": "tool", "name": "Write"})]
O_FORCED = [dict(O_TOOL, tool_choice="required"),
            dict(O_TOOL_NONSTREAM, tool_choice={"type": "function", "function": {"name": "write"}})]


def judge(url, path, body, api, deadlines=None):
    headers = {"content-type": "application/json"}
    headers.update({"x-api-key": "k", "anthropic-version": "2023-06-01"} if api == "anthropic"
                   else {"authorization": "Bearer k"})
    raw = send_sync("POST", url + path, headers=headers, body=json.dumps(body).encode(),
                    deadlines=deadlines or Deadlines(connect=5, first_content=20, total=30))
    return check_exchange(raw, body, wire=api, expect_model=body.get("model"))


def failing(verdict) -> set[str]:
    return {v.check_id for v in verdict.errors}


def assert_only(verdict, allowed: set[str]):
    got = failing(verdict)
    assert got, "the fault produced no failing check"
    assert got <= allowed, f"the fault broke more than it names: {sorted(got - allowed)}"


CHECKED = {
    # fault: [(path, body, api, check ids any of which is the symptom)]
    "stop-sequence-missing": [("/v1/messages", A_TEXT, "anthropic", {"anthropic.stream.stop_sequence_present"})],
    "nonstream-stop-sequence-omitted": [("/v1/messages", dict(A_TEXT, stream=False), "anthropic",
                                         {"anthropic.response.stop_sequence_present"})],
    "message-start-incomplete": [("/v1/messages", A_TEXT, "anthropic", {"anthropic.stream.message_start_complete"})],
    "strict-unknown-field": [("/v1/messages", dict(A_TEXT, context_management={"edits": []}), "anthropic",
                              {"suite.request.accepted"})],
    "strict-adaptive-effort": [("/v1/messages", dict(A_TEXT, thinking={"type": "adaptive"},
                                                     output_config={"effort": "xhigh"}), "anthropic",
                                {"suite.request.accepted"}),
                               ("/v1/chat/completions", dict(O_TEXT, reasoning_effort="xhigh"), "openai",
                                {"suite.request.accepted"})],
    "system-role-in-messages": [("/v1/messages", dict(A_TEXT, messages=[
        {"role": "user", "content": "hi"}, {"role": "system", "content": "note"}]), "anthropic",
        {"suite.request.accepted"})],
    "tool-call-as-text": [("/v1/messages", A_TOOL, "anthropic", {"tools.call_structured"}),
                          ("/v1/chat/completions", O_TOOL, "openai", {"tools.call_structured"})],
    "tool-args-invalid-json": [("/v1/messages", A_TOOL, "anthropic",
                                {"anthropic.stream.tool_input_json", "tools.arguments_schema"}),
                               ("/v1/chat/completions", O_TOOL, "openai",
                                {"openai.stream.tool_arguments_json", "tools.arguments_schema"})],
    "tool-args-not-string": [("/v1/chat/completions", O_TOOL, "openai",
                              {"openai.stream.tool_arguments_string", "openai.stream.chunk_schema",
                               "openai.stream.tool_arguments_json", "tools.arguments_schema"})],
    "tool-stop-reason-wrong": [("/v1/messages", A_TOOL, "anthropic", {"anthropic.stream.tool_use_stop_reason"}),
                               ("/v1/chat/completions", O_TOOL, "openai", {"openai.stream.finish_reason_tool_calls"})],
    "tool-choice-ignored": [("/v1/messages", b, "anthropic", {"tools.choice_honoured"}) for b in A_FORCED]
                           + [("/v1/chat/completions", b, "openai", {"tools.choice_honoured"}) for b in O_FORCED],
    "tool-use-start-without-input": [("/v1/messages", A_TOOL, "anthropic",
                                      {"anthropic.stream.tool_use_start_input", "anthropic.stream.event_schema"})],
    "block-index-broken": [("/v1/messages", A_TOOL, "anthropic",
                            {"anthropic.stream.block_index", "anthropic.stream.delta_block_type",
                             "anthropic.stream.grammar"})],
    "stream-truncated": [("/v1/messages", A_TEXT, "anthropic", {"anthropic.stream.complete"}),
                         ("/v1/chat/completions", O_TEXT, "openai", {"openai.stream.done"})],
    "count-tokens-missing": [("/v1/messages/count_tokens", {"model": "m", "messages": [{"role": "user", "content": "x"}]},
                              "anthropic", {"suite.count_tokens.available"})],
    "wrong-model": [("/v1/messages", A_TEXT, "anthropic", {"identity.model_matches"}),
                    ("/v1/chat/completions", O_TEXT, "openai", {"identity.model_matches"})],
    "usage-inconsistent": [("/v1/messages", A_TEXT, "anthropic", {"anthropic.stream.usage_consistent"})],
}


@pytest.mark.parametrize("fault", sorted(CHECKED))
def test_fault_symptom_through_the_judge(fault):
    with engine(fault) as url:
        for path, body, api, allowed in CHECKED[fault]:
            assert_only(judge(url, path, body, api), allowed)
    # and the same requests pass against the conformant engine
    with engine() as url:
        for path, body, api, _ in CHECKED[fault]:
            v = judge(url, path, body, api)
            assert not v.errors, [str(e) for e in v.errors]


def _answer(url, path, body) -> dict:
    """A non-stream answer without the fields that change between two answers to one request."""
    status, _, chunks = post(url, path, dict(body, stream=False))
    assert status == 200, b"".join(chunks)[:300]
    out = json.loads(b"".join(chunks))
    out.pop("created", None)
    out.pop("created_at", None)
    return out


def test_tool_choice_ignored_answers_a_forced_choice_in_text():
    forced = [("/v1/messages", b) for b in A_FORCED] + [("/v1/chat/completions", O_FORCED[1]),
                                                        ("/v1/chat/completions", dict(O_TOOL_NONSTREAM, tool_choice="required")),
                                                        ("/v1/responses", dict(R_TOOL, tool_choice="required")),
                                                        ("/v1/responses", dict(R_TOOL, tool_choice={"type": "function", "name": "write"}))]
    with engine("tool-choice-ignored") as url:
        for path, body in forced:
            out = _answer(url, path, body)
            if path == "/v1/messages":
                assert [b["type"] for b in out["content"]] == ["text"] and out["stop_reason"] == "end_turn", out
                text = out["content"][0]["text"]
            elif path == "/v1/chat/completions":
                choice = out["choices"][0]
                assert not choice["message"]["tool_calls"] and choice["finish_reason"] == "stop", out
                text = choice["message"]["content"]
            else:
                assert [i["type"] for i in out["output"]] == ["message"] and out["status"] == "completed", out
                text = out["output"][0]["content"][0]["text"]
            # prose about the task the model was forced to act on: the file it would have written
            assert "hello.txt" in text and "<tool_call>" not in text and "{" not in text, text


def test_tool_choice_ignored_changes_nothing_without_a_forced_choice():
    bodies = [("/v1/messages", A_TOOL), ("/v1/messages", dict(A_TOOL, tool_choice={"type": "auto"})),
              ("/v1/messages", dict(A_TOOL, tool_choice={"type": "none"})),
              ("/v1/chat/completions", O_TOOL_NONSTREAM), ("/v1/chat/completions", dict(O_TOOL_NONSTREAM, tool_choice="auto")),
              ("/v1/chat/completions", dict(O_TOOL_NONSTREAM, tool_choice="none")),
              ("/v1/responses", R_TOOL), ("/v1/responses", dict(R_TOOL, tool_choice="auto"))]
    with engine("tool-choice-ignored") as url:
        faulty = [_answer(url, path, body) for path, body in bodies]
        # a forced choice on a request no scenario matches gets the answer auto would get there
        plain = [_answer(url, "/v1/messages", dict(A_TEXT, tools=CLAUDE_TOOLS, tool_choice={"type": "any"})),
                 _answer(url, "/v1/chat/completions", dict(O_TEXT, tools=OPENAI_TOOLS, tool_choice="required"))]
    with engine() as url:
        assert faulty == [_answer(url, path, body) for path, body in bodies]
        auto = [_answer(url, "/v1/messages", dict(A_TEXT, tools=CLAUDE_TOOLS)),
                _answer(url, "/v1/chat/completions", dict(O_TEXT, tools=OPENAI_TOOLS))]
    assert faulty[0]["stop_reason"] == "tool_use"  # auto on this scenario turn calls a tool, fault or not
    assert (plain[0]["content"], plain[0]["stop_reason"]) == (auto[0]["content"], "end_turn")
    assert plain[1]["choices"] == auto[1]["choices"] and auto[1]["choices"][0]["finish_reason"] == "stop"


def test_error_envelope_wrong():
    with engine("error-envelope-wrong") as url:
        s, _, c = post(url, "/v1/messages", {"model": "m", "messages": []})
        assert s == 400 and {v.check_id for v in anthropic_wire.check_error(s, b"".join(c))} == {"anthropic.error.envelope"}
        s, _, c = post(url, "/v1/chat/completions", {"model": "m", "messages": []})
        assert s == 400 and {v.check_id for v in openai_wire.check_error(s, b"".join(c))} == {"openai.error.envelope"}
        # successful answers are untouched
        assert post(url, "/v1/messages", dict(A_TEXT, stream=False))[0] == 200


def test_stop_reason_wrong_on_stop_string():
    body = dict(A_TEXT, stream=False, stop_sequences=["five"])
    with engine("stop-reason-wrong-on-stop-string") as url:
        msg = json.loads(b"".join(post(url, "/v1/messages", body)[2]))
        assert "five" not in msg["content"][0]["text"]  # generation did stop at the string...
        assert msg["stop_reason"] == "end_turn" and msg["stop_sequence"] is None  # ...but says end_turn
        ev = anthropic_events(b"".join(post(url, "/v1/messages", dict(body, stream=True))[2]))
        delta = [e for e in ev if e["type"] == "message_delta"][0]["delta"]
        assert delta == {"stop_reason": "end_turn", "stop_sequence": None}


def test_output_cap():
    with engine("output-cap") as url:
        msg = json.loads(b"".join(post(url, "/v1/messages", dict(A_TEXT, stream=False))[2]))
        assert msg["stop_reason"] == "max_tokens" and msg["usage"]["output_tokens"] == OUTPUT_CAP_TOKENS
        out = json.loads(b"".join(post(url, "/v1/chat/completions", dict(O_TEXT, stream=False))[2]))
        assert out["choices"][0]["finish_reason"] == "length"


def test_unbounded_reasoning():
    body = dict(A_TEXT, stream=False, max_tokens=3000, thinking={"type": "enabled", "budget_tokens": 1024})
    with engine("unbounded-reasoning") as url:
        msg = json.loads(b"".join(post(url, "/v1/messages", body)[2]))
        assert [b["type"] for b in msg["content"]] == ["thinking"] and msg["content"][0]["signature"]
        assert msg["stop_reason"] == "max_tokens" and msg["usage"]["output_tokens"] == 3000
        out = json.loads(b"".join(post(url, "/v1/chat/completions", dict(O_TEXT, stream=False, max_tokens=500))[2]))
        assert out["choices"][0]["finish_reason"] == "length" and not out["choices"][0]["message"]["content"]
        assert out["choices"][0]["message"]["reasoning_content"]


def _needle_prompt(at_start: bool) -> str:
    filler = " ".join(f"Filler sentence {i} about nothing." for i in range(400))
    needle = 'The secret phrase is "amber falcon 7".'
    return (f"{needle} {filler}" if at_start else f"{filler} {needle}") + "\nWhat is the secret phrase?"


@pytest.mark.parametrize("faults, depth0, end", [((), True, True), (("context-truncated",), False, True)])
def test_context_truncated(faults, depth0, end):
    with engine(*faults) as url:
        for at_start, want in ((True, depth0), (False, end)):
            body = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": _needle_prompt(at_start)}]}
            text = json.loads(b"".join(post(url, "/v1/messages", body)[2]))["content"][0]["text"]
            assert ("amber falcon 7" in text) == want, text


def test_over_limit_not_refused():
    body = {"model": "m", "max_tokens": 20, "messages": [{"role": "user", "content": "word " * 3000}]}
    with engine("over-limit-not-refused", max_context=1000) as url:
        assert post(url, "/v1/messages", body)[0] == 200
        assert post(url, "/v1/chat/completions", {"model": "m", "messages": body["messages"]})[0] == 200
    with engine(max_context=1000) as url:
        assert post(url, "/v1/messages", body)[0] == 400


def test_advertised_context_wrong():
    with engine("advertised-context-wrong", max_context=1000) as url:
        advertised = httpx.get(url + "/v1/models").json()["data"][0]["max_model_len"]
        assert advertised == 2000
        # a prompt under the advertised length is refused: the advertisement lies
        body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "word " * 1500}]}
        assert post(url, "/v1/messages", body)[0] == 400


def test_buffered_stream():
    def spread(url):
        raw = send_sync("POST", url + "/v1/messages", headers={"content-type": "application/json"},
                        body=json.dumps(dict(A_TEXT, messages=[{"role": "user", "content": "count from 1 to 60"}])).encode())
        assert raw.status == 200
        return raw.chunks[-1][0] - raw.chunks[0][0], len(raw.chunks)

    # Counted in reads, not timed: the fault releases the whole stream in one write (a read or
    # three, as TCP splits it), the conformant engine in one write per event. The gaps are only
    # compared with each other, so a loaded CI machine cannot flip the verdict.
    with engine("buffered-stream") as url:
        buffered_gap, n = spread(url)
        assert n <= 3
    with engine() as url:
        gap, n = spread(url)
        assert n > 20 and gap > buffered_gap


@pytest.mark.parametrize("fault", ["hang", "hang-with-pings"])
def test_hang_faults_caught_by_total_deadline(fault):
    with engine(fault) as url:
        t0 = time.monotonic()
        v = judge(url, "/v1/messages", A_TEXT, "anthropic", Deadlines(connect=2, first_content=30, total=1.5))
        assert time.monotonic() - t0 < 5
        assert failing(v) == {"suite.deadline.total"}
        if fault == "hang-with-pings":
            names = {e.event for e in v.events} if v.events else set()
            assert names <= {"ping"}


def _burst_until_dead(url, body, dead, attempts=4):
    """Six requests at once, repeated (a loaded CI machine may start threads too slowly for six to
    overlap in one burst): returns the outcomes of the burst in which some request failed."""
    outcomes = []
    for _ in range(attempts):
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            futs = [pool.submit(httpx.post, url + "/v1/messages", content=body, timeout=10) for _ in range(6)]
            outcomes = [f.exception() or f.result().status_code for f in futs]
        if dead() or any(isinstance(o, Exception) for o in outcomes):
            break
    return outcomes


def test_crash_under_concurrency_kills_the_process():
    body = json.dumps(dict(A_TEXT, stream=False)).encode()
    with spawn_engine("--fault", "crash-under-concurrency") as eng:
        assert httpx.post(eng.url + "/v1/messages", content=body, timeout=10).status_code == 200  # fine alone
        outcomes = _burst_until_dead(eng.url, body, dead=lambda: eng.proc.poll() is not None)
        assert eng.proc.wait(10) == 3, outcomes
        assert any(isinstance(o, Exception) for o in outcomes)


def test_crash_under_concurrency_in_thread_drops_connections():
    body = json.dumps(dict(A_TEXT, stream=False)).encode()
    with engine("crash-under-concurrency") as url:
        assert httpx.post(url + "/v1/messages", content=body, timeout=10).status_code == 200
        outcomes = _burst_until_dead(url, body, dead=lambda: False)
        assert any(isinstance(o, Exception) for o in outcomes), outcomes
        with pytest.raises(httpx.TransportError):  # dead for every route afterwards, like a dead process
            httpx.get(url + "/health", timeout=5)


def test_every_fault_has_a_test():
    covered = set(CHECKED) | {"error-envelope-wrong", "stop-reason-wrong-on-stop-string", "output-cap",
                              "unbounded-reasoning", "context-truncated", "over-limit-not-refused",
                              "advertised-context-wrong", "buffered-stream", "hang", "hang-with-pings",
                              "crash-under-concurrency", "dies-under-sustained-load"} | RESPONSES_FAULTS_TESTED
    # the client-wire faults (issue 16) are proven by tests/suite/test_client_wire_faults.py and
    # tests/capture/test_turns.py, through the suite
    from conformance.core.paths import fixtures_dir

    found = json.loads((fixtures_dir() / "faults.json").read_text()).get("found", [])
    covered |= {r["fault"] for r in found if r["issue"] == 16 and "engine" in r["modes"]}
    assert covered == set(FAULTS)


def test_every_engine_row_of_the_fault_table_is_a_fault():
    table = json.loads((fixtures_dir() / "faults.json").read_text())
    # The catalog's rows (docs/faults.md), and the found rows (seen on a real stack, not in the catalog)
    engine_rows = {r["fault"] for r in table["rows"] + table.get("found", []) if "engine" in r["modes"]}
    assert engine_rows == set(FAULTS)


def test_faults_cli_lists_every_fault(capsys):
    assert main(["faults"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == list(FAULTS)


def test_unknown_fault_is_refused():
    with pytest.raises(UnknownFault, match="conformance faults"):
        validate(["no-such-fault"])


def test_wrong_model_name_is_distinct():
    assert WRONG_MODEL_NAME != "reference-model"


def test_over_limit_not_refused_loses_the_start():
    filler = " ".join(f"Filler sentence {i} about nothing." for i in range(400))
    prompt = f"The secret passphrase is cobalt-4817-willow. {filler}\nWhat is the secret passphrase stated in the text above?"
    body = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": prompt}]}
    with engine("over-limit-not-refused", max_context=2000) as url:
        msg = json.loads(b"".join(post(url, "/v1/messages", body)[2]))
        assert "cobalt-4817-willow" not in msg["content"][0]["text"] and msg["usage"]["input_tokens"] == 1999
    with engine(max_context=100000) as url:
        msg = json.loads(b"".join(post(url, "/v1/messages", body)[2]))
        assert "cobalt-4817-willow" in msg["content"][0]["text"]
