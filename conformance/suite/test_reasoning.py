"""Reasoning and output-cap probes (opt-in, with the context-length probes: `-m context`).

Thinking as the clients send it (Anthropic: adaptive + effort low/medium/high/xhigh/max, enabled +
budget_tokens, none; OpenAI: reasoning_effort low/medium/high, none): the answer must arrive
before max_tokens (reasoning.answer_before_cap); a max_tokens stop is reported as "truncated by the
output cap (N tokens)" (reasoning.output_cap), never as a wrong answer; a complete answer without
the asked-for fact is a warning (reasoning.answer_correct).
The marker is `context` because the plugin's opt-in markers are live/load/context.
Probe code: conformance/probes/reasoning.py; docs/probes.md.
"""

from __future__ import annotations

import pytest

from conformance.checks.reasoning import ANSWER_BEFORE_CAP, ANSWER_CORRECT, OUTPUT_CAP
from conformance.probes import suite_support
from conformance.probes.reasoning import default_cases, reasoning_probe

pytestmark = pytest.mark.context


def _outcomes(request, ctx):
    target = suite_support.target_for(ctx.session, ctx.settings, ctx)
    key = ("reasoning", target.base, target.wire.name, target.model)
    cache = ctx.session.cache
    if key not in cache:
        cases = default_cases(target.wire)
        cache[key] = suite_support.run_probe(request, ctx.settings, lambda: reasoning_probe(target, cases))
    return target, cache[key]


def test_answer_before_cap(request, conformance_ctx):
    target, outs = _outcomes(request, conformance_ctx)
    suite_support.report(conformance_ctx, target, [o for o in outs if o.check_id in (ANSWER_BEFORE_CAP, ANSWER_CORRECT)],
                         title="reasoning: answer before max_tokens")


def test_output_cap(request, conformance_ctx):
    target, outs = _outcomes(request, conformance_ctx)
    suite_support.report(conformance_ctx, target, [o for o in outs if o.check_id == OUTPUT_CAP],
                         title="reasoning: output cap")
