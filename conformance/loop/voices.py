"""How each client words its tool results and errors: one voice per persona's `voice` name.

Rules:
- The sandbox's operations (`conformance.loop.operations`) do the work once; a `Voice` turns
  what happened into the `ToolOutcome` the client would send back. `VOICES` holds them by their
  `name`, the voice a persona names (`Persona.voice`, in the client's profile); `voice_for`
  answers the generic voice for a name it does not know, so a new client profile needs no code
  here to run its loops; a client that words its results its own way adds its voice here.
- The generic voice words results plainly (the file's text, the command's output with its exit
  code). The client voices are measured against the real clients on a loopback server
  (docs/loop.md): Claude Code 2.1.197 (`N\\ttext` lines, errors as
  `<tool_use_error>...</tool_use_error>` with `is_error: true`, Bash successes marked
  `is_error: false`), opencode 1.18.33 (`<path>/<type>/<content>` with `N: text` lines, errors
  as plain text, a failed command's `<bash_metadata>`), Codex 0.171.0 (exec_command's `Chunk ID /
  Wall time / Process exited with code / Original token count / Output:` framing, apply_patch's
  `Exit code / Wall time / Output:` and `apply_patch verification failed: WHY`, an MCP tool's
  content parts, `unsupported call: NAME`).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from pathlib import Path

_NO_READ_BACK = " (file state is current in your context \u2014 no need to Read it back)"


@dataclass
class ToolOutcome:
    text: str
    is_error: bool = False
    explicit_ok: bool = False  # Claude Code marks Bash successes with `is_error: false`
    parts: list[dict] | None = None  # the output as content parts, where the client sends parts (Codex's MCP calls)


Hit = tuple[Path, int, str]  # a grep match: file, 1-based line number, the line


class Voice:
    """The generic voice: results worded plainly. Client voices override what they word otherwise."""

    name = "generic"  # the persona voice name it answers to (`Persona.voice`)

    def error(self, text: str) -> ToolOutcome:
        return ToolOutcome(text, True)

    def unknown_tool(self, name: str, offered: list[str]) -> str:
        return f"unknown tool {name!r}; the tools are: {', '.join(offered)}"

    def unread(self, path: Path) -> str:
        return f"{path} has not been read in this session; read it before overwriting it"

    # ---- read
    def missing_file(self, path: Path, root: Path) -> ToolOutcome:
        return self.error(f"{path}: no such file")

    def directory_read(self, path: Path, entries: list[Path]) -> ToolOutcome:
        return self.error(f"{path} is a directory")

    def file_read(self, path: Path, text: str, offset: int | None, limit: int | None) -> ToolOutcome:
        lines = text.splitlines(keepends=True)
        start = max(offset - 1, 0) if offset else 0
        return ToolOutcome("".join(lines[start:start + limit] if limit else lines[start:]))

    def file_served(self, text: str, elapsed: float) -> ToolOutcome:
        return ToolOutcome(text)

    # ---- write and edit
    def written(self, path: Path, existed: bool) -> ToolOutcome:
        return ToolOutcome(f"wrote {path}")

    def edited(self, path: Path) -> ToolOutcome:
        return ToolOutcome(f"edited {path}")

    def edit_missing(self, path: Path) -> str:
        return f"{path}: no such file"

    def edit_unchanged(self) -> str:
        return "the old and the new text are the same"

    def edit_not_found(self, old: str) -> str:
        return f"the text to replace is not in the file: {old}"

    def edit_ambiguous(self, count: int, old: str) -> str:
        return f"the text to replace occurs {count} times; give more context or replace all: {old}"

    # ---- shell and patch
    def shell_result(self, out: str, err: str, code: int, elapsed: float) -> ToolOutcome:
        text = out + err
        return ToolOutcome(text + (f"\n(exit code {code})" if code else ""), code != 0)

    def patch_applied(self, summary: list[str], elapsed: float) -> ToolOutcome:
        return ToolOutcome("".join(line + "\n" for line in summary))

    def patch_refused(self, why: str) -> ToolOutcome:
        return self.error(why)

    # ---- search
    def glob_result(self, hits: list[Path]) -> ToolOutcome:
        return ToolOutcome("\n".join(str(h) for h in hits) if hits else "No files found")

    def grep_result(self, hits: list[Hit], mode: str | None) -> ToolOutcome:
        return ToolOutcome("\n".join(f"{f}:{n}:{line}" for f, n, line in hits) if hits else "No matches found")

    def listing(self, base: Path, entries: list[Path], files: list[Path]) -> ToolOutcome:
        return ToolOutcome("".join(f"{f.relative_to(base)}\n" for f in files))


class ClaudeCodeVoice(Voice):
    name = "claude-code"

    def error(self, text: str) -> ToolOutcome:
        return ToolOutcome(f"<tool_use_error>{text}</tool_use_error>", True)

    def unknown_tool(self, name: str, offered: list[str]) -> str:
        return f"No such tool available: {name}"

    def unread(self, path: Path) -> str:
        return "File has not been read yet. Read it first before writing to it."

    def missing_file(self, path: Path, root: Path) -> ToolOutcome:
        return ToolOutcome(f"File does not exist. Note: your current working directory is {root}.", True)

    def directory_read(self, path: Path, entries: list[Path]) -> ToolOutcome:
        return self.error(f"EISDIR: illegal operation on a directory, read '{path}'")

    def file_read(self, path: Path, text: str, offset: int | None, limit: int | None) -> ToolOutcome:
        if not text:
            return ToolOutcome("<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>")
        lines = text.split("\n")
        start = max(offset - 1, 0) if offset else 0
        shown = lines[start:start + limit] if limit else lines[start:]
        return ToolOutcome("\n".join(f"{start + 1 + i}\t{line}" for i, line in enumerate(shown)))

    def written(self, path: Path, existed: bool) -> ToolOutcome:
        if existed:
            return ToolOutcome(f"The file {path} has been updated successfully.{_NO_READ_BACK}")
        return ToolOutcome(f"File created successfully at: {path}{_NO_READ_BACK}")

    def edited(self, path: Path) -> ToolOutcome:
        return ToolOutcome(f"The file {path} has been updated successfully.{_NO_READ_BACK}")

    def edit_missing(self, path: Path) -> str:
        return "File does not exist."

    def edit_unchanged(self) -> str:
        return "No changes to make: old_string and new_string are exactly the same."

    def edit_not_found(self, old: str) -> str:
        return f"String to replace not found in file.\nString: {old}"

    def edit_ambiguous(self, count: int, old: str) -> str:
        return (f"Found {count} matches of the string to replace, but replace_all is false. To replace all "
                "occurrences, set replace_all to true. To replace only one occurrence, please provide more "
                f"context to uniquely identify the instance.\nString: {old}")

    def shell_result(self, out: str, err: str, code: int, elapsed: float) -> ToolOutcome:
        if code != 0:
            return ToolOutcome(f"Exit code {code}\n{(err or out).rstrip()}".rstrip(), True)
        return ToolOutcome(out.rstrip("\n") or "(Bash completed with no output)", explicit_ok=True)

    def grep_result(self, hits: list[Hit], mode: str | None) -> ToolOutcome:
        mode = mode or "files_with_matches"
        if not hits:
            return ToolOutcome("No files found" if mode != "content" else "No matches found")
        if mode == "content":
            return ToolOutcome("\n".join(f"{f}:{n}:{line}" for f, n, line in hits))
        if mode == "count":
            counts: dict[Path, int] = {}
            for f, _, _ in hits:
                counts[f] = counts.get(f, 0) + 1
            return ToolOutcome("\n".join(f"{f}:{c}" for f, c in counts.items()))
        files = list(dict.fromkeys(f for f, _, _ in hits))
        return ToolOutcome(f"Found {len(files)} file{'s' if len(files) != 1 else ''}\n" + "\n".join(map(str, files)))

    def listing(self, base: Path, entries: list[Path], files: list[Path]) -> ToolOutcome:
        lines = [f"- {base}/"] + [f"  - {e.name}{'/' if e.is_dir() else ''}" for e in sorted(entries)]
        return ToolOutcome("\n".join(lines))


class OpencodeVoice(Voice):
    name = "opencode"

    def unknown_tool(self, name: str, offered: list[str]) -> str:
        return f"Model tried to call unavailable tool '{name}'. Available tools: {', '.join(offered)}."

    def unread(self, path: Path) -> str:
        return f"You must read file {path} before overwriting it. Use the Read tool first"

    def missing_file(self, path: Path, root: Path) -> ToolOutcome:
        return ToolOutcome(f"File not found: {path}", True)

    def directory_read(self, path: Path, entries: list[Path]) -> ToolOutcome:
        names = sorted(e.name + ("/" if e.is_dir() else "") for e in entries)
        return ToolOutcome("\n".join([f"<path>{path}</path>", "<type>directory</type>", "<entries>", *names,
                                      f"\n({len(names)} entries)", "</entries>"]))

    def file_read(self, path: Path, text: str, offset: int | None, limit: int | None) -> ToolOutcome:
        offset, limit = offset or 1, limit or 2000
        # opencode counts lines as a line splitter does: a trailing newline ends the last line.
        lines = text.splitlines()
        shown = lines[offset - 1: offset - 1 + limit]
        out = "\n".join([f"<path>{path}</path>", "<type>file</type>", "<content>\n"])
        out += "\n".join(f"{offset + i}: {line}" for i, line in enumerate(shown))
        last = offset + len(shown) - 1
        if offset - 1 + limit < len(lines):
            out += f"\n\n(Showing lines {offset}-{last} of {len(lines)}. Use offset={last + 1} to continue.)"
        else:
            out += f"\n\n(End of file - total {len(lines)} lines)"
        return ToolOutcome(out + "\n</content>")

    def written(self, path: Path, existed: bool) -> ToolOutcome:
        return ToolOutcome("Wrote file successfully.")

    def edited(self, path: Path) -> ToolOutcome:
        return ToolOutcome("Edit applied successfully.")

    def edit_missing(self, path: Path) -> str:
        return f"File {path} not found"

    def edit_unchanged(self) -> str:
        return "oldString and newString must be different"

    def edit_not_found(self, old: str) -> str:
        return ("Could not find oldString in the file. It must match exactly, including whitespace, indentation, "
                "and line endings.")

    def edit_ambiguous(self, count: int, old: str) -> str:
        return ("Found multiple matches for oldString. Provide more surrounding lines in oldString to identify the "
                "correct match.")

    def shell_result(self, out: str, err: str, code: int, elapsed: float) -> ToolOutcome:
        text = out + err
        if code != 0:
            text += f"\n\n<bash_metadata>\nbash tool terminated command with exit code {code}\n</bash_metadata>"
        return ToolOutcome(text, code != 0)

    def grep_result(self, hits: list[Hit], mode: str | None) -> ToolOutcome:
        if not hits:
            return ToolOutcome("No files found")
        lines = [f"Found {len(hits)} matches"]
        current = None
        for f, n, line in hits:
            if f != current:
                if current is not None:
                    lines.append("")
                lines.append(f"{f}:")
                current = f
            lines.append(f"  Line {n}: {line}")
        return ToolOutcome("\n".join(lines))

    def listing(self, base: Path, entries: list[Path], files: list[Path]) -> ToolOutcome:
        lines = [f"{base}/"]
        for f in files:
            rel = f.relative_to(base)
            lines.append("  " * len(rel.parts) + rel.name)
        return ToolOutcome("\n".join(lines) + "\n")


def _token_count(text: str) -> int:
    """Codex's `Original token count`: measured as ceil(bytes / 4) (29 bytes -> 8, 68 -> 17)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


class CodexVoice(Voice):
    name = "codex"

    def unknown_tool(self, name: str, offered: list[str]) -> str:
        return f"unsupported call: {name}"

    def shell_result(self, out: str, err: str, code: int, elapsed: float) -> ToolOutcome:
        output = out + (err + "\n" if err and not err.endswith("\n") else err)
        return ToolOutcome(
            f"Chunk ID: {secrets.token_hex(3)}\nWall time: {elapsed:.4f} seconds\nProcess exited with code {code}\n"
            f"Original token count: {_token_count(output)}\nOutput:\n{output}", code != 0)

    def patch_applied(self, summary: list[str], elapsed: float) -> ToolOutcome:
        # the wall time has one decimal and none when whole (measured: `0 seconds`, `0.1 seconds`)
        files = "".join(line + "\n" for line in summary)
        return ToolOutcome(f"Exit code: 0\nWall time: {round(elapsed, 1):g} seconds\nOutput:\n"
                           f"Success. Updated the following files:\n{files}")

    def patch_refused(self, why: str) -> ToolOutcome:
        return ToolOutcome(f"apply_patch verification failed: {why}", True)

    def file_served(self, text: str, elapsed: float) -> ToolOutcome:
        # an MCP tool's output: content parts, the first its wall time, then the server's content
        parts = [{"type": "input_text", "text": f"Wall time: {elapsed:.4f} seconds\nOutput:"},
                 {"type": "input_text", "text": text}]
        return ToolOutcome("\n".join(p["text"] for p in parts), parts=parts)


GENERIC_VOICE = Voice()
VOICES: dict[str, Voice] = {voice.name: voice for voice in (GENERIC_VOICE, ClaudeCodeVoice(), OpencodeVoice(),
                                                             CodexVoice())}


def voice_for(name: str) -> Voice:
    """The voice a persona names; the generic voice for a name this module does not know."""
    return VOICES.get(name, GENERIC_VOICE)
