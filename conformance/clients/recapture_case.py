"""A recapture case as data: one run of a client's CLI that the bundled corpus records
(`captured/<client>/<version>/<case>.json`). Each profile lists its own (`ClientProfile.recapture`);
`conformance.capture.cases` turns them into the runs `conformance.capture.recapture` makes.

Rules:
- A case names what it records (its name, a description, what it covers), the prompt (as typed,
  or a fixture scenario's prompt, `fixtures/scenarios/<scenario>.json`, read when the case runs)
  and what it changes from the client's defaults: command-line flags, environment, the opencode
  model entry, and for Codex the model catalog (`conformance.clients.config.MINIMAL` for the
  freeform apply_patch), `web_search` and an MCP server the recapture attaches, by name (`files`:
  the read-only server `conformance/capture/codex_mcp.py`). The wire is the client's own unless
  the case names another it speaks (opencode's provider package follows the wire).
- The seeded files hold fixed values (never drawn), so a recapture diffs empty against the corpus;
  the values two clients' cases share are here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.wire.dialect import Dialect

PLAIN_PROMPT = "Reply with one short sentence about tidy code."  # the one-turn cases' prompt
WRITE_FILE_TOKEN = "5c0ffee1d2a3"  # the seeded token of the write-file scenario
EDIT_FILE_OWNER = "maplewood"  # the seeded owner of the edit-file scenario
NAMESPACE_READ_TOKEN = "d00dfeed4242"  # the seeded code of the namespace-read scenario


@dataclass(frozen=True)
class RecaptureCase:
    name: str  # the capture's case name: captured/<client>/<version>/<name>.json
    description: str
    covers: tuple[str, ...]
    prompt: str = ""  # the prompt as typed, or:
    scenario: str = ""  # the prompt of this fixture scenario
    wire: Dialect | None = None  # None: the client's own wire
    flags: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    min_model_requests: int = 1  # fewer model requests fail the case (a loop that stopped early)
    seed: Mapping[str, str] = field(default_factory=dict)  # project file -> its text, written before the run
    model_options: Mapping[str, Any] = field(default_factory=dict)  # opencode: the model's entry
    catalog: str | None = None  # Codex: the model catalog (None: none)
    web_search: str | None = None  # Codex: config.toml's web_search
    mcp_server: str = ""  # the MCP server the recapture attaches, by name ("": none)

    def __post_init__(self) -> None:
        if bool(self.prompt) == bool(self.scenario):
            raise ValueError(f"recapture case {self.name!r}: give a prompt or a scenario, one of them")
