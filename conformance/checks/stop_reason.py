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
"""

from __future__ import annotations

from typing import Any

from conformance.checks.tools import stop_reason_of
from conformance.core.failures import Violation
from conformance.core.registry import register, violation

CAP_REPORTED = register(
    "suite.stop_reason.cap_reported",
    "an answer whose output tokens reach the request's cap is reported as cut (max_tokens / length)",
    likely_cause=(
        "the engine reports a generation stopped by the output cap as finished (llama.cpp's "
        "/v1/responses status completed at max_output_tokens), or a router maps the cut reason "
        "to end_turn / stop"
    ),
).id

_NATURAL = {"anthropic": "end_turn", "openai": "stop"}
_CUT = {"anthropic": "max_tokens", "openai": "length"}


def _cap(request: dict | None, api: str) -> int | None:
    request = request or {}
    keys = ("max_tokens",) if api == "anthropic" else ("max_completion_tokens", "max_tokens")
    for key in keys:
        value = request.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _used(message: Any, api: str) -> int | None:
    usage = message.get("usage") if isinstance(message, dict) else None
    if not isinstance(usage, dict):
        return None
    value = usage.get("output_tokens" if api == "anthropic" else "completion_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_cap_reported(message: Any, request: dict | None, api: str, *,
                       turn: int | None = None) -> tuple[str, list[Violation]] | None:
    """(outcome, violations) for `suite.stop_reason.cap_reported`, or None when it cannot apply."""
    if not isinstance(message, dict):
        return None
    cap, used = _cap(request, api), _used(message, api)
    stop = stop_reason_of(message, api)
    if cap is None or used is None or stop not in (_NATURAL[api], _CUT[api]):
        return None
    if stop == _NATURAL[api] and used >= cap:
        field = "stop_reason" if api == "anthropic" else "finish_reason"
        return "warning", [violation(
            CAP_REPORTED, f"{used} output tokens reached the cap of {cap}, but {field} is {stop!r}: the answer "
            "was probably cut and is reported as finished", severity="warning",
            expected=f"{field} {_CUT[api]!r}", seen=f"{field} {stop!r}, {used} of {cap} tokens",
            pointer=f"/{field}", turn=turn)]
    return "passed", []
