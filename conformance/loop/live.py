"""Run a real client CLI (Claude Code, opencode, Codex) on one scenario and judge the traffic and the result.

Rules:
- The client is its profile (`conformance.clients`); finding its binary, its scratch environment,
  its config files and its command line are the one launcher's (`conformance.clients.launch`),
  shared with the recapture. Live runs keep the model's commands off the host
  (`Settings.forbid_shell`: Claude Code disallows Bash, opencode denies bash and webfetch, Codex's
  own sandbox confines every command) and give Codex the binary's own model entry (BUNDLED). By
  default a client speaks its own wire (`ClientProfile.wire`); opencode also speaks Anthropic.
- The CLI's base URL is the capture proxy (`conformance.capture.proxy`), which forwards to the
  target byte for byte and records every exchange; each recorded model exchange is then judged by
  `check_exchange`, so a wire fault is named even when the CLI swallows it.
- Every run has a wall-clock deadline; at the deadline the CLI's process group is killed and the
  run fails with `loop.client_finished`, as it does when the CLI exits non-zero or reports an
  error in its JSON result (`Launch.json_result`).
- The task's completion is checked on disk with the scenario's checks (`loop.completion_check`).
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.capture.format import Capture, save_capture
from conformance.capture.proxy import CaptureRecorder, CaseInfo, serve_proxy_in_thread
from conformance.checks.exchange import check_exchange
from conformance.clients.config import BUNDLED, Settings
from conformance.clients.launch import client_version, find_binary, prepare, run
from conformance.clients.profile import ClientProfile
from conformance.core.failures import HasViolations, Violation
from conformance.core.registry import violation
from conformance.core.secrets import scrub_text
from conformance.loop.sandbox import Sandbox
from conformance.loop.scenarios import Scenario, check_completion
from conformance.net.transport import RawExchange
from conformance.report.text import ConformanceFailure
from conformance.wire.dialect import Dialect
from conformance.wire.registry import dialect_for_path

DEFAULT_MODEL = "reference-model"
_RESULT_FIELDS = ("subtype", "is_error", "num_turns", "stop_reason", "terminal_reason", "result", "permission_denials")


@dataclass
class LiveReport(HasViolations):
    client: str
    version: str
    scenario: str
    target: str
    command: list[str]
    exit_code: int | None
    timed_out: bool
    elapsed: float
    deadline: float
    stdout: str
    stderr: str
    project: str
    exchanges: int = 0
    violations: list[Violation] = field(default_factory=list)
    capture: Capture | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def check_ids(self) -> list[str]:
        return sorted({v.check_id for v in self.errors})

    def title(self) -> str:
        head = f"live {self.client} {self.version} on {self.scenario} against {self.target}"
        if self.passed:
            return f"{head}: completed in {self.elapsed:.1f}s over {self.exchanges} exchanges"
        how = f"killed at the {self.deadline:g}s deadline" if self.timed_out else f"exit {self.exit_code}"
        return f"{head}: failed ({how}, {self.exchanges} exchanges, {', '.join(self.check_ids)})"

    def write_artifacts(self, folder: str | Path) -> Path:
        """The recorded traffic (capture format) and the CLI's output, for a bug report."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if self.capture is not None and self.capture.exchanges:
            save_capture(self.capture, folder / "traffic.json")
        (folder / "stdout.txt").write_text(scrub_text(self.stdout))
        (folder / "stderr.txt").write_text(scrub_text(self.stderr))
        (folder / "command.txt").write_text(scrub_text(" ".join(self.command) + "\n"))
        return folder

    def raise_for_failure(self) -> None:
        if not self.passed:
            raise ConformanceFailure(self.title(), self.violations, extra={
                "command": " ".join(self.command), "project": self.project,
                "stdout (tail)": self.stdout[-600:], "stderr (tail)": self.stderr[-600:]})


def _raw_from_exchange(ex, base_url: str) -> RawExchange:
    req = ex.request
    raw = RawExchange("POST", base_url.rstrip("/") + req.url_path, dict(req.headers), req.body_bytes())
    if ex.response is None:
        raw.error_kind = "read"
        raw.error = f"no response was recorded ({ex.note or 'the client went away or was killed at the deadline'})"
        return raw
    raw.status = ex.response.status
    raw.response_headers = dict(ex.response.headers)
    raw.chunks = [(c.t, c.data) for c in ex.response.chunks]
    if "upstream broke" in (ex.note or ""):
        raw.error_kind, raw.error = "read", ex.note
    elif ex.response.truncated is not None:  # the record stops at the proxy's cap: its end is not the target's
        cut = ex.response.truncated
        raw.error_kind = "limit_response_size"
        raw.error = (f"the response passed the recorded maximum ({cut['kept']} of {cut['of']} bytes kept "
                     "by the capture proxy); the rest was not recorded")
    return raw


def judge_capture(capture: Capture, base_url: str, *, expect_model: str | None = None) -> tuple[list[Violation], int]:
    """Judge every recorded model exchange; violations carry the exchange number as the turn."""
    out: list[Violation] = []
    n = 0
    for ex in capture.main_exchanges():
        n += 1
        raw = _raw_from_exchange(ex, base_url)
        body = ex.request.body if isinstance(ex.request.body, dict) else {}
        verdict = check_exchange(raw, body, wire=dialect_for_path(ex.request.path), expect_model=expect_model,
                                 turn=n)
        out.extend(verdict.violations)
    return out, n


def _json_result(stdout: str) -> dict[str, Any] | None:
    """The CLI's JSON result line (`Launch.json_result`), or None when it printed none."""
    try:
        doc = json.loads(stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return None
    return doc if isinstance(doc, dict) else None


def run_live(client: ClientProfile, scenario: Scenario, target: str, *, binary: str | Path | None = None,
             model: str | None = None, expect_model: str | None = None, api_key: str = "sk-conformance-live",
             wire: Dialect | None = None, deadline: float = 180.0, values: dict | None = None,
             rng_seed: int | None = None, workdir: str | Path | None = None,
             artifacts_dir: str | Path | None = None, use_proxy: bool = True) -> LiveReport:
    """Run `client` on `scenario` against `target` (through the capture proxy) and judge it."""
    exe = find_binary(client, binary)
    version = client_version(exe)
    if values is None:
        values = scenario.draw(random.Random(rng_seed))
    base = Path(tempfile.mkdtemp(prefix=f"live-{client.name}-{scenario.id}-", dir=workdir))
    # The sandbox only seeds the project and reads it back, confined to it; the CLI runs its own tools.
    sandbox = Sandbox(base / "project")
    sandbox.seed(scenario.seed_files(values))
    wire = wire or client.wire
    settings = Settings(model=model or DEFAULT_MODEL, forbid_shell=True, catalog=BUNDLED)
    recorder = CaptureRecorder(CaseInfo(case=f"live-{scenario.id}",
                                        description=f"live {client.name} run of {scenario.id}"), None)
    proxy_ctx = serve_proxy_in_thread(target, recorder) if use_proxy else None
    base_url = proxy_ctx.__enter__() if proxy_ctx is not None else target
    try:
        prepared = prepare(client, exe, wire=wire, prompt=scenario.prompt, base_url=base_url, api_key=api_key,
                           root=base, settings=settings)
        finished = run(prepared, deadline)
    finally:
        if proxy_ctx is not None:
            time.sleep(0.2)  # let the proxy record the last exchange of a killed client
            proxy_ctx.__exit__(None, None, None)
    capture = recorder.capture()
    report = LiveReport(client.name, version, scenario.id, target, prepared.argv, finished.returncode,
                        finished.timed_out, finished.elapsed, deadline, finished.stdout, finished.stderr,
                        str(prepared.project), capture=capture)
    if use_proxy:
        wire_violations, n = judge_capture(capture, base_url, expect_model=expect_model)
        report.violations.extend(wire_violations)
        report.exchanges = n
    problems = []
    if finished.timed_out:
        problems.append(f"still running at the {deadline:g}s deadline (killed)")
    elif finished.returncode != 0:
        problems.append(f"exited with code {finished.returncode}")
    result = _json_result(report.stdout) if client.launch.json_result else None
    if result is not None:
        report.details = {k: result.get(k) for k in _RESULT_FIELDS}
        if result.get("is_error"):
            problems.append(f"reported an error: {str(result.get('result'))[:200]}")
    if problems:
        report.violations.append(violation(
            "loop.client_finished", f"{client.name} {version} did not finish the task: {'; '.join(problems)}",
            expected=f"exit 0 within {deadline:g}s", seen=f"exit {finished.returncode} after {finished.elapsed:.1f}s"))
    for f in check_completion(scenario, values, sandbox.read_text):
        report.violations.append(violation(
            "loop.completion_check", f"{f.file}: the completion check `{f.rule}` does not hold",
            expected=f.expected, seen=f.seen))
    if artifacts_dir is not None and not report.passed:  # what a bug report attaches
        report.write_artifacts(artifacts_dir)
    if report.passed:
        shutil.rmtree(base, ignore_errors=True)
    return report
