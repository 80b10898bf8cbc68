"""Repeat-to-confirm: a check passes only if it passes K times; differing runs are flaky.

Rules:
- `repeat(k, run)` runs a probe K times and folds the outcomes per check id: passed only if
  every run passed; failed if every run failed; otherwise failed as **flaky**, with the counts
  ("flaky: failed 1 of 3 runs, passed 2") and every run's message kept in `details`.
  Info figures are kept per run; unverifiable stays unverifiable only if no run decided.
- Rerun plugins hide flakiness (a failure re-run until it passes is reported as a pass), so
  `--conformance-repeat K` (K > 1) refuses to run together with them: pytest-rerunfailures'
  `--reruns` (and its `--force-reruns`), pytest-retry's `--retries`, flaky's `--force-flaky`.
  `rerun_conflict(config)` names the clash; `refuse_rerun_plugins(config, k)` raises a usage error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable

import pytest

from conformance.probes.common import ProbeOutcome

# (option dest, how the user spelled it)
RERUN_OPTIONS = (
    ("reruns", "--reruns (pytest-rerunfailures)"),
    ("force_reruns", "--force-reruns (pytest-rerunfailures)"),
    ("retries", "--retries (pytest-retry)"),
    ("force_flaky", "--force-flaky (flaky)"),
)

_DECIDED = ("passed", "failed", "warning")


def rerun_conflict(config) -> str | None:
    """The rerun option in effect that would hide flakiness, or None."""
    for dest, label in RERUN_OPTIONS:
        try:
            value = config.getoption(dest)
        except (ValueError, AttributeError):
            continue  # that plugin is not installed
        if value:
            return f"{label} = {value}"
    return None


def refusal_message(conflict: str, k: int) -> str:
    return (f"--conformance-repeat {k} cannot run together with {conflict}: a rerun plugin re-runs a failing "
            "test until it passes and reports it as passed, which hides exactly the flakiness repeat-to-confirm "
            "is there to report. Drop the rerun option (or -p no:rerunfailures), or drop --conformance-repeat.")


def refuse_rerun_plugins(config, k: int) -> None:
    """Raise pytest.UsageError when K > 1 is combined with a rerun plugin's option."""
    if k is None or k <= 1:
        return
    conflict = rerun_conflict(config)
    if conflict:
        raise pytest.UsageError(refusal_message(conflict, k))


def fold(check_id: str, runs: list[ProbeOutcome]) -> ProbeOutcome:
    """One verdict from K runs of the same check."""
    k = len(runs)
    if k == 1:
        return runs[0]
    passes = [r for r in runs if r.outcome in ("passed", "info")]
    fails = [r for r in runs if r.outcome == "failed"]
    details = {"repeat": k, "passed_runs": len(passes), "failed_runs": len(fails),
               "runs": [{"outcome": r.outcome, "message": r.message, "details": r.details} for r in runs]}
    if fails and passes:
        first = fails[0]
        msg = f"flaky: failed {len(fails)} of {k} runs, passed {len(passes)} (first failure: {first.message})"
        details["flaky"] = True
        return ProbeOutcome(check_id, "failed", msg, [v for r in fails for v in r.violations], details)
    if fails:
        return ProbeOutcome(check_id, "failed", f"failed in all {k} runs: {fails[0].message}",
                            [v for r in fails for v in r.violations], details)
    outcomes = {r.outcome for r in runs}
    if outcomes <= {"info"}:
        return ProbeOutcome(check_id, "info", f"{k} runs: " + " | ".join(r.message for r in runs), [], details)
    if outcomes <= {"unverifiable", "skipped"}:
        return ProbeOutcome(check_id, "unverifiable", runs[0].message, [], details)
    if "warning" in outcomes:
        warned = [r for r in runs if r.outcome == "warning"]
        return ProbeOutcome(check_id, "warning", f"warning in {len(warned)} of {k} runs: {warned[0].message}",
                            [v for r in warned for v in r.violations], details)
    decided = [r for r in runs if r.outcome in _DECIDED]
    undecided = k - len(decided)
    note = f" ({undecided} run(s) could not decide)" if undecided else ""
    return ProbeOutcome(check_id, "passed", f"passed in all {len(decided)} deciding runs of {k}{note}: {passes[0].message}",
                        [], details)


async def repeat(k: int, run: Callable[[], Awaitable[list[ProbeOutcome]]]) -> list[ProbeOutcome]:
    """Run a probe K times; one folded outcome per check id, in first-seen order."""
    if k < 1:
        raise ValueError(f"repeat must be at least 1, got {k}")
    by_check: dict[str, list[ProbeOutcome]] = defaultdict(list)
    for _ in range(k):
        for outcome in await run():
            by_check[outcome.check_id].append(outcome)
    return [fold(cid, runs) for cid, runs in by_check.items()]
