"""A client the suite does not know runs its loops: its tools are played by their schemas' shapes
(`persona_by_shape`) and its results worded in the generic voice, against the reference engine.

The template offers tools by names none of the known clients use, with argument names of its
own (`path`, `old_str`, `new_str`); tools with names nothing knows (`read_files {filepath}`) are
called by the engine and played by the sandbox by their shape (tests/loop/test_loop_any_tool_names.py)."""

from __future__ import annotations

import pytest

from conformance.capture.format import CapturedRequest
from conformance.loop.driver import LoopDriver
from conformance.loop.scenarios import get_scenario
from conformance.loop.templates import Template
from conformance.wire import ANTHROPIC, CHAT

pytestmark = pytest.mark.loop

SYSTEM = "You are Acme, a coding agent. Working directory: /srv/acme"


def _schema(*names: str) -> dict:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(names)}


TOOLS = {"read_file": _schema("path"), "write_file": _schema("path", "content"),
         "edit_file": _schema("path", "old_str", "new_str"), "run_command": _schema("command")}


def _template(wire) -> Template:
    if wire is ANTHROPIC:
        body = {"model": "acme-1", "max_tokens": 4096, "stream": True, "system": SYSTEM,
                "messages": [{"role": "user", "content": "say hi"}],
                "tools": [{"name": n, "description": n, "input_schema": s} for n, s in TOOLS.items()]}
    else:
        body = {"model": "acme-1", "stream": True, "messages": [
            {"role": "system", "content": SYSTEM}, {"role": "user", "content": "say hi"}],
            "tools": [{"type": "function", "function": {"name": n, "description": n, "parameters": s}}
                      for n, s in TOOLS.items()]}
    return Template(CapturedRequest("POST", wire.generation_path, "", {"user-agent": "acme/1.0"}, body),
                    "acme-agent/1.0 (test)", "acme-agent")


@pytest.mark.parametrize("wire", [ANTHROPIC, CHAT], ids=lambda w: w.name)
@pytest.mark.parametrize("scenario_id", ["sum-numbers", "edit-file", "write-static"])
def test_an_unknown_clients_loop_completes_with_a_persona_built_from_its_tools(conformant_engine, wire,
                                                                                 scenario_id, tmp_path):
    report = LoopDriver(conformant_engine, wire, template=_template(wire), workdir=tmp_path).run(
        get_scenario(scenario_id))
    report.raise_for_failure()
    assert report.client == "acme-agent" and "as acme-agent" in report.title()
    called = {c.name for t in report.turns for c in t.calls}
    assert called <= set(TOOLS) and called
    outcomes = [o for t in report.turns for o in t.outcomes]
    assert outcomes and not any(o.is_error for o in outcomes)
    first = report.turns[0].request
    assert str(tmp_path) in str(first)  # the working directory it named became the sandbox
