"""Judge one exchange with every applicable check: the function replay, the loop driver,
attribution and the probes all call.

Rules:
- `check_exchange(raw, request, wire=..., expect_model=..., turn=...)` never raises on a target's
  behaviour; it returns an `ExchangeVerdict`: the violations (errors and warnings), the
  accumulated message, the wire as a Dialect, and `outcomes`, the verdict per check id that
  applied (passed / failed / warning / unverifiable / skipped) — what the results record stores,
  so a pass is recorded as a pass, not as silence. A user's wire name is turned into its Dialect
  here, once.
- Judging runs the exchange checks: every check registered with code for the scope "exchange"
  (`registry.checks_for("exchange")`, by `order`, then registration), each a function of the one
  shared `ExchangeState` (checks/exchange_state.py) returning `Verdict`s. No list of checks sits
  here: a check is added by registering it in the module of its area. The verdict folds the
  checks' verdicts in order: every violation in order, the last outcome per check id, every
  non-empty note. A check that ends judging sets `state.ended_by`, and no later check runs.
- The order today, and what stops judging (each check's rules are in its module; `conformance
  checks` lists them):
  10 transport, 20 status, 30 endpoint, 40 grammar (checks/suite.py): no answer, a deadline, a
  size cap, a refusal, count_tokens or a path other than generation end judging; the grammar
  yields the accumulated message the later checks read.
  50 cap (checks/stop_reason.py): an output cap used up but reported as a natural end (a warning).
  60 structured, 70 choice, 80 arguments, 85 kept (checks/tools.py, checks/tool_choice.py): text-
  shaped calls, a forced or forbidden tool_choice, names and arguments against the schema, freeform
  and namespaced tools kept.
  90 model identity (checks/identity.py): the answering model, whenever a message arrived.
- deadline: between any two checks, judging stops with `suite.deadline.total` once the time the
  transfer left of the total deadline (`RawExchange.judging_budget`) is spent; the message names
  the check that was not reached.
- The stream grammar itself is the wire core's (`check_stream` / `check_response`); the checks
  add only suite-level rules on top.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from conformance.checks import suite as suite_checks
from conformance.checks.exchange_state import ExchangeState
from conformance.core.failures import HasViolations, Violation
from conformance.core.registry import checks_for
from conformance.core.verdict import Verdict
from conformance.net.transport import RawExchange
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect


@dataclass
class ExchangeVerdict(HasViolations):
    violations: list[Violation]
    message: dict[str, Any] | None
    wire: Dialect
    stream: bool
    outcomes: dict[str, str] = field(default_factory=dict)  # check id -> outcome (results.OUTCOMES)
    notes: dict[str, str] = field(default_factory=dict)  # check id -> why unverifiable / skipped
    events: list = field(default_factory=list)  # SSE events (stream) with arrival times
    status: int | None = None
    error_text: str | None = None  # the target's error message on a non-2xx answer

    @property
    def failed_checks(self) -> list[str]:
        return sorted({v.check_id for v in self.errors})

    @property
    def answered_model(self) -> str | None:
        m = self.message
        if isinstance(m, dict):
            return m.get("model") or None
        return None


def judge_stages(
    raw: RawExchange,
    request: dict,
    *,
    wire: Dialect | str,
    expect_model: str | None = None,
    turn: int | None = None,
) -> tuple[ExchangeState, list[Verdict]]:
    """Run the exchange checks in order until one ends judging: the shared state and every
    verdict, in order."""
    state = ExchangeState.start(raw, request, wire=dialect(wire), expect_model=expect_model, turn=turn)
    outcomes: list[Verdict] = []
    budget = raw.judging_budget()  # the total deadline bounds judging too (net.transport rules)
    started = time.monotonic()
    for spec in checks_for("exchange"):
        spent = time.monotonic() - started
        if budget is not None and spent > budget:
            outcomes.extend(state.end("deadline", state.fail(
                suite_checks.DEADLINE_TOTAL,
                f"decoding and judging passed the total deadline of {raw.deadline_total:g}s: stopped before "
                f"the check {spec.id} after {spent:.1f}s of judging (the transfer took {raw.elapsed:.1f}s)",
                expected="the exchange, judging included, to finish within its total deadline",
                seen=f"{len(raw.chunks)} chunks ({raw.bytes_read or len(raw.body())} bytes)")))
            break
        state.ran.append(spec.id)
        outcomes.extend(spec.run(state))
        if state.ended_by is not None:
            break
    return state, outcomes


def check_exchange(
    raw: RawExchange,
    request: dict,
    *,
    wire: Dialect | str,
    expect_model: str | None = None,
    turn: int | None = None,
) -> ExchangeVerdict:
    """Judge one exchange with every applicable check (see the module rules)."""
    state, outcomes = judge_stages(raw, request, wire=wire, expect_model=expect_model, turn=turn)
    verdict = ExchangeVerdict([], state.message, state.wire, state.stream, events=state.events, status=raw.status,
                              error_text=state.error_text)
    for judged in outcomes:
        verdict.violations.extend(judged.violations)
        if judged.outcome is not None:
            verdict.outcomes[judged.check_id] = judged.outcome
        if judged.note:
            verdict.notes[judged.check_id] = judged.note
    return verdict
