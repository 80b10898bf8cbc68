"""The recapture's cases: every registered client's recapture cases (`ClientProfile.recapture`,
data in its profile), made runnable (`conformance.capture.recapture` runs them).

Rules:
- A `Case` is one profile's `RecaptureCase` with what running it needs resolved: the wire (the
  client's own unless the case names another), the prompt (a fixture scenario's, read here), the
  MCP server it attaches (by name: `files` is `conformance/capture/codex_mcp.py`, read only,
  confined to the scratch project, offered by Codex as the namespace `mcp__files`) and the
  launcher's `Settings`. The recapture records defaults, so no case keeps the shell away
  (`Settings.forbid_shell` is False); Codex's own sandbox confines its commands.
- The order: the clients in the order of their own wires' registration (Claude Code's Anthropic,
  opencode's chat, Codex's Responses; clients of one wire in registration order), each client's
  cases in its profile's order.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from conformance.clients.config import McpServer, Settings
from conformance.clients.profile import PROFILES, ClientProfile
from conformance.clients.recapture_case import RecaptureCase
from conformance.core.paths import fixtures_dir
from conformance.wire.dialect import Dialect
from conformance.wire.registry import DIALECTS

MCP_SERVER = Path(__file__).with_name("codex_mcp.py")
FILES_SERVER = McpServer("files", sys.executable, (str(MCP_SERVER), "{project}"), ("read_file",))
# what a capture's meta shows of it: no path of the machine that recorded it
FILES_SERVER_SHOWN = McpServer("files", "<python>", ("<conformance>/capture/codex_mcp.py", "{project}"), ("read_file",))
MCP_SERVERS = {FILES_SERVER.name: FILES_SERVER}  # what a case names -> the server
SHOWN_MCP_SERVERS = {FILES_SERVER.name: FILES_SERVER_SHOWN}


def scenario_prompt(scenario_id: str) -> str:
    return json.loads((fixtures_dir() / "scenarios" / f"{scenario_id}.json").read_text())["prompt"]


@dataclass(frozen=True)
class Case:
    client: ClientProfile
    spec: RecaptureCase

    @property
    def id(self) -> str:
        return f"{self.client.name}/{self.spec.name}"

    @property
    def wire(self) -> Dialect:
        return self.spec.wire or self.client.wire

    @property
    def prompt(self) -> str:
        return scenario_prompt(self.spec.scenario) if self.spec.scenario else self.spec.prompt

    def _mcp_server(self, servers: dict[str, McpServer]) -> McpServer | None:
        if not self.spec.mcp_server:
            return None
        if self.spec.mcp_server not in servers:
            raise ValueError(f"{self.id}: no MCP server {self.spec.mcp_server!r} (one of {', '.join(servers)})")
        return servers[self.spec.mcp_server]

    def settings(self) -> Settings:
        """The launcher's settings of this case (module rules: the client's defaults, shell kept)."""
        spec = self.spec
        return Settings(forbid_shell=False, flags=tuple(spec.flags), env=dict(spec.env),
                        model_options=dict(spec.model_options), catalog=spec.catalog, web_search=spec.web_search,
                        mcp_server=self._mcp_server(MCP_SERVERS))

    def shown_settings(self) -> Settings:
        """The settings as a capture's meta records them (no machine paths)."""
        return dataclasses.replace(self.settings(), mcp_server=self._mcp_server(SHOWN_MCP_SERVERS))


def cases() -> list[Case]:
    """Every registered client's cases, in the module rules' order."""
    wires = list(DIALECTS.values())
    clients = sorted((p for p in PROFILES.values() if p.recapture), key=lambda p: wires.index(p.wire))
    return [Case(client, spec) for client in clients for spec in client.recapture]
