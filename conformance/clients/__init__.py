"""The agent clients as data: one profile per client (`conformance.clients.profile`), each in its
own module, the sandbox persona tables they carry (`conformance.clients.persona`), and the code
that reads the profiles and nothing else: `identify` (which client sent a request) and the one
launcher of a client's CLI (`launch`, with its config files in `config`).

Rules: importing the package registers every built-in profile, so `profile(name)` and
`profile_for_wire(wire)` know them wherever they are asked. This floor sits just above the wires:
it imports only `conformance.core`, `conformance.wire` and the standard library (the capture proxy
identifies clients with it, and the live tests and the recapture launch them with it).
"""

from conformance.clients.claude_code import CLAUDE_CODE
from conformance.clients.codex import CODEX
from conformance.clients.opencode import OPENCODE
from conformance.clients.profile import GENERIC, PROFILES, ClientProfile, known, profile, profile_for_wire

__all__ = ["CLAUDE_CODE", "CODEX", "GENERIC", "OPENCODE", "PROFILES", "ClientProfile", "known", "profile",
           "profile_for_wire"]
