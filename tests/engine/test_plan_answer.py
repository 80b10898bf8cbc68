"""`plan_answer`, the setup the engine's two OpenAI routes (chat, Responses) share: the same body
plans the same answer whichever route parses it, and the faults it applies show in what it returns."""

from __future__ import annotations

import json
import time

from conformance.engine import faults as fault_modes
from conformance.engine import openai_route, responses_route
from conformance.engine.openai_route import plan_answer
from conformance.engine.state import EngineConfig, EngineState

TOOL = {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                         "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                        "required": ["path"]}}}
CHAT_TOOL_CALL = {"messages": [{"role": "user", "content": "Read notes.txt"}], "tools": [TOOL],
                  "tool_choice": {"type": "function", "function": {"name": "read_file"}}}
RESPONSES_TOOL_CALL = {"input": "Read notes.txt", "tools": [{"type": "function", **TOOL["function"]}],
                       "tool_choice": {"type": "function", "name": "read_file"}}


def _state(*faults: str) -> EngineState:
    return EngineState(EngineConfig(model="served-model", faults=frozenset(faults)), scenarios=[])


def test_same_text_answer_from_either_route():
    chat = plan_answer(_state(), {"messages": [{"role": "user", "content": "say: hello"}]}, openai_route.parse)
    responses = plan_answer(_state(), {"input": "say: hello"}, responses_route.parse)
    assert chat.text == responses.text == chat.reply.text != ""
    assert chat.calls == responses.calls == []
    assert chat.prompt == chat.conv.prompt_tokens() > 0
    assert chat.model == responses.model == "served-model"  # no model asked for: the served one
    assert abs(chat.created - time.time()) < 60


def test_seed_follows_the_body():
    body = {"model": "asked-model", "messages": [{"role": "user", "content": "hi"}]}
    first = plan_answer(_state(), body, openai_route.parse)
    assert first.model == "asked-model"
    assert plan_answer(_state(), dict(reversed(body.items())), openai_route.parse).seed == first.seed
    other = {**body, "messages": [{"role": "user", "content": "hi there"}]}
    assert plan_answer(_state(), other, openai_route.parse).seed != first.seed


def test_wrong_model_fault_names_another_model():
    answer = plan_answer(_state("wrong-model"), {"model": "asked-model", "input": "hi"}, responses_route.parse)
    assert answer.model == fault_modes.WRONG_MODEL_NAME != "asked-model"


def test_tool_calls_rendered_with_ids_and_json_arguments():
    chat = plan_answer(_state(), CHAT_TOOL_CALL, openai_route.parse)
    responses = plan_answer(_state(), RESPONSES_TOOL_CALL, responses_route.parse)
    for answer in (chat, responses):
        [(call_id, name, arguments, obj)] = answer.calls
        assert call_id.startswith("call_") and name == "read_file"
        assert json.loads(arguments) == obj and "path" in obj
    assert chat.calls[0][0] != responses.calls[0][0]  # ids come from the body's digest


def test_tool_call_as_text_fault_moves_the_call_into_the_text():
    answer = plan_answer(_state("tool-call-as-text"), CHAT_TOOL_CALL, openai_route.parse)
    assert answer.calls == []
    assert answer.text.startswith(answer.reply.text) and "<tool_call>" in answer.text
    assert '"read_file"' in answer.text
