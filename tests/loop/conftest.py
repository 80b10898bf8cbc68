"""Fixtures of the loop self-tests: the reference engine in-process, one per fault set; a sandbox
playing a known client."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from conformance.clients import profile
from conformance.loop.sandbox import Sandbox

# The tool and argument names of the two clients with file tools.
NAMES = {
    "claude-code": {"read": "Read", "write": "Write", "edit": "Edit", "bash": "Bash", "path": "file_path",
                    "old": "old_string", "new": "new_string", "all": "replace_all", "glob": "Glob", "grep": "Grep"},
    "opencode": {"read": "read", "write": "write", "edit": "edit", "bash": "bash", "path": "filePath",
                 "old": "oldString", "new": "newString", "all": "replaceAll", "glob": "glob", "grep": "grep"},
}


PATCH = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-mode=draft\n+mode=final\n*** End Patch\n"


def received_anthropic() -> dict:
    return {"role": "assistant", "stop_reason": "tool_use", "content": [
        {"type": "thinking", "thinking": "I read first.", "signature": "c2ln"},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/x/a.txt"}},
        {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "/x/b.txt"}},
    ]}


def received_responses() -> dict:
    """An accumulated Response as the judge hands it over: reasoning, a function call, a custom call."""
    return {"id": "resp_1", "object": "response", "status": "completed", "model": "m", "output": [
        {"id": "rs_1", "type": "reasoning", "summary": [], "status": "completed", "encrypted_content": "ENC-opaque-1",
         "content": [{"type": "reasoning_text", "text": "I read first."}]},
        {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_a", "name": "exec_command",
         "arguments": "{\"cmd\":\"cat notes.txt\"}"},
        {"id": "ctc_1", "type": "custom_tool_call", "status": "completed", "call_id": "call_b", "name": "apply_patch",
         "input": PATCH},
    ], "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}


def client_box(root: Path, client: str) -> Sandbox:
    """A sandbox at `root` playing the tools of the known client `client`."""
    return Sandbox(root, profile(client).persona)


@contextlib.contextmanager
def engine(*faults: str, model: str = "reference-model"):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=tuple(faults), model=model) as url:
        yield url


@pytest.fixture(scope="module")
def conformant_engine():
    with engine() as url:
        yield url


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "loop: agent-loop scenarios driven to completion")
    config.addinivalue_line("markers", "live: drives the real Claude Code / opencode CLIs (opt-in: -m live)")


def pytest_collection_modifyitems(config, items) -> None:
    """Live tests here are opt-in like the suite's: without -m they are deselected."""
    if config.getoption("markexpr", ""):
        return
    here = __import__("pathlib").Path(__file__).resolve().parent
    drop = [i for i in items if i.get_closest_marker("live") and here in __import__("pathlib").Path(str(i.path)).resolve().parents]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [i for i in items if i not in drop]
