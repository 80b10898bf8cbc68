"""The agent clients as data: one profile per client (`conformance.clients.profile`), each in its
own module under `conformance.clients.profiles`, with the sandbox persona table and the recapture
cases it carries (`conformance.clients.persona`, `conformance.clients.recapture_case`), and the
code that reads the profiles and nothing else: `identify` (which client sent a request) and the
one launcher of a client's CLI (`launch`, with its config files in `config`).

Rules: importing the package registers every profile module in `conformance.clients.profiles`
(found there, not listed), so `profile(name)` and `profile_for_wire(wire)` know them wherever they
are asked; code that needs one client asks by name or wire through these, and only a test imports
a profile module by name. This floor sits just above the wires: it imports only
`conformance.core`, `conformance.wire` and the standard library (the capture proxy identifies
clients with it, and the live tests and the recapture launch them with it).
"""

from conformance.clients import profiles  # noqa: F401 - importing it registers every profile module
from conformance.clients.profile import GENERIC, PROFILES, ClientProfile, known, profile, profile_for_wire

__all__ = ["GENERIC", "PROFILES", "ClientProfile", "known", "profile", "profile_for_wire"]
