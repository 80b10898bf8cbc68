"""Phase figures (opt-in: `-m perf`): prefill and decode tokens/s measured apart, K repeats each.

- test_prefill_rate: input tokens / time to first token at 256 / 1k / 2k prompt tokens, salted,
  thinking off (load.phase.prefill_rate, info).
- test_decode_rate: output tokens / time after the first token, one stream alone and at the load
  levels 1, 2, 4 .. N (N = --conformance-concurrency) (load.phase.decode_rate, info).
Repeats: --conformance-perf-repeats K (default 3). `conformance report compare` says which phase
moved beyond the spread of the repeats. Probe code: conformance/probes/phases.py; docs/reports.md.
"""

from __future__ import annotations

import pytest

from conformance.probes import suite_support
from conformance.probes.common import run_sync
from conformance.probes.phases import DEFAULT_REPEATS, decode_figures, prefill_figures

pytestmark = pytest.mark.perf


def _repeats(settings) -> int:
    k = int(suite_support.option(settings, "perf_repeats", DEFAULT_REPEATS))
    if k < 1:
        raise pytest.UsageError(f"--conformance-perf-repeats must be at least 1, got {k}")
    return k


def test_prefill_rate(conformance_ctx):
    ctx = conformance_ctx
    target = suite_support.target_for(ctx.session, ctx.settings, ctx)
    outcome = run_sync(prefill_figures(target, repeats=_repeats(ctx.settings)))
    suite_support.report(ctx, target, [outcome], title="prefill tokens/s")


def test_decode_rate(conformance_ctx):
    ctx = conformance_ctx
    target = suite_support.target_for(ctx.session, ctx.settings, ctx)
    n = int(suite_support.option(ctx.settings, "concurrency", suite_support.DEFAULT_CONCURRENCY))
    outcome = run_sync(decode_figures(target, concurrency=max(1, n), repeats=_repeats(ctx.settings)))
    suite_support.report(ctx, target, [outcome], title="decode tokens/s")
