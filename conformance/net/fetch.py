"""A JSON GET with a deadline, through the one sender (`conformance.net.target`).

Rules:
- For the suite's own side channels (an engine's or a recorder's received log), not for a
  target's model API: no key and no client headers are sent, only `accept: application/json`.
- Every fetch has a deadline (FETCH_DEADLINES unless the caller gives one); it never raises on
  the other side's behaviour: an unreachable server, a deadline, a status other than 200 or a body
  that is not JSON all read as None.
"""

from __future__ import annotations

from typing import Any

from conformance.core.bounded_json import parse as parse_json
from conformance.net.target import Target
from conformance.net.transport import Deadlines

FETCH_DEADLINES = Deadlines(connect=5, first_content=5, total=10)


def get_json(base_url: str, path: str, *, deadlines: Deadlines = FETCH_DEADLINES) -> Any | None:
    """The JSON document at `base_url` + `path`, or None (module rules)."""
    raw = Target(base_url, deadlines=deadlines).send_sync(None, path, method="GET", content_started=False,
                                                          headers={"accept": "application/json"})
    if raw.error_kind is not None or raw.status != 200:
        return None
    try:
        return parse_json(raw.body())
    except ValueError:
        return None
