"""The sandbox refuses every escape and runs only its own Bash builtins."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.loop.sandbox import BASH_ALLOWLIST, Sandbox


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("top secret\n")
    return d


@pytest.fixture(params=["claude-code", "opencode"])
def box(request, tmp_path: Path) -> Sandbox:
    s = Sandbox(tmp_path / "root", request.param)
    s.seed({"a.txt": "alpha\nbeta\n", "sub/b.txt": "gamma\n"})
    return s


def _names(box: Sandbox) -> dict[str, str]:
    if box.client == "claude-code":
        return {"read": "Read", "write": "Write", "edit": "Edit", "bash": "Bash", "path": "file_path",
                "old": "old_string", "new": "new_string", "glob": "Glob", "grep": "Grep"}
    return {"read": "read", "write": "write", "edit": "edit", "bash": "bash", "path": "filePath",
            "old": "oldString", "new": "newString", "glob": "glob", "grep": "grep"}


def test_read_formats_match_the_real_clients(tmp_path: Path) -> None:
    # Measured on Claude Code 2.1.197 and opencode 1.18.33 (docs/loop.md).
    cc = Sandbox(tmp_path / "cc", "claude-code")
    cc.seed({"seed.txt": "one\ntwo\n"})
    assert cc.run("Read", {"file_path": str(cc.root / "seed.txt")}).text == "1\tone\n2\ttwo\n3\t"
    oc = Sandbox(tmp_path / "oc", "opencode")
    oc.seed({"seed.txt": "one\ntwo\n"})
    assert oc.run("read", {"filePath": str(oc.root / "seed.txt")}).text == (
        f"<path>{oc.root / 'seed.txt'}</path>\n<type>file</type>\n<content>\n1: one\n2: two\n\n"
        "(End of file - total 2 lines)\n</content>")


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink-file", "symlink-dir"])
@pytest.mark.parametrize("op", ["read", "write", "edit"])
def test_escapes_are_refused(box: Sandbox, outside: Path, how: str, op: str) -> None:
    n = _names(box)
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


def test_write_through_symlinked_parent_creates_nothing_outside(box: Sandbox, outside: Path) -> None:
    os.symlink(outside, box.root / "linkdir")
    n = _names(box)
    out = box.run(n["write"], {n["path"]: str(box.root / "linkdir" / "new.txt"), "content": "x"})
    assert out.is_error
    assert not (outside / "new.txt").exists()


@pytest.mark.parametrize("command", [
    "rm -rf /", "python3 -c 'print(1)'", "curl http://example.com", "sh -c ls", "bash", "env",
    "ls; rm a.txt", "cat a.txt | wc -l", "ls && rm a.txt", "echo $(whoami)", "echo `whoami`", "echo $HOME",
    "ls || true", "sleep 100 &", "cat < a.txt", "(ls)", "echo hi 2>&1", "echo x > /tmp/escape.txt",
    "echo x > ../escape.txt", "cat /etc/passwd", "ls /", "ls ..", "mkdir ../evil",
])
def test_disallowed_commands_and_metacharacters_are_refused(box: Sandbox, command: str) -> None:
    before = sorted(p.name for p in box.root.parent.iterdir())
    out = box.run(_names(box)["bash"], {"command": command})
    assert out.is_error, (command, out)
    assert (box.root / "a.txt").read_text() == "alpha\nbeta\n"
    assert sorted(p.name for p in box.root.parent.iterdir()) == before
    assert not Path("/tmp/escape.txt").exists()


@pytest.mark.parametrize("command,stdout", [
    ("echo hello", "hello"),
    ("pwd", None),
    ("cat a.txt", "alpha\nbeta"),
    ("wc -l a.txt", "2 a.txt"),
    ("head -n 1 a.txt", "alpha"),
    ("tail -n 1 a.txt", "beta"),
    ("ls", "a.txt\nsub"),
    ("mkdir -p d/e && echo 'x y' > d/e/f.txt && cat d/e/f.txt", "x y"),
    ("echo one > n.txt && echo two >> n.txt && cat n.txt", "one\ntwo"),
])
def test_allowlisted_commands_work(box: Sandbox, command: str, stdout: str | None) -> None:
    out = box.run(_names(box)["bash"], {"command": command})
    assert not out.is_error, out
    assert out.text.strip() == (stdout if stdout is not None else str(box.root))


def test_allowlist_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "loop.md").read_text()
    for name in BASH_ALLOWLIST:
        assert f"`{name}`" in doc


def test_write_edit_and_read_before_overwrite(box: Sandbox) -> None:
    n = _names(box)
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


def test_glob_grep_and_unknown_tools(box: Sandbox) -> None:
    n = _names(box)
    assert str(box.root / "sub" / "b.txt") in box.run(n["glob"], {"pattern": "**/*.txt"}).text
    assert str(box.root / "a.txt") in box.run(n["grep"], {"pattern": "alph"}).text
    unknown = box.run("Agent" if box.client == "claude-code" else "task", {"prompt": "x"})
    assert unknown.is_error
    bad = box.run(n["read"], {})
    assert bad.is_error and "missing" in bad.text


def test_model_output_never_reaches_a_process(box: Sandbox, monkeypatch) -> None:
    import subprocess

    def boom(*a, **k):
        raise AssertionError("the sandbox started a process")

    monkeypatch.setattr(subprocess, "Popen", boom)
    monkeypatch.setattr(os, "system", boom)
    for command in ("ls", "echo hi > x.txt", "cat a.txt", "python3 -c 1"):
        box.run(_names(box)["bash"], {"command": command})


# ---------------------------------------------------------------------------- properties
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_WORDS = st.sampled_from(["ls", "cat", "echo", "mkdir", "-p", "wc", "head", "-n", "1", "tail", "pwd", "touch",
                          "a.txt", "..", "../x", "/etc/passwd", "/tmp", ">", ">>", "&&", ";", "|", "$(id)",
                          "`id`", "'q w'", '"q"', "rm", "-rf", "/", "..//..", "x/../../y", "~", "*", "&", "<"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(_WORDS, min_size=1, max_size=8), client=st.sampled_from(["claude-code", "opencode"]))
def test_no_command_escapes_the_root(tmp_path_factory, words, client):
    parent = tmp_path_factory.mktemp("prop")
    (parent / "sentinel.txt").write_text("keep")
    box = Sandbox(parent / "root", client)
    box.seed({"a.txt": "a\n"})
    box.run("Bash" if client == "claude-code" else "bash", {"command": " ".join(words)})
    assert sorted(p.name for p in parent.iterdir()) == ["root", "sentinel.txt"]
    assert (parent / "sentinel.txt").read_text() == "keep"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.text(alphabet="./abx~-", min_size=1, max_size=20) | st.sampled_from(["/", "/etc", "//etc/x"]))
def test_every_path_resolves_inside_the_root_or_is_refused(tmp_path_factory, path):
    from conformance.loop.sandbox import SandboxError

    root = tmp_path_factory.mktemp("paths") / "root"
    box = Sandbox(root, "claude-code")
    try:
        p = box.resolve(path)
    except SandboxError:
        return
    assert p == box.root or box.root in p.parents


@pytest.mark.parametrize("client", ["claude-code", "opencode"])
def test_sandbox_reads_the_argument_names_of_the_real_schemas(tmp_path: Path, client: str) -> None:
    from conformance.loop.tools import SCHEMAS

    box = Sandbox(tmp_path / "r", client)
    box.seed({"a.txt": "alpha\n"})
    box.run("Read" if client == "claude-code" else "read", {("file_path" if client == "claude-code" else "filePath"):
                                                          str(box.root / "a.txt")})
    values = {"file_path": str(box.root / "a.txt"), "filePath": str(box.root / "a.txt"), "content": "alpha\n",
              "old_string": "alpha", "new_string": "beta", "oldString": "alpha", "newString": "beta",
              "command": "ls", "pattern": "*.txt"}
    for name, schema in SCHEMAS[client].items():
        args = {k: values[k] for k in schema.get("required", [])}
        if name.lower() == "grep":
            args["pattern"] = "alp"  # a regular expression there, not a glob
        out = box.run(name, args)
        assert not out.is_error, (name, args, out.text)
