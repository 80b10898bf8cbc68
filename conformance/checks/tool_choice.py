"""`tools.choice_honoured`: a forced tool choice gets a tool call; `none` gets none.

Rules (facts from the API references):
- Anthropic Messages `tool_choice`: `{"type": "any"}` — the model must use one of the offered
  tools; `{"type": "tool", "name": N}` — it must use tool N; `{"type": "none"}` — it must not use
  tools; `{"type": "auto"}` (the default) decides nothing here.
- OpenAI chat `tool_choice`: `"required"` — one or more tool calls; `{"type": "function",
  "function": {"name": N}}` — a call to N; `"none"` — no call; `{"type": "allowed_tools",
  "allowed_tools": {"mode": "required", "tools": [...]}}` — a call to one of those tools.
- A forced choice answered without any tool call is an error, unless the turn was cut by the
  output cap before any answer text (only reasoning, or nothing): then it is unverifiable, since
  the call would have come next. A named choice answered with another tool is an error; so is a
  call under `none`.
- What a request demands is the Dialect's reading (`demanded_tool_choice`); the stops that end a
  turn before a forced call could come are its `stops.caps`. `choice_outcome` gives the
  `Verdict`; `choice_honoured` is the exchange check (order 70) that runs it.
- The check applies only when the request forces or forbids calls and offers tools; a verdict
  is recorded ("passed" too) only then.
- It judges the stack: a forced or forbidden choice is the engine's decoding and the router's
  mapping to keep, not the model's to make.
- Why a check of its own: an engine that ignores the force (no constrained decoding for the
  tool-call format) or a router that drops or mis-maps it (Anthropic `any` -> OpenAI
  `required`) breaks the agent loops that force a call, and the loop would otherwise report only
  "the task was not done".
"""

from __future__ import annotations

import json
from typing import Any

from conformance.checks.exchange_state import ExchangeState
from conformance.core.registry import check, violation
from conformance.core.verdict import Verdict
from conformance.wire.dialect import Dialect

CHOICE_HONOURED = "tools.choice_honoured"  # registered with its code below


def choice_outcome(message: Any, request: dict | None, wire: Dialect, *, turn: int | None = None) -> Verdict | None:
    """`tools.choice_honoured` for one exchange, or None when it does not apply."""
    want = wire.demanded_tool_choice(request)
    if want is None or not wire.offered_tools(request) or message is None:
        return None
    mode, name, allowed = want
    shown = json.dumps((request or {}).get("tool_choice"))
    calls = wire.tool_calls(message)
    stop = wire.stop_reason(message)
    if mode == "forbid":
        if calls:
            return Verdict(CHOICE_HONOURED, "failed", (violation(
                CHOICE_HONOURED, f"tool_choice {shown} forbids tool calls, but the answer calls "
                f"{', '.join(repr(c.name) for c in calls)}", expected="no tool call", seen=f"{len(calls)} call(s)",
                pointer="/tool_choice", turn=turn),))
        return Verdict(CHOICE_HONOURED, "passed")
    if not calls:
        text = wire.text(message)
        # Only the caps end a turn before the forced call could come (Anthropic: not every cut
        # stop; a refusal or a paused server-tool turn with a forced choice is judged).
        if stop in wire.stops.caps and not text.strip():
            return Verdict(CHOICE_HONOURED, "unverifiable", note=(
                f"the output cap ({stop}) ended the turn before any answer text; the forced call would have come next"))
        return Verdict(CHOICE_HONOURED, "failed", (violation(
            CHOICE_HONOURED, f"tool_choice {shown} forces a tool call, but the answer has none (stop reason {stop!r})",
            expected="a tool call" + (f" to {name!r}" if name else ""),
            seen=f"text: {text[:160]!r}" if text else "no tool call and no text",
            pointer="/tool_choice", turn=turn),))
    wrong = [c.name for c in calls if (name and c.name != name) or (allowed and c.name not in allowed)]
    if wrong:
        return Verdict(CHOICE_HONOURED, "failed", (violation(
            CHOICE_HONOURED, f"tool_choice {shown} forces " + (f"{name!r}" if name else f"one of {allowed}")
            + f", but the answer calls {', '.join(repr(w) for w in wrong)}",
            expected=f"calls to {name!r}" if name else f"calls to one of {allowed}",
            seen=", ".join(wrong), pointer="/tool_choice", turn=turn),))
    return Verdict(CHOICE_HONOURED, "passed")


@check(
    CHOICE_HONOURED,
    "a forced tool_choice (any / required / a named tool) gets a tool call, tool_choice none gets none",
    likely_cause=(
        "the engine ignores tool_choice (it does not constrain decoding to its tool-call format: "
        "llama.cpp with a chat template whose tool format it does not force, vLLM without guided "
        "decoding), or a router drops or mis-maps it (Anthropic {type: any} must become OpenAI "
        "'required')"
    ),
    scope="exchange",
    judges="stack",
    order=70,
)
def choice_honoured(state: ExchangeState) -> list[Verdict]:
    """A forced or forbidden tool_choice is honoured."""
    return state.answer_verdicts(choice_outcome)
