"""The sandbox's operations, each implemented once: read, write, edit, shell, glob, grep, list,
patch and read_file (the operations a persona binds a client's tools to).

Rules:
- An operation reads its parameters through `Arguments`, which maps the operation's parameter
  to the client's own argument name (`ToolBinding.arguments`) and checks its type; a missing or
  mistyped argument is refused in the client's own words for it (`The required parameter
  \\`file_path\\` is missing`), at the point the operation first needs it.
- Every path goes through the sandbox's one confinement (`Sandbox.resolve`); every command
  through its one Bash interpreter (`Sandbox.shell`); a patch through `conformance.loop.patch`.
- An operation decides what happened; the sandbox's voice (`conformance.loop.voices`) words it.
  A refusal is a `SandboxError`; the sandbox words it as the client's error.
- An existing file must have been read (or written) in this session before it is overwritten or
  edited, when the persona says the client keeps that rule (`read_before_write`).
- Every write goes through the sandbox's guard (`conformance.loop.limits`), and every loop over
  files or lines checks the call's time limit (`guard.tick()`).
- Regular expressions are Google's RE2 (`google-re2`): it matches in time linear in the text,
  so a pattern with nested quantifiers (`(a+)+$`) cannot stall a call. A timeout around Python's
  backtracking `re` would not do: a match holds the GIL and cannot be interrupted from a thread,
  and a subprocess per call costs more than the search. RE2's syntax is that of the regex crate
  behind ripgrep, which Claude Code's and opencode's Grep run: no backreferences, no lookaround.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import re2

from conformance.clients.persona import Persona, ToolBinding
from conformance.loop.confinement import SandboxError, walk
from conformance.loop.limits import Guard
from conformance.loop.patch import PatchError, apply_patch_text
from conformance.loop.shell import Shell
from conformance.loop.voices import Hit, ToolOutcome, Voice

MISSING_PATCH = ("the patch text is missing; send the patch as the tool's raw input, from "
                 "'*** Begin Patch' to '*** End Patch'")


class Workspace(Protocol):
    """What an operation uses of the sandbox (`conformance.loop.sandbox.Sandbox`)."""

    root: Path
    persona: Persona
    voice: Voice
    shell: Shell
    guard: Guard
    known_files: set[str]

    def resolve(self, path: str) -> Path: ...
    def remember(self, path: Path) -> None: ...


class Arguments:
    """A call's arguments as an operation's parameters (the client's names, checked on use)."""

    def __init__(self, binding: ToolBinding, given: dict) -> None:
        self.binding = binding
        self.given = given

    def raw(self, param: str) -> Any:
        key = self.binding.arguments.get(param)
        return None if key is None else self.given.get(key)

    def flag(self, param: str) -> bool:
        """A switch read as the client reads it: any true value turns it on."""
        return bool(self.raw(param))

    def get(self, param: str, kind: type = str, *, required: bool = False) -> Any:
        key = self.binding.arguments.get(param)
        required = required or param in self.binding.required
        if key is None or self.given.get(key) is None:
            if required:
                raise SandboxError(f"The required parameter `{key or param}` is missing")
            return None
        value = self.given[key]
        if kind is int and isinstance(value, bool):
            raise SandboxError(f"The parameter `{key}` type is expected as `integer`")
        if kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, kind):
            raise SandboxError(f"The parameter `{key}` type is expected as `{kind.__name__}` "
                               f"but provided as `{type(value).__name__}`")
        return value


# ---------------------------------------------------------------------------------- files
def read(box: Workspace, a: Arguments) -> ToolOutcome:
    p = box.resolve(a.get("path", required=True))
    offset, limit = a.get("offset", int), a.get("limit", int)
    if not p.exists():
        return box.voice.missing_file(p, box.root)
    if p.is_dir():
        return box.voice.directory_read(p, list(p.iterdir()))
    box.remember(p)
    return box.voice.file_read(p, p.read_text(encoding="utf-8", errors="replace"), offset, limit)


def _unread(box: Workspace, p: Path) -> bool:
    return box.persona.read_before_write and str(p) not in box.known_files


def write(box: Workspace, a: Arguments) -> ToolOutcome:
    p = box.resolve(a.get("path", required=True))
    content = a.get("content", required=True)
    existed = p.exists()
    if existed and p.is_dir():
        raise SandboxError(f"{p} is a directory")
    if existed and _unread(box, p):
        raise SandboxError(box.voice.unread(p))
    box.guard.write(p, content)
    box.remember(p)
    return box.voice.written(p, existed)


def edit(box: Workspace, a: Arguments) -> ToolOutcome:
    p = box.resolve(a.get("path", required=True))
    old, new = a.get("old", required=True), a.get("new", required=True)
    replace_all = bool(a.get("all", bool))
    if not p.is_file():
        raise SandboxError(box.voice.edit_missing(p))
    if _unread(box, p):
        raise SandboxError(box.voice.unread(p))
    text = p.read_text(encoding="utf-8")
    if old == new:
        raise SandboxError(box.voice.edit_unchanged())
    count = text.count(old) if old else 0
    if count == 0:
        raise SandboxError(box.voice.edit_not_found(old))
    if count > 1 and not replace_all:
        raise SandboxError(box.voice.edit_ambiguous(count, old))
    box.guard.write(p, text.replace(old, new) if replace_all else text.replace(old, new, 1))
    return box.voice.edited(p)


def read_file(box: Workspace, a: Arguments) -> ToolOutcome:
    """An MCP server's file read: the file's text (a missing file is an error)."""
    start = time.monotonic()
    given = a.get("path", required=True)
    p = box.resolve(given)
    if not p.is_file():
        raise SandboxError(f"{given}: No such file")
    return box.voice.file_served(p.read_text(encoding="utf-8", errors="replace"), time.monotonic() - start)


# ---------------------------------------------------------------------------------- commands
def shell(box: Workspace, a: Arguments) -> ToolOutcome:
    """A command line through the one Bash interpreter, in the root or a `cwd` inside it."""
    command = a.get("command", required=True)
    cwd_given = a.get("cwd")
    cwd = box.resolve(cwd_given) if cwd_given else box.root
    if not cwd.is_dir():
        raise SandboxError(f"workdir {cwd_given!r} is not a directory inside {box.root}")
    start = time.monotonic()
    out, err, code = box.shell.run(command, cwd)
    return box.voice.shell_result(out, err, code, time.monotonic() - start)


def patch(box: Workspace, a: Arguments) -> ToolOutcome:
    """Codex's patch format (a freeform tool's raw text input); nothing is written unless the
    whole patch applies."""
    text = a.raw("input")
    if not isinstance(text, str):
        return box.voice.patch_refused(MISSING_PATCH)
    start = time.monotonic()
    try:
        summary = apply_patch_text(box.root, text, box.guard)
    except (PatchError, SandboxError, OSError, UnicodeError) as exc:
        box.notice(exc)
        return box.voice.patch_refused(str(exc))
    return box.voice.patch_applied(summary, time.monotonic() - start)


# ---------------------------------------------------------------------------------- search
def _base(box: Workspace, a: Arguments) -> Path:
    return box.resolve(a.get("path") or str(box.root))


def glob(box: Workspace, a: Arguments) -> ToolOutcome:
    base = _base(box, a)
    pattern = a.get("pattern", required=True)
    pat = pattern[2:] if pattern.startswith("./") else pattern
    hits = []
    for f in walk(box.root, base, box.guard.tick):
        rel = f.relative_to(base).as_posix()
        if fnmatch.fnmatch(rel, pat) or ("/" not in pat and fnmatch.fnmatch(f.name, pat)) or (
                pat.startswith("**/") and fnmatch.fnmatch(rel, pat[3:])):
            hits.append(f)
    return box.voice.glob_result(hits)


def grep(box: Workspace, a: Arguments) -> ToolOutcome:
    base = _base(box, a)
    mode = a.get("mode")
    pattern = a.get("pattern", required=True)
    include = a.get("include")
    rx = _regex(pattern, a.flag("ignore_case"))
    hits: list[Hit] = []
    for f in [base] if base.is_file() else walk(box.root, base, box.guard.tick):
        if include and not fnmatch.fnmatch(f.name, include):
            continue
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.split("\n"), 1):
            if n % 1024 == 0:
                box.guard.tick()
            if rx.search(line):
                hits.append((f, n, line))
    return box.voice.grep_result(hits, mode)


def _regex(pattern: str, ignore_case: bool) -> Any:
    """`pattern` compiled by RE2 (see the header: linear time), or SandboxError saying why not."""
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False  # the error reaches the model as the tool's result, not stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        raise SandboxError(f"invalid regular expression {pattern!r}: {detail}") from None


def listing(box: Workspace, a: Arguments) -> ToolOutcome:
    base = _base(box, a)
    if not base.is_dir():
        raise SandboxError(f"{base} is not a directory")
    return box.voice.listing(base, list(base.iterdir()), walk(box.root, base, box.guard.tick))


OPERATIONS: dict[str, Callable[[Workspace, Arguments], ToolOutcome]] = {
    "read": read, "write": write, "edit": edit, "shell": shell, "glob": glob, "grep": grep, "list": listing,
    "patch": patch, "read_file": read_file,
}
