"""The load probe's workload (conformance.probes.workload): scenario first turns offer the wire
client's tools in the wire's shape; captures are the target wire's; loops run where the client can."""

from __future__ import annotations

from conformance.probes.common import Target
from conformance.probes.workload import (
    capture_items,
    default_workload,
    loop_items,
    scenario_items,
    scenario_tools,
)
from conformance.wire import ANTHROPIC, CHAT, RESPONSES


def test_scenario_tools_are_the_clients_names_in_the_wires_shape():
    anthropic = scenario_tools(ANTHROPIC)
    assert [t["name"] for t in anthropic] == ["Read", "Write", "Edit", "Bash"]
    assert anthropic[2]["input_schema"]["required"] == ["file_path", "old_string", "new_string"]
    chat = scenario_tools(CHAT)
    assert [t["function"]["name"] for t in chat] == ["read", "write", "edit", "bash"]
    assert chat[2]["function"]["parameters"]["required"] == ["filePath", "oldString", "newString"]
    # Codex edits through the shell: only its shell tool, with its own argument name
    assert [(t["name"], t["parameters"]["required"]) for t in scenario_tools(RESPONSES)] == [("exec_command", ["cmd"])]


def test_scenario_first_turns_carry_the_clients_tool_choice():
    anthropic = scenario_items(Target("http://x:1", wire=ANTHROPIC, model="m"))
    chat = scenario_items(Target("http://x:1", wire=CHAT, model="m"))
    assert anthropic and len(anthropic) == len(chat)
    assert all("tool_choice" not in i.body for i in anthropic), "Claude Code sends no tool_choice"
    assert all(i.body["tool_choice"] == "auto" for i in chat), "opencode sends tool_choice auto"
    assert all(not i.body["system"][0]["text"].startswith("[conformance-run") for i in anthropic), "salted per request later"


def test_captures_and_loops_follow_the_target_wire():
    t = Target("http://x:1", wire=CHAT, model="target-model")
    captured = capture_items(t)
    assert captured and all(i.body["model"] == "target-model" and "messages" in i.body for i in captured)
    assert all(i.scenario is not None and i.name.startswith("loop:") for i in loop_items(CHAT))
    assert [i.name for i in default_workload(t, include_captures=False, include_loops=False)] == ["probe:short"]
