"""Glue between the probes and the bundled pytest suite (conformance/suite/test_load.py & co).

Rules:
- The probe target is built from the test's resolved settings (`conformance_settings`): target
  URL, wire (--conformance-api, else the first registered Dialect the target serves: Anthropic,
  then OpenAI chat, then Responses; a target that serves none is probed on OpenAI chat, as it
  was before Responses existed), model (--conformance-model, else the first of /v1/models), key,
  deadlines. Probes are always salted with the run token.
- Options of this area are read through `SuiteConfig.option`: `concurrency` (default 4),
  `repeat` (default 1), `context_limit` (default: what the target advertises).
- `repeat > 1` with a rerun plugin's option stops the run with a usage error (probes.repeat).
- Verdicts go through the suite's CheckContext (`conformance_ctx`): one results record per
  check, the failure folder, ConformanceFailure on errors. A verdict that says the target is gone
  marks the session down, so the remaining tests fail fast instead of waiting on deadlines.
"""

from __future__ import annotations

import json

import pytest

from conformance.probes import repeat as repeat_probe
from conformance.probes.common import ProbeOutcome, Target, new_salt, run_sync
from conformance.wire import CHAT, DIALECTS
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect

DEFAULT_CONCURRENCY = 4


def option(settings, name: str, default):
    value = settings.option(name, default)
    return default if value is None else value


def repeat_count(request, settings) -> int:
    k = int(option(settings, "repeat", 1))
    if k < 1:
        raise pytest.UsageError(f"--conformance-repeat must be at least 1, got {k}")
    conflict = repeat_probe.rerun_conflict(request.config)
    if k > 1 and conflict:
        pytest.exit(repeat_probe.refusal_message(conflict, k), returncode=pytest.ExitCode.USAGE_ERROR)
    return k


def target_for(session, settings, ctx=None) -> Target:
    """The probe target; with `ctx`, a target already known dead fails the test at once."""
    if ctx is not None and session.target_down() is not None:
        ctx.fail_target_down()  # records suite.target.reachable and raises: no deadline spent
    model = session.model_for(None, settings) or "default"
    return Target(settings.target or "", wire=served_wire(session, settings), model=model, api_key=settings.api_key,
                  deadlines=settings.deadlines, salt=(settings.run_token or new_salt()))


def served_wire(session, settings) -> Dialect:
    """The wire the probes speak: the one the user names, else the first the target serves."""
    if settings.api != "auto":
        return dialect(settings.api)
    return next((wire for wire in DIALECTS.values() if session.serves(wire)), CHAT)


def run_probe(request, settings, make) -> list[ProbeOutcome]:
    """Run `make()` (a coroutine factory returning ProbeOutcomes) K times, folded per check."""
    k = repeat_count(request, settings)
    return run_sync(repeat_probe.repeat(k, make))


def report(ctx, target: Target, outcomes: list[ProbeOutcome], *, title: str) -> None:
    """Record every outcome through the CheckContext; fail on errors; skip if nothing was decidable."""
    ctx.api = target.wire.name  # the results record stores the wire's name
    ctx.model = target.model
    for o in outcomes:
        ctx.outcome(o.check_id, o.outcome, violations=o.violations, message=o.message, details=o.details)
        gone = o.details.get("target_gone") if isinstance(o.details, dict) else None
        if gone:
            ctx.session.mark_down(f"{title}: {gone}")
    figures = {o.check_id: o.details for o in outcomes if o.details}
    if figures:
        ctx.extra["figures"] = json.dumps(figures, default=str)[:4000]
    ctx.extra["verdicts"] = " | ".join(f"{o.check_id}: {o.outcome}: {o.message}" for o in outcomes)[:4000]
    ctx.finish(title)
    print("\n".join(f"{o.check_id}: {o.outcome}: {o.message}" for o in outcomes))
    if outcomes and all(o.outcome in ("unverifiable", "skipped") for o in outcomes):
        pytest.skip("; ".join(o.message for o in outcomes))
