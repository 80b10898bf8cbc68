"""The full agent loop against the target: every scenario x every dialect (marker `loop`, default run).

Each test runs one scenario (fixtures/scenarios/) from a real client's captured first request
(the client whose own wire it is: Claude Code for the Anthropic wire, opencode for the OpenAI
chat wire, Codex CLI for the Responses wire; a scenario with an attached MCP server runs where
the client offers its tools in a namespace: Codex), runs the model's tool calls in the sandbox
and checks the task on disk (conformance/loop/, docs/loop.md). Every turn's exchange is judged
with check_exchange and recorded; the loop.* checks say how the loop ended. A failure names the
turn that broke and why, with the exchanges of every turn in the failure folder. Every turn the
driver builds passes its wire's request rules before it is sent (`cases.valid_derived`).
"""

from __future__ import annotations

import json

import pytest

from conformance.clients import profile_for_wire
from conformance.loop.conversation import LOOP_WIRES
from conformance.loop.driver import LoopDriver, scenario_runs_on
from conformance.loop.scenarios import load_scenarios
from conformance.loop.templates import find_template
from conformance.suite import cases
from conformance.suite.cases import require_wire
from conformance.suite.session import Sent

pytestmark = pytest.mark.loop

SCENARIOS = load_scenarios()
CASES = [(s, wire) for s in SCENARIOS for wire in LOOP_WIRES if scenario_runs_on(s, wire)]


@pytest.mark.parametrize("scenario,wire", CASES, ids=[f"{s.id}-{wire.name}" for s, wire in CASES])
def test_loop(scenario, wire, conformance_ctx, tmp_path):
    ctx = conformance_ctx
    api = wire.name
    ctx.api = api
    ctx.case = scenario.id
    if ctx.session.target_down() is not None:
        ctx.fail_target_down()
    require_wire(ctx, wire)
    settings = ctx.settings
    client = profile_for_wire(wire)
    if settings.client not in ("all", client.name):
        pytest.skip(f"--conformance-client {settings.client}: the {api} loop runs as {client.name}")
    template = find_template(wire, settings.captures)
    model = ctx.session.model_for(template.request.body.get("model"), settings)
    ctx.model = model or ""

    def sender(req, body: bytes):
        cases.valid_derived(wire, json.loads(body), req, "a loop turn")  # the loop's own turns, valid by construction
        return ctx.session.send(wire, req.path, body, captured_headers=req.headers, query=req.query,
                                deadlines=settings.deadlines, label=f"{ctx.key} loop")

    driver = LoopDriver(settings.target, wire, model=model, expect_model=settings.served_model(model),
                        api_key=settings.api_key, deadlines=settings.deadlines, template=template,
                        workdir=tmp_path, sender=sender,
                        salt_token=settings.run_token if settings.salt else None)
    report = driver.run(scenario)
    for turn in report.turns:
        ctx.exchanges.append(Sent(wire, template.request.path, turn.request, turn.raw, note=f"turn {turn.turn}"))
    test_id = ctx.key
    for r in report.results(test_id, model=ctx.model):
        ctx.outcome(r.check_id, r.outcome, message=r.message, details=r.details, turn=r.turn,
                    violations=report.violations_of(r))
    ctx.extra.update({"client": f"{report.client} (template {report.template})",
                      "rng seed": str(report.rng_seed), "turns": report.turn_summary()})
    ctx.finish(report.title())
