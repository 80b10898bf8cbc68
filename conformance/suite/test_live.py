"""The real Claude Code, opencode and Codex CLIs against the target (marker `live`, opt-in: `-m live`).

Each test runs the installed CLI itself (CONFORMANCE_CLAUDE_BIN / CONFORMANCE_OPENCODE_BIN /
CONFORMANCE_CODEX_BIN, or `claude` / `opencode` / `codex` on PATH) on one scenario in a temporary project directory, through the
capture proxy: every model exchange is judged like a replayed one, the CLI must exit 0 within the
deadline, and the task must be done on disk (conformance/clients/live.py, docs/loop.md).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from conformance.clients.live import ClientNotFound, find_binary, run_live
from conformance.loop.driver import find_template
from conformance.loop.scenarios import get_scenario

pytestmark = pytest.mark.live

# (client, wire): Claude Code speaks Anthropic; opencode both, by its provider package; Codex the
# Responses API only.
CLIENT_WIRES = (("claude-code", "anthropic"), ("opencode", "openai"), ("opencode", "anthropic"),
                ("codex", "responses"))
SCENARIOS = ("write-file", "multi-step")


@pytest.mark.parametrize("scenario_id", SCENARIOS)
@pytest.mark.parametrize("client,api", CLIENT_WIRES, ids=[f"{c}-{a}" for c, a in CLIENT_WIRES])
def test_live_client(client, api, scenario_id, conformance_ctx, tmp_path):
    ctx = conformance_ctx
    ctx.api, ctx.case = api, scenario_id
    if ctx.session.target_down() is not None:
        ctx.fail_target_down()
    if not ctx.session.serves(api):
        pytest.skip(f"the target does not serve the {api} API that {client} speaks")
    try:
        binary = find_binary(client)
    except ClientNotFound as exc:
        pytest.skip(str(exc))
    settings = ctx.settings
    if settings.client not in ("all", client):
        pytest.skip(f"--conformance-client {settings.client}")
    template = find_template(api, settings.captures)
    model = ctx.session.model_for(template.request.body.get("model"), settings)
    ctx.model = model or ""
    deadline = settings.deadline_total + 60
    report = run_live(client, get_scenario(scenario_id), settings.target, binary=binary, model=model, api=api,
                      expect_model=settings.served_model(model), api_key=settings.api_key or "sk-conformance-live",
                      deadline=deadline, workdir=tmp_path)
    if not report.passed:
        report.write_artifacts(ctx.session.failure_dir(ctx.test_id) / "live")
    ctx.client, ctx.client_version = "", ""
    by_check = defaultdict(list)
    for v in report.violations:
        by_check[v.check_id].append(v)
    for check_id, vs in sorted(by_check.items()):
        outcome = "failed" if any(v.is_error for v in vs) else "warning"
        ctx.outcome(check_id, outcome, violations=vs, details={"client": f"{client} {report.version}"})
    for check_id in ("loop.client_finished", "loop.completion_check"):
        if check_id not in by_check:
            ctx.outcome(check_id, "passed", details={"client": f"{client} {report.version}"})
    ctx.outcome("loop.completed", "passed" if report.passed else "failed", message=report.title(),
                details={"client": f"{client} {report.version}", "elapsed_s": round(report.elapsed, 1),
                         "exchanges": report.exchanges, **{k: str(v) for k, v in report.details.items()}})
    ctx.extra.update({"command": " ".join(report.command), "exit": str(report.exit_code),
                      "stderr (tail)": report.stderr[-400:]})
    ctx.finish(report.title())
