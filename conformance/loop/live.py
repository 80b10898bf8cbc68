"""Run the real Claude Code / opencode / Codex CLI on one scenario and judge the traffic and the result.

Rules:
- The CLI is the installed binary itself: given by path, or `CONFORMANCE_CLAUDE_BIN` /
  `CONFORMANCE_OPENCODE_BIN` / `CONFORMANCE_CODEX_BIN`, or found on PATH (`claude`, `opencode`,
  `codex`). One release of it (`find_release_binary`): the npm prefix in
  `CONFORMANCE_CLIENTS_DIR_<version with dots as underscores>`, else `CONFORMANCE_CLIENTS_DIR`'s
  `<client>@<version>` prefix or its top, else the CLI above, each only if its `--version` is
  that release. Nothing is downloaded here.
- Offline settings from PEERS.md: a scratch HOME (and XDG dirs) per run, Claude Code with
  `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1`, opencode with
  `OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1` and a provider in the project's
  `opencode.json` (its AI SDK provider package chosen by the wire, `_OPENCODE_PROVIDER`; by
  default each client speaks the wire the loop drives it on, its profile's `wire`). The CLI's base
  URL is the capture proxy (`conformance.capture.proxy`), which forwards to the target byte for
  byte and records every exchange; each recorded model exchange is then judged by
  `check_exchange`, so a wire fault is named even when the CLI swallows it.
- Model output must not run on the host: Claude Code runs with `--permission-mode acceptEdits
  --disallowedTools Bash` (measured: acceptEdits alone still runs Bash commands it classes as
  edits inside the project, such as `touch` or `echo > f`, while `python3 -c` is denied), opencode
  with `permission: {bash: deny, webfetch: deny}`; both drop the shell tool from the request and
  work in a temporary project directory seeded from the scenario. The scenarios need no shell.
- Codex (`codex exec`, Responses wire only) runs with a scratch `CODEX_HOME` whose `config.toml`
  (`codex_config`) names one custom provider (`wire_api = "responses"`, base URL the proxy, the
  key from an env variable) and a model catalog (`model_catalog_json`) holding one entry for the
  run's model, derived from the binary's own bundled catalog (`codex debug models`) with
  `apply_patch_tool_type = "freeform"` (so `apply_patch` is a custom tool, as local-model users
  configure it). Model commands run in Codex's own sandbox: `sandbox_mode = "workspace-write"`
  with `/tmp` and `$TMPDIR` excluded and no network, `approval_policy = "never"` (nothing is
  escalated): measured on 0.171.0, writes outside the project directory fail with "Read-only
  file system" while writes inside it succeed.
- Every run has a wall-clock deadline; at the deadline the CLI's process group (started by this
  module, `start_new_session`) is killed and the run fails with `loop.client_finished`.
- The task's completion is checked on disk with the scenario's checks (`loop.completion_check`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import conformance.checks.loop  # noqa: F401  (registers loop.*)
from conformance.capture.format import Capture, save_capture
from conformance.clients import profile
from conformance.core.failures import HasViolations, Violation
from conformance.core.registry import violation
from conformance.loop.sandbox import Sandbox
from conformance.loop.scenarios import Scenario, check_completion
from conformance.net.transport import RawExchange
from conformance.report.text import ConformanceFailure
from conformance.wire import ANTHROPIC, CHAT
from conformance.wire.dialect import dialect

CLIENTS = ("claude-code", "opencode", "codex")
_BIN_NAMES = {"claude-code": "claude", "opencode": "opencode", "codex": "codex"}
_BIN_ENV = {"claude-code": "CONFORMANCE_CLAUDE_BIN", "opencode": "CONFORMANCE_OPENCODE_BIN",
            "codex": "CONFORMANCE_CODEX_BIN"}
_NPM_PACKAGE = {"claude-code": "@anthropic-ai/claude-code", "opencode": "opencode-ai", "codex": "@openai/codex"}
CODEX_KEY_ENV = "CONFORMANCE_CODEX_KEY"  # the env variable the Codex provider reads its key from
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
# opencode's AI SDK provider package for each wire it can speak (PEERS.md)
_OPENCODE_PROVIDER = {CHAT.name: "@ai-sdk/openai-compatible", ANTHROPIC.name: "@ai-sdk/anthropic"}


class ClientNotFound(FileNotFoundError):
    pass


def find_binary(client: str, path: str | Path | None = None) -> Path:
    """The CLI to run: `path`, else the env variable, else PATH. Clear error when absent."""
    if client not in CLIENTS:
        raise ValueError(f"client must be one of {CLIENTS}, got {client!r}")
    given = path or os.environ.get(_BIN_ENV[client])
    if given:
        p = Path(given)
        if p.is_dir():
            p = p / _BIN_NAMES[client]
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise ClientNotFound(f"{client}: {p} is not an executable file (from "
                                 f"{'the path given' if path else _BIN_ENV[client]})")
        return p
    found = shutil.which(_BIN_NAMES[client])
    if not found:
        pkg = _NPM_PACKAGE[client]
        raise ClientNotFound(
            f"{client}: `{_BIN_NAMES[client]}` is not on PATH and {_BIN_ENV[client]} is not set; install it with "
            f"`npm install --prefix DIR {pkg}` and set {_BIN_ENV[client]}=DIR/node_modules/.bin/{_BIN_NAMES[client]}")
    return Path(found)


def release_env(version: str) -> str:
    """The env variable naming the npm prefix of one release: CONFORMANCE_CLIENTS_DIR_2_1_197."""
    return "CONFORMANCE_CLIENTS_DIR_" + "".join(c if c.isalnum() else "_" for c in version)


_VERSIONS: dict[str, str] = {}  # binary path -> what its --version said (one process each)


def _version_of(binary: Path) -> str:
    key = str(binary)
    if key not in _VERSIONS:
        _VERSIONS[key] = client_version(binary)
    return _VERSIONS[key]


def _in_prefix(prefix: Path, client: str) -> Path:
    return prefix / "node_modules" / ".bin" / _BIN_NAMES[client]


def find_release_binary(client: str, version: str) -> Path:
    """The CLI of one release of `client`, which must report that version:
    1. DIR/node_modules/.bin/<cli> with DIR from CONFORMANCE_CLIENTS_DIR_<version, dots as
       underscores> (what .ci/run exports for each release it installs);
    2. else under CONFORMANCE_CLIENTS_DIR=D: D/<client>@<version> (the recapture's prefix per
       release), then D itself (where the current pins are installed);
    3. else the CLI `find_binary` finds (CONFORMANCE_*_BIN, PATH) when it is that release.
    ClientNotFound naming the env variable to set when none is."""
    if client not in CLIENTS:
        raise ValueError(f"client must be one of {CLIENTS}, got {client!r}")
    env = release_env(version)
    pkg = f"{_NPM_PACKAGE[client]}@{version}"
    given = os.environ.get(env)
    if given:
        p = _in_prefix(Path(given), client)
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise ClientNotFound(f"{client} {version}: {p} is not an executable file (from {env}={given}); install "
                                 f"the release with `npm install --prefix {given} {pkg}`")
        seen = _version_of(p)
        if seen != version:
            raise ClientNotFound(f"{client} {version}: {p} (from {env}) is release {seen}, not {version}")
        return p
    candidates: list[Path] = []
    shared = os.environ.get("CONFORMANCE_CLIENTS_DIR")
    if shared:
        candidates += [_in_prefix(Path(shared) / f"{client}@{version}", client), _in_prefix(Path(shared), client)]
    try:
        candidates.append(find_binary(client))
    except ClientNotFound:
        pass
    looked = []
    for p in candidates:
        if p.is_file() and os.access(p, os.X_OK):
            seen = _version_of(p)
            if seen == version:
                return p
            looked.append(f"{p} is {seen}")
    raise ClientNotFound(
        f"{client} {version}: no binary of this release ({'; '.join(looked) or 'none found'}); install it with "
        f"`npm install --prefix DIR {pkg}` and set {env}=DIR")


def client_version(binary: Path, timeout: float = 30) -> str:
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL, env={"PATH": _SAFE_PATH, "HOME": tempfile.gettempdir()})
        words = out.stdout.strip().split()
        # `2.1.197 (Claude Code)`, `1.18.33`, `codex-cli 0.171.0`: the first word with a digit
        return next((w for w in words if any(c.isdigit() for c in w)), words[0] if words else "unknown")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


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
        (folder / "stdout.txt").write_text(self.stdout)
        (folder / "stderr.txt").write_text(self.stderr)
        (folder / "command.txt").write_text(" ".join(self.command) + "\n")
        return folder

    def raise_for_failure(self) -> None:
        if not self.passed:
            raise ConformanceFailure(self.title(), self.violations, extra={
                "command": " ".join(self.command), "project": self.project,
                "stdout (tail)": self.stdout[-600:], "stderr (tail)": self.stderr[-600:]})


def _env_claude(home: Path, base_url: str, api_key: str) -> dict[str, str]:
    return {"PATH": _SAFE_PATH, "HOME": str(home), "TMPDIR": str(home / "tmp"), "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": api_key, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}


def _env_opencode(home: Path) -> dict[str, str]:
    return {"PATH": _SAFE_PATH, "HOME": str(home), "TMPDIR": str(home / "tmp"),
            "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local" / "state"),
            "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}


def opencode_config(base_url: str, api_key: str, model: str, api: str = CHAT.name) -> dict:
    """The project's opencode.json: one local provider pointing at the proxy (PEERS.md)."""
    npm = _OPENCODE_PROVIDER[dialect(api).name]
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"conformance": {"npm": npm, "name": "conformance",
                                     "options": {"baseURL": base_url.rstrip("/") + "/v1", "apiKey": api_key},
                                     "models": {model: {"name": model}}}},
        "model": f"conformance/{model}",
        "permission": {"bash": "deny", "webfetch": "deny"},
        "autoupdate": False,
        "share": "disabled",
    }


def _env_codex(home: Path, api_key: str) -> dict[str, str]:
    return {"PATH": _SAFE_PATH, "HOME": str(home), "TMPDIR": str(home / "tmp"), "CODEX_HOME": str(home / ".codex"),
            CODEX_KEY_ENV: api_key, "NO_COLOR": "1"}


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def codex_config(base_url: str, model: str, catalog_path: str | Path) -> str:
    """The scratch CODEX_HOME's config.toml (docs/loop.md): the custom Responses provider at the
    proxy, the model catalog, Codex's sandbox confined to the project directory, no approvals."""
    return "\n".join([
        f"model = {_toml(model)}",
        'model_provider = "conformance"',
        f"model_catalog_json = {_toml(str(catalog_path))}",
        'approval_policy = "never"',
        'sandbox_mode = "workspace-write"',
        "",
        "[sandbox_workspace_write]",
        "network_access = false",
        "exclude_tmpdir_env_var = true",
        "exclude_slash_tmp = true",
        "",
        "[model_providers.conformance]",
        'name = "conformance"',
        f"base_url = {_toml(base_url.rstrip('/') + '/v1')}",
        'wire_api = "responses"',
        f"env_key = {_toml(CODEX_KEY_ENV)}",
        "",
    ])


def codex_catalog(binary: Path, env: dict[str, str], model: str, timeout: float = 30) -> dict:
    """A model catalog with one entry for `model`: the binary's own bundled entry (`codex debug
    models`; the first that uses unified exec, preferring none with code-mode-only tools),
    renamed, with the freeform apply_patch. Raises RuntimeError when the binary cannot list it."""
    out = subprocess.run([str(binary), "debug", "models"], capture_output=True, text=True, timeout=timeout,
                         stdin=subprocess.DEVNULL, env=env)
    try:
        models = json.loads(out.stdout)["models"]
    except (ValueError, KeyError, TypeError):
        raise RuntimeError(f"`{binary} debug models` gave no catalog (exit {out.returncode}): "
                           f"{(out.stderr or out.stdout)[-300:]}; this Codex release may predate model catalogs "
                           "(model_catalog_json)") from None
    usable = [m for m in models if isinstance(m, dict) and m.get("shell_type") == "unified_exec"] or models
    plain = [m for m in usable if not m.get("tool_mode")] or usable
    entry = dict(plain[-1])
    entry.update({"slug": model, "display_name": model, "apply_patch_tool_type": "freeform", "visibility": "list"})
    entry.pop("upgrade", None)
    return {"models": [entry]}


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
    return raw


def judge_capture(capture: Capture, base_url: str, *, expect_model: str | None = None) -> tuple[list[Violation], int]:
    """Judge every recorded model exchange; violations carry the exchange number as the turn."""
    from conformance.checks.exchange import check_exchange

    out: list[Violation] = []
    n = 0
    for ex in capture.main_exchanges():
        n += 1
        raw = _raw_from_exchange(ex, base_url)
        body = ex.request.body if isinstance(ex.request.body, dict) else {}
        verdict = check_exchange(raw, body, wire=ex.request.api, expect_model=expect_model, turn=n)
        out.extend(verdict.violations)
    return out, n


def run_live(client: str, scenario: Scenario, target: str, *, binary: str | Path | None = None,
             model: str | None = None, expect_model: str | None = None, api_key: str = "sk-conformance-live",
             api: str | None = None, deadline: float = 180.0, values: dict | None = None,
             rng_seed: int | None = None, workdir: str | Path | None = None,
             artifacts_dir: str | Path | None = None, use_proxy: bool = True) -> LiveReport:
    """Run `client` on `scenario` against `target` (through the capture proxy) and judge it."""
    import random

    from conformance.capture.proxy import CaptureRecorder, CaseInfo, serve_proxy_in_thread

    exe = find_binary(client, binary)
    version = client_version(exe)
    if values is None:
        values = scenario.draw(random.Random(rng_seed))
    base = Path(tempfile.mkdtemp(prefix=f"live-{client}-{scenario.id}-", dir=workdir))
    project, home = base / "project", base / "home"
    (home / "tmp").mkdir(parents=True)
    project.mkdir()
    sandbox = Sandbox(project)  # only to seed and read back; the CLI runs its own tools
    sandbox.seed(scenario.seed_files(values))
    api = api or profile(client).wire.name  # the wire the loop drives as this client
    model = model or "reference-model"
    recorder = CaptureRecorder(CaseInfo(case=f"live-{scenario.id}", description=f"live {client} run of {scenario.id}"),
                               None)
    proxy_ctx = serve_proxy_in_thread(target, recorder) if use_proxy else None
    base_url = proxy_ctx.__enter__() if proxy_ctx is not None else target
    start = time.monotonic()
    try:
        if client == "claude-code":
            env = _env_claude(home, base_url, api_key)
            cmd = [str(exe), "-p", scenario.prompt, "--output-format", "json", "--permission-mode", "acceptEdits",
                   "--disallowedTools", "Bash", "--model", model]
        elif client == "codex":
            env = _env_codex(home, api_key)
            codex_home = Path(env["CODEX_HOME"])
            codex_home.mkdir(parents=True, exist_ok=True)
            catalog = codex_home / "model-catalog.json"
            catalog.write_text(json.dumps(codex_catalog(exe, env, model), indent=1))
            (codex_home / "config.toml").write_text(codex_config(base_url, model, catalog))
            cmd = [str(exe), "exec", "--skip-git-repo-check", "--color", "never", scenario.prompt]
        else:
            env = _env_opencode(home)
            (project / "opencode.json").write_text(json.dumps(opencode_config(base_url, api_key, model, api), indent=1))
            cmd = [str(exe), "run", scenario.prompt]
        proc = subprocess.Popen(cmd, cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        timed_out = False
        try:
            stdout, stderr = proc.communicate(timeout=deadline)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the group this call started, nothing else
            except ProcessLookupError:
                pass
            try:
                stdout, stderr = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = b"", b""
        elapsed = time.monotonic() - start
    finally:
        if proxy_ctx is not None:
            time.sleep(0.2)  # let the proxy record the last exchange of a killed client
            proxy_ctx.__exit__(None, None, None)
    capture = recorder.capture()
    report = LiveReport(client, version, scenario.id, target, cmd, proc.returncode, timed_out, elapsed, deadline,
                        stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"), str(project),
                        capture=capture)
    if use_proxy:
        wire, n = judge_capture(capture, base_url, expect_model=expect_model)
        report.violations.extend(wire)
        report.exchanges = n
    problems = []
    if timed_out:
        problems.append(f"still running at the {deadline:g}s deadline (killed)")
    elif proc.returncode != 0:
        problems.append(f"exited with code {proc.returncode}")
    if client == "claude-code" and report.stdout.strip():
        try:
            doc = json.loads(report.stdout.strip().splitlines()[-1])
            report.details = {k: doc.get(k) for k in ("subtype", "is_error", "num_turns", "stop_reason",
                                                        "terminal_reason", "result", "permission_denials")}
            if doc.get("is_error"):
                problems.append(f"reported an error: {str(doc.get('result'))[:200]}")
        except (json.JSONDecodeError, IndexError):
            pass
    if problems:
        report.violations.append(violation(
            "loop.client_finished", f"{client} {version} did not finish the task: {'; '.join(problems)}",
            expected=f"exit 0 within {deadline:g}s", seen=f"exit {proc.returncode} after {elapsed:.1f}s"))
    for f in check_completion(scenario, values, sandbox.read_text):
        report.violations.append(violation(
            "loop.completion_check", f"{f.file}: the completion check `{f.rule}` does not hold",
            expected=f.expected, seen=f.seen))
    if artifacts_dir is not None and not report.passed:  # what a bug report attaches
        report.write_artifacts(artifacts_dir)
    if report.passed:
        shutil.rmtree(base, ignore_errors=True)
    return report
