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
  raised past the sandbox.
"""

from __future__ import annotations

import os
from pathlib import Path

MAX_LINKS = 40  # as the kernel's ELOOP limit: a longer chain is a loop


class SandboxError(Exception):
    """A refusal the model gets to read as a tool error (escape, unknown tool, bad arguments)."""


def _under(root: Path, path: Path) -> list[str] | None:
    """The parts of `path` below `root` as written (no resolving), or None when it is not under it."""
    n = len(root.parts)
    return list(path.parts[n:]) if path.parts[:n] == root.parts else None


def _inside(root: Path, path: Path) -> bool:
    return path == root or root in path.parents


def _escape(path: str, candidate: Path, root: Path, link: Path | None = None) -> SandboxError:
    real = Path(os.path.realpath(candidate))
    if link is not None and _inside(root, real):
        return SandboxError(f"path {path!r} goes through the symlink {link}, which leads outside the working "
                            f"directory {root}; access outside the working directory is not allowed")
    return SandboxError(f"path {path!r} resolves to {real}, outside the working directory {root}; "
                        "access outside the working directory is not allowed")


def confine(root: Path, path: str) -> Path:
    """The real path `path` names inside `root` (a real path), or SandboxError saying why not."""
    if not isinstance(path, str) or not path.strip():
        raise SandboxError("a file path is required")
    if "\x00" in path:
        raise SandboxError("the path contains a NUL byte")
    raw = Path(path.strip())
    if ".." in raw.parts:
        raise SandboxError(f"path {path!r} uses '..'; only paths inside {root} are allowed")
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
            raise SandboxError(f"path {path!r}: too many levels of symbolic links")
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


def walk(root: Path, base: Path) -> list[Path]:
    """Every file under `base`, sorted, hidden directories left out, each as reached (not
    resolved); a file that a link leads out of the root is left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            full = Path(dirpath) / name
            try:
                confine(root, str(full))
            except SandboxError:
                continue
            out.append(full)
    return out
