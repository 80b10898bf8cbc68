"""Soak (opt-in: `-m soak`): N agent sessions sharing a prefix for a fixed duration.

- test_soak: `--conformance-soak-sessions` sessions (default 4) replay the bundled agent loops
  for `--conformance-soak-duration` seconds (default 60); every exchange judged
  (load.soak_stable), goodput against `--conformance-slo-ttft` / `--conformance-slo-itl`, the
  figures over time (drawn in report.html) and whether the target recovered after the soak.
Probe code: conformance/probes/soak.py; docs/probes.md.
"""

from __future__ import annotations

import pytest

from conformance.probes import suite_support
from conformance.probes.soak import soak_probe

pytestmark = pytest.mark.soak

DEFAULT_DURATION_S = 60.0
DEFAULT_SESSIONS = 4


def test_soak(request, conformance_ctx):
    ctx = conformance_ctx
    settings = ctx.settings
    duration = float(suite_support.option(settings, "soak_duration", DEFAULT_DURATION_S))
    sessions = int(suite_support.option(settings, "soak_sessions", DEFAULT_SESSIONS))
    if not duration > 0 or sessions < 1:
        raise pytest.UsageError("--conformance-soak-duration must be positive and --conformance-soak-sessions "
                                f"at least 1, got {duration:g} and {sessions}")
    target = suite_support.target_for(ctx.session, settings, ctx)

    async def once():
        rep = await soak_probe(target, duration, sessions, slo_ttft_s=suite_support.option(settings, "slo_ttft", None),
                               slo_itl_s=suite_support.option(settings, "slo_itl", None))
        return [rep.outcome()]

    suite_support.report(ctx, target, suite_support.run_probe(request, settings, once), title="soak")
