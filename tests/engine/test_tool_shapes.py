"""The engine plays a client's tools by their schema's shape, whatever the client names them.

A client the engine has never heard of offers `read_files {filepath}`, an `editor` whose `command`
enum selects view / create / str_replace, and `run_commands {commands}`; another offers only
`run_commands`; a third a `put_file {filepath, content}`. Each scenario step must call the tool of
its shape with the client's own argument names, on every wire, with paths joined onto the folder
the client announced in a user text (Qwen Code's wording).
"""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from conformance.core.paths import fixtures_dir

WORKDIR = "/srv/project-7"
ANNOUNCE = f"<system-reminder>\nI'm currently working in the directory: {WORKDIR}\n</system-reminder>"


def _prompt(scenario: str) -> str:
    return json.loads((fixtures_dir() / "scenarios" / f"{scenario}.json").read_text())["prompt"]


def _schema(props: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": required}


READ_FILES = ("read_files", "Read files", _schema({"filepath": {"type": "string"}}, ["filepath"]))
EDITOR = ("editor", "View, create or edit a file", _schema({
    "command": {"type": "string", "enum": ["view", "create", "str_replace"]},
    "path": {"type": "string"}, "file_text": {"type": "string"},
    "old_str": {"type": "string"}, "new_str": {"type": "string"}}, ["command", "path"]))
RUN_COMMANDS = ("run_commands", "Run shell commands", _schema({"commands": {"type": "string"}}, ["commands"]))
PUT_FILE = ("put_file", "Store a file", _schema({"filepath": {"type": "string"}, "content": {"type": "string"}},
                                                ["filepath", "content"]))


def _first_call(url: str, wire: str, tools: list[tuple], prompt: str) -> tuple[str, dict]:
    """(name, arguments) of the first tool call the engine answers `prompt` with on `wire`."""
    if wire == "anthropic":
        client = anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0)
        m = client.messages.create(model="m", max_tokens=2000, tools=[
            {"name": n, "description": d, "input_schema": s} for n, d, s in tools],
            messages=[{"role": "user", "content": [{"type": "text", "text": ANNOUNCE},
                                                   {"type": "text", "text": prompt}]}])
        call = next(b for b in m.content if b.type == "tool_use")
        return call.name, dict(call.input)
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
    if wire == "chat":
        r = client.chat.completions.create(model="m", tools=[
            {"type": "function", "function": {"name": n, "description": d, "parameters": s}} for n, d, s in tools],
            messages=[{"role": "user", "content": [{"type": "text", "text": ANNOUNCE},
                                                   {"type": "text", "text": prompt}]}])
        call = r.choices[0].message.tool_calls[0].function
        return call.name, json.loads(call.arguments)
    r = client.responses.create(model="m", tools=[
        {"type": "function", "name": n, "description": d, "parameters": s} for n, d, s in tools],
        input=[{"role": "user", "content": [{"type": "input_text", "text": ANNOUNCE},
                                            {"type": "input_text", "text": prompt}]}])
    call = next(i for i in r.output if i.type == "function_call")
    return call.name, json.loads(call.arguments)


WIRES = ("anthropic", "chat", "responses")


@pytest.mark.parametrize("wire", WIRES)
def test_a_write_goes_to_the_editor_in_its_create_mode(engine_url, wire):
    name, args = _first_call(engine_url, wire, [READ_FILES, EDITOR, RUN_COMMANDS], _prompt("write-static"))
    assert name == "editor"
    assert args == {"command": "create", "path": f"{WORKDIR}/hello.txt", "file_text": "hello conformance\n"}


@pytest.mark.parametrize("wire", WIRES)
def test_a_read_goes_to_the_tool_with_a_path_alone_under_its_own_argument_name(engine_url, wire):
    name, args = _first_call(engine_url, wire, [RUN_COMMANDS, READ_FILES], _prompt("write-file"))
    assert (name, args) == ("read_files", {"filepath": f"{WORKDIR}/token.txt"})


@pytest.mark.parametrize("wire", WIRES)
def test_a_path_with_content_is_a_write_whatever_its_name(engine_url, wire):
    name, args = _first_call(engine_url, wire, [PUT_FILE], _prompt("write-static"))
    assert (name, args) == ("put_file", {"filepath": f"{WORKDIR}/hello.txt", "content": "hello conformance\n"})


@pytest.mark.parametrize("wire", WIRES)
def test_a_client_with_only_a_shell_gets_the_step_as_a_command(engine_url, wire):
    name, args = _first_call(engine_url, wire, [RUN_COMMANDS], _prompt("write-file"))
    assert (name, args) == ("run_commands", {"commands": f"cat {WORKDIR}/token.txt"})
