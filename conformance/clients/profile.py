"""One profile per agent client: everything the suite knows about a client, as data.

Rules:
- A `ClientProfile` holds who the client is (its name in captures and test ids, its display
  name), the wires it speaks (its own wire first: the one the loop drives it on), how it is told
  apart on the wire (`Identity`, read by `conformance.clients.identify`), its releases and pins
  and where its CLI is found, how it runs offline (`Launch`, read by `conformance.clients.launch`),
  how it names its working directory, where its requests carry identifiers (`Identifiers`, read by
  the one redactor, `conformance.capture.redact`), its sandbox persona
  (`conformance.clients.persona`; none: the loop builds one from its tools' shapes) and its
  recapture cases (`conformance.clients.recapture_case`).
- The registry (`PROFILES`, `profile()`, `profile_for_wire()`) is the one place a client's name
  is compared; everything else asks a profile. A new client is one module in
  `conformance.clients.profiles` (imported with the package, which imports every module there)
  with one profile, registered with `register_profile`, plus its captures.
- A profile without a `Launch` is a client the suite cannot run: it is identified and its
  captures replay, but no live test or recapture runs its CLI, so it has no recapture cases
  (refused). A launchable client (`launchable()`) has a Launch and an npm package.
- An unknown client gets `GENERIC`: no identity, no launch, the persona built from the offered
  tools' shapes.
- Redaction never trusts identification: `all_identifiers()` is every registered client's
  identifiers together, applied to every capture.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.clients.persona import BY_SHAPE, Persona
from conformance.clients.recapture_case import RecaptureCase
from conformance.core.named import add_named
from conformance.wire.dialect import Dialect


@dataclass(frozen=True)
class Identity:
    """How a client is recognised in a request. A User-Agent and header facts can be borrowed (Qwen
    Code in Anthropic mode sends Claude Code's); body facts cannot, and win over them."""

    user_agents: tuple[re.Pattern[str], ...] = ()  # group 1 is the version
    headers: Mapping[str, str] = field(default_factory=dict)  # header name -> a value it carries
    system_marks: tuple[str, ...] = ()  # phrases only this client's system prompt holds
    tool_names: frozenset[str] = frozenset()  # tool names only this client offers
    # another client's User-Agent this one sends, with its own version as group 1 (Qwen Code in
    # Anthropic mode: `claude-cli/0.24.4 (external, cli)`); read only once its body named it
    borrowed_user_agents: tuple[re.Pattern[str], ...] = ()


@dataclass(frozen=True)
class Identifiers:
    """Where a client's requests carry identifiers (session, device, installation ids): the
    redactor replaces each by a consistent pseudonym of the same shape."""

    headers: tuple[str, ...] = ()  # the whole value is an id (a `<uuid>:<n>` keeps its number)
    json_headers: tuple[str, ...] = ()  # the value is a JSON object whose `fields` are ids (the same
    # names, as keys inside a `body_objects` object, hold the same JSON as a string)
    fields: frozenset[str] = frozenset()  # the id fields of json_headers and body_objects
    body_objects: tuple[str, ...] = ()  # body keys holding an object whose `fields` are ids
    body_values: tuple[str, ...] = ()  # body keys whose string value is an id
    packed: tuple[str, ...] = ()  # dotted body paths of a string packing several ids: a JSON
    # object of ids, or `user_<hex>_account_<uuid>_session_<uuid>`
    text: tuple[re.Pattern[str], ...] = ()  # ids recognised anywhere in text (`ses_...`)

    def merged(self, other: Identifiers) -> Identifiers:
        def union(a: tuple, b: tuple) -> tuple:
            return tuple(dict.fromkeys((*a, *b)))

        return Identifiers(union(self.headers, other.headers), union(self.json_headers, other.json_headers),
                           self.fields | other.fields, union(self.body_objects, other.body_objects),
                           union(self.body_values, other.body_values), union(self.packed, other.packed),
                           union(self.text, other.text))


@dataclass(frozen=True)
class Launch:
    """How the client's CLI runs one prompt offline against a base URL (`conformance.clients.launch`).

    `argv` follows the binary; the whole arguments `{prompt}` and `{project}` are filled in, and
    `{options}` expands to the no-shell flags (when the run asks), the model flags and the run's
    own flags."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # the offline settings (docs/loop.md)
    base_url_env: str = ""  # the variable pointing the CLI at the base URL (no config file needed)
    api_key_env: str = ""  # the variable holding the key
    home_dirs: Mapping[str, str] = field(default_factory=dict)  # variable -> folder inside the scratch HOME
    model_argv: tuple[str, ...] = ()  # how a model is named on the command line (the argument `{model}`); empty:
    # the config file names it
    no_shell_argv: tuple[str, ...] = ()  # flags that keep the model's commands off the host
    config: str = ""  # the config file the launcher writes: "opencode.json" | "codex config.toml" |
    # "qwen settings.json"
    no_shell_config: Mapping[str, Any] = field(default_factory=dict)  # merged into that config file
    providers: Mapping[str, str] = field(default_factory=dict)  # wire name -> the provider package
    json_result: bool = False  # prints a JSON result line whose `is_error` says the run failed
    # per wire (its name): the flags that select it and the variables that point the CLI at the base
    # URL on it (values may hold `{base_url}`, `{api_key}` and `{model}`), for a client whose wire
    # is chosen on its command line (Qwen Code's `--auth-type`)
    wire_argv: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    wire_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientProfile:
    name: str  # as in captures, test ids and --conformance-client: claude-code, opencode, codex
    display: str  # Claude Code
    wires: tuple[Dialect, ...]  # the wires it speaks, its own first
    identity: Identity
    persona: Persona = BY_SHAPE  # the sandbox's table of its tools (BY_SHAPE: built from their shapes)
    pin: str = ""  # the current release (the corpus's newest)
    releases: tuple[str, ...] = ()  # every release the corpus keeps, oldest first
    npm_package: str = ""
    binary: str = ""  # the CLI's name on PATH and in an npm prefix's node_modules/.bin
    binary_env: str = ""  # the env variable that names the CLI
    native_binary: str = ""  # the binary the npm launcher runs, under the prefix (its sha256 is recorded)
    launch: Launch | None = None  # None: the suite cannot run this client's CLI
    # how the client names its working directory in a request's context texts (group 1 is the path)
    working_directory: tuple[re.Pattern[str], ...] = ()
    identifiers: Identifiers = field(default_factory=Identifiers)
    quotes_prompt: bool = False  # wraps a prompt with spaces in literal double quotes (opencode run)
    tool_choice: Any = None  # the tool_choice it sends beside its tools on its own wire (None: none)
    # tools a first request must offer to serve as a loop template (Codex offers apply_patch only
    # with a model catalog entry that enables it; captures without one edit through the shell)
    loop_tools: tuple[str, ...] = ()
    # the max_tokens it sends, as documented (docs/wire-facts.md), by when ("": usually), for the context
    # probes' usable-context figures; None: it sends one, but only its captures say which
    max_tokens: Mapping[str, int | None] = field(default_factory=dict)
    recapture: tuple[RecaptureCase, ...] = ()  # the runs of its CLI the bundled corpus records, in order

    def __post_init__(self) -> None:
        if self.recapture and not self.launchable:
            raise ValueError(f"client {self.name!r}: recapture cases need a Launch and an npm package (module rules)")
        for case in self.recapture:
            if case.wire is not None and case.wire not in self.wires:
                raise ValueError(f"client {self.name!r}: recapture case {case.name!r} is on {case.wire.name}, a wire "
                                 f"the client does not speak (it speaks {', '.join(w.name for w in self.wires)})")
        names = [case.name for case in self.recapture]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"client {self.name!r}: two recapture cases share a name: {repeated} (each name is "
                             "a capture file)")

    @property
    def launchable(self) -> bool:
        """Its CLI can be run by the suite: it has a Launch and is installed from npm."""
        return self.launch is not None and bool(self.npm_package)

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
    """Add a client (re-registering the same profile is a no-op; another one under a taken name is refused)."""
    return add_named(PROFILES, p, "a client profile")


def profile(name: str) -> ClientProfile:
    """The profile of a client name; an unknown name gets the generic profile."""
    return PROFILES.get(name, GENERIC)


def known(name: str) -> bool:
    return name in PROFILES


def profile_for_wire(wire: Dialect) -> ClientProfile | None:
    """The client the loop drives on `wire`: the registered client whose own wire it is."""
    return next((p for p in PROFILES.values() if p.wire is wire), None)


def launchable() -> list[ClientProfile]:
    """The registered clients whose CLI the suite can run (installed from npm)."""
    return [p for p in PROFILES.values() if p.launchable]


def all_identifiers() -> Identifiers:
    """Every registered client's identifiers together (module rules: redaction never trusts
    identification)."""
    out = Identifiers()
    for p in PROFILES.values():
        out = out.merged(p.identifiers)
    return out


GENERIC = ClientProfile(name="other", display="an unknown client", wires=(), identity=Identity(),
                        working_directory=(re.compile(r"working (?:in the )?directory:\s*(/[^\s\"\\<>]+)",
                                                      re.IGNORECASE),
                                           re.compile(r"<cwd>(/[^<>\n]+)</cwd>")))
