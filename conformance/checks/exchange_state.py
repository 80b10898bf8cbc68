"""What the exchange checks share while judging one exchange: `ExchangeState`.

Rules:
- One state per judged exchange, made by `ExchangeState.start` before the first check: the
  inputs (the raw exchange, the request as an object, the wire as a Dialect, the model expected,
  the turn), and what earlier checks found for later ones (the target's error text, the
  accumulated message, the stream's events, tool inputs that did not parse).
- Every exchange check (`@check(..., scope="exchange")`) takes this state and returns its
  `Verdict`s. A check that ends judging says so with `state.end(its id, *verdicts)`: the judge
  (checks/exchange.py) then runs nothing after it. `ran` lists the checks that ran, in order.
- `fail` makes one violation of a registered check at this exchange's turn, as its Verdict;
  `answer_verdicts` runs a judge of one answer (message, request, wire, turn) on this exchange.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from conformance.core.registry import violation
from conformance.core.verdict import Verdict
from conformance.net.transport import RawExchange
from conformance.wire.dialect import Dialect
from conformance.wire.registry import is_count_tokens_path


@dataclass
class ExchangeState:
    raw: RawExchange
    request: dict
    wire: Dialect
    expect_model: str | None
    turn: int | None
    stream: bool
    path: str
    error_text: str | None = None
    message: dict[str, Any] | None = None
    events: list = field(default_factory=list)
    unparsed_input: dict[str, str] = field(default_factory=dict)
    ended_by: str | None = None  # the check after which nothing more is judged
    ran: list[str] = field(default_factory=list)  # the checks that ran, in order

    @classmethod
    def start(cls, raw: RawExchange, request: Any, *, wire: Dialect, expect_model: str | None = None,
              turn: int | None = None) -> ExchangeState:
        """The state before the first check (a request that is not an object reads as {})."""
        request = request if isinstance(request, dict) else {}
        return cls(raw, request, wire, expect_model, turn, stream=request.get("stream") is True,
                   path=urlsplit(raw.url).path.rstrip("/"))

    def fail(self, check_id: str, message: str, **kw: Any) -> Verdict:
        return Verdict.of(violation(check_id, message, turn=self.turn, **kw))

    def answer_verdicts(self, judge: Callable[..., Verdict | None]) -> list[Verdict]:
        """What a judge of one answer (`judge(message, request, wire, *, turn)`, None when it does
        not apply) finds in this exchange, as the list a check returns."""
        judged = judge(self.message, self.request, self.wire, turn=self.turn)
        return [] if judged is None else [judged]

    def end(self, by: str, *verdicts: Verdict) -> list[Verdict]:
        """End judging after the check `by` (nothing later runs); its verdicts, as a list."""
        self.ended_by = by
        return list(verdicts)

    @property
    def is_count_tokens(self) -> bool:
        return is_count_tokens_path(self.path)
