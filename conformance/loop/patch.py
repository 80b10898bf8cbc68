"""Codex's patch format, parsed and applied inside the sandbox root (the `patch` operation).

Rules:
- The format is Codex's (openai/codex, codex-rs/apply-patch/src/parser.rs, whose Lark grammar
  Codex 0.171.0 also sends as the apply_patch tool's `format.definition`): `*** Begin Patch`,
  then `*** Add File: P` (every following line `+text`), `*** Delete File: P`, `*** Update File:
  P` with an optional `*** Move to: Q` and chunks introduced by `@@` or `@@ context` whose lines
  start with ` ` (context), `-` (removed) or `+` (added), optionally ending in `*** End of File`,
  then `*** End Patch`. As in Codex, marker lines may carry surrounding whitespace, the first
  chunk of an update may omit its `@@`, a chunk's old lines are found after its context line
  (exact, then ignoring trailing, then surrounding whitespace), a chunk without old lines
  appends at the end of the file, and an updated file ends with a newline.
- Every path of a patch is confined by the sandbox's one policy (`conformance.loop.confinement`:
  `..`, an absolute path not under the root and a link leading out are refused); a patch's path
  must also be a plain name: NUL or control characters and shell metacharacters are refused.
- The whole patch is checked and computed before anything is written, so a refused patch changes
  nothing on disk; the writes then go through the sandbox's guard (`conformance.loop.limits`),
  which charges them all before the first reaches the disk.
- Finding a chunk's lines is linear in the file and the chunk (Knuth-Morris-Pratt over lines,
  once per whitespace rule), so a chunk that matches nowhere costs no more than one that matches. A refusal is a `PatchError` (or the confinement's `SandboxError`) whose text
  says which line or path is wrong and why; how it is worded to the model is the voice's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from conformance.loop.confinement import Refusal, confine
from conformance.loop.limits import Guard

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
END_OF_FILE = "*** End of File"
# Characters a shell would give meaning to: a model that puts them in a file name is refused.
PATH_METACHARACTERS = set("$`;|&<>(){}[]*?!~'\"\\#")


class PatchError(ValueError):
    """A patch Codex's parser would refuse, or one that reaches outside the sandbox."""


class PatchPathRefused(PatchError, Refusal):
    """A patch path a shell would give meaning to (rule `patch_path`)."""

    def __init__(self, text: str) -> None:
        Refusal.__init__(self, "patch_path", text)


@dataclass
class Chunk:
    context: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    end_of_file: bool = False


@dataclass
class FileOp:
    kind: str  # "add" | "delete" | "update"
    path: str
    contents: str = ""  # add
    move_to: str | None = None  # update
    chunks: list[Chunk] = field(default_factory=list)  # update


# ---------------------------------------------------------------------------------- parsing
def parse_patch(text: str) -> list[FileOp]:
    """The file operations of a patch, or PatchError saying which line is wrong and why."""
    if not isinstance(text, str):
        raise PatchError("the patch must be text")
    lines = text.strip().split("\n")
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"invalid patch: The first line of the patch must be '{BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != END:
        raise PatchError(f"invalid patch: The last line of the patch must be '{END}'")
    body = lines[1:-1]
    ops: list[FileOp] = []
    i = 0
    while i < len(body):
        line_no = i + 2
        head = body[i].strip()
        if head.startswith(ADD):
            added: list[str] = []
            i += 1
            while i < len(body) and body[i].startswith("+"):
                added.append(body[i][1:])
                i += 1
            ops.append(FileOp("add", head[len(ADD):], contents="".join(a + "\n" for a in added)))
        elif head.startswith(DELETE):
            ops.append(FileOp("delete", head[len(DELETE):]))
            i += 1
        elif head.startswith(UPDATE):
            op = FileOp("update", head[len(UPDATE):])
            i += 1
            if i < len(body) and body[i].startswith(MOVE):
                op.move_to = body[i][len(MOVE):]
                i += 1
            while i < len(body):
                if not body[i].strip():
                    i += 1
                    continue
                if body[i].startswith("*"):
                    break
                chunk, used = _parse_chunk(body, i, first=not op.chunks)
                op.chunks.append(chunk)
                i += used
            if not op.chunks:
                raise PatchError(f"invalid hunk at line {line_no}, Update file hunk for path '{op.path}' is empty")
            ops.append(op)
        else:
            raise PatchError(
                f"invalid hunk at line {line_no}, '{head}' is not a valid hunk header. Valid hunk headers: "
                f"'{ADD}{{path}}', '{DELETE}{{path}}', '{UPDATE}{{path}}'")
    return ops


def _parse_chunk(body: list[str], start: int, *, first: bool) -> tuple[Chunk, int]:
    line = body[start]
    if line == "@@":
        chunk, i = Chunk(None), start + 1
    elif line.startswith("@@ "):
        chunk, i = Chunk(line[3:]), start + 1
    elif first:
        chunk, i = Chunk(None), start
    else:
        raise PatchError(f"invalid hunk at line {start + 2}, Expected update hunk to start with a @@ context "
                         f"marker, got: '{line}'")
    taken = 0
    while i < len(body):
        line = body[i]
        if line == END_OF_FILE:
            if taken == 0:
                break
            chunk.end_of_file = True
            i += 1
            taken += 1
            break
        if line == "":
            chunk.old.append("")
            chunk.new.append("")
        elif line[0] == " ":
            chunk.old.append(line[1:])
            chunk.new.append(line[1:])
        elif line[0] == "+":
            chunk.new.append(line[1:])
        elif line[0] == "-":
            chunk.old.append(line[1:])
        else:
            if taken == 0:
                raise PatchError(
                    f"invalid hunk at line {i + 2}, Unexpected line found in update hunk: '{line}'. Every line "
                    "should start with ' ' (context line), '+' (added line), or '-' (removed line)")
            break
        i += 1
        taken += 1
    if taken == 0:
        raise PatchError(f"invalid hunk at line {start + 2}, Update hunk does not contain any lines")
    return chunk, i - start


# ---------------------------------------------------------------------------------- applying
def _find(lines: list[str], pattern: list[str]) -> int | None:
    """The first index where `pattern` occurs in `lines` (Knuth-Morris-Pratt: linear time)."""
    fail = [0] * len(pattern)  # fail[i]: the longest proper border of pattern[:i + 1]
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k
    k = 0
    for i, line in enumerate(lines):
        while k and line != pattern[k]:
            k = fail[k - 1]
        if line == pattern[k]:
            k += 1
            if k == len(pattern):
                return i - k + 1
    return None


def _seek(lines: list[str], pattern: list[str], start: int, end_of_file: bool) -> int | None:
    """Where `pattern` occurs in `lines` at or after `start`: exact, then ignoring trailing
    whitespace, then ignoring surrounding whitespace (Codex's seek_sequence order)."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    last = len(lines) - len(pattern)
    first = last if end_of_file and last >= start else start
    for norm in (lambda s: s, str.rstrip, str.strip):
        found = _find([norm(x) for x in lines[first:]], [norm(p) for p in pattern])
        if found is not None:
            return first + found
    return None


def apply_chunks(text: str, chunks: list[Chunk], path: str) -> str:
    """The file's new text after the update chunks, or PatchError naming the lines not found."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the trailing newline ends the last line; it is not a line of its own
    replacements: list[tuple[int, int, list[str]]] = []
    at = 0
    for chunk in chunks:
        if chunk.context is not None:
            found = _seek(lines, [chunk.context], at, False)
            if found is None:
                raise PatchError(f"Failed to find context '{chunk.context}' in {path}")
            at = found + 1
        if not chunk.old:
            replacements.append((len(lines), 0, chunk.new))
            continue
        old, new = chunk.old, chunk.new
        found = _seek(lines, old, at, chunk.end_of_file)
        if found is None and old[-1] == "":
            old, new = old[:-1], (new[:-1] if new and new[-1] == "" else new)
            found = _seek(lines, old, at, chunk.end_of_file)
        if found is None:
            raise PatchError(f"Failed to find expected lines in {path}:\n" + "\n".join(chunk.old))
        replacements.append((found, len(old), new))
        at = found + len(old)
    for start, length, new in sorted(replacements, key=lambda r: r[0], reverse=True):
        lines[start:start + length] = new
    return "\n".join(lines) + "\n"


def _check_name(path: str) -> None:
    if not path or not path.strip():
        raise PatchError("a file path is required")
    bad = sorted({c for c in path if c in PATH_METACHARACTERS or ord(c) < 32 or c == "\x7f"})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise PatchPathRefused(f"path {path!r} contains shell metacharacters or control characters ({shown}); "
                         "use a plain relative path inside the working directory")


def _confined(root: Path, path: str) -> Path:
    """A patch's path: a plain name (`_check_name`), inside the root by the sandbox's one policy."""
    _check_name(path)
    return confine(root, path)


def _missing_dirs(root: Path, files) -> set[Path]:
    """The directories that writing `files` creates (each counts against the sandbox's file limit)."""
    missing = set()
    for p in files:
        at = p.parent
        while at != root and at not in missing and not at.exists():
            missing.add(at)
            at = at.parent
    return missing


def apply_patch_text(root: Path, text: str, guard: Guard | None = None) -> list[str]:
    """Apply a patch inside `root` (the sandbox's real root); returns the `A|M|D path` summary lines. Computes every
    file's new state first and writes only when the whole patch applies (through `guard`, the
    sandbox's limits: all writes charged before the first)."""
    guard = guard or Guard(root)
    ops = parse_patch(text)
    if not ops:
        raise PatchError("No files were modified.")
    staged: dict[Path, str | None] = {}  # real path -> new text (None: delete)
    summary: list[str] = []

    def current(p: Path) -> str:
        if p in staged:
            if staged[p] is None:
                raise PatchError(f"Failed to read file to update {p}: it was deleted earlier in this patch")
            return staged[p]  # type: ignore[return-value]
        if not p.is_file():
            raise PatchError(f"Failed to read file to update {p}: No such file or directory (os error 2)")
        return p.read_text(encoding="utf-8")

    for op in ops:
        guard.tick()
        p = guard.check_depth(_confined(root, op.path))
        if op.kind == "add":
            if p.is_dir():
                raise PatchError(f"Failed to write file {p}: Is a directory (os error 21)")
            staged[p] = op.contents
            summary.append(f"A {op.path}")
        elif op.kind == "delete":
            if p not in staged and not p.is_file():
                kind = "Is a directory (os error 21)" if p.is_dir() else "No such file or directory (os error 2)"
                raise PatchError(f"Failed to delete file {p}: {kind}")
            staged[p] = None
            summary.append(f"D {op.path}")
        else:
            new_text = apply_chunks(current(p), op.chunks, str(p))
            if op.move_to is not None:
                dest = guard.check_depth(_confined(root, op.move_to))
                if dest.is_dir():
                    raise PatchError(f"Failed to write file {dest}: Is a directory (os error 21)")
                staged[dest] = new_text
                if dest != p:
                    staged[p] = None
                summary.append(f"M {op.move_to}")
            else:
                staged[p] = new_text
                summary.append(f"M {op.path}")
    writes = {p: new for p, new in staged.items() if new is not None}
    guard.charge_bytes(sum(len(new.encode("utf-8")) for new in writes.values()))
    guard.charge_created(sum(not p.exists() for p in writes) + len(_missing_dirs(root, writes)))
    for p, new in staged.items():
        if new is None:
            if p.is_file():
                p.unlink()
        else:
            p.parent.mkdir(parents=True, exist_ok=True)  # the depth is checked: no deep recursion
            p.write_bytes(new.encode("utf-8"))
    return summary
