"""Context-edge probes (opt-in: `-m context`).

The limit is --conformance-context-limit, else what the target advertises (vLLM max_model_len in
/v1/models, llama.cpp n_ctx in /props), else unknown (the tests that need it are skipped, saying so):
the one discovery, conformance/probes/limit.py.
- test_context_limit_known: where the limit came from (context.limit_known).
- test_needle: needle recall at depths 0/25/50/75/100% at 25/50/90/99% of the limit, lengths from
  the target's own token counts; a depth-0 miss near the limit fails (context.needle_depth0),
  other misses are a metric (context.needle_recall).
- test_over_limit_refused: 110% of the limit gets a fast 4xx with a message.
- test_advertised_matches: the advertised limit is the accepted one.
- test_usable_agent_context: whether max_tokens counts against the limit; context left per client.
Probe code: conformance/probes/context.py (verdicts), sizing.py, haystack.py, limit.py; docs/probes.md.
"""

from __future__ import annotations

import pytest

from conformance.probes import context as context_probe
from conformance.probes import suite_support
from conformance.probes.limit import discover_limit
from conformance.probes.sizing import ContextProbe

pytestmark = pytest.mark.context


def _run(request, ctx, title: str, parts):
    target = suite_support.target_for(ctx.session, ctx.settings, ctx)
    configured = suite_support.option(ctx.settings, "context_limit", None)

    async def once():
        info = await discover_limit(target, configured)
        if not info.known:
            return [context_probe.limit_outcome(info)]
        return await parts(ContextProbe(target, info), info)

    suite_support.report(ctx, target, suite_support.run_probe(request, ctx.settings, once), title=title)


def test_context_limit_known(request, conformance_ctx):
    async def parts(probe, info):
        return [context_probe.limit_outcome(info)]

    _run(request, conformance_ctx, "context limit", parts)


def test_needle(request, conformance_ctx):
    async def parts(probe, info):
        return context_probe.needle_outcomes(await probe.needle_sweep(), info)

    _run(request, conformance_ctx, "needle recall", parts)


def test_over_limit_refused(request, conformance_ctx):
    async def parts(probe, info):
        return [await context_probe.over_limit_outcome(probe)]

    _run(request, conformance_ctx, "over the context limit", parts)


def test_advertised_matches(request, conformance_ctx):
    async def parts(probe, info):
        return [await context_probe.advertised_outcome(probe)]

    _run(request, conformance_ctx, "advertised vs accepted context", parts)


def test_usable_agent_context(request, conformance_ctx):
    async def parts(probe, info):
        return [await context_probe.usable_context_outcome(probe)]

    _run(request, conformance_ctx, "usable agent context", parts)
