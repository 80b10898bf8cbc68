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
- The sandbox's limits hold here too (`conformance.loop.limits.Guard`): every file and directory
  is written or made through the guard (charged before the disk is touched, so a command over a
  limit writes nothing), a command's output is refused before it grows past what it may become
  (the call's output limit, or for a redirect what the sandbox may still write), and the time
  limit is checked before each command and each file read. Every refusal and limit reached is
  handed to `notice`, which keeps it as the call's incident.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

from conformance.loop.confinement import Refusal, SandboxError
from conformance.loop.limits import Guard, LimitReached

BASH_ALLOWLIST = ("ls", "cat", "echo", "printf", "mkdir", "touch", "wc", "head", "tail", "pwd", "true")
_FORBIDDEN_PUNCT = {";", "|", "||", "&", "<", "<<", "(", ")", ";;", "|&", "<>", ">&", "&>"}


class Shell:
    """The allowlisted commands over one sandbox: `resolve(path) -> Path` confines a path,
    `remember(path)` records a file the commands read or wrote."""

    def __init__(self, resolve: Callable[[str], Path], remember: Callable[[Path], None], guard: Guard | None = None,
                 notice: Callable[[BaseException], None] = lambda exc: None) -> None:
        self.resolve = resolve
        self.remember = remember
        self.guard = guard or Guard(Path("/"))  # a shell of its own (the tests') counts from the filesystem root
        self.notice = notice
        self._produced = 0  # bytes the running command has put out so far
        self._cap = 0  # what it may put out
        self._redirected = False  # its output goes to a file

    def run(self, command: str, cwd: Path) -> tuple[str, str, int]:
        """Interpret `command` in `cwd`: (stdout, stderr, exit code)."""
        try:
            pipeline = parse(command)
        except SandboxError as exc:
            self.notice(exc)
            return "", f"sandbox: {exc}", 126
        out_all: list[str] = []
        shown = 0  # bytes of stdout kept for the model
        for argv, redirect in pipeline:
            try:
                self.guard.tick()
                target = None if redirect is None else self._path(redirect[1], cwd)
                self._produced, self._redirected = 0, target is not None
                self._cap = self.guard.room() if target is not None else self.guard.limits.output_bytes - shown
                out, err, code = self._builtin(argv, cwd)
                if target is not None:
                    if target.is_dir():
                        return "".join(out_all), f"bash: {redirect[1]}: Is a directory", 1
                    self.guard.write(target, out, append=redirect[0] == ">>")
                    self.remember(target)
                    out = ""
            except SandboxError as exc:
                self.notice(exc)
                return "".join(out_all), f"{argv[0]}: {exc}", 1
            out_all.append(out)
            shown += len(out.encode("utf-8"))
            if code != 0:
                return "".join(out_all), err, code
        return "".join(out_all), "", 0

    # ---------------------------------------------------------------- the builtins
    def _path(self, name: str, cwd: Path) -> Path:
        return self.resolve(name if Path(name).is_absolute() else str(cwd / name))

    def _read(self, name: str, cwd: Path, *, output: bool = False) -> str:
        """A file's text; `output`: it becomes the command's output, refused before reading when
        it would take that past its cap."""
        self.guard.tick()
        p = self._path(name, cwd)
        if not p.is_file():
            raise SandboxError(f"{name}: No such file or directory")
        if output:
            self._grow(p.stat().st_size)
        self.remember(p)
        return p.read_text(encoding="utf-8", errors="replace")

    def _grow(self, n: int) -> None:
        """Count `n` more bytes of the running command's output against its cap."""
        if self._produced + n > self._cap:
            seen = f"an output of at least {self._produced + n} bytes"
            if self._redirected:
                raise LimitReached("written_bytes", f"{seen} to write with {self.guard.room()} bytes left")
            raise LimitReached("output_bytes", f"{seen} (at most {self.guard.limits.output_bytes} per call)")
        self._produced += n

    def _builtin(self, argv: list[str], cwd: Path) -> tuple[str, str, int]:
        name, rest = argv[0], argv[1:]
        flags = [a for a in rest if a.startswith("-") and a != "-"]
        operands = [a for a in rest if not (a.startswith("-") and a != "-")]
        if name == "true":
            return "", "", 0
        if name == "pwd":
            return f"{cwd}\n", "", 0
        if name == "echo":
            return self._made(_echo(rest)), "", 0
        if name == "printf":
            if not rest:
                raise SandboxError("usage: printf FORMAT [ARGUMENT...]")
            return self._made(_printf(rest[0], rest[1:])), "", 0
        if name == "cat":
            return "".join(self._read(a, cwd, output=True) for a in operands), "", 0
        if name == "ls":
            return self._ls(operands or ["."], flags, cwd), "", 0
        if name == "mkdir":
            for a in operands:
                self.guard.tick()
                p = self._path(a, cwd)
                if "-p" not in flags:
                    if p.exists():
                        raise SandboxError(f"cannot create directory '{a}': File exists")
                    if not p.parent.is_dir():
                        raise SandboxError(f"cannot create directory '{a}': No such file or directory")
                if not p.is_dir():
                    self.guard.make_dirs(p)
            return "", "", 0
        if name == "touch":
            for a in operands:
                self.guard.tick()
                p = self._path(a, cwd)
                if not p.exists():
                    self.guard.write(p, "")
            return "", "", 0
        if name in ("head", "tail"):
            return self._head_tail(name, rest, cwd), "", 0
        if name == "wc":
            return self._wc(flags, operands, cwd), "", 0
        raise SandboxError("command not allowed")  # unreachable: parse() checks the allowlist

    def _made(self, text: str) -> str:
        self._grow(len(text.encode("utf-8")))
        return text

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
        return self._made("".join(x + "\n" for x in out))

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
        return "".join(out)  # no more than the files read, which _read counted

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
        return "".join(r + "\n" for r in rows)  # shorter than the files read


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
        raise Refusal("substitution", "command substitution and variables ($, `) are not allowed")
    if _newline_outside_quotes(command.strip()):
        raise Refusal("multi_line", "multi-line commands are not allowed (a newline is allowed only inside quotes)")
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
            raise Refusal("shell_operator", f"shell operator {tok!r} is not allowed (allowed: simple commands, '&&', '>' and '>>')")
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
            raise Refusal(
                "command_not_allowed", f"command {argv[0]!r} is not allowed in the conformance sandbox "
                f"(allowed: {', '.join(BASH_ALLOWLIST)})")
        out.append((argv, redirect))
    return out
