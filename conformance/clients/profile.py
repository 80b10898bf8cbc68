"""One profile per agent client: everything the suite knows about a client, as data.

Rules:
- A `ClientProfile` holds who the client is (its name in captures and test ids, its display
  name), the wires it speaks (its own wire first: the one the loop drives it on), how it is told
  apart on the wire (`Identity`: User-Agent patterns with the version as group 1, header facts,
  body facts — the system prompt's vendor line and its tool names — so a client that borrows
  another's User-Agent is still told apart), its releases and pins, where its CLI is found, how
  it names its working directory, the identifiers to redact in its captures, and its sandbox
  persona (`conformance.clients.persona`).
- The registry (`PROFILES`, `profile()`, `profile_for_wire()`) is the one place a client's name
  is compared; everything else asks a profile. A new client is one module with one profile,
  registered with `register_profile`, plus its captures.
- An unknown client gets `GENERIC`: no identity, the persona built from the offered tools' shapes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.clients.persona import Persona
from conformance.wire.dialect import Dialect


@dataclass(frozen=True)
class Identity:
    """How a client is recognised in a request (each fact alone is evidence; body facts win over a
    User-Agent another client also sends)."""

    user_agents: tuple[re.Pattern[str], ...] = ()  # group 1 is the version
    headers: Mapping[str, str] = field(default_factory=dict)  # header name -> a value it carries
    system_marks: tuple[str, ...] = ()  # phrases only this client's system prompt holds
    tool_names: frozenset[str] = frozenset()  # tool names only this client offers


@dataclass(frozen=True)
class ClientProfile:
    name: str  # as in captures, test ids and --conformance-client: claude-code, opencode, codex
    display: str  # Claude Code
    wires: tuple[Dialect, ...]  # the wires it speaks, its own first
    identity: Identity
    persona: Persona
    pin: str = ""  # the current release (the corpus's newest)
    releases: tuple[str, ...] = ()  # every release the corpus keeps, oldest first
    npm_package: str = ""
    binary: str = ""  # the CLI's name on PATH
    binary_env: str = ""  # the env variable that names the CLI
    native_binary: tuple[str, ...] = ()  # paths under an npm prefix: the native binary, then the launcher
    # how the client names its working directory in a request's context texts (group 1 is the path)
    working_directory: tuple[re.Pattern[str], ...] = ()
    redact_headers: tuple[str, ...] = ()  # identifier headers to pseudonymise
    redact_fields: frozenset[str] = frozenset()  # identifier fields of its JSON headers and metadata
    quotes_prompt: bool = False  # wraps a prompt with spaces in literal double quotes (opencode run)
    tool_choice: Any = None  # the tool_choice it sends beside its tools on its own wire (None: none)
    # tools a first request must offer to serve as a loop template (Codex offers apply_patch only
    # with a model catalog entry that enables it; captures without one edit through the shell)
    loop_tools: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # client-specific launch data

    @property
    def wire(self) -> Dialect:
        """The wire the loop drives this client on (its own)."""
        return self.wires[0]

    def speaks(self, wire: Dialect) -> bool:
        return wire in self.wires

    def cwd_in(self, texts: list[str]) -> str | None:
        """The working directory the client named in `texts` (`Dialect.context_texts`), or None."""
        for text in texts:
            for rx in self.working_directory:
                m = rx.search(text)
                if m:
                    return m.group(1).rstrip(".,;")
        return None


PROFILES: dict[str, ClientProfile] = {}


def register_profile(p: ClientProfile) -> ClientProfile:
    existing = PROFILES.get(p.name)
    if existing is not None and existing is not p:
        raise ValueError(f"a client profile named {p.name!r} is registered already")
    PROFILES[p.name] = p
    return p


def profile(name: str) -> ClientProfile:
    """The profile of a client name; an unknown name gets the generic profile."""
    return PROFILES.get(name, GENERIC)


def known(name: str) -> bool:
    return name in PROFILES


def profile_for_wire(wire: Dialect) -> ClientProfile | None:
    """The client the loop drives on `wire`: the registered client whose own wire it is."""
    return next((p for p in PROFILES.values() if p.wire is wire), None)


GENERIC = ClientProfile(name="other", display="an unknown client", wires=(), identity=Identity(),
                        persona=Persona("generic", {}, read_before_write=False),
                        working_directory=(re.compile(r"working directory:\s*(/[^\s\"\\<>]+)", re.IGNORECASE),
                                           re.compile(r"<cwd>(/[^<>\n]+)</cwd>")))
