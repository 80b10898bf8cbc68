"""The real client CLIs against the target (marker `live`, opt-in: `-m live`).

Each test runs the installed CLI itself (the profile's env variable, CONFORMANCE_CLAUDE_BIN /
CONFORMANCE_OPENCODE_BIN / CONFORMANCE_CODEX_BIN, or its binary on PATH) on one scenario in a
temporary project directory, through the capture proxy: every model exchange is judged like a
replayed one, the CLI must exit 0 within the deadline, and the task must be done on disk
(conformance/loop/live.py, docs/loop.md). Each client runs on every wire its profile speaks
(`ClientProfile.wires`: Claude Code Anthropic, opencode chat and Anthropic, Codex Responses).

Releases: each client runs once per release of it the run selects (`--conformance-client-version`,
over the corpus's captures of that client), with the binary of that release
(`find_release_binary`: CONFORMANCE_CLIENTS_DIR_<version with dots as underscores>, ...). A release
the run names (listed in the option, or `all` over a client with several) whose binary is missing
fails, naming the env variable to set; otherwise (the default `current`, or the current release
of a client the option does not name) the CLI found as before runs when no binary of that
release is found, and the verdicts name the version that ran. A client the corpus has no capture
of runs the CLI found as before. Test ids carry the release only when a client runs several.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from conformance.capture.turns import fallback_outcome
from conformance.clients.launch import ClientNotFound, find_binary, find_release_binary
from conformance.clients.profile import ClientProfile, launchable, profile
from conformance.core.verdict import outcome_of
from conformance.core.versions import version_key
from conformance.loop.live import run_live
from conformance.loop.scenarios import get_scenario
from conformance.loop.templates import find_template
from conformance.suite import cases
from conformance.wire.registry import dialect

pytestmark = pytest.mark.live

SCENARIOS = ("write-file", "multi-step")


def selected_releases(config, client: ClientProfile) -> list[str | None]:
    """The releases of `client` this run selects (newest first); [None] when the corpus holds no
    capture of it (the CLI found as before runs)."""
    try:
        caps, _ = cases.all_cases(config)
    except pytest.UsageError:
        return [None]  # reported by the replay tests; the live test runs the CLI found as before
    found = {c.client_version for c in caps if profile(c.client) is client and c.client_version}
    return sorted(found, key=version_key, reverse=True) or [None]


def pytest_generate_tests(metafunc):
    if "release" not in metafunc.fixturenames:
        return
    params, ids = [], []
    for client in launchable():
        releases = selected_releases(metafunc.config, client)
        for wire in client.wires:
            for release in releases:
                params.append((client.name, wire.name, release))
                ids.append(f"{client.name}-{wire.name}" + (f"-{release}" if len(releases) > 1 else ""))
    metafunc.parametrize("client,api,release", params, ids=ids)


def asked_for(config, client: ClientProfile, release: str) -> bool:
    """Did the run name this release: listed in --conformance-client-version, or `all` over a
    client with several releases (falling back to another binary would run one release twice)?"""
    spec = cases.release_option(config)
    if spec == "all":
        return len(selected_releases(config, client)) > 1
    return release in {v.strip() for v in spec.split(",")}


def _binary(config, client: ClientProfile, release: str | None):
    """The CLI to run; fail when a release the run named has no binary, else skip as before."""
    if release is None:
        try:
            return find_binary(client)
        except ClientNotFound as exc:
            pytest.skip(str(exc))
    try:
        return find_release_binary(client, release)
    except ClientNotFound as exc:
        if asked_for(config, client, release):
            pytest.fail(f"--conformance-client-version selects {client.name} {release}: {exc}", pytrace=False)
        try:
            return find_binary(client)  # the default selection: the CLI found as before
        except ClientNotFound:
            pytest.skip(str(exc))


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_live_client(client, api, release, scenario_id, conformance_ctx, tmp_path):
    ctx = conformance_ctx
    ctx.api, ctx.case = api, scenario_id
    runner, wire = profile(client), dialect(api)
    if ctx.session.target_down() is not None:
        ctx.fail_target_down()
    if not ctx.session.serves(wire):
        pytest.skip(f"the target does not serve the {api} API that {client} speaks")
    binary = _binary(ctx.item.config, runner, release)
    settings = ctx.settings
    if settings.client not in ("all", client):
        pytest.skip(f"--conformance-client {settings.client}")
    template = find_template(wire, settings.captures)
    model = ctx.session.model_for(template.request.body.get("model"), settings)
    ctx.model = model or ""
    deadline = settings.deadline_total + 60
    report = run_live(runner, get_scenario(scenario_id), settings.target, binary=binary, model=model, wire=wire,
                      expect_model=settings.served_model(model), api_key=settings.api_key or "sk-conformance-live",
                      deadline=deadline, workdir=tmp_path)
    if not report.passed:
        report.write_artifacts(ctx.session.failure_dir(ctx.test_id) / "live")
    ctx.client, ctx.client_version = "", ""
    by_check = defaultdict(list)
    for v in report.violations:
        by_check[v.check_id].append(v)
    ran = {"client": f"{client} {report.version}"}
    for check_id, vs in sorted(by_check.items()):
        ctx.outcome(check_id, outcome_of(vs), violations=vs, details=ran)
    if report.capture is not None:
        # One upstream request per client turn: a resend with stream: false is a non-stream fallback.
        fell = fallback_outcome(report.capture)
        ctx.outcome(fell.check_id, fell.outcome, violations=fell.violations, message=fell.note)
    for check_id in ("loop.client_finished", "loop.completion_check"):
        if check_id not in by_check:
            ctx.outcome(check_id, "passed", details=ran)
    ctx.outcome("loop.completed", "passed" if report.passed else "failed", message=report.title(),
                details={**ran, "elapsed_s": round(report.elapsed, 1), "exchanges": report.exchanges,
                         **{k: str(v) for k, v in report.details.items()}})
    ctx.extra.update({"command": " ".join(report.command), "exit": str(report.exit_code),
                      "stderr (tail)": report.stderr[-400:]})
    ctx.finish(report.title())
