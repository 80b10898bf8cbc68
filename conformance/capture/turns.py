"""Client turns in the recorded exchanges of a live run: how many upstream requests each turn cost.

Rules:
- A capture's model requests (`Capture.main_exchanges()`, in the order the proxy recorded them)
  are grouped into client turns: a request whose body equals the one before it except for
  `stream` (true before, false or absent now) and a `max_tokens` no larger (Claude Code 2.1.332
  resends 128000 as 64000, its non-stream cap) is the same turn sent again, not a new turn.
- Such a resend is a non-stream fallback: the client could not use the stream it got (no
  `event:` lines, a wrong content type, a cut stream) and paid for the turn twice (Claude Code
  does this silently: claude-code-proxy PRs #32/#33, changelog 2.1.239; measured here with
  Claude Code 2.1.332 against a text/plain stream of bare `data:` lines, fault
  `non-stream-fallback`). It fails `client_wire.stream.no_nonstream_fallback`, naming the
  answer that made the client give up (status, content type, first bytes).
- Title and other side requests are separate turns (their bodies differ).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.capture.format import Capture, Exchange
from conformance.checks import client_wire as rules
from conformance.core.registry import violation
from conformance.core.verdict import Verdict


@dataclass
class Turn:
    """One client turn: its first request and every resend of the same body."""

    requests: list[Exchange] = field(default_factory=list)

    @property
    def fell_back(self) -> bool:
        return len(self.requests) > 1


RESEND_MAY_CHANGE = ("stream", "max_tokens")


def _rest(body) -> object:
    return {k: v for k, v in body.items() if k not in RESEND_MAY_CHANGE} if isinstance(body, dict) else body


def is_resend(before: Exchange, after: Exchange) -> bool:
    """`after` is `before` sent again with the stream turned off."""
    a, b = before.request.body, after.request.body
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return False
    cap_a, cap_b = a.get("max_tokens"), b.get("max_tokens")
    smaller = cap_a == cap_b or (isinstance(cap_a, int) and isinstance(cap_b, int) and cap_b <= cap_a)
    return (a.get("stream") is True and b.get("stream") in (False, None) and before.request.path == after.request.path
            and smaller and _rest(a) == _rest(b))


def client_turns(capture: Capture) -> list[Turn]:
    turns: list[Turn] = []
    for ex in capture.main_exchanges():
        if turns and is_resend(turns[-1].requests[-1], ex):
            turns[-1].requests.append(ex)
        else:
            turns.append(Turn([ex]))
    return turns


def _what_failed(ex: Exchange) -> str:
    resp = ex.response
    if resp is None:
        return "no response recorded"
    ctype = resp.headers.get("content-type", "?")
    head = resp.body()[:80].decode("utf-8", "replace").replace("\n", "\\n")
    return f"HTTP {resp.status}, content-type {ctype}, first bytes {head!r}"


def fallback_outcome(capture: Capture) -> Verdict:
    """client_wire.stream.no_nonstream_fallback over one live run's recorded exchanges."""
    turns = client_turns(capture)
    fallen = [(k, t) for k, t in enumerate(turns, 1) if t.fell_back]
    if not fallen:
        return Verdict(rules.NO_NONSTREAM_FALLBACK, "passed",
                            note=f"{len(turns)} client turn(s), one upstream request each")
    found = tuple(violation(
        rules.NO_NONSTREAM_FALLBACK,
        f"turn {k}: the client resent the same request with stream: false ({len(t.requests)} upstream requests "
        f"for one turn) after the stream answer it could not use: {_what_failed(t.requests[0])}",
        expected="one streamed request per turn", seen=f"{len(t.requests)} requests", turn=k) for k, t in fallen)
    return Verdict(rules.NO_NONSTREAM_FALLBACK, "failed", found)
