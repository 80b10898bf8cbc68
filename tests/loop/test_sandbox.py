"""The sandbox plays a persona: every escape refused through every tool, every real schema's
argument names understood, and an unknown client's tools bound by their shape."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.clients.persona import persona_by_shape
from conformance.loop.sandbox import Sandbox

from .client_schemas import SCHEMAS
from .conftest import NAMES, client_box


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("top secret\n")
    return d


@pytest.fixture(params=sorted(NAMES))
def box(request, tmp_path: Path) -> Sandbox:
    s = client_box(tmp_path / "root", request.param)
    s.seed({"a.txt": "alpha\nbeta\n", "sub/b.txt": "gamma\n"})
    s.names = NAMES[request.param]
    return s


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink-file", "symlink-dir"])
@pytest.mark.parametrize("op", ["read", "write", "edit"])
def test_escapes_are_refused(box: Sandbox, outside: Path, how: str, op: str) -> None:
    n = box.names
    if how == "absolute":
        target = str(outside / "secret.txt")
    elif how == "dotdot":
        target = "../outside/secret.txt"
    elif how == "symlink-file":
        os.symlink(outside / "secret.txt", box.root / "link.txt")
        target = str(box.root / "link.txt")
    else:
        os.symlink(outside, box.root / "linkdir")
        target = str(box.root / "linkdir" / "secret.txt")
    args = {n["path"]: target}
    if op == "write":
        args["content"] = "pwned"
    if op == "edit":
        args[n["old"]], args[n["new"]] = "top", "pwned"
    out = box.run(n[op], args)
    assert out.is_error, out
    assert "outside" in out.text or ".." in out.text
    assert "top secret" not in out.text
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert not (outside / "pwned").exists()
    rule = {"absolute": "outside_root", "dotdot": "parent_dir"}.get(how, "symlink_out")
    [incident] = box.take_incidents()
    assert (incident.kind, incident.tool, incident.rule, incident.subject) == ("refused", n[op], rule, target)


def test_write_through_symlinked_parent_creates_nothing_outside(box: Sandbox, outside: Path) -> None:
    os.symlink(outside, box.root / "linkdir")
    n = box.names
    out = box.run(n["write"], {n["path"]: str(box.root / "linkdir" / "new.txt"), "content": "x"})
    assert out.is_error
    assert not (outside / "new.txt").exists()


@pytest.mark.parametrize("client", sorted(SCHEMAS))
def test_sandbox_reads_the_argument_names_of_the_real_schemas(tmp_path: Path, client: str) -> None:
    box = client_box(tmp_path / "r", client)
    box.seed({"a.txt": "alpha\n"})
    n = NAMES[client]
    box.run(n["read"], {n["path"]: str(box.root / "a.txt")})
    values = {"file_path": str(box.root / "a.txt"), "filePath": str(box.root / "a.txt"), "content": "alpha\n",
              "old_string": "alpha", "new_string": "beta", "oldString": "alpha", "newString": "beta",
              "command": "ls", "pattern": "*.txt"}
    for name, schema in SCHEMAS[client].items():
        args = {k: values[k] for k in schema.get("required", [])}
        if name.lower() == "grep":
            args["pattern"] = "alp"  # a regular expression there, not a glob
        out = box.run(name, args)
        assert not out.is_error, (name, args, out.text)


# ---------------------------------------------------------------------------------- an unknown client
UNKNOWN_TOOLS = {
    "read_files": {"type": "object", "properties": {"filepath": {"type": "string"}}, "required": ["filepath"]},
    "write_file": {"type": "object", "properties": {"filepath": {"type": "string"}, "content": {"type": "string"}},
                   "required": ["filepath", "content"]},
    "replace_in_file": {"type": "object", "properties": {"filepath": {"type": "string"}, "old_str": {"type": "string"},
                                                         "new_str": {"type": "string"}}},
    "run_commands": {"type": "object", "properties": {"command": {"type": "string"}, "cwd": {"type": "string"}},
                     "required": ["command"]},
    "search_web": {"type": "object", "properties": {"query": {"type": "string"}}},
}


def test_an_unknown_clients_tools_are_played_by_their_shape(tmp_path: Path) -> None:
    persona = persona_by_shape(UNKNOWN_TOOLS)
    assert {name: b.operation for name, b in persona.tools.items()} == {
        "read_files": "read", "write_file": "write", "replace_in_file": "edit", "run_commands": "shell"}
    assert dict(persona.tools["run_commands"].arguments) == {"command": "command", "cwd": "cwd"}
    box = Sandbox(tmp_path / "root", persona)
    box.seed({"notes.txt": "mode=draft\n", "sub/x.txt": "x\n"})
    assert box.run("read_files", {"filepath": "notes.txt"}).text == "mode=draft\n"
    assert not box.run("replace_in_file", {"filepath": "notes.txt", "old_str": "draft", "new_str": "final"}).is_error
    assert not box.run("write_file", {"filepath": "out.txt", "content": "done\n"}).is_error  # no read-before-write
    assert box.run("run_commands", {"command": "cat out.txt notes.txt"}).text == "done\nmode=final\n"
    assert box.run("run_commands", {"command": "pwd", "cwd": "sub"}).text == f"{box.root / 'sub'}\n"
    unknown = box.run("search_web", {"query": "x"})
    assert unknown.is_error and "unknown tool 'search_web'" in unknown.text
    assert box.run("read_files", {"filepath": "../secret"}).is_error
