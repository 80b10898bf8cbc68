"""A client whose tools have names no profile and no engine table knows (`read_files`,
`save_file`, `patch_file`, `run_commands`) and its own argument names (`filepath`, `old_text`,
`new_text`, `commands`) runs its loops end to end: the reference engine calls each tool by its
schema's shape, and the sandbox's generic persona plays it by the same shape."""

from __future__ import annotations

import pytest

from conformance.capture.format import CapturedRequest
from conformance.loop.driver import LoopDriver
from conformance.loop.scenarios import get_scenario
from conformance.loop.templates import Template
from conformance.wire import ANTHROPIC, CHAT, RESPONSES

pytestmark = pytest.mark.loop

ANNOUNCE = "<system-reminder>\nI'm currently working in the directory: /srv/widget\n</system-reminder>"


def _schema(*names: str) -> dict:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(names)}


TOOLS = {"read_files": _schema("filepath"), "save_file": _schema("filepath", "content"),
         "patch_file": _schema("filepath", "old_text", "new_text"), "run_commands": _schema("commands")}


def _template(wire) -> Template:
    if wire is ANTHROPIC:
        body = {"model": "widget-1", "max_tokens": 4096, "stream": True, "system": "You are Widget.",
                "messages": [{"role": "user", "content": [{"type": "text", "text": ANNOUNCE},
                                                          {"type": "text", "text": "say hi"}]}],
                "tools": [{"name": n, "description": n, "input_schema": s} for n, s in TOOLS.items()]}
    elif wire is CHAT:
        body = {"model": "widget-1", "stream": True, "messages": [
            {"role": "system", "content": "You are Widget."},
            {"role": "user", "content": [{"type": "text", "text": ANNOUNCE}, {"type": "text", "text": "say hi"}]}],
            "tools": [{"type": "function", "function": {"name": n, "description": n, "parameters": s}}
                      for n, s in TOOLS.items()]}
    else:
        body = {"model": "widget-1", "stream": True, "instructions": "You are Widget.", "store": False, "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ANNOUNCE},
                                                            {"type": "input_text", "text": "say hi"}]}],
            "tools": [{"type": "function", "name": n, "description": n, "parameters": s} for n, s in TOOLS.items()]}
    return Template(CapturedRequest("POST", wire.generation_path, "", {"user-agent": "widget/0.1"}, body),
                    "widget/0.1 (test)", "widget")


@pytest.mark.parametrize("wire", [ANTHROPIC, CHAT, RESPONSES], ids=lambda w: w.name)
@pytest.mark.parametrize("scenario_id", ["write-file", "edit-file"])
def test_a_client_with_its_own_tool_names_runs_its_loop(conformant_engine, wire, scenario_id, tmp_path):
    report = LoopDriver(conformant_engine, wire, template=_template(wire), workdir=tmp_path).run(
        get_scenario(scenario_id))
    report.raise_for_failure()
    calls = [c for t in report.turns for c in t.calls]
    assert {c.name for c in calls} >= {"read_files"} and {c.name for c in calls} <= set(TOOLS)
    outcomes = [o for t in report.turns for o in t.outcomes]
    assert outcomes and not any(o.is_error for o in outcomes)
