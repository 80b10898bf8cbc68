"""The Bash interpreter: only its allowlist runs, nothing reaches a process, every path stays inside."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.loop.confinement import confine
from conformance.loop.shell import BASH_ALLOWLIST, Shell, parse

from .conftest import client_box


@pytest.fixture
def shell(tmp_path: Path) -> tuple[Shell, Path, set]:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\nbeta\n")
    (root / "n.txt").write_text("1\n2\n3\n")
    seen: set = set()
    return Shell(lambda p: confine(root, p), seen.add), root, seen


@pytest.mark.parametrize("command,stdout", [
    ("echo hello", "hello\n"), ("echo -n hi", "hi"), ("true", ""), ("cat a.txt", "alpha\nbeta\n"),
    ("wc -l a.txt", "2 a.txt\n"), ("wc a.txt", "2 2 11 a.txt\n"), ("head -n 1 a.txt", "alpha\n"),
    ("tail -1 n.txt", "3\n"), ("ls", "a.txt\nn.txt\nsub\n"), ("ls -F", "a.txt\nn.txt\nsub/\n"),
    ("printf '%s-%s\\n' a b c", "a-b\nc-\n"), ("printf '100%%\\t'", "100%\t"),
    ("mkdir -p d/e && echo 'x y' > d/e/f.txt && cat d/e/f.txt", "x y\n"),
    ("echo one > o.txt && echo two >> o.txt && cat o.txt", "one\ntwo\n"), ("echo 'a\nb'", "a\nb\n"),
])
def test_allowlisted_commands_work(shell, command: str, stdout: str) -> None:
    sh, root, _ = shell
    assert sh.run(command, root) == (stdout, "", 0)


def test_pwd_is_the_working_directory_given(shell) -> None:
    sh, root, _ = shell
    assert sh.run("pwd", root / "sub") == (f"{root / 'sub'}\n", "", 0)


def test_files_read_and_written_are_remembered(shell) -> None:
    sh, root, seen = shell
    sh.run("cat a.txt && echo x > made.txt", root)
    assert seen == {root / "a.txt", root / "made.txt"}


@pytest.mark.parametrize("command", [
    "rm -rf /", "python3 -c 'print(1)'", "curl http://example.com", "sh -c ls", "bash", "env",
    "ls; rm a.txt", "cat a.txt | wc -l", "ls && rm a.txt", "echo $(whoami)", "echo `whoami`", "echo $HOME",
    "ls || true", "sleep 100 &", "cat < a.txt", "(ls)", "echo hi 2>&1", "echo a\nls", "echo x > a > b", "> a",
    "ls && ", "echo 'unterminated", "",
])
def test_other_programs_and_shell_syntax_are_refused_before_anything_runs(shell, command: str) -> None:
    sh, root, _ = shell
    out, err, code = sh.run(command, root)
    assert (out, code) == ("", 126) and err.startswith("sandbox: ")
    assert (root / "a.txt").read_text() == "alpha\nbeta\n"


@pytest.mark.parametrize("command,needle", [
    ("echo x > /tmp/escape.txt", "outside the working directory"), ("echo x > ../escape.txt", "'..'"),
    ("cat /etc/passwd", "outside the working directory"), ("ls /", "outside the working directory"),
    ("ls ..", "'..'"), ("mkdir ../evil", "'..'"), ("cat missing.txt", "No such file or directory"),
    ("head -x a.txt", "option -x is not supported"), ("printf '%d' 3", "only the %s directive"),
    ("echo x > sub", "Is a directory"),
])
def test_a_failing_command_says_why_on_stderr(shell, command: str, needle: str) -> None:
    sh, root, _ = shell
    out, err, code = sh.run(command, root)
    assert code == 1 and needle in err, (out, err, code)
    assert not Path("/tmp/escape.txt").exists() and not (root.parent / "escape.txt").exists()


def test_the_allowlist_is_what_parse_accepts() -> None:
    for name in BASH_ALLOWLIST:
        assert parse(f"{name} x")[0][0][0] == name
    assert parse("echo a > f && cat f") == [(["echo", "a"], (">", "f")), (["cat", "f"], None)]


def test_the_allowlist_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "loop.md").read_text()
    for name in BASH_ALLOWLIST:
        assert f"`{name}`" in doc


def test_model_output_never_reaches_a_process(tmp_path: Path, monkeypatch) -> None:
    def boom(*a, **k):
        raise AssertionError("the sandbox started a process")

    monkeypatch.setattr(subprocess, "Popen", boom)
    monkeypatch.setattr(os, "system", boom)
    for client, tool, key in (("claude-code", "Bash", "command"), ("opencode", "bash", "command"),
                              ("codex", "exec_command", "cmd")):
        box = client_box(tmp_path / client, client)
        box.seed({"a.txt": "a\n"})
        for command in ("ls", "echo hi > x.txt", "cat a.txt", "python3 -c 1"):
            box.run(tool, {key: command})


_WORDS = st.sampled_from(["ls", "cat", "echo", "mkdir", "-p", "wc", "head", "-n", "1", "tail", "pwd", "touch",
                          "a.txt", "..", "../x", "/etc/passwd", "/tmp", ">", ">>", "&&", ";", "|", "$(id)",
                          "`id`", "'q w'", '"q"', "rm", "-rf", "/", "..//..", "x/../../y", "~", "*", "&", "<"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(_WORDS, min_size=1, max_size=8))
def test_no_command_escapes_the_root(tmp_path_factory, words):
    parent = Path(os.path.realpath(tmp_path_factory.mktemp("prop")))
    (parent / "sentinel.txt").write_text("keep")
    root = parent / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    try:
        Shell(lambda p: confine(root, p), lambda p: None).run(" ".join(words), root)
    except OSError:
        pass  # mkdir of an existing directory and the like: the sandbox words these as tool errors
    assert sorted(p.name for p in parent.iterdir()) == ["root", "sentinel.txt"]
    assert (parent / "sentinel.txt").read_text() == "keep"
