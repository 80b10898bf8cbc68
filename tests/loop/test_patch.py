"""Codex's patch format through the sandbox's `patch` operation: every operation of the format,
every refusal the model must be able to read, and a refused patch changing nothing."""

from __future__ import annotations

import os

import pytest

from conformance.loop import patch as patch_format

from .conftest import client_box


@pytest.fixture
def box(tmp_path):
    sb = client_box(tmp_path / "root", "codex")
    sb.seed({"notes.txt": "owner=bob\nmode=draft\nlevel=3\n", "src/app.py": "def greet():\n    print('Hi')\n"})
    return sb


def patch(*lines: str) -> dict:
    return {"input": "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"}


def test_add_file(box):
    out = box.run("apply_patch", patch("*** Add File: docs/new.md", "+# Title", "+", "+body"))
    assert not out.is_error, out.text
    assert out.text == ("Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n"
                        "A docs/new.md\n")
    assert box.read_text("docs/new.md") == "# Title\n\nbody\n"


def test_update_file_with_context_and_two_chunks(box):
    box.seed({"multi.txt": "a\nb\nc\nd\ne\nf\n"})
    out = box.run("apply_patch", patch("*** Update File: multi.txt", "@@ a", "-b", "+B", " c", "@@", " e", "-f", "+F"))
    assert not out.is_error, out.text
    assert out.text.endswith("M multi.txt\n")
    assert box.read_text("multi.txt") == "a\nB\nc\nd\ne\nF\n"


def test_update_file_first_chunk_without_marker_and_whitespace_padded_markers(box):
    text = "  *** Begin Patch\n*** Update File: notes.txt\n owner=bob\n-mode=draft\n+mode=final\n *** End Patch  \n"
    out = box.run("apply_patch", {"input": text})
    assert not out.is_error, out.text
    assert box.read_text("notes.txt") == "owner=bob\nmode=final\nlevel=3\n"


def test_update_matches_ignoring_trailing_whitespace_and_keeps_a_final_newline(box):
    box.seed({"ws.txt": "x = 1   \ny = 2"})
    out = box.run("apply_patch", patch("*** Update File: ws.txt", "@@", "-x = 1", "+x = 10"))
    assert not out.is_error, out.text
    assert box.read_text("ws.txt") == "x = 10\ny = 2\n"


def test_update_pure_addition_appends_and_end_of_file_anchors_at_the_end(box):
    box.seed({"t.txt": "k\nv\nk\n"})
    out = box.run("apply_patch", patch("*** Update File: t.txt", "@@", "+added"))
    assert not out.is_error, out.text
    assert box.read_text("t.txt") == "k\nv\nk\nadded\n"
    out = box.run("apply_patch", patch("*** Update File: t.txt", "@@", "-k", "+K", " added", "*** End of File"))
    assert not out.is_error, out.text
    assert box.read_text("t.txt") == "k\nv\nK\nadded\n"


def test_update_with_move(box):
    out = box.run("apply_patch", patch("*** Update File: src/app.py", "*** Move to: src/main/app.py",
                                       "@@ def greet():", "-    print('Hi')", "+    print('Hello')"))
    assert not out.is_error, out.text
    assert out.text.endswith("M src/main/app.py\n")
    assert box.read_text("src/app.py") is None
    assert box.read_text("src/main/app.py") == "def greet():\n    print('Hello')\n"


def test_delete_file(box):
    out = box.run("apply_patch", patch("*** Delete File: notes.txt"))
    assert not out.is_error, out.text
    assert out.text.endswith("D notes.txt\n") and box.read_text("notes.txt") is None


def test_several_operations_in_one_patch(box):
    out = box.run("apply_patch", patch("*** Add File: a.txt", "+one", "*** Delete File: notes.txt",
                                       "*** Update File: src/app.py", "@@", "-    print('Hi')", "+    return 1"))
    assert not out.is_error, out.text
    assert out.text.endswith("A a.txt\nD notes.txt\nM src/app.py\n")
    assert box.read_text("a.txt") == "one\n" and box.read_text("src/app.py") == "def greet():\n    return 1\n"


def test_absolute_path_inside_the_root_is_the_same_file(box):
    out = box.run("apply_patch", patch(f"*** Update File: {box.root}/notes.txt", "@@", "-level=3", "+level=4"))
    assert not out.is_error, out.text
    assert "level=4" in box.read_text("notes.txt")


def test_parse_patch_reads_the_grammar():
    ops = patch_format.parse_patch("*** Begin Patch\n*** Add File: p/add.py\n+abc\n+def\n*** Delete File: p/del.py\n"
                                  "*** Update File: p/u.py\n*** Move to: p/u2.py\n@@ def f():\n-    pass\n"
                                  "+    return 123\n*** End Patch")
    assert [(o.kind, o.path) for o in ops] == [("add", "p/add.py"), ("delete", "p/del.py"), ("update", "p/u.py")]
    assert ops[0].contents == "abc\ndef\n" and ops[2].move_to == "p/u2.py"
    assert (ops[2].chunks[0].context, ops[2].chunks[0].old, ops[2].chunks[0].new) == (
        "def f():", ["    pass"], ["    return 123"])


# ---------------------------------------------------------------------------------- refusals
def refused(box, args, *needles):
    before = {p: box.read_text(p) for p in ("notes.txt", "src/app.py")}
    out = box.run("apply_patch", args)
    assert out.is_error, out.text
    assert out.text.startswith("apply_patch verification failed: "), out.text
    for n in needles:
        assert n in out.text, out.text
    assert {p: box.read_text(p) for p in before} == before  # a refused patch changes nothing
    return out.text


@pytest.mark.parametrize("path", ["../outside.txt", "src/../../outside.txt", "a/../../../etc/x"])
def test_refuses_path_traversal(box, path):
    refused(box, patch(f"*** Add File: {path}", "+x"), "'..'")
    assert not (box.root.parent / "outside.txt").exists()


@pytest.mark.parametrize("path", ["/etc/passwd", "/tmp/conformance-escape.txt"])
def test_refuses_absolute_paths_outside(box, path):
    refused(box, patch(f"*** Add File: {path}", "+x"), "outside the working directory")
    refused(box, patch(f"*** Delete File: {path}"), "outside the working directory")
    assert not os.path.exists("/tmp/conformance-escape.txt")


def test_refuses_a_symlinked_file_leading_out(box, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("keep\n")
    os.symlink(secret, box.root / "link.txt")
    refused(box, patch("*** Update File: link.txt", "@@", "-keep", "+gone"), "outside the working directory")
    refused(box, patch("*** Delete File: link.txt"), "outside the working directory")
    refused(box, patch("*** Add File: link.txt", "+over"), "outside the working directory")
    assert secret.read_text() == "keep\n"


def test_refuses_writing_through_a_symlinked_directory(box, tmp_path):
    outside = tmp_path / "outdir"
    outside.mkdir()
    os.symlink(outside, box.root / "linkdir")
    refused(box, patch("*** Add File: linkdir/new.txt", "+x"), "outside the working directory")
    refused(box, patch("*** Update File: notes.txt", "*** Move to: linkdir/moved.txt", "@@", "-level=3",
                       "+level=9"), "outside the working directory")
    assert list(outside.iterdir()) == []


def test_follows_a_link_whose_target_stays_inside_the_root(box):
    # one policy for every tool: an in-root link is followed, as the OS follows it for Codex
    os.symlink(box.root / "notes.txt", box.root / "alias.txt")
    out = box.run("apply_patch", patch("*** Update File: alias.txt", "@@", "-level=3", "+level=4"))
    assert not out.is_error, out.text
    assert box.read_text("notes.txt") == "owner=bob\nmode=draft\nlevel=4\n"


@pytest.mark.parametrize("path", ["a;rm -rf x.txt", "$(id).txt", "`id`.txt", "a|b.txt", "x > y.txt", "we\x00ird.txt",
                                  "new\tline.txt", "~/x.txt", "*.txt"])
def test_refuses_shell_metacharacters_in_paths(box, path):
    refused(box, patch(f"*** Add File: {path}", "+x"), "metacharacters")


@pytest.mark.parametrize("text,needle", [
    ("*** Add File: a.txt\n+x\n*** End Patch\n", "first line of the patch must be '*** Begin Patch'"),
    ("*** Begin Patch\n*** Add File: a.txt\n+x\n", "last line of the patch must be '*** End Patch'"),
    ("*** Begin Patch\n*** Frobnicate File: a.txt\n*** End Patch\n", "is not a valid hunk header"),
    ("*** Begin Patch\n*** Update File: notes.txt\n*** End Patch\n", "is empty"),
    ("*** Begin Patch\n*** Update File: notes.txt\n@@\n-mode=draft\n+mode=final\n@@ level=3\nzzz\n*** End Patch\n",
     "Unexpected line found in update hunk"),
    ("*** Begin Patch\n*** End Patch\n", "No files were modified"),
    ('{"patch": "*** Begin Patch"}', "first line of the patch"),
])
def test_refuses_malformed_patches_with_codex_parser_messages(box, text, needle):
    refused(box, {"input": text}, needle)


def test_refuses_updates_that_do_not_apply(box):
    refused(box, patch("*** Update File: missing.txt", "@@", "-a", "+b"), "Failed to read file to update",
            "No such file or directory")
    refused(box, patch("*** Update File: notes.txt", "@@", "-mode=nothing", "+mode=final"),
            "Failed to find expected lines")
    refused(box, patch("*** Update File: notes.txt", "@@ no such context", "-level=3", "+level=4"),
            "Failed to find context")
    refused(box, patch("*** Delete File: nothing.txt"), "Failed to delete file")


def test_a_later_failure_leaves_the_earlier_operations_unwritten(box):
    refused(box, patch("*** Add File: made.txt", "+x", "*** Update File: notes.txt", "@@", "-nope", "+yes"),
            "Failed to find expected lines")
    assert box.read_text("made.txt") is None


def test_patch_text_missing_is_explained(box):
    out = box.run("apply_patch", {"patch": "x"})
    assert out.is_error and "patch text is missing" in out.text
