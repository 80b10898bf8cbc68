"""The sandbox: one client's tools, played from its persona, over one temporary directory.

Rules:
- A `Sandbox` is built from a `Persona` (`conformance.clients.persona`: tool name -> the
  operation it performs and the client's argument names). `run(name, args, namespace)` looks
  the tool up, runs its operation (`conformance.loop.operations`, each implemented once) with
  the client's arguments mapped to the operation's parameters, and words the result in the
  persona's voice (`conformance.loop.voices`). No code here knows a client.
- Every path obeys the one confinement policy (`conformance.loop.confinement`); every command
  runs through the one Bash interpreter (`conformance.loop.shell`); nothing runs on the host.
- `run` never raises for anything the model did: an unknown tool, arguments that are not an
  object, a refused path, a limit reached and any exception of an operation all come back as the
  client's tool error.
- Every call is bounded by the sandbox's limits (`conformance.loop.limits`: time, output bytes,
  bytes written, files created, path depth); a result longer than the output limit is cut, with
  a note the model reads.
- What the model tried and the sandbox stopped is kept as `incidents`, one per refused escape
  (`Refusal`, by rule) or limit reached (`LimitReached`, by limit), naming the tool and the path
  or command; the driver takes them after each turn (`take_incidents`) for `loop.sandbox_refused`
  and `loop.sandbox_limit`.
- The sandbox remembers the files read or written in the session (`known_files`), for the
  read-before-write rule of the clients that keep it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from conformance.clients import GENERIC
from conformance.clients.persona import Persona, tool_key
from conformance.loop.confinement import Refusal, SandboxError, confine
from conformance.loop.limits import Guard, LimitReached, SandboxLimits
from conformance.loop.operations import OPERATIONS, Arguments
from conformance.loop.shell import Shell
from conformance.loop.voices import ToolOutcome, Voice, voice_for

SUBJECT_CHARS = 300  # how much of a command or path an incident keeps


@dataclass(frozen=True)
class Incident:
    """One attempt the sandbox stopped: `kind` is "refused" (an escape, `rule` a REFUSAL_RULES key)
    or "limit" (`rule` a LIMIT_NAMES key); `subject` the path or command the call named."""

    kind: str
    tool: str
    subject: str
    rule: str
    message: str


def _subject(args: object) -> str:
    """The command, path or patch a call named, as the model wrote it (cut for a report)."""
    if not isinstance(args, dict):
        return repr(args)[:SUBJECT_CHARS]
    for key in ("command", "cmd", "file_path", "filePath", "path", "input", "pattern"):
        if isinstance(args.get(key), str):
            return args[key][:SUBJECT_CHARS]
    return repr(args)[:SUBJECT_CHARS]


@dataclass
class Sandbox:
    """A seeded directory and one client's tools over it (a persona without tools — the
    default — only seeds and reads back)."""

    root: Path
    persona: Persona = GENERIC.persona
    known_files: set[str] = field(default_factory=set)  # read or written in this session
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    incidents: list[Incident] = field(default_factory=list)
    voice: Voice = field(init=False)
    shell: Shell = field(init=False)
    guard: Guard = field(init=False)
    _call: tuple[str, str] = ("", "")  # the running call's tool name and subject

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        self.root.mkdir(parents=True, exist_ok=True)
        self.voice = voice_for(self.persona.voice)
        self.guard = Guard(self.root, self.limits)
        self.shell = Shell(self.resolve, self.remember, self.guard, self.notice)

    # ---------------------------------------------------------------- the directory
    def resolve(self, path: str) -> Path:
        """The real path for `path` inside the root, or SandboxError (the one policy), or
        LimitReached when it lies deeper than the limit."""
        return self.guard.check_depth(confine(self.root, path))

    def remember(self, path: Path) -> None:
        self.known_files.add(str(path))

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

    # ---------------------------------------------------------------- the tools
    @property
    def tool_names(self) -> list[str]:
        return self.persona.tool_names

    def refusal(self, text: str) -> ToolOutcome:
        """`text` as the client words a tool error."""
        return self.voice.error(text)

    def notice(self, exc: BaseException) -> None:
        """Keep an escape refused or a limit reached as an incident of the running call (once
        per exception, however many layers see it)."""
        if getattr(exc, "noticed", False):
            return
        if isinstance(exc, Refusal):
            kind, rule = "refused", exc.rule
        elif isinstance(exc, LimitReached):
            kind, rule = "limit", exc.limit
        else:
            return
        exc.noticed = True  # type: ignore[attr-defined]
        tool, subject = self._call
        self.incidents.append(Incident(kind, tool, subject, rule, str(exc)))

    def take_incidents(self) -> list[Incident]:
        """The incidents since the last call of this method."""
        taken, self.incidents = self.incidents, []
        return taken

    def run(self, name: str, args: dict, namespace: str | None = None) -> ToolOutcome:
        """Run one tool call and return what the client would send back. `namespace`: the
        Responses namespace the called tool sits in."""
        self._call = (tool_key(name, namespace) if isinstance(name, str) else repr(name), _subject(args))
        self.guard.start_call()
        try:
            if not isinstance(args, dict):
                raise SandboxError(f"tool arguments must be a JSON object, got {type(args).__name__}")
            binding = self.persona.binding(name, namespace)
            if binding is None:
                raise SandboxError(self.voice.unknown_tool(tool_key(name, namespace), self.tool_names))
            outcome = OPERATIONS[binding.operation](self, Arguments(binding, args))
        except SandboxError as exc:
            self.notice(exc)
            return self.refusal(str(exc))
        except Exception as exc:  # noqa: BLE001 - whatever an operation raises is the model's tool error
            return self.refusal(f"{type(exc).__name__}: {exc}"[:SUBJECT_CHARS * 4])
        return self._capped(outcome)

    def _capped(self, outcome: ToolOutcome) -> ToolOutcome:
        """The outcome with its text cut at the output limit (a note says where), kept as an incident."""
        cap = self.limits.output_bytes
        if len(outcome.text) <= cap // 4 or len(outcome.text.encode("utf-8")) <= cap:
            return outcome
        self.notice(LimitReached("output_bytes", f"a result of {len(outcome.text.encode('utf-8'))} bytes "
                                                 f"cut at {cap}"))
        cut = outcome.text.encode("utf-8")[:cap].decode("utf-8", errors="ignore")
        note = f"\n[output cut by the sandbox at {cap} bytes]"
        parts = None if not outcome.parts else [{**outcome.parts[0], "text": cut + note}]
        return replace(outcome, text=cut + note, parts=parts)
