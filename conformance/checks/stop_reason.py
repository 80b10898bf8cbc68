"""`suite.stop_reason.cap_reported`: an answer that used the whole output cap says it was cut.

Rules (facts from the API references):
- Anthropic: `stop_reason` "max_tokens" means the request's `max_tokens` was reached; "end_turn"
  means the model finished on its own. OpenAI chat: `finish_reason` "length" means the cap
  (`max_completion_tokens`, else `max_tokens`) was reached; "stop" means a natural stop or a
  stop string.
- When the reported output tokens (`usage.output_tokens` / `usage.completion_tokens`) reach the
  request's cap and the stop reason is still the natural one (end_turn / stop), the answer was
  most likely cut and called finished: a client then takes a truncated answer for a whole one
  and does not continue it. Seen: llama.cpp's /v1/responses calls a capped answer `completed`,
  and LiteLLM passes that on as end_turn.
- A warning, not an error: a model can emit its end token as the very last allowed token. Tool
  stops (tool_use / tool_calls), stop sequences and answers without usage are not judged; the
  verdict is "passed" when the cap and the usage are known and agree.
- The words (natural stop, cap stop, the field, the request's cap keys, the usage key) are the
  Dialect's (`wire.stops`, `output_cap`, `output_tokens`). `cap_outcome` gives the `Verdict`;
  `cap_reported` is the exchange check (order 50, after the grammar) that runs it.
- It judges the stack: the engine's or router's stop reason, not the model's choice to stop.
"""

from __future__ import annotations

from typing import Any

from conformance.checks.exchange_state import ExchangeState
from conformance.core.registry import check, violation
from conformance.core.verdict import Verdict
from conformance.wire.dialect import Dialect

CAP_REPORTED = "suite.stop_reason.cap_reported"  # registered with its code below


def cap_outcome(message: Any, request: dict | None, wire: Dialect, *, turn: int | None = None) -> Verdict | None:
    """`suite.stop_reason.cap_reported` for one exchange, or None when it cannot apply (no
    message, no cap in the request, no usage, or a stop reason neither natural nor the cap's)."""
    if not isinstance(message, dict):
        return None
    stops = wire.stops
    cap, used = wire.output_cap(request), wire.output_tokens(message)
    stop = wire.stop_reason(message)
    if cap is None or used is None or stop not in (stops.natural, stops.cap):
        return None
    if stop == stops.natural and used >= cap:
        return Verdict(CAP_REPORTED, "warning", (violation(
            CAP_REPORTED, f"{used} output tokens reached the cap of {cap}, but {stops.field} is {stop!r}: the "
            "answer was probably cut and is reported as finished", severity="warning",
            expected=f"{stops.field} {stops.cap!r}", seen=f"{stops.field} {stop!r}, {used} of {cap} tokens",
            pointer=f"/{stops.field}", turn=turn),))
    return Verdict(CAP_REPORTED, "passed")


@check(
    CAP_REPORTED,
    "an answer whose output tokens reach the request's cap is reported as cut (max_tokens / length)",
    likely_cause=(
        "the engine reports a generation stopped by the output cap as finished (llama.cpp's "
        "/v1/responses status completed at max_output_tokens), or a router maps the cut reason "
        "to end_turn / stop"
    ),
    scope="exchange",
    judges="stack",
    order=50,
)
def cap_reported(state: ExchangeState) -> list[Verdict]:
    """An answer that used the whole output cap but says it finished (a warning)."""
    return state.answer_verdicts(cap_outcome)
