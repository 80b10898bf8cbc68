"""The sandbox's limits: every exhaustion a hostile model tried is stopped at its named limit,
quickly, with nothing past the limit on disk, and every escape is kept as an incident by rule."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conformance.clients import profile
from conformance.loop import operations
from conformance.loop.limits import Guard, LimitReached, SandboxLimits
from conformance.loop.patch import apply_patch_text
from conformance.loop.sandbox import Sandbox

from .conftest import client_box


def _bytes_on_disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _bash(box: Sandbox, command: str):
    return box.run("Bash", {"command": command})


def test_a_deep_mkdir_stops_at_the_path_depth_and_makes_nothing(tmp_path: Path) -> None:
    box = client_box(tmp_path / "root", "claude-code")
    out = _bash(box, "mkdir -p " + "/".join(["a"] * 1000))
    assert out.is_error and "path_depth" in out.text
    assert not (box.root / "a").exists()
    [incident] = box.take_incidents()
    assert (incident.kind, incident.rule, incident.tool) == ("limit", "path_depth", "Bash")
    # within the limit it works, made one level at a time
    assert not _bash(box, "mkdir -p " + "/".join(["a"] * 30)).is_error
    assert box.guard.created == 30


def test_an_amplifying_cat_is_refused_before_it_writes(tmp_path: Path) -> None:
    box = client_box(tmp_path / "root", "claude-code")
    box.seed({"b": "x" * 65536})
    start = time.monotonic()
    out = _bash(box, "cat " + " b" * 200 + " > c && cat c")
    assert out.is_error and "written_bytes" in out.text
    assert not (box.root / "c").exists() and _bytes_on_disk(box.root) == 65536
    out = _bash(box, "cat b b")  # 128 KiB to the model: over the output limit
    assert out.is_error and "output_bytes" in out.text
    assert time.monotonic() - start < 5
    assert [i.rule for i in box.take_incidents()] == ["written_bytes", "output_bytes"]


def test_the_bytes_written_add_up_over_the_sandbox(tmp_path: Path) -> None:
    box = Sandbox(tmp_path / "root", profile("claude-code").persona, limits=SandboxLimits(written_bytes=100))
    assert not box.run("Write", {"file_path": "one.txt", "content": "x" * 60}).is_error
    out = box.run("Write", {"file_path": "two.txt", "content": "x" * 60})
    assert out.is_error and "written_bytes" in out.text and not (box.root / "two.txt").exists()


def test_touching_many_files_stops_at_the_file_count(tmp_path: Path) -> None:
    box = client_box(tmp_path / "root", "opencode")
    out = box.run("bash", {"command": "touch " + " ".join(f"f{i}" for i in range(1500)),
                           "description": "make files"})
    assert "files" in out.text
    assert len(list(box.root.iterdir())) == box.limits.files
    assert [i.rule for i in box.take_incidents()] == ["files"]


def test_a_catastrophic_regex_is_matched_in_linear_time(tmp_path: Path) -> None:
    box = client_box(tmp_path / "root", "claude-code")
    box.seed({"a.txt": "a" * 64 + "b\n"})
    start = time.monotonic()
    out = box.run("Grep", {"pattern": "(a+)+$", "path": str(box.root), "output_mode": "content"})
    assert time.monotonic() - start < 2  # Python's re takes ~14 s at 27 characters, doubling per character
    assert not out.is_error
    out = box.run("Grep", {"pattern": "(a)\\1", "path": str(box.root)})  # RE2 has no backreferences
    assert out.is_error and "invalid regular expression" in out.text


def test_a_patch_that_matches_nowhere_is_found_missing_in_linear_time(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "big.txt").write_text("x\n" * 40000)
    patch = "\n".join(["*** Begin Patch", "*** Update File: big.txt", "@@", *["-x"] * 4000, "-y", "+z",
                       "*** End Patch"])
    start = time.monotonic()
    with pytest.raises(ValueError, match="Failed to find expected lines"):
        apply_patch_text(root, patch)
    assert time.monotonic() - start < 5  # the seek compared every window: 36,000 x 4,000 lines, three times


def test_a_call_past_its_time_stops_with_its_limit(tmp_path: Path) -> None:
    box = Sandbox(tmp_path / "root", profile("claude-code").persona, limits=SandboxLimits(call_seconds=-1))
    box.seed({"a.txt": "alpha\n"})
    out = box.run("Glob", {"pattern": "*.txt"})
    assert out.is_error and "call_seconds" in out.text
    assert SandboxLimits().within(3).call_seconds == 3 and SandboxLimits().within(600).call_seconds == 10


def test_a_result_over_the_output_limit_is_cut_with_a_note(tmp_path: Path) -> None:
    box = client_box(tmp_path / "root", "claude-code")
    box.seed({"big.txt": "line\n" * 40000})
    out = box.run("Read", {"file_path": str(box.root / "big.txt")})
    assert len(out.text.encode()) < box.limits.output_bytes + 100 and "output cut by the sandbox" in out.text
    assert [i.rule for i in box.take_incidents()] == ["output_bytes"]


def test_any_exception_of_an_operation_is_the_tool_error(tmp_path: Path, monkeypatch) -> None:
    def crashing(box, args):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setitem(operations.OPERATIONS, "read", crashing)
    box = client_box(tmp_path / "root", "claude-code")
    out = box.run("Read", {"file_path": "a.txt"})
    assert out.is_error and "RecursionError" in out.text


@pytest.mark.parametrize("command,rule", [
    ("cat /etc/passwd", "outside_root"), ("cat ../x", "parent_dir"), ("cat a; id", "shell_operator"),
    ("echo $ANTHROPIC_API_KEY", "substitution"), ("curl http://example.com", "command_not_allowed"),
    ("cat a\nid", "multi_line")])
def test_every_refused_command_is_an_incident_by_rule(tmp_path: Path, command: str, rule: str) -> None:
    box = client_box(tmp_path / "root", "claude-code")
    assert _bash(box, command).is_error
    [incident] = box.take_incidents()
    assert (incident.kind, incident.tool, incident.subject, incident.rule) == ("refused", "Bash", command, rule)


def test_codex_workdir_and_patch_tricks_are_incidents(tmp_path: Path) -> None:
    box = Sandbox(tmp_path / "root", profile("codex").persona)
    assert box.run("exec_command", {"cmd": "ls", "workdir": "/"}).text
    out = box.run("apply_patch", {"input": "*** Begin Patch\n*** Add File: $(id).txt\n+x\n*** End Patch\n"})
    assert "metacharacters" in out.text and not list(box.root.iterdir())
    assert [(i.tool, i.rule) for i in box.take_incidents()] == [("exec_command", "outside_root"),
                                                               ("apply_patch", "patch_path")]


def test_the_guard_charges_before_the_disk(tmp_path: Path) -> None:
    guard = Guard(tmp_path, SandboxLimits(written_bytes=10, files=2))
    with pytest.raises(LimitReached, match="files"):
        guard.write(tmp_path / "d1" / "d2" / "f", "x")
    assert not (tmp_path / "d1").exists()
