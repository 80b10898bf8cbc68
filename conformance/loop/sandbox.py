"""The sandbox: the real clients' file tools over one temporary directory, and nothing else.

Rules:
- Every path a model names is resolved inside the sandbox root: relative paths are joined onto
  the root (the clients' working directory); absolute paths must already lie inside it. `..`,
  absolute paths elsewhere and symlinks that lead out are refused with a tool error the model
  can read (the error is returned as the tool result, never raised). The check is done on the
  fully resolved path (`os.path.realpath`), so a symlink planted inside the root that points out
  is caught at use time, including for writes through a symlinked parent directory.
- Bash is not a shell. The command is split with `shlex` (POSIX rules, punctuation recognised),
  and only a documented allowlist of commands is run, each by its own small implementation in
  this file: `ls`, `cat`, `echo`, `printf` (no format directives), `mkdir`, `touch`, `wc`,
  `head`, `tail`, `pwd`, `true`; `>` and `>>` redirect output to a sandbox file; `&&` chains
  commands. Anything else — another program, `;`, `|`, `||`, `&`, `<`, `$`, backticks,
  sub-shells — answers with a tool error. Model output is never handed to a real shell or
  executed on the host.
- Tool results are shaped as each client shapes them (measured against Claude Code 2.1.197 and
  opencode 1.18.33 on this machine, see docs/loop.md): Claude Code's Read returns `N\\ttext` lines
  and errors as `<tool_use_error>...</tool_use_error>` with `is_error: true`; opencode's read
  returns `<path>/<type>/<content>` with `N: text` lines and errors as plain text.
- Codex's tools (`exec_command`, the freeform `apply_patch`) are `conformance.loop.codex_tools`;
  `exec_command` runs through the same Bash interpreter and allowlist below (one allowlist).
  Codex has no read-before-write rule, so the sandbox does not apply it to Codex.
- Claude Code and opencode refuse to overwrite or edit an existing file that was not read (or written) in
  this session; the sandbox keeps that rule so a loop that skips reading fails as it would live.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from conformance.loop import codex_tools

CLIENTS = ("claude-code", "opencode", "codex")

# Commands the Bash tool understands (each implemented below, never executed for real).
BASH_ALLOWLIST = ("ls", "cat", "echo", "printf", "mkdir", "touch", "wc", "head", "tail", "pwd", "true")
_FORBIDDEN_PUNCT = {";", "|", "||", "&", "<", "<<", "(", ")", ";;", "|&", "<>", ">&", "&>"}


class SandboxError(Exception):
    """A refusal the model gets to read as a tool error (escape, unknown tool, bad arguments)."""


@dataclass
class ToolOutcome:
    text: str
    is_error: bool = False
    explicit_ok: bool = False  # Claude Code marks Bash successes with `is_error: false`
    parts: list[dict] | None = None  # the output as content parts, where the client sends parts (Codex's MCP calls)


@dataclass
class ToolCallLog:
    name: str
    args: dict
    outcome: ToolOutcome


@dataclass
class Sandbox:
    """A seeded directory and the tools of one client over it."""

    root: Path
    client: str = "claude-code"
    known_files: set[str] = field(default_factory=set)  # read or written in this session
    log: list[ToolCallLog] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.client not in CLIENTS:
            raise ValueError(f"client must be one of {CLIENTS}, got {self.client!r}")
        self.root = Path(os.path.realpath(self.root))
        self.root.mkdir(parents=True, exist_ok=True)

    # ---------------------------------------------------------------- seeding and reading back
    def seed(self, files: dict[str, str]) -> None:
        for rel, text in files.items():
            p = self.resolve(rel)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")

    def read_text(self, rel: str) -> str | None:
        try:
            p = self.resolve(rel)
        except SandboxError:
            return None
        return p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None

    # ---------------------------------------------------------------- path confinement
    def resolve(self, path: str) -> Path:
        """The real path for `path`, or SandboxError if it is outside the root."""
        if not isinstance(path, str) or not path.strip():
            raise SandboxError("a file path is required")
        if "\x00" in path:
            raise SandboxError("the path contains a NUL byte")
        raw = Path(path.strip())
        candidate = raw if raw.is_absolute() else self.root / raw
        if ".." in raw.parts:
            raise SandboxError(f"path {path!r} uses '..'; only paths inside {self.root} are allowed")
        real = Path(os.path.realpath(candidate))
        if real != self.root and self.root not in real.parents:
            raise SandboxError(
                f"path {path!r} resolves to {real}, outside the working directory {self.root}; "
                "access outside the working directory is not allowed"
            )
        return real

    def _display(self, p: Path) -> str:
        return str(p)

    # ---------------------------------------------------------------- dispatch
    def run(self, name: str, args: dict, namespace: str | None = None) -> ToolOutcome:
        """Run one tool call and return the text the client would send back. Never raises for
        anything the model did. `namespace`: the Responses namespace the called tool sits in."""
        try:
            if not isinstance(args, dict):
                raise SandboxError(f"tool arguments must be a JSON object, got {type(args).__name__}")
            impl = self._tools().get(name if namespace is None else f"{namespace}.{name}")
            if impl is None:
                raise SandboxError(self._unknown_tool(name if namespace is None else f"{namespace}.{name}"))
            outcome = impl(args)
        except SandboxError as exc:
            outcome = self._error(str(exc))
        except (OSError, UnicodeError, ValueError, TypeError) as exc:
            outcome = self._error(f"{type(exc).__name__}: {exc}")
        self.log.append(ToolCallLog(name, args if isinstance(args, dict) else {}, outcome))
        return outcome

    def tool_names(self) -> list[str]:
        return sorted(self._tools())

    def _tools(self) -> dict:
        if self.client == "codex":
            return {"exec_command": self.codex_exec_command, "apply_patch": self.codex_apply_patch,
                    f"{codex_tools.MCP_FILES_NAMESPACE}.read_file": self.codex_mcp_read_file}
        if self.client == "claude-code":
            return {"Read": self.cc_read, "Write": self.cc_write, "Edit": self.cc_edit, "Bash": self.cc_bash,
                    "Glob": self.cc_glob, "Grep": self.cc_grep, "LS": self.cc_ls}
        return {"read": self.oc_read, "write": self.oc_write, "edit": self.oc_edit, "bash": self.oc_bash,
                "glob": self.oc_glob, "grep": self.oc_grep, "list": self.oc_list}

    def _unknown_tool(self, name: str) -> str:
        if self.client == "codex":
            return codex_tools.unknown_tool(name)
        if self.client == "claude-code":
            return f"No such tool available: {name}"
        return (f"Model tried to call unavailable tool '{name}'. "
                f"Available tools: {', '.join(self.tool_names())}.")

    def _error(self, text: str) -> ToolOutcome:
        if self.client == "claude-code":
            return ToolOutcome(f"<tool_use_error>{text}</tool_use_error>", True)
        return ToolOutcome(text, True)

    @staticmethod
    def _arg(args: dict, key: str, kind: type = str, required: bool = True):
        if key not in args or args[key] is None:
            if required:
                raise SandboxError(f"The required parameter `{key}` is missing")
            return None
        value = args[key]
        if kind is int and isinstance(value, bool):
            raise SandboxError(f"The parameter `{key}` type is expected as `integer`")
        if kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, kind):
            raise SandboxError(f"The parameter `{key}` type is expected as `{kind.__name__}` "
                               f"but provided as `{type(value).__name__}`")
        return value

    # ---------------------------------------------------------------- shared file operations
    def _lines(self, p: Path, offset: int | None, limit: int | None, first: int) -> tuple[list[str], int]:
        text = p.read_text(encoding="utf-8", errors="replace")
        lines = text.split("\n")
        start = max((offset or first) - first, 0) if offset else 0
        end = start + limit if limit else None
        return lines[start:end], start + 1

    def _write(self, p: Path, content: str) -> bool:
        existed = p.exists()
        if existed and p.is_dir():
            raise SandboxError(f"{p} is a directory")
        if existed and str(p) not in self.known_files:
            raise SandboxError(self._unread_message(p))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content, encoding="utf-8")
        self.known_files.add(str(p))
        return existed

    def _unread_message(self, p: Path) -> str:
        if self.client == "claude-code":
            return "File has not been read yet. Read it first before writing to it."
        return f"You must read file {p} before overwriting it. Use the Read tool first"

    def _replace(self, p: Path, old: str, new: str, replace_all: bool) -> None:
        if not p.is_file():
            raise SandboxError("File does not exist." if self.client == "claude-code" else f"File {p} not found")
        if str(p) not in self.known_files:
            raise SandboxError(self._unread_message(p))
        text = p.read_text(encoding="utf-8")
        if old == new:
            raise SandboxError("No changes to make: old_string and new_string are exactly the same."
                               if self.client == "claude-code" else "oldString and newString must be different")
        count = text.count(old) if old else 0
        if count == 0:
            if self.client == "claude-code":
                raise SandboxError(f"String to replace not found in file.\nString: {old}")
            raise SandboxError("Could not find oldString in the file. It must match exactly, including "
                               "whitespace, indentation, and line endings.")
        if count > 1 and not replace_all:
            if self.client == "claude-code":
                raise SandboxError(
                    f"Found {count} matches of the string to replace, but replace_all is false. To replace all "
                    "occurrences, set replace_all to true. To replace only one occurrence, please provide more "
                    f"context to uniquely identify the instance.\nString: {old}")
            raise SandboxError("Found multiple matches for oldString. Provide more surrounding lines in oldString "
                               "to identify the correct match.")
        p.write_text(text.replace(old, new) if replace_all else text.replace(old, new, 1), encoding="utf-8")

    def _walk(self, base: Path) -> list[Path]:
        out = []
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for f in sorted(filenames):
                full = Path(dirpath) / f
                try:
                    self.resolve(str(full))  # skip symlinks that lead out
                except SandboxError:
                    continue
                out.append(full)
        return out

    def _glob(self, pattern: str, base: Path) -> list[Path]:
        pat = pattern[2:] if pattern.startswith("./") else pattern
        hits = []
        for f in self._walk(base):
            rel = f.relative_to(base).as_posix()
            if fnmatch.fnmatch(rel, pat) or ("/" not in pat and fnmatch.fnmatch(f.name, pat)) or (
                    pat.startswith("**/") and fnmatch.fnmatch(rel, pat[3:])):
                hits.append(f)
        return hits

    def _grep(self, pattern: str, base: Path, include: str | None, ignore_case: bool = False):
        try:
            rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise SandboxError(f"invalid regular expression {pattern!r}: {exc}") from None
        files = [base] if base.is_file() else self._walk(base)
        hits: list[tuple[Path, int, str]] = []
        for f in files:
            if include and not fnmatch.fnmatch(f.name, include):
                continue
            try:
                text = f.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(text.split("\n"), 1):
                if rx.search(line):
                    hits.append((f, n, line))
        return hits

    # ---------------------------------------------------------------- Claude Code tools
    def cc_read(self, args: dict) -> ToolOutcome:
        p = self.resolve(self._arg(args, "file_path"))
        offset = self._arg(args, "offset", int, required=False)
        limit = self._arg(args, "limit", int, required=False)
        if not p.exists():
            return ToolOutcome(f"File does not exist. Note: your current working directory is {self.root}.", True)
        if p.is_dir():
            return self._error(f"EISDIR: illegal operation on a directory, read '{p}'")
        self.known_files.add(str(p))
        if p.stat().st_size == 0:
            return ToolOutcome("<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>")
        lines, first = self._lines(p, offset, limit, 1)
        return ToolOutcome("\n".join(f"{first + i}\t{line}" for i, line in enumerate(lines)))

    def cc_write(self, args: dict) -> ToolOutcome:
        p = self.resolve(self._arg(args, "file_path"))
        existed = self._write(p, self._arg(args, "content"))
        note = " (file state is current in your context \u2014 no need to Read it back)"
        if existed:
            return ToolOutcome(f"The file {p} has been updated successfully.{note}")
        return ToolOutcome(f"File created successfully at: {p}{note}")

    def cc_edit(self, args: dict) -> ToolOutcome:
        p = self.resolve(self._arg(args, "file_path"))
        self._replace(p, self._arg(args, "old_string"), self._arg(args, "new_string"),
                      bool(self._arg(args, "replace_all", bool, required=False)))
        return ToolOutcome(f"The file {p} has been updated successfully. "
                           "(file state is current in your context \u2014 no need to Read it back)")

    def cc_bash(self, args: dict) -> ToolOutcome:
        out, err, code = self.bash(self._arg(args, "command"))
        if code != 0:
            return ToolOutcome(f"Exit code {code}\n{(err or out).rstrip()}".rstrip(), True)
        return ToolOutcome(out.rstrip("\n") or "(Bash completed with no output)", explicit_ok=True)

    def cc_glob(self, args: dict) -> ToolOutcome:
        base = self.resolve(self._arg(args, "path", required=False) or str(self.root))
        hits = self._glob(self._arg(args, "pattern"), base)
        return ToolOutcome("\n".join(str(h) for h in hits) if hits else "No files found")

    def cc_grep(self, args: dict) -> ToolOutcome:
        base = self.resolve(self._arg(args, "path", required=False) or str(self.root))
        mode = self._arg(args, "output_mode", required=False) or "files_with_matches"
        hits = self._grep(self._arg(args, "pattern"), base, self._arg(args, "glob", required=False),
                          bool(args.get("-i")))
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

    def cc_ls(self, args: dict) -> ToolOutcome:
        base = self.resolve(self._arg(args, "path"))
        if not base.is_dir():
            return self._error(f"{base} is not a directory")
        lines = [f"- {base}/"]
        for entry in sorted(base.iterdir()):
            lines.append(f"  - {entry.name}{'/' if entry.is_dir() else ''}")
        return ToolOutcome("\n".join(lines))

    # ---------------------------------------------------------------- opencode tools
    def oc_read(self, args: dict) -> ToolOutcome:
        p = self.resolve(self._arg(args, "filePath"))
        offset = self._arg(args, "offset", int, required=False) or 1
        limit = self._arg(args, "limit", int, required=False) or 2000
        if not p.exists():
            return ToolOutcome(f"File not found: {p}", True)
        if p.is_dir():
            entries = sorted(e.name + ("/" if e.is_dir() else "") for e in p.iterdir())
            return ToolOutcome("\n".join([f"<path>{p}</path>", "<type>directory</type>", "<entries>", *entries,
                                          f"\n({len(entries)} entries)", "</entries>"]))
        self.known_files.add(str(p))
        # opencode counts lines as a line splitter does: a trailing newline ends the last line.
        raw = p.read_text(encoding="utf-8", errors="replace").splitlines()
        shown = raw[offset - 1: offset - 1 + limit]
        out = "\n".join([f"<path>{p}</path>", "<type>file</type>", "<content>\n"])
        out += "\n".join(f"{offset + i}: {line}" for i, line in enumerate(shown))
        last = offset + len(shown) - 1
        if offset - 1 + limit < len(raw):
            out += f"\n\n(Showing lines {offset}-{last} of {len(raw)}. Use offset={last + 1} to continue.)"
        else:
            out += f"\n\n(End of file - total {len(raw)} lines)"
        return ToolOutcome(out + "\n</content>")

    def oc_write(self, args: dict) -> ToolOutcome:
        p = self.resolve(self._arg(args, "filePath"))
        self._write(p, self._arg(args, "content"))
        return ToolOutcome("Wrote file successfully.")

    def oc_edit(self, args: dict) -> ToolOutcome:
        p = self.resolve(self._arg(args, "filePath"))
        self._replace(p, self._arg(args, "oldString"), self._arg(args, "newString"),
                      bool(self._arg(args, "replaceAll", bool, required=False)))
        return ToolOutcome("Edit applied successfully.")

    def oc_bash(self, args: dict) -> ToolOutcome:
        workdir = self._arg(args, "workdir", required=False)
        cwd = self.resolve(workdir) if workdir else self.root
        out, err, code = self.bash(self._arg(args, "command"), cwd=cwd)
        text = out + err
        if code != 0:
            text += f"\n\n<bash_metadata>\nbash tool terminated command with exit code {code}\n</bash_metadata>"
        return ToolOutcome(text, code != 0)

    def oc_glob(self, args: dict) -> ToolOutcome:
        base = self.resolve(self._arg(args, "path", required=False) or str(self.root))
        hits = self._glob(self._arg(args, "pattern"), base)
        return ToolOutcome("\n".join(str(h) for h in hits) if hits else "No files found")

    def oc_grep(self, args: dict) -> ToolOutcome:
        base = self.resolve(self._arg(args, "path", required=False) or str(self.root))
        hits = self._grep(self._arg(args, "pattern"), base, self._arg(args, "include", required=False))
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

    def oc_list(self, args: dict) -> ToolOutcome:
        base = self.resolve(self._arg(args, "path", required=False) or str(self.root))
        if not base.is_dir():
            return self._error(f"{base} is not a directory")
        lines = [f"{base}/"]
        for f in self._walk(base):
            rel = f.relative_to(base)
            lines.append("  " * len(rel.parts) + rel.name)
        return ToolOutcome("\n".join(lines) + "\n")

    # ---------------------------------------------------------------- Codex tools
    def codex_exec_command(self, args: dict) -> ToolOutcome:
        """Codex's exec_command through the one Bash interpreter below, cwd pinned inside the root."""
        cmd = self._arg(args, "cmd")
        workdir = self._arg(args, "workdir", required=False)
        cwd = self.resolve(workdir) if workdir else self.root
        if not cwd.is_dir():
            raise SandboxError(f"workdir {workdir!r} is not a directory inside {self.root}")
        start = time.monotonic()
        out, err, code = self.bash(cmd, cwd=cwd)
        text = out + (err + "\n" if err and not err.endswith("\n") else err)
        return ToolOutcome(codex_tools.exec_output(text, code, time.monotonic() - start), is_error=code != 0)

    def codex_apply_patch(self, args: dict) -> ToolOutcome:
        """Codex's freeform apply_patch; `args["input"]` is the custom tool call's raw text."""
        text = codex_tools.patch_input(args)
        if text is None:
            return ToolOutcome(codex_tools.patch_failure(
                "the patch text is missing; send the patch as the tool's raw input, from "
                "'*** Begin Patch' to '*** End Patch'"), True)
        try:
            summary = codex_tools.apply_patch_text(self.root, text)
        except (codex_tools.PatchError, OSError, UnicodeError) as exc:
            return ToolOutcome(codex_tools.patch_failure(str(exc)), True)
        return ToolOutcome(codex_tools.patch_output(summary))

    def codex_mcp_read_file(self, args: dict) -> ToolOutcome:
        """`read_file{path}` of the scenarios' `files` MCP server, as Codex returns an MCP result:
        content parts, the first `Wall time: S seconds\\nOutput:`."""
        start = time.monotonic()
        p = self.resolve(self._arg(args, "path"))
        if not p.is_file():
            raise SandboxError(f"{args['path']}: No such file")
        text = p.read_text(encoding="utf-8", errors="replace")
        parts = codex_tools.mcp_output(text, time.monotonic() - start)
        return ToolOutcome("\n".join(x["text"] for x in parts), parts=parts)

    # ---------------------------------------------------------------- the Bash interpreter
    def bash(self, command: str, cwd: Path | None = None) -> tuple[str, str, int]:
        """Interpret `command` with the allowlist. Returns (stdout, stderr, exit code); a refused
        command is exit code 126 with the reason on stderr. Never runs a process."""
        cwd = cwd or self.root
        try:
            pipeline = _parse(command)
        except SandboxError as exc:
            return "", f"sandbox: {exc}", 126
        out_all: list[str] = []
        for argv, redirect in pipeline:
            try:
                out, err, code = self._run_builtin(argv, cwd)
            except SandboxError as exc:
                return "".join(out_all), f"{argv[0]}: {exc}", 1
            if redirect is not None:
                op, target = redirect
                try:
                    p = self.resolve(target if Path(target).is_absolute() else str(cwd / target))
                except SandboxError as exc:
                    return "".join(out_all), f"sandbox: {exc}", 1
                if p.is_dir():
                    return "".join(out_all), f"bash: {target}: Is a directory", 1
                p.parent.mkdir(parents=True, exist_ok=True)
                with p.open("a" if op == ">>" else "w", encoding="utf-8") as fh:
                    fh.write(out)
                self.known_files.add(str(p))
                out = ""
            out_all.append(out)
            if code != 0:
                return "".join(out_all), err, code
        return "".join(out_all), "", 0

    def _run_builtin(self, argv: list[str], cwd: Path) -> tuple[str, str, int]:
        name, rest = argv[0], argv[1:]

        def path(a: str) -> Path:
            return self.resolve(a if Path(a).is_absolute() else str(cwd / a))

        def read(a: str) -> str:
            p = path(a)
            if not p.is_file():
                raise SandboxError(f"{a}: No such file or directory")
            self.known_files.add(str(p))
            return p.read_text(encoding="utf-8", errors="replace")

        flags = [a for a in rest if a.startswith("-") and a != "-"]
        operands = [a for a in rest if not (a.startswith("-") and a != "-")]
        if name == "true":
            return "", "", 0
        if name == "pwd":
            return f"{cwd}\n", "", 0
        if name == "echo":
            newline = True
            words = list(rest)
            while words and words[0] in ("-n", "-e", "-E"):
                if words.pop(0) == "-n":
                    newline = False
            return " ".join(words) + ("\n" if newline else ""), "", 0
        if name == "printf":
            if not rest:
                raise SandboxError("usage: printf FORMAT")
            fmt = rest[0]
            if "%" in fmt.replace("%%", ""):
                raise SandboxError("format directives are not supported in the sandbox")
            return fmt.replace("%%", "%").replace("\\n", "\n").replace("\\t", "\t"), "", 0
        if name == "cat":
            return "".join(read(a) for a in operands), "", 0
        if name == "ls":
            targets = operands or ["."]
            show_all = any("a" in f for f in flags)
            out = []
            for t in targets:
                p = path(t)
                if not p.exists():
                    raise SandboxError(f"cannot access '{t}': No such file or directory")
                if p.is_file():
                    out.append(t)
                    continue
                names = sorted(e.name + ("/" if e.is_dir() and "F" in "".join(flags) else "") for e in p.iterdir()
                               if show_all or not e.name.startswith("."))
                if len(targets) > 1:
                    out.append(f"{t}:")
                out.extend(names)
            return "".join(x + "\n" for x in out), "", 0
        if name == "mkdir":
            for a in operands:
                path(a).mkdir(parents=("-p" in flags), exist_ok=("-p" in flags))
            return "", "", 0
        if name == "touch":
            for a in operands:
                p = path(a)
                p.parent.mkdir(parents=True, exist_ok=True)
                p.touch()
            return "", "", 0
        if name in ("head", "tail"):
            n = 10
            files = []
            i = 0
            while i < len(rest):
                a = rest[i]
                if a == "-n" and i + 1 < len(rest):
                    n, i = _int(rest[i + 1]), i + 2
                    continue
                if re.fullmatch(r"-n?\d+", a):
                    n = _int(a.lstrip("-n"))
                elif a.startswith("-"):
                    raise SandboxError(f"option {a} is not supported in the sandbox")
                else:
                    files.append(a)
                i += 1
            out = []
            for a in files:
                lines = read(a).splitlines(keepends=True)
                out.extend(lines[:n] if name == "head" else lines[-n:] if n else [])
            return "".join(out), "", 0
        if name == "wc":
            want = set("".join(f.lstrip("-") for f in flags)) or {"l", "w", "c"}
            rows = []
            for a in operands:
                text = read(a)
                cols = []
                if "l" in want:
                    cols.append(text.count("\n"))
                if "w" in want:
                    cols.append(len(text.split()))
                if "c" in want:
                    cols.append(len(text.encode("utf-8")))
                rows.append(" ".join(str(c) for c in cols) + f" {a}")
            return "".join(r + "\n" for r in rows), "", 0
        raise SandboxError("command not allowed")  # unreachable: _parse checks the allowlist


def _int(s: str) -> int:
    try:
        return int(s)
    except ValueError:
        raise SandboxError(f"invalid number {s!r}") from None


def _parse(command: str) -> list[tuple[list[str], tuple[str, str] | None]]:
    """Split a command line into `&&`-chained simple commands with at most one output redirect.
    Refuses every construct a real shell would give meaning to beyond that."""
    if not isinstance(command, str) or not command.strip():
        raise SandboxError("empty command")
    if "`" in command or "$" in command:
        raise SandboxError("command substitution and variables ($, `) are not allowed")
    if "\n" in command.strip():
        raise SandboxError("multi-line commands are not allowed")
    lex = shlex.shlex(command, posix=True, punctuation_chars=";&|<>()")
    lex.whitespace_split = True
    lex.commenters = ""
    try:
        tokens = list(lex)
    except ValueError as exc:
        raise SandboxError(f"cannot parse the command: {exc}") from None
    commands: list[list[str]] = [[]]
    for tok in tokens:
        if tok == "&&":
            commands.append([])
        elif tok in _FORBIDDEN_PUNCT or (tok and set(tok) <= set(";&|<>()") and tok not in (">", ">>")):
            raise SandboxError(f"shell operator {tok!r} is not allowed (allowed: simple commands, '&&', '>' and '>>')")
        else:
            commands[-1].append(tok)
    out = []
    for argv in commands:
        if not argv:
            raise SandboxError("empty command around '&&'")
        redirect = None
        if ">" in argv or ">>" in argv:
            idx = max(i for i, t in enumerate(argv) if t in (">", ">>"))
            if idx != len(argv) - 2 or sum(t in (">", ">>") for t in argv) != 1:
                raise SandboxError("only one output redirect at the end of a command is allowed")
            redirect = (argv[idx], argv[idx + 1])
            argv = argv[:idx]
            if not argv:
                raise SandboxError("redirect without a command")
        if argv[0] not in BASH_ALLOWLIST:
            raise SandboxError(
                f"command {argv[0]!r} is not allowed in the conformance sandbox "
                f"(allowed: {', '.join(BASH_ALLOWLIST)})")
        out.append((argv, redirect))
    return out
