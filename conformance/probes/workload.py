"""The load probe's workload: captured requests, scenario first turns and whole agent loops.

Rules:
- One request is not an acceptance test. The workload is every captured model request of the
  target's wire (the model mapped to the target's), plus every bundled scenario the wire's client
  can run as a whole agent loop (conformance.loop's driver, real client shapes); with neither, one
  short request.
- A scenario's first turn alone (`scenario_items`) offers a small tool set as the wire's client
  offers it: the tool names and argument names of the client's sandbox persona
  (`conformance.clients`), the tool shape of the wire (`Dialect.tool_definition`), and the
  tool_choice the client sends beside its tools (`ClientProfile.tool_choice`).
- Items are unsalted here: the level runner salts each request on its own
  (`conformance.probes.load`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.capture.corpus import iter_capture_files
from conformance.capture.format import load_capture
from conformance.clients.profile import GENERIC, profile_for_wire
from conformance.core.paths import captured_dir, fixtures_dir
from conformance.loop.driver import scenario_runs_on
from conformance.loop.scenarios import Scenario, load_scenarios
from conformance.probes.common import Target, build_request
from conformance.wire.dialect import Dialect

SCENARIO_SYSTEM = "You are a coding agent. Working directory: /work/sandbox"
# The scenario first turns' tools: (sandbox operation, description, the persona arguments each takes).
# The engine maps abstract tools onto offered tools by name (docs/contracts/scenarios.md).
SCENARIO_TOOLS = (
    ("read", "Read a file", ("path",)),
    ("write", "Write a file", ("path", "content")),
    ("edit", "Replace text in a file", ("path", "old", "new")),
    ("shell", "Run a command", ("command",)),
)


@dataclass
class WorkItem:
    name: str  # capture id#n, scenario:ID (first turn only) or loop:ID (the whole agent loop)
    body: dict[str, Any] | None = None
    scenario: Scenario | None = None  # run as a whole loop by the loop driver


def scenario_tools(wire: Dialect) -> list[dict[str, Any]]:
    """SCENARIO_TOOLS as the client that drives `wire` names them, in the wire's tool shape."""
    persona = (profile_for_wire(wire) or GENERIC).persona
    tools = []
    for operation, description, arguments in SCENARIO_TOOLS:
        found = next(((name, b) for name, b in persona.tools.items() if b.operation == operation), None)
        if found is None:
            continue  # the client has no such tool (Codex edits through the shell)
        name, binding = found
        props = [binding.arguments[a] for a in arguments]
        schema = {"type": "object", "properties": {p: {"type": "string"} for p in props}, "required": props,
                  "additionalProperties": False}
        tools.append(wire.tool_definition(name, description, schema))
    return tools


def scenario_items(target: Target, scenarios_dir: Path | None = None, max_tokens: int = 1024) -> list[WorkItem]:
    """The first turn of every bundled scenario, in the target's wire."""
    folder = scenarios_dir or (fixtures_dir() / "scenarios")
    client = profile_for_wire(target.wire) or GENERIC
    items = []
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != "conformance.scenario":
            continue  # the schema file and anything else
        extra: dict[str, Any] = {"tools": scenario_tools(target.wire)}
        if client.tool_choice is not None:
            extra["tool_choice"] = client.tool_choice
        body = build_request(target, data["prompt"], max_tokens=max_tokens, system=SCENARIO_SYSTEM, extra=extra,
                             salt="")
        items.append(WorkItem(f"scenario:{data['id']}", body))
    return items


def capture_items(target: Target, captures_root: Path | None = None) -> list[WorkItem]:
    """Every captured model request of the target's wire, with the model mapped to the target's."""
    try:
        root = captures_root or captured_dir()
    except FileNotFoundError:
        return []
    wanted = target.wire.generation_path.removeprefix("/v1")
    items = []
    for path in iter_capture_files(root):
        try:
            cap = load_capture(path)
        except ValueError:
            continue  # not a capture (README, manifest variants): the replay tests report those
        for n, ex in enumerate(cap.main_exchanges(), 1):
            if not ex.request.path.rstrip("/").endswith(wanted) or not isinstance(ex.request.body, dict):
                continue
            body = dict(ex.request.body, model=target.model)
            items.append(WorkItem(f"{cap.id}#{n}", body))
    return items


def loop_items(wire: Dialect, scenarios_dir: Path | None = None) -> list[WorkItem]:
    """Every bundled scenario the client of `wire` can run, as a whole agent loop: a scenario that
    needs an attached MCP server or a resumed session runs only where that wire's client does so."""
    return [WorkItem(f"loop:{s.id}", scenario=s) for s in load_scenarios(scenarios_dir)
            if scenario_runs_on(s, wire)]


def default_workload(target: Target, *, captures_root: Path | None = None, scenarios_dir: Path | None = None,
                     include_captures: bool = True, include_loops: bool = True) -> list[WorkItem]:
    items: list[WorkItem] = []
    if include_captures:
        items += capture_items(target, captures_root)
    if include_loops:
        items += loop_items(target.wire, scenarios_dir)
    if not items:
        items.append(WorkItem("probe:short", build_request(target, "Say hello in five words.", max_tokens=64, salt="")))
    return items
