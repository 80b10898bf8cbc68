"""The proof that a wire is one place: a toy fourth wire, defined here and nowhere else, judged
by the exchange judge like the built-in ones.

The toy wire (`jsonl`, POST /v1/toy/generate) answers in JSON lines, one object a line: a
`start` line naming the model, `text` and `call` lines, then one `end` line with the stop
reason and the usage. Its request is `{model, prompt, tools: [{name, schema}], max_output,
stream}`. Everything the suite needs of a wire is here, in one module: its grammar (the four
functions, at the bottom), its rules (registered with `register_rule`), its one line schema (a
schema folder added with `add_schema_folder`) and its Dialect, registered with ONE call
(`register_dialect`) for the test and unregistered after it. Nothing outside this module knows
the toy exists: `check_exchange` finds its grammar, readers and stop vocabulary through the
Dialect.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.checks.exchange import check_exchange
from conformance.core.failures import Violation
from conformance.core.registry import violation
from conformance.net.transport import RawExchange
from conformance.wire.base import (
    StreamReport,
    add_schema_folder,
    load_json,
    register_rule,
    remove_schema_folder,
    schema_path,
    schema_problems,
)
from conformance.wire.conversation import ToolCall, Turn
from conformance.wire.dialect import Dialect, StopVocabulary
from conformance.wire.registry import (
    DIALECTS,
    dialect,
    dialect_for_path,
    register_dialect,
    unregister_dialect,
)

NAME = "jsonl"
LINE_JSON = "jsonl.stream.line_json"
LINE_SCHEMA = "jsonl.stream.line_schema"
ENDS_ONCE = "jsonl.stream.ends_once"
RESPONSE_JSON = "jsonl.response.json"
ERROR_ENVELOPE = "jsonl.error.envelope"
STOPS = ("done", "cap", "call")
# One line of the stream (draft 2020-12, the keywords the wire's schema compiler knows).
LINE = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"enum": ["start", "text", "call", "end"]},
        "text": {"type": "string"},
        "stop": {"enum": list(STOPS)},
    },
    "allOf": [{"if": {"properties": {"type": {"const": "end"}}}, "then": {"required": ["stop"]}}],
}


def _register_rules() -> None:
    """The toy's rules, registered when the fixture runs (importing this module while pytest
    collects leaves the registry as the built-in wires have it)."""
    register_rule(LINE_JSON, "every line of a jsonl answer is a JSON object")
    register_rule(LINE_SCHEMA, "every line matches the jsonl line schema")
    register_rule(ENDS_ONCE, "the answer ends with exactly one `end` line, nothing after it")
    register_rule(RESPONSE_JSON, "a non-stream jsonl answer is one JSON object")
    register_rule(ERROR_ENVELOPE, 'an error is {"error": "..."} with a 4xx / 5xx status')


# ----------------------------------------------------------------------------- the grammar
def _lines(chunks) -> list[str]:
    data = chunks if isinstance(chunks, bytes | bytearray) else b"".join(c for _, c in chunks)
    return [line for line in data.decode("utf-8", "replace").split("\n") if line.strip()]


def check_stream(chunks, *, request: dict | None = None) -> StreamReport:
    """Judge a whole jsonl answer: every line an object that fits the schema, one `end` last."""
    found: list[Violation] = []
    payloads: list[Any] = []
    message: dict[str, Any] = {"model": None, "text": "", "calls": [], "stop": None, "usage": None}
    ended_at: int | None = None
    for n, line in enumerate(_lines(chunks)):
        data, err = load_json(line)
        payloads.append(data)
        if err is not None or not isinstance(data, dict):
            found.append(violation(LINE_JSON, f"line {n} is not a JSON object", seen=line[:80], event_index=n))
            continue
        for ptr, msg, expected, seen in schema_problems("jsonl.line", data):
            found.append(violation(LINE_SCHEMA, f"line {n}: {msg}", expected=expected, seen=seen, pointer=ptr,
                                   event_index=n))
        if ended_at is not None:
            found.append(violation(ENDS_ONCE, f"line {n} follows the end line {ended_at}", event_index=n))
            continue
        kind = data.get("type")
        if kind == "start":
            message["model"] = data.get("model")
        elif kind == "text":
            message["text"] += str(data.get("text", ""))
        elif kind == "call":
            message["calls"].append({"id": data.get("id"), "name": data.get("name"),
                                     "arguments": data.get("arguments")})
        elif kind == "end":
            ended_at = n
            message["stop"], message["usage"] = data.get("stop"), data.get("usage")
    if ended_at is None:
        found.append(violation(ENDS_ONCE, "the answer ended without an end line", expected='{"type": "end"}'))
    return StreamReport([], found, message, ended_at is not None, payloads)


def check_response(body, *, request: dict | None = None) -> tuple[dict | None, list[Violation]]:
    """A non-stream answer is the message itself, one JSON object."""
    data, err = load_json(body)
    if err is not None or not isinstance(data, dict):
        return None, [violation(RESPONSE_JSON, "the answer is not one JSON object")]
    return data, []


def check_error(status: int, body: bytes) -> list[Violation]:
    """An error is {"error": "..."} with a 4xx / 5xx status."""
    data, _ = load_json(body)
    if isinstance(data, dict) and isinstance(data.get("error"), str) and status >= 400:
        return []
    return [violation(ERROR_ENVELOPE, f"HTTP {status}: not the jsonl error envelope")]


def content_started(buf: bytes) -> bool:
    """Any line but the `start` line is content (a line that is not JSON is an answer too)."""
    return any(not isinstance(d := load_json(line)[0], dict) or d.get("type") != "start" for line in _lines(buf))


# ----------------------------------------------------------------------------- the Dialect
class JsonLinesDialect(Dialect):
    """The toy wire's readers and writers: a message is {model, text, calls, stop, usage}."""

    def text(self, message: Any) -> str:
        return (message or {}).get("text") or ""

    def thinking(self, message: Any) -> str:
        return ""

    def thinking_blocks(self, message: Any) -> list[tuple[str, str | None]]:
        return []

    def tool_calls(self, message: Any, unparsed_input: dict[str, str] | None = None) -> list[ToolCall]:
        calls = (message or {}).get("calls") or []
        return [ToolCall(str(c.get("id")), str(c.get("name")), c.get("arguments") if isinstance(
            c.get("arguments"), dict) else None, None, f"/calls/{i}/arguments") for i, c in enumerate(calls)]

    def delivers_content(self, event: Any) -> bool:
        return True

    def offered_tools(self, request: dict | None) -> dict[str, dict | None]:
        return {t["name"]: t.get("schema") for t in (request or {}).get("tools") or []}

    def demanded_tool_choice(self, request: dict | None):
        return None

    def turns(self, request: dict | None) -> list[Turn]:
        return [Turn("user", [str((request or {}).get("prompt", ""))], index=0, pointer="/prompt")]


TOY = JsonLinesDialect(
    name=NAME,
    grammar=sys.modules[__name__],  # this module: check_stream, check_response, check_error, content_started
    generation_path="/v1/toy/generate",
    count_tokens_path=None,
    always_bearer=True,
    default_headers=(),
    stops=StopVocabulary(field="stop", natural="done", final=("done",), tool=("call",), cap="cap",
                         cut=frozenset({"cap"}), caps=frozenset({"cap"})),
    output_tokens_key="output_tokens",
    input_tokens_key="input_tokens",
    cap_keys=("max_output",),
    structured_call="call lines",
    stop_sequences_key=None,
    matched_stop_key=None,
    conversation_key="prompt",
    stream_media_type="application/jsonl",
)


@pytest.fixture
def toy(tmp_path: Path):
    """The toy wire registered for one test (its rules, its schema folder, its Dialect), then gone."""
    (tmp_path / "jsonl.line.json").write_text(json.dumps(LINE), encoding="utf-8")
    _register_rules()
    add_schema_folder(tmp_path)
    register_dialect(TOY)
    try:
        yield TOY
    finally:
        unregister_dialect(TOY)
        remove_schema_folder(tmp_path)


# ----------------------------------------------------------------------------- the proof
REQUEST = {"model": "toy-1", "prompt": "read a.txt", "max_output": 64, "stream": True,
           "tools": [{"name": "read", "schema": {"type": "object", "required": ["path"],
                                                 "properties": {"path": {"type": "string"}}}}]}


def _exchange(lines: list[dict | str], *, content_type: str = "application/jsonl", status: int = 200) -> RawExchange:
    body = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()
    return RawExchange("POST", "http://127.0.0.1:9/v1/toy/generate", {}, json.dumps(REQUEST).encode(),
                       status=status, response_headers={"content-type": content_type},
                       chunks=[(0.01, body[:20]), (0.02, body[20:])])


GOOD = [{"type": "start", "model": "toy-1"}, {"type": "text", "text": "reading"},
        {"type": "call", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}},
        {"type": "end", "stop": "call", "usage": {"output_tokens": 9}}]


def test_content_starts_after_the_start_line(toy):
    assert not TOY.content_started(b'{"type": "start", "model": "m"}\n')
    assert TOY.content_started(b'{"type": "start"}\n{"type": "text", "text": "a"}\n')
    assert TOY.content_started(b"<html>")


def test_a_good_answer_is_accepted_on_every_count(toy):
    verdict = check_exchange(_exchange(GOOD), REQUEST, wire=TOY)
    assert verdict.errors == []
    assert verdict.outcomes["suite.request.accepted"] == "passed"
    assert verdict.outcomes["suite.stream.wellformed"] == "passed"
    # the suite-level checks ran through the toy's readers: its tool call was found and judged
    assert verdict.outcomes["tools.name_offered"] == "passed"
    assert verdict.outcomes["tools.arguments_schema"] == "passed"
    assert verdict.outcomes["identity.model_matches"] == "passed"
    assert verdict.message["calls"][0]["name"] == "read"


def test_a_bad_answer_fails_the_toys_own_grammar_rules(toy):
    bad = [{"type": "start", "model": "toy-1"}, "not json", {"type": "text", "text": 5},
           {"type": "call", "id": "c1", "name": "read", "arguments": {"file": "a.txt"}},
           {"type": "end", "stop": "call"}, {"type": "text", "text": "late"}]
    verdict = check_exchange(_exchange(bad), REQUEST, wire="jsonl")  # a name the user typed works too
    assert {LINE_JSON, LINE_SCHEMA, ENDS_ONCE} <= set(verdict.failed_checks)
    assert verdict.outcomes[LINE_JSON] == verdict.outcomes[ENDS_ONCE] == "failed"
    assert verdict.outcomes["suite.stream.wellformed"] == "failed"
    assert verdict.outcomes["tools.arguments_schema"] == "failed"  # `path` is required: the toy's schema


def test_the_toy_is_found_by_name_path_and_schema_while_registered_and_gone_after(toy, tmp_path):
    assert dialect("jsonl") is TOY and dialect_for_path("/toy/v1/toy/generate") is TOY
    assert schema_path("jsonl.line") == (tmp_path / "jsonl.line.json").resolve()
    unregister_dialect(TOY)
    remove_schema_folder(tmp_path)
    assert NAME not in DIALECTS and dialect_for_path("/v1/toy/generate") is None
    with pytest.raises(FileNotFoundError):
        schema_path("jsonl.line")
    with pytest.raises(ValueError, match="unknown api 'jsonl'"):
        dialect("jsonl")
