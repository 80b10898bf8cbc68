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
  object, a refused path and a failing operation all come back as the client's tool error.
- The sandbox remembers the files read or written in the session (`known_files`), for the
  read-before-write rule of the clients that keep it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from conformance.clients import GENERIC
from conformance.clients.persona import Persona, tool_key
from conformance.loop.confinement import SandboxError, confine
from conformance.loop.operations import OPERATIONS, Arguments
from conformance.loop.shell import Shell
from conformance.loop.voices import ToolOutcome, Voice, voice_for


@dataclass
class Sandbox:
    """A seeded directory and one client's tools over it (a persona without tools — the
    default — only seeds and reads back)."""

    root: Path
    persona: Persona = GENERIC.persona
    known_files: set[str] = field(default_factory=set)  # read or written in this session
    voice: Voice = field(init=False)
    shell: Shell = field(init=False)

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        self.root.mkdir(parents=True, exist_ok=True)
        self.voice = voice_for(self.persona.voice)
        self.shell = Shell(self.resolve, self.remember)

    # ---------------------------------------------------------------- the directory
    def resolve(self, path: str) -> Path:
        """The real path for `path` inside the root, or SandboxError (the one policy)."""
        return confine(self.root, path)

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

    def run(self, name: str, args: dict, namespace: str | None = None) -> ToolOutcome:
        """Run one tool call and return what the client would send back. `namespace`: the
        Responses namespace the called tool sits in."""
        try:
            if not isinstance(args, dict):
                raise SandboxError(f"tool arguments must be a JSON object, got {type(args).__name__}")
            binding = self.persona.binding(name, namespace)
            if binding is None:
                raise SandboxError(self.voice.unknown_tool(tool_key(name, namespace), self.tool_names))
            return OPERATIONS[binding.operation](self, Arguments(binding, args))
        except SandboxError as exc:
            return self.refusal(str(exc))
        except (OSError, UnicodeError, ValueError, TypeError) as exc:
            return self.refusal(f"{type(exc).__name__}: {exc}")
