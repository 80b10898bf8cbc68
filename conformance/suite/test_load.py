"""Load probes (opt-in: `-m load`): concurrency acceptance, throughput, interference.

- test_concurrency_ramp: the captured requests and scenario first turns at 1, 2, 4 .. N in flight
  (N = --conformance-concurrency, default 4), every stream judged; fails naming the level and what
  broke (load.concurrency_acceptance); figures per level (load.throughput, info).
- test_concurrency_at_n: N at a time, two rounds per slot (no ramp).
- test_interference: short requests with and without one long-context request in flight, and
  several long-context requests at once (load.interference info, load.long_context_parallel).
Probe code: conformance/probes/load.py (workload.py, client_load.py), interference.py; docs/probes.md.
"""

from __future__ import annotations

import pytest

from conformance.probes import suite_support
from conformance.probes.interference import interference_probe
from conformance.probes.load import concurrency_probe

pytestmark = pytest.mark.load


def _concurrency(settings) -> int:
    n = int(suite_support.option(settings, "concurrency", suite_support.DEFAULT_CONCURRENCY))
    if n < 1:
        raise pytest.UsageError(f"--conformance-concurrency must be at least 1, got {n}")
    return n


def _load(request, ctx, *, ramp: bool, rounds: int, title: str) -> None:
    settings = ctx.settings
    target = suite_support.target_for(ctx.session, settings, ctx)
    n = _concurrency(settings)

    async def once():
        rep = await concurrency_probe(target, n, ramp=ramp, rounds=rounds)
        print(rep.table())
        # Per level: the client's CPU, loop lag and whether the client set the pace (JUnit properties).
        request.node.user_properties.extend(rep.junit_properties())
        return [rep.acceptance(), rep.throughput()]

    suite_support.report(ctx, target, suite_support.run_probe(request, settings, once), title=title)


def test_concurrency_ramp(request, conformance_ctx):
    _load(request, conformance_ctx, ramp=True, rounds=1, title="concurrency ramp")


def test_concurrency_at_n(request, conformance_ctx):
    _load(request, conformance_ctx, ramp=False, rounds=2, title="concurrency N at a time")


def test_interference(request, conformance_ctx):
    ctx = conformance_ctx
    target = suite_support.target_for(ctx.session, ctx.settings, ctx)
    limit = suite_support.option(ctx.settings, "context_limit", None)
    n = _concurrency(ctx.settings)

    async def once():
        return await interference_probe(target, limit=limit, parallel_long=max(2, min(n, 4)))

    suite_support.report(ctx, target, suite_support.run_probe(request, ctx.settings, once), title="interference")
