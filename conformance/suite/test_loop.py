"""The full agent loop against the target: every scenario x every dialect (marker `loop`, default run).

Each test runs one scenario (fixtures/scenarios/) from a real client's captured first request
(Claude Code for the Anthropic wire, opencode for the OpenAI chat wire, Codex CLI for the
Responses wire; a scenario with an attached MCP server runs where the client offers its tools in a
namespace: Codex), runs the model's tool calls in
the sandbox and checks the task on disk (conformance/loop/, docs/loop.md). Every turn's exchange
is judged with check_exchange and recorded; the loop.* checks say how the loop ended. A failure
names the turn that broke and why, with the exchanges of every turn in the failure folder.
"""

from __future__ import annotations

import pytest

from conformance.loop.driver import LoopDriver, find_template, scenario_runs_on
from conformance.loop.scenarios import load_scenarios
from conformance.loop.tools import CLIENT_FOR_API
from conformance.suite.cases import require_wire
from conformance.suite.session import Sent
from conformance.wire import ANTHROPIC, CHAT, RESPONSES, dialect

pytestmark = pytest.mark.loop

SCENARIOS = load_scenarios()
APIS = (ANTHROPIC.name, CHAT.name, RESPONSES.name)
CASES = [(s, api) for s in SCENARIOS for api in APIS if scenario_runs_on(s, api)]


@pytest.mark.parametrize("scenario,api", CASES, ids=[f"{s.id}-{api}" for s, api in CASES])
def test_loop(scenario, api, conformance_ctx, tmp_path):
    ctx = conformance_ctx
    ctx.api = api
    ctx.case = scenario.id
    if ctx.session.target_down() is not None:
        ctx.fail_target_down()
    require_wire(ctx, dialect(api))
    settings = ctx.settings
    if settings.client not in ("all", CLIENT_FOR_API[api]):
        pytest.skip(f"--conformance-client {settings.client}: the {api} loop runs as {CLIENT_FOR_API[api]}")
    template = find_template(api, settings.captures)
    model = ctx.session.model_for(template.request.body.get("model"), settings)
    ctx.model = model or ""

    def sender(req, body: bytes):
        return ctx.session.send(dialect(api), req.path, body, captured_headers=req.headers, query=req.query,
                                deadlines=settings.deadlines, label=f"{ctx.key} loop")

    driver = LoopDriver(settings.target, api, model=model, expect_model=settings.served_model(model),
                        api_key=settings.api_key, deadlines=settings.deadlines, template=template,
                        workdir=tmp_path, sender=sender,
                        salt_token=settings.run_token if settings.salt else None)
    report = driver.run(scenario)
    for turn in report.turns:
        ctx.exchanges.append(Sent(dialect(api), template.request.path, turn.request, turn.raw, note=f"turn {turn.turn}"))
    test_id = ctx.key
    for r in report.results(test_id, model=ctx.model):
        ctx.outcome(r.check_id, r.outcome, message=r.message, details=r.details, turn=r.turn,
                    violations=[v for v in report.violations if v.check_id == r.check_id and v.where.turn == r.turn]
                    if r.check_id != "loop.completed" else [])
    ctx.extra.update({"client": f"{CLIENT_FOR_API[api]} (template {report.template})",
                      "rng seed": str(report.rng_seed), "turns": report.turn_summary()})
    ctx.finish(report.title())
