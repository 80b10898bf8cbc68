"""The sandbox's Bash interpreter: the one allowlist and parser every shell tool runs through.

Rules:
- This is not a shell. A command line is split with `shlex` (POSIX rules, punctuation
  recognised) and only the documented allowlist (`BASH_ALLOWLIST`) is run, each command by its
  own small implementation here: `ls`, `cat`, `echo`, `printf` (`%s` only), `mkdir`, `touch`,
  `wc`, `head`, `tail`, `pwd`, `true`; `>` and `>>` redirect output to a sandbox file; `&&`
  chains commands. Anything else — another program, `;`, `|`, `||`, `&`, `<`, `$`, backticks,
  sub-shells, a newline outside quotes — is refused. Model output is never handed to a real
  shell or executed on the host: no process is started.
- Every path a command names goes through the sandbox's confinement (`resolve`, relative paths
  joined onto the command's working directory); a file read or written is remembered
  (`remember`), so the read-before-write rule of the file tools sees it.
- `run` answers (stdout, stderr, exit code) and never raises for what the model wrote: a refused
  command line is exit code 126 with the reason on stderr, a failing command exit code 1.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

from conformance.loop.confinement import SandboxError

BASH_ALLOWLIST = ("ls", "cat", "echo", "printf", "mkdir", "touch", "wc", "head", "tail", "pwd", "true")
_FORBIDDEN_PUNCT = {";", "|", "||", "&", "<", "<<", "(", ")", ";;", "|&", "<>", ">&", "&>"}


class Shell:
    """The allowlisted commands over one sandbox: `resolve(path) -> Path` confines a path,
    `remember(path)` records a file the commands read or wrote."""

    def __init__(self, resolve: Callable[[str], Path], remember: Callable[[Path], None]) -> None:
        self.resolve = resolve
        self.remember = remember

    def run(self, command: str, cwd: Path) -> tuple[str, str, int]:
        """Interpret `command` in `cwd`: (stdout, stderr, exit code)."""
        try:
            pipeline = parse(command)
        except SandboxError as exc:
            return "", f"sandbox: {exc}", 126
        out_all: list[str] = []
        for argv, redirect in pipeline:
            try:
                out, err, code = self._builtin(argv, cwd)
            except SandboxError as exc:
                return "".join(out_all), f"{argv[0]}: {exc}", 1
            if redirect is not None:
                op, target = redirect
                try:
                    p = self._path(target, cwd)
                except SandboxError as exc:
                    return "".join(out_all), f"sandbox: {exc}", 1
                if p.is_dir():
                    return "".join(out_all), f"bash: {target}: Is a directory", 1
                p.parent.mkdir(parents=True, exist_ok=True)
                with p.open("a" if op == ">>" else "w", encoding="utf-8") as fh:
                    fh.write(out)
                self.remember(p)
                out = ""
            out_all.append(out)
            if code != 0:
                return "".join(out_all), err, code
        return "".join(out_all), "", 0

    # ---------------------------------------------------------------- the builtins
    def _path(self, name: str, cwd: Path) -> Path:
        return self.resolve(name if Path(name).is_absolute() else str(cwd / name))

    def _read(self, name: str, cwd: Path) -> str:
        p = self._path(name, cwd)
        if not p.is_file():
            raise SandboxError(f"{name}: No such file or directory")
        self.remember(p)
        return p.read_text(encoding="utf-8", errors="replace")

    def _builtin(self, argv: list[str], cwd: Path) -> tuple[str, str, int]:
        name, rest = argv[0], argv[1:]
        flags = [a for a in rest if a.startswith("-") and a != "-"]
        operands = [a for a in rest if not (a.startswith("-") and a != "-")]
        if name == "true":
            return "", "", 0
        if name == "pwd":
            return f"{cwd}\n", "", 0
        if name == "echo":
            return _echo(rest), "", 0
        if name == "printf":
            if not rest:
                raise SandboxError("usage: printf FORMAT [ARGUMENT...]")
            return _printf(rest[0], rest[1:]), "", 0
        if name == "cat":
            return "".join(self._read(a, cwd) for a in operands), "", 0
        if name == "ls":
            return self._ls(operands or ["."], flags, cwd), "", 0
        if name == "mkdir":
            for a in operands:
                self._path(a, cwd).mkdir(parents=("-p" in flags), exist_ok=("-p" in flags))
            return "", "", 0
        if name == "touch":
            for a in operands:
                p = self._path(a, cwd)
                p.parent.mkdir(parents=True, exist_ok=True)
                p.touch()
            return "", "", 0
        if name in ("head", "tail"):
            return self._head_tail(name, rest, cwd), "", 0
        if name == "wc":
            return self._wc(flags, operands, cwd), "", 0
        raise SandboxError("command not allowed")  # unreachable: parse() checks the allowlist

    def _ls(self, targets: list[str], flags: list[str], cwd: Path) -> str:
        show_all = any("a" in f for f in flags)
        out = []
        for t in targets:
            p = self._path(t, cwd)
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
        return "".join(x + "\n" for x in out)

    def _head_tail(self, name: str, rest: list[str], cwd: Path) -> str:
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
            lines = self._read(a, cwd).splitlines(keepends=True)
            out.extend(lines[:n] if name == "head" else lines[-n:] if n else [])
        return "".join(out)

    def _wc(self, flags: list[str], operands: list[str], cwd: Path) -> str:
        want = set("".join(f.lstrip("-") for f in flags)) or {"l", "w", "c"}
        rows = []
        for a in operands:
            text = self._read(a, cwd)
            cols = []
            if "l" in want:
                cols.append(text.count("\n"))
            if "w" in want:
                cols.append(len(text.split()))
            if "c" in want:
                cols.append(len(text.encode("utf-8")))
            rows.append(" ".join(str(c) for c in cols) + f" {a}")
        return "".join(r + "\n" for r in rows)


def _int(s: str) -> int:
    try:
        return int(s)
    except ValueError:
        raise SandboxError(f"invalid number {s!r}") from None


def _echo(words: list[str]) -> str:
    newline = True
    words = list(words)
    while words and words[0] in ("-n", "-e", "-E"):
        if words.pop(0) == "-n":
            newline = False
    return " ".join(words) + ("\n" if newline else "")


def _printf(fmt: str, args: list[str]) -> str:
    """printf with `%s` (and `%%`) only, reused for the remaining arguments as printf does; the
    escapes \\n, \\t and \\\\ in the format. Any other directive is refused."""
    pieces = re.split(r"(%%|%s)", fmt)
    if any(p.startswith("%") and p not in ("%%", "%s") for p in pieces) or any(
            "%" in p for p in pieces if p not in ("%%", "%s")):
        raise SandboxError("only the %s directive is supported in the sandbox")
    slots = sum(p == "%s" for p in pieces)

    def once(values: list[str]) -> str:
        out, it = [], iter(values)
        for p in pieces:
            out.append("%" if p == "%%" else next(it, "") if p == "%s" else
                       p.replace("\\\\", "\0").replace("\\n", "\n").replace("\\t", "\t").replace("\0", "\\"))
        return "".join(out)

    if not slots:
        return once([])
    chunks = [args[i:i + slots] for i in range(0, max(len(args), 1), slots)]
    return "".join(once(c) for c in chunks)


def _newline_outside_quotes(command: str) -> bool:
    """A newline a shell would read as a command separator (not inside '...' or "...")."""
    quote = None
    escaped = False
    for ch in command:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote is None and ch in "'\"":
            quote = ch
        elif ch == quote:
            quote = None
        elif ch == "\n" and quote is None:
            return True
    return False


def parse(command: str) -> list[tuple[list[str], tuple[str, str] | None]]:
    """Split a command line into `&&`-chained simple commands with at most one output redirect
    each. Refuses every construct a real shell would give meaning to beyond that."""
    if not isinstance(command, str) or not command.strip():
        raise SandboxError("empty command")
    if "`" in command or "$" in command:
        raise SandboxError("command substitution and variables ($, `) are not allowed")
    if _newline_outside_quotes(command.strip()):
        raise SandboxError("multi-line commands are not allowed (a newline is allowed only inside quotes)")
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
