"""Repeat-to-confirm (conformance.probes.repeat): K runs folded per check, flaky reported, rerun
plugins refused."""

from __future__ import annotations

import pytest

from conformance.checks.load import CONCURRENCY_ACCEPTANCE
from conformance.core import registry
from conformance.probes import repeat as repeat_probe
from conformance.probes.common import ProbeOutcome, run_sync


def _o(outcome, msg="m"):
    vs = [registry.violation(CONCURRENCY_ACCEPTANCE, msg)] if outcome == "failed" else []
    return ProbeOutcome(CONCURRENCY_ACCEPTANCE, outcome, msg, vs)


def test_repeat_passes_only_if_every_run_passes_and_reports_flaky_counts():
    assert repeat_probe.fold(CONCURRENCY_ACCEPTANCE, [_o("passed")] * 3).outcome == "passed"
    flaky = repeat_probe.fold(CONCURRENCY_ACCEPTANCE, [_o("passed"), _o("failed", "broke at 4"), _o("passed")])
    assert flaky.outcome == "failed"
    assert flaky.message.startswith("flaky: failed 1 of 3 runs, passed 2")
    assert flaky.details["flaky"] is True and flaky.details["failed_runs"] == 1
    solid = repeat_probe.fold(CONCURRENCY_ACCEPTANCE, [_o("failed")] * 2)
    assert solid.outcome == "failed" and "all 2 runs" in solid.message


def test_repeat_runs_k_times():
    calls = []

    async def run():
        calls.append(1)
        return [_o("passed")]

    out = run_sync(repeat_probe.repeat(3, run))
    assert len(calls) == 3 and out[0].outcome == "passed" and out[0].details["repeat"] == 3


class _Config:
    def __init__(self, **opts):
        self.opts = opts

    def getoption(self, name):
        if name not in self.opts:
            raise ValueError(f"no option named {name!r}")
        return self.opts[name]


def test_repeat_refuses_rerun_plugins():
    assert repeat_probe.rerun_conflict(_Config()) is None
    assert repeat_probe.rerun_conflict(_Config(reruns=0)) is None
    assert "--reruns" in repeat_probe.rerun_conflict(_Config(reruns=2))
    repeat_probe.refuse_rerun_plugins(_Config(reruns=2), 1)  # no repeat: nothing to hide
    with pytest.raises(pytest.UsageError, match="hides exactly the flakiness"):
        repeat_probe.refuse_rerun_plugins(_Config(reruns=2), 3)
