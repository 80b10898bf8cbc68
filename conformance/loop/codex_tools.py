"""Codex CLI's tools over the sandbox: `exec_command` and the freeform `apply_patch`.

Rules (the sandbox, `conformance.loop.sandbox`, dispatches the calls; this module imports it not):
- `exec_command{cmd, workdir?, ...}` runs `cmd` with the sandbox's one allowlisted, shell-less
  command runner (`Sandbox.bash`): there is no second allowlist here and no process is started.
  The working directory is the sandbox root, or `workdir` when it resolves inside the root. The
  other arguments of Codex's schema (`yield_time_ms`, `max_output_tokens`, `tty`, `shell`,
  `login`, `sandbox_permissions`, ...) are accepted and have no effect: nothing is escalated.
- `apply_patch` takes the raw text of a `custom_tool_call` (`input`), in Codex's patch format
  (openai/codex, codex-rs/apply-patch/src/parser.rs, whose Lark grammar Codex 0.171.0 also sends
  as the tool's `format.definition`): `*** Begin Patch`, then `*** Add File: P` (every following
  line `+text`), `*** Delete File: P`, `*** Update File: P` with an optional `*** Move to: Q` and
  chunks introduced by `@@` or `@@ context` whose lines start with ` ` (context), `-` (removed) or
  `+` (added), optionally ending in `*** End of File`, then `*** End Patch`. As in Codex, marker
  lines may carry surrounding whitespace, the first chunk of an update may omit its `@@`, a
  chunk's old lines are found after its context line (exact, then ignoring trailing, then
  surrounding whitespace), a chunk without old lines appends at the end of the file, and an
  updated file ends with a newline.
- Every path of a patch must lie strictly inside the sandbox root: `..`, an absolute path that is
  not under the root, any symlink on the way (inside the root or leading out), NUL or control
  characters and shell metacharacters in a path are refused. The whole patch is checked and
  computed before anything is written, so a refused patch changes nothing on disk.
- Results are shaped as Codex 0.171.0 shapes them (measured against a scripted loopback server,
  docs/loop.md): exec_command `Chunk ID: 6 hex / Wall time: S.SSSS seconds / Process exited with
  code N / Original token count: T / Output:` then the output; apply_patch `Exit code: 0 / Wall
  time: 0 seconds / Output:` then `Success. Updated the following files:` and one `A|M|D path`
  line per file; a patch that cannot be applied answers `apply_patch verification failed: WHY`.
  The model reads a refusal as the tool output; nothing is raised.
"""

from __future__ import annotations

import math
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
END_OF_FILE = "*** End of File"
# Characters a shell would give meaning to: a model that puts them in a file name is refused.
PATH_METACHARACTERS = set("$`;|&<>(){}[]*?!~'\"\\#")


class PatchError(ValueError):
    """A patch Codex's parser would refuse, or one that reaches outside the sandbox."""


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
        want = [norm(p) for p in pattern]
        for at in range(first, last + 1):
            if [norm(x) for x in lines[at:at + len(pattern)]] == want:
                return at
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
        raise PatchError(f"path {path!r} contains shell metacharacters or control characters ({shown}); "
                         "use a plain relative path inside the working directory")


def confined(root: Path, path: str) -> Path:
    """The real path of a patch's `path` inside `root` (a real path), with no symlink anywhere
    on the way."""
    _check_name(path)
    raw = Path(path)
    if ".." in raw.parts:
        raise PatchError(f"path {path!r} uses '..'; only paths inside the working directory {root} are allowed")
    if raw.is_absolute() and root != raw and root not in raw.parents:
        raise PatchError(f"path {path!r} is absolute and outside the working directory {root}; "
                         "use a path relative to it")
    rel = raw.relative_to(root) if raw.is_absolute() else raw
    walk = root
    for part in rel.parts:
        walk = walk / part
        if walk.is_symlink():
            raise PatchError(f"path {path!r} goes through the symlink {walk}; apply_patch does not follow "
                             "symlinks in the sandbox")
    real = Path(os.path.realpath(walk))
    if real != walk:  # pragma: no cover - the walk above refuses every link; belt and braces
        raise PatchError(f"path {path!r} resolves to {real}, not {walk}")
    return walk


def apply_patch_text(root: Path, text: str) -> list[str]:
    """Apply a patch inside `root` (the sandbox's real root); returns the `A|M|D path` summary lines. Computes every
    file's new state first and writes only when the whole patch applies."""
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
        p = confined(root, op.path)
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
                dest = confined(root, op.move_to)
                if dest.is_dir():
                    raise PatchError(f"Failed to write file {dest}: Is a directory (os error 21)")
                staged[dest] = new_text
                if dest != p:
                    staged[p] = None
                summary.append(f"M {op.move_to}")
            else:
                staged[p] = new_text
                summary.append(f"M {op.path}")
    for p, new in staged.items():
        if new is None:
            if p.is_file():
                p.unlink()
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(new, encoding="utf-8")
    return summary


# ---------------------------------------------------------------------------------- the tools' texts
def _token_count(text: str) -> int:
    """Codex's `Original token count`: measured as ceil(bytes / 4) (29 bytes -> 8, 68 -> 17)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def exec_output(output: str, code: int, wall_s: float, chunk_id: str | None = None) -> str:
    """The function_call_output text Codex 0.171.0 sends for a finished exec_command."""
    chunk_id = chunk_id or secrets.token_hex(3)
    return (f"Chunk ID: {chunk_id}\nWall time: {wall_s:.4f} seconds\nProcess exited with code {code}\n"
            f"Original token count: {_token_count(output)}\nOutput:\n{output}")


def patch_output(summary: list[str]) -> str:
    """The custom_tool_call_output text Codex 0.171.0 sends for a patch that applied."""
    files = "".join(line + "\n" for line in summary)
    return f"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\n{files}"


def patch_failure(why: str) -> str:
    """The custom_tool_call_output text Codex 0.171.0 sends for a patch it refused."""
    return f"apply_patch verification failed: {why}"


def patch_input(args: object) -> str | None:
    """The patch text of a call: the custom tool call's raw `input` (or a JSON `{"input": ...}`)."""
    text = args.get("input") if isinstance(args, dict) else args
    return text if isinstance(text, str) else None


# The MCP server a scenario may attach (`mcp_server: "files"`): Codex 0.171.0 offers an MCP
# server's tools as one `namespace` tool named `mcp__<server>` (measured with a stdio MCP server).
MCP_FILES_NAMESPACE = "mcp__files"
MCP_FILES_TOOL = {
    "type": "namespace", "name": MCP_FILES_NAMESPACE, "description": f"Tools in the {MCP_FILES_NAMESPACE} namespace.",
    "tools": [{"type": "function", "name": "read_file", "description": "Read a text file of the project",
               "strict": False, "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                               "required": ["path"]}}],
}


def mcp_output(text: str, wall_s: float) -> list[dict]:
    """The function_call_output `output` Codex 0.171.0 sends for an MCP tool call: content parts,
    the first its wall time, then the server's content."""
    return [{"type": "input_text", "text": f"Wall time: {wall_s:.4f} seconds\nOutput:"},
            {"type": "input_text", "text": text}]


def unknown_tool(name: str) -> str:
    return f"unsupported call: {name}"
