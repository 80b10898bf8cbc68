"""The agent clients as data: one profile per client (`conformance.clients.profile`), each in its
own module, and the sandbox persona tables they carry (`conformance.clients.persona`).

Rules: importing the package registers every built-in profile, so `profile(name)` and
`profile_for_wire(wire)` know them wherever they are asked. This floor sits just above the wires:
it imports only `conformance.core` and `conformance.wire` (the capture proxy identifies clients
with it). Running a client's CLI for real is `conformance.loop.live`.
"""

from conformance.clients.claude_code import CLAUDE_CODE
from conformance.clients.codex import CODEX
from conformance.clients.opencode import OPENCODE
from conformance.clients.profile import GENERIC, PROFILES, ClientProfile, known, profile, profile_for_wire

__all__ = ["CLAUDE_CODE", "CODEX", "GENERIC", "OPENCODE", "PROFILES", "ClientProfile", "known", "profile",
           "profile_for_wire"]
