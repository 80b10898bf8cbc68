"""The sandbox's limits: what one tool call may take of time and output, and what the whole
sandbox may hold on disk, so a hostile model can stall or flood neither the suite nor the host.

Rules:
- `SandboxLimits` are the numbers: a time limit per tool call (kept within the loop's own
  deadline by `within`), the bytes one call may hand back to the model, the bytes the tools may
  write over the sandbox's life (seeds not counted), the files and directories they may create,
  and how many path components deep below the root a path may reach.
- `Guard` holds one sandbox's account against them. Every write of a tool goes through
  `Guard.write` and every directory made through `Guard.make_dirs`, which charge the account
  *before* touching the disk, so a refused write leaves nothing behind. Long-running loops of
  the tools call `Guard.tick()`, which stops the call once its time is up (the tools are Python
  code run in-process: the limit is checked cooperatively, at every file, line, command and
  patch position, each of which is itself bounded in size).
- A limit reached is a `LimitReached` (a `SandboxError`, so the model reads it as the tool's
  error) naming the limit (`LIMIT_NAMES`), what was asked and the number. The sandbox records it
  as an incident (`conformance.loop.incidents`); the loop reports it as `loop.sandbox_limit`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from conformance.loop.confinement import SandboxError

# limit name -> what it bounds, for the messages and docs/loop.md
LIMIT_NAMES = {
    "call_seconds": "the wall time of one tool call",
    "output_bytes": "the bytes one tool call hands back to the model",
    "written_bytes": "the bytes the tools may write in the sandbox",
    "files": "the files and directories the tools may create in the sandbox",
    "path_depth": "how many directory levels below the working directory a path may reach",
}


@dataclass(frozen=True)
class SandboxLimits:
    # 10 s: a real client's file tools answer in milliseconds; Claude Code's Bash default timeout
    # is 2 minutes, but nothing the sandbox runs is a real program, so 10 s is only reached by work
    # a model forced on purpose.
    call_seconds: float = 10.0
    # 64 KiB per result: above Claude Code's Bash output cap (30,000 characters,
    # BASH_MAX_OUTPUT_LENGTH's default) and Codex's exec output cap (10 KiB), so no client's
    # real answer is cut by the sandbox first.
    output_bytes: int = 64 * 1024
    written_bytes: int = 8 * 1024 * 1024  # 8 MiB: every bundled task writes under 1 KiB
    files: int = 1000
    path_depth: int = 32  # below the root; far under PATH_MAX, and under Python's recursion in mkdir -p

    def within(self, seconds: float | None) -> SandboxLimits:
        """These limits with the call time limit kept within `seconds` (the loop's deadline)."""
        if seconds is None or seconds >= self.call_seconds:
            return self
        return SandboxLimits(max(seconds, 0.0), self.output_bytes, self.written_bytes, self.files, self.path_depth)


class LimitReached(SandboxError):
    """A tool call stopped at one of the sandbox's limits (`limit` is a key of LIMIT_NAMES)."""

    def __init__(self, limit: str, detail: str) -> None:
        super().__init__(f"sandbox limit {limit} reached: {detail} ({LIMIT_NAMES[limit]})")
        self.limit = limit


@dataclass
class Guard:
    """One sandbox's account against its limits."""

    root: Path
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    written: int = 0  # bytes the tools wrote so far
    created: int = 0  # files and directories the tools created so far
    deadline: float = float("inf")  # the running call's end (time.monotonic)

    def start_call(self) -> None:
        self.deadline = time.monotonic() + self.limits.call_seconds

    def tick(self) -> None:
        """Stop the running call once its time is up."""
        if time.monotonic() > self.deadline:
            raise LimitReached("call_seconds", f"the call ran past {self.limits.call_seconds:g} s")

    def check_depth(self, path: Path) -> Path:
        """`path` (inside the root), or LimitReached when it lies too deep below it."""
        depth = len(path.parts) - len(self.root.parts)
        if depth > self.limits.path_depth:
            raise LimitReached("path_depth", f"a path {depth} levels below the working directory "
                                             f"(at most {self.limits.path_depth})")
        return path

    def room(self) -> int:
        """The bytes the tools may still write."""
        return max(self.limits.written_bytes - self.written, 0)

    def charge_bytes(self, n: int) -> None:
        if n > self.room():
            raise LimitReached("written_bytes", f"writing {n} bytes with {self.room()} of "
                                                f"{self.limits.written_bytes} left")
        self.written += n

    def charge_created(self, n: int) -> None:
        if self.created + n > self.limits.files:
            raise LimitReached("files", f"creating {n} more with {self.created} of {self.limits.files} made")
        self.created += n

    def _missing(self, directory: Path) -> list[Path]:
        """`directory` and its parents that do not exist yet, deepest first."""
        missing = []
        at = directory
        while at != self.root and not at.exists():
            missing.append(at)
            at = at.parent
        return missing

    def make_dirs(self, directory: Path) -> None:
        """`directory` and its missing parents, each counted as one created entry (an iterative
        mkdir: pathlib's recursive `mkdir(parents=True)` is what a deep path used to crash)."""
        self.check_depth(directory)
        missing = self._missing(directory)
        self.charge_created(len(missing))
        for d in reversed(missing):
            d.mkdir()

    def write(self, path: Path, text: str, *, append: bool = False) -> None:
        """Write `text` to `path` (its parents made), charged before anything reaches the disk."""
        data = text.encode("utf-8")
        self.check_depth(path)
        missing = self._missing(path.parent)
        made = len(missing) + (not path.exists())
        if len(data) > self.room():
            self.charge_bytes(len(data))  # raises: nothing is charged or written
        self.charge_created(made)
        self.charge_bytes(len(data))
        for d in reversed(missing):
            d.mkdir()
        with path.open("ab" if append else "wb") as fh:
            fh.write(data)
