"""The Responses faults: each one produces its symptom on /v1/responses and changes nothing else.

Each test sends a real Codex request (captured/codex/) to the engine with the fault and to the
conformant engine, and compares: the symptom appears only with the fault, and the rest of the
stream still holds the grammar (this file's checks are the engine's own; the judge's detection of
each fault is tests/suite/test_faults_responses.py)."""

from __future__ import annotations

import json

from .conftest import engine
from .helpers import post
from .test_responses_codex import codex_bodies, events_of, final_output, grammar_errors

# Every fault tested here (tests/engine/test_faults.py::test_every_fault_has_a_test counts them).
TESTED = {"custom-tool-as-function", "custom-tool-dropped", "namespace-flattened", "multi-turn-items-rejected",
          "foreign-reasoning-rejected", "hosted-tool-rejected", "responses-missing", "terminal-event-missing",
          "sequence-number-gap", "done-text-mismatch"}


def _stream(url, body):
    status, _, chunks = post(url, "/v1/responses", dict(body, stream=True))
    return status, (events_of(chunks) if status == 200 else json.loads(b"".join(chunks)))


def _both(fault, body):
    with engine() as good, engine(fault) as bad:
        return _stream(good, body), _stream(bad, body)


def test_custom_tool_as_function():
    body = codex_bodies("apply-patch-loop")[1]
    (_, good), (status, bad) = _both("custom-tool-as-function", body)
    assert status == 200 and grammar_errors(bad) == []
    (patch,) = [i for i in final_output(good) if i["type"] == "custom_tool_call"]
    (call,) = [i for i in final_output(bad) if i["type"] in ("custom_tool_call", "function_call")]
    assert call["type"] == "function_call" and call["name"] == "apply_patch"
    assert json.loads(call["arguments"]) == {"input": patch["input"]}


def test_custom_tool_dropped_says_the_patch_in_text():
    body = codex_bodies("apply-patch-loop")[1]
    (_, good), (status, bad) = _both("custom-tool-dropped", body)
    assert status == 200 and grammar_errors(bad) == []
    (patch,) = [i for i in final_output(good) if i["type"] == "custom_tool_call"]
    items = final_output(bad)
    assert not [i for i in items if i["type"] in ("custom_tool_call", "function_call")]
    assert items[-1]["type"] == "message" and items[-1]["content"][0]["text"] == patch["input"]


def test_custom_tool_dropped_leaves_function_calls_alone():
    body = codex_bodies("exec-loop")[0]
    (_, good), (_, bad) = _both("custom-tool-dropped", body)
    assert [i["type"] for i in final_output(bad)] == [i["type"] for i in final_output(good)]


def test_namespace_flattened():
    (body,) = codex_bodies("plain")
    body["tool_choice"] = {"type": "function", "name": "wait_agent"}
    (_, good), (status, bad) = _both("namespace-flattened", body)
    assert status == 200 and grammar_errors(bad) == []
    (g,) = [i for i in final_output(good) if i["type"] == "function_call"]
    (b,) = [i for i in final_output(bad) if i["type"] == "function_call"]
    assert (g["name"], g["namespace"]) == ("wait_agent", "multi_agent_v1")
    assert b["name"] == "multi_agent_v1__wait_agent" and "namespace" not in b
    assert b["arguments"] == g["arguments"]


def test_namespace_flattened_leaves_top_level_tools_alone():
    body = codex_bodies("exec-loop")[0]
    (_, good), (_, bad) = _both("namespace-flattened", body)
    assert final_output(bad)[-1]["name"] == final_output(good)[-1]["name"] == "exec_command"


def test_multi_turn_items_rejected():
    first, second, _ = codex_bodies("exec-loop")
    with engine("multi-turn-items-rejected") as url:
        assert _stream(url, first)[0] == 200  # turn 1 has only messages
        status, err = _stream(url, second)
    assert status == 400
    assert "function_call_output" in err["error"]["message"] or "reasoning" in err["error"]["message"]


def test_foreign_reasoning_rejected_refuses_a_replay_but_plays_its_own_loop():
    first, second, _ = codex_bodies("multi-turn-reasoning")
    with engine("foreign-reasoning-rejected") as url:
        status, err = _stream(url, second)  # encrypted_content minted by the engine that was captured
        assert status == 400 and "encrypted_content" in err["error"]["message"]
        status, events = _stream(url, first)
        assert status == 200
        own = [i for i in final_output(events) if i["type"] in ("reasoning", "function_call")]
        replay = dict(second, input=[i for i in second["input"] if i.get("type") not in ("reasoning", "function_call",
                                                                                         "function_call_output")])
        call = own[1]
        replay["input"] += [own[0], call, {"type": "function_call_output", "call_id": call["call_id"],
                                           "output": "101\n202\n"}]
        assert _stream(url, replay)[0] == 200  # reasoning this process minted is taken back
    with engine() as url:
        assert _stream(url, second)[0] == 200  # the conformant engine takes anyone's


def test_hosted_tool_rejected():
    plain = codex_bodies("plain")[0]
    no_search = codex_bodies("no-web-search")[0]
    with engine("hosted-tool-rejected") as url:
        status, err = _stream(url, plain)
        assert status == 400 and "web_search" in err["error"]["message"]
        assert _stream(url, no_search)[0] == 200


def test_responses_missing():
    (body,) = codex_bodies("plain")
    with engine("responses-missing") as url:
        status, err = _stream(url, body)
        assert status == 404 and err["error"]["type"]
        chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert post(url, "/v1/chat/completions", chat)[0] == 200  # only the Responses route is gone


def test_terminal_event_missing():
    (body,) = codex_bodies("plain")
    (_, good), (status, bad) = _both("terminal-event-missing", body)
    assert status == 200
    assert good[-1]["type"] == "response.completed"
    assert bad[-1]["type"] == "response.output_item.done"
    assert [e["type"] for e in bad] == [e["type"] for e in good][:-1]


def test_sequence_number_gap():
    (body,) = codex_bodies("plain")
    (_, good), (status, bad) = _both("sequence-number-gap", body)
    assert status == 200 and [e["type"] for e in bad] == [e["type"] for e in good]
    seq = [e["sequence_number"] for e in bad]
    gaps = [b - a for a, b in zip(seq, seq[1:], strict=False) if b - a != 1]
    assert gaps == [2]  # exactly one number skipped
    assert [e["sequence_number"] for e in good] == list(range(len(good)))


def test_done_text_mismatch():
    (body,) = codex_bodies("plain")
    (_, good), (status, bad) = _both("done-text-mismatch", body)
    assert status == 200 and [e["type"] for e in bad] == [e["type"] for e in good]
    errs = grammar_errors(bad)
    assert errs and all("done text" in e for e in errs)
    assert final_output(bad) == final_output(good)  # the items themselves are whole
