"""Each client's voice words results as that client does (measured, docs/loop.md); the generic
voice words them plainly; an unknown voice name gets the generic voice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.clients import profile
from conformance.clients.persona import Persona, ToolBinding
from conformance.loop.sandbox import Sandbox
from conformance.loop.voices import GENERIC_VOICE, VOICES, voice_for

from .conftest import client_box

EXEC_SHAPE = re.compile(r"Chunk ID: [0-9a-f]{6}\nWall time: \d+\.\d{4} seconds\nProcess exited with code (-?\d+)\n"
                        r"Original token count: (\d+)\nOutput:\n(.*)\Z", re.S)


def exec_parts(text: str) -> tuple[int, int, str]:
    m = EXEC_SHAPE.match(text)
    assert m, f"not Codex's exec_command framing: {text!r}"
    return int(m.group(1)), int(m.group(2)), m.group(3)


@pytest.fixture
def codex(tmp_path):
    sb = client_box(tmp_path / "root", "codex")
    sb.seed({"notes.txt": "owner=bob\nmode=draft\nlevel=3\n", "src/app.py": "def greet():\n    print('Hi')\n"})
    return sb


def test_read_formats_match_the_real_clients(tmp_path: Path) -> None:
    # Measured on Claude Code 2.1.197 and opencode 1.18.33 (docs/loop.md).
    cc = client_box(tmp_path / "cc", "claude-code")
    cc.seed({"seed.txt": "one\ntwo\n"})
    assert cc.run("Read", {"file_path": str(cc.root / "seed.txt")}).text == "1\tone\n2\ttwo\n3\t"
    oc = client_box(tmp_path / "oc", "opencode")
    oc.seed({"seed.txt": "one\ntwo\n"})
    assert oc.run("read", {"filePath": str(oc.root / "seed.txt")}).text == (
        f"<path>{oc.root / 'seed.txt'}</path>\n<type>file</type>\n<content>\n1: one\n2: two\n\n"
        "(End of file - total 2 lines)\n</content>")


def test_claude_code_errors_are_tool_use_errors_and_bash_successes_are_marked(tmp_path: Path) -> None:
    cc = client_box(tmp_path / "cc", "claude-code")
    bad = cc.run("Read", {})
    assert bad.is_error and bad.text == "<tool_use_error>The required parameter `file_path` is missing</tool_use_error>"
    ok = cc.run("Bash", {"command": "true"})
    assert (ok.text, ok.is_error, ok.explicit_ok) == ("(Bash completed with no output)", False, True)
    failed = cc.run("Bash", {"command": "cat nothing.txt"})
    assert (failed.text, failed.is_error) == ("Exit code 1\ncat: nothing.txt: No such file or directory", True)


def test_opencode_names_a_failed_command_in_its_metadata(tmp_path: Path) -> None:
    oc = client_box(tmp_path / "oc", "opencode")
    out = oc.run("bash", {"command": "cat nothing.txt"})
    assert out.is_error and out.text == ("cat: nothing.txt: No such file or directory\n\n<bash_metadata>\n"
                                         "bash tool terminated command with exit code 1\n</bash_metadata>")


@pytest.mark.parametrize("client,tool,text", [
    ("claude-code", "Agent", "<tool_use_error>No such tool available: Agent</tool_use_error>"),
    ("opencode", "task", "Model tried to call unavailable tool 'task'. Available tools: bash, edit, glob, grep, list, "
                         "read, write."),
    ("codex", "shell", "unsupported call: shell"),
])
def test_an_unknown_tool_reads_as_the_client_says_it(tmp_path: Path, client: str, tool: str, text: str) -> None:
    out = client_box(tmp_path / client, client).run(tool, {"command": ["ls"]})
    assert out.is_error and out.text == text


# ---------------------------------------------------------------------------------- Codex
def test_exec_command_output_is_framed_as_codex_frames_it(codex):
    out = codex.run("exec_command", {"cmd": "cat notes.txt", "yield_time_ms": 1000, "tty": False})
    code, tokens, text = exec_parts(out.text)
    assert (code, text, out.is_error) == (0, "owner=bob\nmode=draft\nlevel=3\n", False)
    assert tokens == 8  # measured: 29 bytes -> 8


def test_exec_command_cwd_is_pinned_to_the_sandbox(codex):
    code, _, text = exec_parts(codex.run("exec_command", {"cmd": "pwd"}).text)
    assert (code, text) == (0, f"{codex.root}\n")
    code, _, text = exec_parts(codex.run("exec_command", {"cmd": "pwd", "workdir": "src"}).text)
    assert (code, text) == (0, f"{codex.root / 'src'}\n")


def test_exec_command_runs_the_one_interpreter(codex):
    # one allowlist: what the shell refuses, exec_command refuses with the same reason
    for cmd in ("python3 -c 'print(1)'", "rm -rf /", "sh -c ls", "bash -lc 'cat notes.txt'"):
        out = codex.run("exec_command", {"cmd": cmd})
        code, _, text = exec_parts(out.text)
        _, err, shell_code = codex.shell.run(cmd, codex.root)
        assert (code, out.is_error) == (126, True) and shell_code == 126
        assert err in text and "not allowed" in text


@pytest.mark.parametrize("cmd", ["cat /etc/passwd", "cat ../outside.txt", "ls /", "echo x > /tmp/escape.txt"])
def test_exec_command_stays_inside_the_root(codex, cmd):
    code, _, text = exec_parts(codex.run("exec_command", {"cmd": cmd}).text)
    assert code != 0
    assert "outside the working directory" in text or "'..'" in text


def test_exec_command_workdir_outside_or_not_a_directory_is_a_tool_error(codex):
    for workdir in ("/etc", "..", "/"):
        out = codex.run("exec_command", {"cmd": "ls", "workdir": workdir})
        assert out.is_error and ("outside" in out.text or "'..'" in out.text)
    for workdir in ("notes.txt", "nowhere"):
        out = codex.run("exec_command", {"cmd": "ls", "workdir": workdir})
        assert out.is_error and out.text == f"workdir {workdir!r} is not a directory inside {codex.root}"


def test_exec_command_needs_cmd(codex):
    out = codex.run("exec_command", {"command": "ls"})
    assert out.is_error and out.text == "The required parameter `cmd` is missing"


def test_exec_command_writes_a_file_as_a_shell_would_with_printf(codex):
    # what a model without apply_patch sends: a quoted multi-line argument, the %s directive
    out = codex.run("exec_command", {"cmd": "printf '%s' 'line one\nline two\n' > out.txt && cat out.txt"})
    assert exec_parts(out.text)[::2] == (0, "line one\nline two\n")
    assert codex.read_text("out.txt") == "line one\nline two\n"


def test_a_patch_applied_and_refused_read_as_codex_says_them(codex):
    ok = codex.run("apply_patch", {"input": "*** Begin Patch\n*** Add File: docs/new.md\n+# Title\n*** End Patch\n"})
    assert ok.text == ("Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n"
                       "A docs/new.md\n")
    missing = codex.run("apply_patch", {"patch": "x"})
    assert missing.is_error and missing.text.startswith("apply_patch verification failed: the patch text is missing")


def test_an_mcp_read_comes_back_as_content_parts(codex):
    out = codex.run("read_file", {"path": "notes.txt"}, namespace="mcp__files")
    assert not out.is_error and out.parts[1] == {"type": "input_text", "text": "owner=bob\nmode=draft\nlevel=3\n"}
    assert re.fullmatch(r"Wall time: \d+\.\d{4} seconds\nOutput:", out.parts[0]["text"])
    assert codex.run("read_file", {"path": "nothing.txt"}, namespace="mcp__files").text == "nothing.txt: No such file"


# ---------------------------------------------------------------------------------- generic
def test_the_generic_voice_words_results_plainly(tmp_path: Path) -> None:
    persona = Persona("generic", {"view": ToolBinding("read", {"path": "p"}),
                                  "save": ToolBinding("write", {"path": "p", "content": "c"}),
                                  "sh": ToolBinding("shell", {"command": "c"})}, read_before_write=False)
    box = Sandbox(tmp_path / "root", persona)
    box.seed({"a.txt": "one\ntwo\n"})
    assert box.run("view", {"p": "a.txt"}).text == "one\ntwo\n"
    assert box.run("save", {"p": "a.txt", "c": "new\n"}).text == f"wrote {box.root / 'a.txt'}"
    assert box.run("sh", {"c": "cat a.txt"}).text == "new\n"
    failed = box.run("sh", {"c": "cat nothing.txt"})
    assert failed.is_error and failed.text == "cat: nothing.txt: No such file or directory\n(exit code 1)"
    missing = box.run("view", {"p": "nothing.txt"})
    assert missing.is_error and missing.text == f"{box.root / 'nothing.txt'}: no such file"
    assert box.run("grep", {}).text == "unknown tool 'grep'; the tools are: save, sh, view"


def test_the_measured_clients_have_their_voices_and_an_unknown_name_gets_the_generic_one() -> None:
    for p in (profile(name).persona for name in ("claude-code", "opencode", "codex")):
        assert voice_for(p.voice) is VOICES[p.voice] is not GENERIC_VOICE
    assert voice_for("a-client-from-the-future") is GENERIC_VOICE


def test_a_persona_whose_voice_the_loop_does_not_know_is_worded_by_the_generic_voice(tmp_path: Path) -> None:
    # a client's own table with a voice no code here has: its results come back plainly, not refused
    persona = Persona("a-client-from-the-future", {"open": ToolBinding("read", {"path": "where"}),
                                                  "put": ToolBinding("write", {"path": "where", "content": "text"})})
    box = Sandbox(tmp_path / "root", persona)
    assert box.voice is GENERIC_VOICE
    assert box.run("put", {"where": "a.txt", "text": "hi\n"}).text == f"wrote {box.root / 'a.txt'}"
    assert box.run("open", {"where": "a.txt"}).text == "hi\n"
    refused = box.run("open", {"where": "../outside.txt"})
    assert refused.is_error and not refused.text.startswith("<tool_use_error>")
