"""Path confinement: the one policy every sandbox tool obeys, shell and patch included.

Rules:
- A path names a place inside the sandbox root: a relative path is joined onto the root (the
  clients' working directory); an absolute path must lie under the root as written. `..` in a
  path the model wrote is refused, and so is an empty path or one with a NUL byte.
- No symlink may lead out of the root. A link is resolved one hop at a time, and every hop must
  land inside the root: a link pointing out, a parent directory that is such a link, and a chain
  of links that leaves the root and comes back are all refused. A link whose every hop stays
  inside the root is followed, as the real clients follow it (Claude Code's and opencode's file
  tools and Codex's apply_patch and shell all go through the operating system, which follows
  links); such a link reaches nothing the root does not hold. Nothing in the sandbox makes links
  (the shell has no `ln`), so only a test plants one.
- The check runs each time a tool uses a path, on the disk as it is then, and the tool gets the
  fully resolved path (for a path without links: the root joined with it).
- A refusal is a `SandboxError` whose text the model reads as the tool's result; nothing is
  raised past the sandbox. A refused escape attempt is a `Refusal`, which names the rule it
  broke (`REFUSAL_RULES`: the shell's and the patch's rules are listed here too, so the rules
  have one table); the loop reports each as `loop.sandbox_refused`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

MAX_LINKS = 40  # as the kernel's ELOOP limit: a longer chain is a loop


# rule -> what it refuses (docs/loop.md lists them)
REFUSAL_RULES = {
    "outside_root": "a path outside the working directory",
    "parent_dir": "a path that uses '..'",
    "symlink_out": "a path through a symbolic link that leads outside the working directory",
    "link_loop": "a chain of symbolic links too long to be anything but a loop",
    "nul_byte": "a path with a NUL byte",
    "shell_operator": "a shell operator other than '&&', '>' and '>>'",
    "substitution": "a variable or command substitution ($, backticks): environment keys stay unread",
    "multi_line": "a newline outside quotes (a second command line)",
    "command_not_allowed": "a program outside the sandbox's allowlist (network tools, interpreters, ...)",
    "patch_path": "a patch path with shell metacharacters or control characters",
}


class SandboxError(Exception):
    """A refusal the model gets to read as a tool error (escape, unknown tool, bad arguments)."""


class Refusal(SandboxError):
    """An escape attempt refused by a named rule (a key of REFUSAL_RULES)."""

    def __init__(self, rule: str, text: str) -> None:
        super().__init__(text)
        self.rule = rule


def _under(root: Path, path: Path) -> list[str] | None:
    """The parts of `path` below `root` as written (no resolving), or None when it is not under it."""
    n = len(root.parts)
    return list(path.parts[n:]) if path.parts[:n] == root.parts else None


def _inside(root: Path, path: Path) -> bool:
    return path == root or root in path.parents


def _escape(path: str, candidate: Path, root: Path, link: Path | None = None) -> Refusal:
    real = Path(os.path.realpath(candidate))
    if link is not None and _inside(root, real):
        return Refusal("symlink_out", f"path {path!r} goes through the symlink {link}, which leads outside the working "
                            f"directory {root}; access outside the working directory is not allowed")
    return Refusal("outside_root" if link is None else "symlink_out", f"path {path!r} resolves to {real}, outside the working directory {root}; "
                        "access outside the working directory is not allowed")


def confine(root: Path, path: str) -> Path:
    """The real path `path` names inside `root` (a real path), or SandboxError saying why not."""
    if not isinstance(path, str) or not path.strip():
        raise SandboxError("a file path is required")
    if "\x00" in path:
        raise Refusal("nul_byte", "the path contains a NUL byte")
    raw = Path(path.strip())
    if ".." in raw.parts:
        raise Refusal("parent_dir", f"path {path!r} uses '..'; only paths inside {root} are allowed")
    candidate = raw if raw.is_absolute() else root / raw
    pending = _under(root, candidate)
    if pending is None:
        raise _escape(path, candidate, root)
    current, links, link = root, 0, None  # `current` is always a real path inside the root
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":  # only a link's target brings one here
            if current == root:
                raise _escape(path, candidate, root, link)
            current = current.parent
            continue
        step = current / part
        if not step.is_symlink():
            current = step
            continue
        links += 1
        if links > MAX_LINKS:
            raise Refusal("link_loop", f"path {path!r}: too many levels of symbolic links")
        link = step
        target = Path(os.readlink(step))
        if target.is_absolute():
            rest = _under(root, target)
            if rest is None:
                raise _escape(path, candidate, root, link)
            current, pending = root, rest + pending
        else:
            pending = list(target.parts) + pending  # relative to the link's own directory
    return current


def walk(root: Path, base: Path, tick: Callable[[], None] = lambda: None) -> list[Path]:
    """Every file under `base`, sorted, hidden directories left out, each as reached (not
    resolved); a file that a link leads out of the root is left out. `tick` runs at every
    directory (the caller's time limit)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        tick()
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            full = Path(dirpath) / name
            try:
                confine(root, str(full))
            except SandboxError:
                continue
            out.append(full)
    return out
