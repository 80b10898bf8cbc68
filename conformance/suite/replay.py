"""Replaying one capture: the one way its model requests are prepared, sent in order and judged,
for `conformance replay`, the suite (`conformance.suite.cases.replay`) and Locust
(`conformance.locust.judge`).

Rules:
- `prepare(exchange, turn, model=, salt=)` is one captured model request as a replay sends it (a
  `Step`): byte-exact (the capture's compact JSON, what JSON.stringify sent) unless the body had
  to change: the model rewritten (`model`: the captured name -> the name to send; the Dialect's
  `with_model`) or the run salt put at the start of the system prompt (`salt`: a run token,
  `conformance.net.client.salted`); a changed body is re-serialised the way the clients do
  (`conformance.net.client.serialize`) and `Step.changed` says what changed.
- `steps(capture, ...)` prepares every model request of a capture (`main_exchanges`), in order,
  numbered from 1 (the turn).
- `replay(capture, send, judge, ...)` sends each step with the caller's `send(step)` — which owns
  the target, the headers and the deadlines (the suite's session, `conformance.net.target.Target`,
  Locust's client) — and judges what came back with `judge(step, sent)`; `check(step, raw, ...)`
  is that judge's core, the suite's one exchange judge (`check_exchange`) on the step's wire.
- No pytest here: the CLI and Locust import this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from conformance.capture.format import Capture, Exchange
from conformance.checks.exchange import ExchangeVerdict, check_exchange
from conformance.net.client import salted, serialize
from conformance.net.transport import RawExchange
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect_for_path

Sent = TypeVar("Sent")


@dataclass(frozen=True)
class Step:
    """One captured model request as the replay sends it."""

    turn: int  # its place among the capture's model requests, from 1
    exchange: Exchange
    wire: Dialect
    body: dict | None  # the parsed body sent (None: the capture's body is not a JSON object)
    data: bytes  # the bytes sent
    changed: tuple[str, ...] = ()  # what differs from the capture (empty: byte-exact)

    @property
    def request(self) -> dict:
        """The body as the judge compares the answer with it ({} when it is no JSON object)."""
        return self.body if isinstance(self.body, dict) else {}


def prepare(exchange: Exchange, turn: int = 1, *, model: Callable[[str | None], str | None] | None = None,
            salt: str | None = None) -> Step:
    """One captured model request as sent (see the module rules)."""
    req = exchange.request
    wire = dialect_for_path(req.path)
    if wire is None:
        raise ValueError(f"{req.method} {req.path} is no model request of a known wire")
    body = req.body
    if not isinstance(body, dict):
        return Step(turn, exchange, wire, None, req.body_bytes())
    changed: list[str] = []
    captured = body.get("model")
    sent = model(captured) if model is not None else None
    if sent and sent != captured:
        body = wire.with_model(body, sent)
        changed.append(f"model {captured} -> {sent}")
    if salt:
        body = salted(body, wire, salt)
        changed.append("salted system prompt")
    return Step(turn, exchange, wire, body, serialize(body) if changed else req.body_bytes(), tuple(changed))


def steps(capture: Capture, *, model: Callable[[str | None], str | None] | None = None,
          salt: str | None = None) -> list[Step]:
    """Every model request of `capture`, in order, prepared."""
    return [prepare(ex, turn, model=model, salt=salt) for turn, ex in enumerate(capture.main_exchanges(), 1)]


def check(step: Step, raw: RawExchange, *, expect_model: str | None = None,
          turn: int | None = None) -> ExchangeVerdict:
    """The exchange judge on the step's wire, against the body sent."""
    return check_exchange(raw, step.request, wire=step.wire, expect_model=expect_model, turn=turn)


def replay(capture: Capture, send: Callable[[Step], Sent], judge: Callable[[Step, Sent], ExchangeVerdict], *,
           model: Callable[[str | None], str | None] | None = None,
           salt: str | None = None) -> list[tuple[Step, Sent, ExchangeVerdict]]:
    """Send every model request of `capture` in order and judge each answer."""
    out = []
    for step in steps(capture, model=model, salt=salt):
        sent = send(step)
        out.append((step, sent, judge(step, sent)))
    return out
