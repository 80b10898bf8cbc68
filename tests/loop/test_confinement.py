"""The one confinement policy: paths stay in the root, no link leads out, in-root links are followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.loop.confinement import SandboxError, confine, walk


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    (r / "sub").mkdir(parents=True)
    (r / "a.txt").write_text("a\n")
    (r / "sub" / "b.txt").write_text("b\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("top secret\n")
    return r


def test_relative_and_absolute_paths_inside_resolve_to_the_same_file(root: Path) -> None:
    assert confine(root, "a.txt") == confine(root, str(root / "a.txt")) == root / "a.txt"
    assert confine(root, "./sub//b.txt") == root / "sub" / "b.txt"
    assert confine(root, str(root)) == root
    assert confine(root, "new/deeper/c.txt") == root / "new" / "deeper" / "c.txt"  # not there yet: fine


@pytest.mark.parametrize("path,needle", [
    ("", "a file path is required"), ("  ", "a file path is required"), ("a\x00b", "NUL byte"),
    ("../outside/secret.txt", "uses '..'"), ("sub/../../x", "uses '..'"),
    ("/etc/passwd", "resolves to /etc/passwd, outside the working directory"),
])
def test_escapes_by_name_are_refused(root: Path, path: str, needle: str) -> None:
    with pytest.raises(SandboxError, match=needle.replace("(", r"\(").replace(".", r"\.")):
        confine(root, path)


def test_a_link_leading_out_is_refused_as_a_file_and_as_a_parent(root: Path) -> None:
    outside = root.parent / "outside"
    os.symlink(outside / "secret.txt", root / "link.txt")
    os.symlink(outside, root / "linkdir")
    for path in ("link.txt", "linkdir/secret.txt", "linkdir/new.txt", str(root / "linkdir")):
        with pytest.raises(SandboxError, match="outside the working directory"):
            confine(root, path)


def test_a_chain_of_links_that_leaves_the_root_and_comes_back_is_refused(root: Path) -> None:
    # in-root link -> a link outside -> back into the root: the realpath is inside, a hop is not
    os.symlink(root / "a.txt", root.parent / "outside" / "back")
    os.symlink(root.parent / "outside" / "back", root / "roundtrip")
    with pytest.raises(SandboxError, match="goes through the symlink .*roundtrip, which leads outside"):
        confine(root, "roundtrip")
    os.symlink("../outside/back", root / "relative-roundtrip")
    with pytest.raises(SandboxError, match="leads outside"):
        confine(root, "relative-roundtrip")


def test_an_in_root_link_is_followed_to_its_target(root: Path) -> None:
    os.symlink(root / "a.txt", root / "alias.txt")  # absolute target
    os.symlink("sub", root / "subalias")  # relative target
    os.symlink("../a.txt", root / "sub" / "up.txt")  # `..` inside the root is fine
    assert confine(root, "alias.txt") == root / "a.txt"
    assert confine(root, "subalias/b.txt") == root / "sub" / "b.txt"
    assert confine(root, "sub/up.txt") == root / "a.txt"


def test_a_link_loop_is_refused(root: Path) -> None:
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    with pytest.raises(SandboxError, match="too many levels of symbolic links"):
        confine(root, "loop1")


def test_walk_leaves_out_files_a_link_leads_out_of_and_hidden_directories(root: Path) -> None:
    os.symlink(root.parent / "outside" / "secret.txt", root / "link.txt")
    os.symlink(root / "a.txt", root / "alias.txt")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("x")
    assert walk(root, root) == [root / "a.txt", root / "alias.txt", root / "sub" / "b.txt"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.text(alphabet="./abx~-", min_size=1, max_size=20) | st.sampled_from(["/", "/etc", "//etc/x"]))
def test_every_path_resolves_inside_the_root_or_is_refused(tmp_path_factory, path):
    root = Path(os.path.realpath(tmp_path_factory.mktemp("paths")))
    try:
        p = confine(root, path)
    except SandboxError:
        return
    assert p == root or root in p.parents
