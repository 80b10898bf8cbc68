"""The operations, implemented once, as each client's tools reach them: arguments in the client's
names, read-before-write, edits, search and listing."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.clients.persona import ToolBinding
from conformance.loop.confinement import SandboxError
from conformance.loop.operations import Arguments
from conformance.loop.sandbox import Sandbox

from .conftest import NAMES, client_box


@pytest.fixture(params=sorted(NAMES))
def box(request, tmp_path: Path) -> Sandbox:
    s = client_box(tmp_path / "root", request.param)
    s.seed({"a.txt": "alpha\nbeta\n", "sub/b.txt": "gamma\n", "dup.txt": "x x x\n"})
    s.names = NAMES[request.param]
    return s


def test_arguments_are_read_in_the_clients_names_and_checked_on_use() -> None:
    a = Arguments(ToolBinding("read", {"path": "file_path", "offset": "offset"}), {"file_path": "a", "offset": 2.0})
    assert (a.get("path", required=True), a.get("offset", int), a.get("limit", int)) == ("a", 2, None)
    with pytest.raises(SandboxError, match="The required parameter `file_path` is missing"):
        Arguments(ToolBinding("read", {"path": "file_path"}), {}).get("path", required=True)
    with pytest.raises(SandboxError, match="`offset` type is expected as `integer`"):
        Arguments(ToolBinding("read", {"offset": "offset"}), {"offset": True}).get("offset", int)
    with pytest.raises(SandboxError, match="`limit` type is expected as `int` but provided as `str`"):
        Arguments(ToolBinding("read", {"limit": "limit"}), {"limit": "3"}).get("limit", int)
    # a parameter the client requires although the operation defaults it (Claude Code's LS path)
    with pytest.raises(SandboxError, match="`path` is missing"):
        Arguments(ToolBinding("list", {"path": "path"}, frozenset({"path"})), {}).get("path")
    assert Arguments(ToolBinding("grep", {"ignore_case": "-i"}), {"-i": "yes"}).flag("ignore_case") is True


def test_write_edit_and_read_before_overwrite(box: Sandbox) -> None:
    n = box.names
    # Overwriting a file the session never read is refused, as both clients refuse it.
    refused = box.run(n["write"], {n["path"]: str(box.root / "a.txt"), "content": "new"})
    assert refused.is_error
    assert box.run(n["read"], {n["path"]: str(box.root / "a.txt")}).is_error is False
    assert not box.run(n["edit"], {n["path"]: str(box.root / "a.txt"), n["old"]: "beta", n["new"]: "BETA"}).is_error
    assert (box.root / "a.txt").read_text() == "alpha\nBETA\n"
    missing = box.run(n["edit"], {n["path"]: str(box.root / "a.txt"), n["old"]: "nope", n["new"]: "x"})
    assert missing.is_error
    created = box.run(n["write"], {n["path"]: "new/c.txt", "content": "c"})
    assert not created.is_error and (box.root / "new" / "c.txt").read_text() == "c"


def test_a_file_the_shell_read_counts_as_read(box: Sandbox) -> None:
    n = box.names
    assert not box.run(n["bash"], {"command": "cat a.txt"}).is_error
    assert not box.run(n["write"], {n["path"]: "a.txt", "content": "over"}).is_error


def test_edit_needs_one_match_unless_all_are_replaced(box: Sandbox) -> None:
    n = box.names
    box.run(n["read"], {n["path"]: "dup.txt"})
    assert box.run(n["edit"], {n["path"]: "dup.txt", n["old"]: "x", n["new"]: "x"}).is_error  # no change
    assert box.run(n["edit"], {n["path"]: "dup.txt", n["old"]: "x", n["new"]: "y"}).is_error  # three matches
    assert not box.run(n["edit"], {n["path"]: "dup.txt", n["old"]: "x", n["new"]: "y", n["all"]: True}).is_error
    assert (box.root / "dup.txt").read_text() == "y y y\n"


def test_glob_grep_and_bad_arguments(box: Sandbox) -> None:
    n = box.names
    assert str(box.root / "sub" / "b.txt") in box.run(n["glob"], {"pattern": "**/*.txt"}).text
    assert str(box.root / "a.txt") in box.run(n["grep"], {"pattern": "alph"}).text
    bad = box.run(n["read"], {})
    assert bad.is_error and "missing" in bad.text
    assert box.run(n["grep"], {"pattern": "("}).is_error
    assert "tool arguments must be a JSON object" in box.run(n["read"], "a.txt").text


def test_claude_code_grep_modes_and_ls(tmp_path: Path) -> None:
    cc = client_box(tmp_path / "cc", "claude-code")
    cc.seed({"a.txt": "alpha\n", "sub/c.md": "Alpha\nbeta\n"})
    assert cc.run("Grep", {"pattern": "alpha", "-i": True}).text == (
        f"Found 2 files\n{cc.root / 'a.txt'}\n{cc.root / 'sub' / 'c.md'}")
    assert cc.run("Grep", {"pattern": "a", "output_mode": "count"}).text == f"{cc.root / 'a.txt'}:1\n{cc.root / 'sub/c.md'}:2"
    assert cc.run("Grep", {"pattern": "zzz", "output_mode": "content"}).text == "No matches found"
    assert cc.run("LS", {"path": str(cc.root)}).text == f"- {cc.root}/\n  - a.txt\n  - sub/"
    assert cc.run("LS", {}).is_error


def test_opencode_list_and_directory_read(tmp_path: Path) -> None:
    oc = client_box(tmp_path / "oc", "opencode")
    oc.seed({"a.txt": "alpha\n", "sub/c.md": "x\n"})
    assert oc.run("list", {}).text == f"{oc.root}/\n  a.txt\n    c.md\n"
    assert oc.run("read", {"filePath": "sub"}).text == (
        f"<path>{oc.root / 'sub'}</path>\n<type>directory</type>\n<entries>\nc.md\n\n(1 entries)\n</entries>")
