"""Model identity (`identity.*`): the model that answered is the one asked for, turn after turn.

Rules:
- The expected model is the one the suite asked for, or the served model the user mapped it to
  (`--conformance-model-map ALIAS=SERVED`: a router alias answered by a named backend model).
- Outcomes: `passed` when the response names the expected model (a dated snapshot name
  `NAME-2025...` counts as NAME); `unverifiable` when the target only echoes the alias it was
  sent while the user expects a different served model (LiteLLM does this) — an honest "cannot
  tell", never a pass; `unverifiable` too when the response names no model; `failed` otherwise
  (a router fell back silently, or a different tier answered).
- Routers known to answer with the alias they were sent whatever served it (LiteLLM: recognised
  by its `x-litellm-*` response headers) make a matching name `unverifiable` too: the echo
  proves nothing about which model answered. `judge_model(..., echoes_alias=True)`.
- `judge_model` gives (outcome, violation or None, note); `model_outcome` the same as a
  `Verdict`; `model_matches` is the exchange check (order 90, the last) that runs it whenever a
  message arrived.
- `identity.model_stable` compares the answering model across the turns of one captured
  conversation (a suite test reports it).
- Both judge the stack: which model a router or engine let answer, not what the model said.
"""

from __future__ import annotations

import re

from conformance.checks.exchange_state import ExchangeState
from conformance.core.failures import Violation
from conformance.core.registry import check, register, violation
from conformance.core.verdict import Verdict

MODEL_MATCHES = "identity.model_matches"  # registered with its code below

MODEL_STABLE = register(
    "identity.model_stable",
    "the same model answers every turn of an agent loop",
    likely_cause=(
        "the router load-balances or falls back between different models mid-session (rate "
        "limits, cooldowns), so one conversation is answered by several models"
    ),
    scope="suite",
    judges="stack",
).id

_SNAPSHOT_SUFFIX = re.compile(r"^-(?:\d{4}-?\d{2}-?\d{2}|\d{8}|latest)$")


def same_model(seen: str, expected: str) -> bool:
    if seen == expected:
        return True
    if seen.startswith(expected) and _SNAPSHOT_SUFFIX.match(seen[len(expected):]):
        return True
    # Routers often report "provider/model" or the reverse; compare the last path segment.
    return seen.rsplit("/", 1)[-1] == expected.rsplit("/", 1)[-1] and "/" in (seen + expected)


ECHOING_ROUTER_HEADERS = ("x-litellm-version", "x-litellm-model-id", "x-litellm-call-id", "x-litellm-model-group")


def echoes_alias(response_headers: dict[str, str]) -> bool:
    """Is the answer from a router known to echo the requested alias as the response model?"""
    return any(h in response_headers for h in ECHOING_ROUTER_HEADERS)


def judge_model(seen: str | None, sent: str | None, expected: str | None, *, turn: int | None = None,
                echoes_alias: bool = False) -> tuple[str, Violation | None, str]:
    """(outcome, violation or None, note) for one exchange's answering model."""
    expected = expected or sent
    if not expected:
        return "unverifiable", None, "the request names no model"
    if not seen:
        return "unverifiable", None, "the response names no model, so which model answered cannot be verified"
    if echoes_alias and sent and seen == sent:
        return ("unverifiable", None,
                f"the router answers with the alias it was sent ({sent!r}) whatever model served it; "
                "which model answered cannot be verified from the response")
    if same_model(seen, expected):
        return "passed", None, f"answered by {seen}"
    if sent and seen == sent and expected != sent:
        return ("unverifiable", None,
                f"the target only echoes the alias {sent!r}; whether {expected!r} answered cannot be verified")
    return "failed", violation(
        MODEL_MATCHES, f"model {seen!r} answered, not {expected!r}",
        expected=expected, seen=seen, pointer="/model", turn=turn), ""


def model_outcome(seen: str | None, sent: str | None, expected: str | None, *, turn: int | None = None,
                  echoes_alias: bool = False) -> Verdict:
    """`identity.model_matches` for one exchange (see `judge_model`)."""
    outcome, found, note = judge_model(seen, sent, expected, turn=turn, echoes_alias=echoes_alias)
    return Verdict(MODEL_MATCHES, outcome, () if found is None else (found,), note)


@check(
    MODEL_MATCHES,
    "the model that answered is the one asked for (or the served model it is mapped to)",
    likely_cause=(
        "router fallback or a misconfigured alias: a different model answered silently (a "
        "fallback list, a cooldown after upstream errors, or a model map pointing elsewhere)"
    ),
    scope="exchange",
    judges="stack",
    order=90,
)
def model_matches(state: ExchangeState) -> list[Verdict]:
    """The model that answered is the one asked for (judged whenever a message arrived)."""
    if state.message is None:
        return []
    seen = state.message.get("model") or None if isinstance(state.message, dict) else None
    return [model_outcome(seen, state.request.get("model"), state.expect_model, turn=state.turn,
                          echoes_alias=echoes_alias(state.raw.response_headers))]
