"""Rebuild the captured/ corpus from the pinned real clients, in one command, offline.

    python -m conformance.capture.recapture [--clients DIR] [--out captured] [--install] [--only TEXT]
                                            [--version [CLIENT=]V]

Rules:
- The clients are the real CLIs from npm at the pinned versions (`PINS`: the current release of
  each client), installed into `--clients DIR` (`--install` runs `npm install --prefix DIR ...`
  first). `--version [CLIENT=]V` captures another release (`RELEASES` lists the ones the corpus
  keeps): each release lives in its own npm prefix, `DIR/<client>@<V>` (`release_prefix`), and
  DIR itself is used when it holds that release; `--install` installs it there. Each case runs the
  client in a fresh scratch HOME and project folder, with the offline settings from PEERS.md,
  pointed at the recording proxy (`conformance.capture.proxy`), which forwards to the reference engine
  (in-process) or `--upstream URL`.
- Every capture is redacted before it is written (the fake key, session and device ids) and its
  vendor prose is replaced by same-length filler (`conformance.capture.redact.fill_prose`): the case's
  own prompt is kept (`keep_texts`), so the engine still finds the `[task:...]` tag.
- A case fails loudly (exit 1) when the client exits non-zero or sends fewer model requests than
  the case needs (e.g. a tool loop that stops after one turn); a failed case writes no file.
- `captured/manifest.json` is rebuilt from every capture file under `--out`: client, version,
  binary sha256, npm package, command, flags, what it covers. Captures of other client versions
  already in the folder stay listed. Its `current` names each client's current release: the pin
  when the corpus holds it, else the newest release in the corpus.
- Paths are deterministic (`--scratch`, default /tmp/conformance-recapture), so a recapture of the
  same versions differs from the committed corpus only in per-run values, which
  `conformance capture --diff` ignores.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.capture import codex as codex_client
from conformance.capture.format import load_capture
from conformance.capture.proxy import CaptureRecorder, CaseInfo, serve_proxy_in_thread
from conformance.capture.redact import RedactionConfig

PINS = {"claude-code": "2.1.332", "opencode": "1.18.33", codex_client.NAME: codex_client.PIN}
# The releases the corpus keeps per client (the pin is the current one): captured/<client>/<version>/.
RELEASES = {"claude-code": ("2.1.197", "2.1.332"), "opencode": ("1.18.33",), codex_client.NAME: (codex_client.PIN,)}
NPM_PACKAGES = {"claude-code": "@anthropic-ai/claude-code", "opencode": "opencode-ai",
                codex_client.NAME: codex_client.NPM_PACKAGE}
# The native binary each npm package runs (the sha256 in the manifest is of this file).
BINARIES = {
    "claude-code": ("node_modules/@anthropic-ai/claude-code/bin/claude.exe", "node_modules/.bin/claude"),
    "opencode": ("node_modules/opencode-ai/bin/opencode.exe", "node_modules/.bin/opencode"),
    codex_client.NAME: codex_client.BINARY,
}
FAKE_KEY = "sk-conformance-capture-0000000000"  # never a real key; redacted anyway
OPENCODE_MODEL = "local-model"
WRITE_FILE_TOKEN = "5c0ffee1d2a3"  # the seeded token of the write-file scenario (fixed: diff-stable)


def _scenario_prompt(scenario_id: str) -> str:
    from conformance.core.paths import fixtures_dir

    return json.loads((fixtures_dir() / "scenarios" / f"{scenario_id}.json").read_text())["prompt"]


@dataclass
class Case:
    client: str  # claude-code | opencode
    case: str
    prompt: str
    description: str
    covers: list[str]
    flags: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    provider: str = "anthropic"  # opencode: openai-compatible | anthropic
    min_model_requests: int = 1
    seed: dict[str, str] = field(default_factory=dict)
    model_options: dict[str, Any] = field(default_factory=dict)  # opencode model config


def cases() -> list[Case]:
    write_static = _scenario_prompt("write-static")
    write_file = _scenario_prompt("write-file")
    cc_loop = ["--permission-mode", "acceptEdits"]
    plain = "Reply with one short sentence about tidy code."
    return [
        Case("claude-code", "default", plain, "print mode, default settings",
             ["adaptive-thinking", "effort-high", "context-management", "system-role-in-messages",
              "head-probe", "metadata-user-id-json", "session-id-header"]),
        Case("claude-code", "effort-xhigh", plain, "--effort xhigh: the effort is sent verbatim",
             ["effort-xhigh", "adaptive-thinking"], flags=["--effort", "xhigh"]),
        Case("claude-code", "effort-max", plain, "--effort max", ["effort-max", "adaptive-thinking"],
             flags=["--effort", "max"]),
        Case("claude-code", "haiku", plain, "a haiku-class model: thinking enabled with a budget",
             ["thinking-enabled-budget", "haiku-class-model"], flags=["--model", "claude-haiku-4-5-20251001"]),
        Case("claude-code", "thinking-off", plain, "MAX_THINKING_TOKENS=0: thinking disabled, no context_management",
             ["thinking-disabled", "no-context-management"], env={"MAX_THINKING_TOKENS": "0"}),
        Case("claude-code", "custom-model", plain, "a custom (local) model name: 32000 max_tokens, still adaptive",
             ["custom-model-name", "adaptive-thinking"], flags=["--model", "my-local-model"]),
        Case("claude-code", "bare", plain, "--bare: the minimal tool set and system prompt",
             ["bare-mode", "few-tools"], flags=["--bare"]),
        Case("claude-code", "tool-loop", write_static,
             "a tool loop: Write, then the final answer (both turns; scenario write-static)",
             ["tool-loop", "tool-result", "write-tool", "scenario:write-static"], flags=cc_loop,
             min_model_requests=2),
        Case("claude-code", "tool-loop-thinking", write_file,
             "a loop with thinking: Read with a thinking block, Write, answer; thinking and signature "
             "are sent back verbatim (scenario write-file)",
             ["tool-loop", "thinking-signature-sent-back", "read-tool", "write-tool", "scenario:write-file"],
             flags=cc_loop, min_model_requests=3, seed={"token.txt": WRITE_FILE_TOKEN + "\n"}),
        Case("claude-code", "count-tokens", "/context",
             "interactive /context (driven in print mode): a burst of /v1/messages/count_tokens requests",
             ["count-tokens"], min_model_requests=1),
        Case("opencode", "openai-plain", "hello", "OpenAI-compatible provider, a one-word prompt; "
             "the title request runs concurrently",
             ["openai-compatible", "title-request", "stream-options-include-usage", "session-headers"],
             provider="openai-compatible"),
        Case("opencode", "openai-spaces", "say hello in five words",
             "a prompt with spaces: sent wrapped in literal double quotes",
             ["prompt-quoted", "title-request"], provider="openai-compatible"),
        Case("opencode", "openai-inner-quotes", 'reply with the word "ok" and nothing else',
             "a prompt with inner quotes (wrapped in quotes again on the wire)",
             ["prompt-quoted", "inner-quotes", "title-request"], provider="openai-compatible"),
        Case("opencode", "openai-tool-loop", write_static,
             "OpenAI-compatible tool loop: write, then the answer; the result goes back as role tool",
             ["tool-loop", "role-tool", "title-request", "scenario:write-static"],
             provider="openai-compatible", min_model_requests=3),
        Case("opencode", "anthropic-plain", "hello", "Anthropic provider, plain prompt",
             ["anthropic-provider", "eager-input-streaming", "title-request-thinking"], provider="anthropic"),
        Case("opencode", "anthropic-tool-loop", write_static, "Anthropic provider tool loop",
             ["anthropic-provider", "tool-loop", "tool-result", "scenario:write-static"],
             provider="anthropic", min_model_requests=3),
        Case("opencode", "anthropic-reasoning", "hello",
             "Anthropic provider with a reasoning model config (thinking enabled with a budget)",
             ["anthropic-provider", "thinking-enabled-budget"], provider="anthropic",
             model_options={"options": {"thinking": {"type": "enabled", "budgetTokens": 8000}}}),
        *(Case(**spec) for spec in codex_client.case_specs()),
    ]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def release_prefix(clients_dir: Path, client: str, version: str) -> Path:
    """The npm prefix of one release: DIR/<client>@<version>."""
    return clients_dir / f"{client}@{version}"


def install(clients_dir: Path, versions: dict[str, str] | None = None) -> float:
    """npm install the pinned clients (or `versions`, each into its own release prefix); returns seconds."""
    start = time.monotonic()
    if not versions:
        cmd = ["npm", "install", "--prefix", str(clients_dir), "--no-audit", "--no-fund",
               *(f"{NPM_PACKAGES[c]}@{v}" for c, v in PINS.items())]
        print("$ " + shlex.join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True)
    for client, version in (versions or {}).items():
        cmd = ["npm", "install", "--prefix", str(release_prefix(clients_dir, client, version)), "--no-audit",
               "--no-fund", f"{NPM_PACKAGES[client]}@{version}"]
        print("$ " + shlex.join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True)
    return time.monotonic() - start


def client_dir(clients_dir: Path, client: str, version: str | None) -> Path:
    """Where a release is installed: its own prefix if it exists, else DIR itself."""
    if version:
        own = release_prefix(clients_dir, client, version)
        if (own / BINARIES[client][1]).exists():
            return own
    return clients_dir


def client_info(clients_dir: Path, client: str, version: str | None = None) -> dict[str, str]:
    clients_dir = client_dir(clients_dir, client, version)
    real, launcher = (clients_dir / p for p in BINARIES[client])
    if not launcher.exists():
        want = f"{NPM_PACKAGES[client]}@{version or PINS[client]}"
        raise FileNotFoundError(
            f"{launcher} not found: install the client with `npm install --prefix "
            f"{release_prefix(clients_dir, client, version) if version else clients_dir} {want}` or pass --install")
    out = subprocess.run([str(launcher), "--version"], capture_output=True, text=True, timeout=60)
    # `2.1.197 (Claude Code)`, `1.18.33`, `codex-cli 0.171.0`: the first dotted version number
    found = re.search(r"\d+\.\d+\.\d+\S*", out.stdout)
    version = found.group(0) if found else "unknown"
    return {"version": version, "launcher": str(launcher),
            "binary_sha256": sha256_file(real if real.exists() else launcher.resolve()),
            "npm": f"{NPM_PACKAGES[client]}@{version}"}


def _opencode_config(case: Case, base_url: str) -> dict[str, Any]:
    if case.provider == "openai-compatible":
        npm, url = "@ai-sdk/openai-compatible", base_url + "/v1"
    else:
        npm, url = "@ai-sdk/anthropic", base_url + "/v1"
    model: dict[str, Any] = {}
    model.update(case.model_options)
    return {"$schema": "https://opencode.ai/config.json",
            "provider": {"local": {"npm": npm, "name": "local",
                                   "options": {"baseURL": url, "apiKey": FAKE_KEY},
                                   "models": {OPENCODE_MODEL: model}}},
            "model": f"local/{OPENCODE_MODEL}"}


def run_case(case: Case, info: dict[str, str], proxy_url: str, scratch: Path, timeout: float) -> tuple[list[str], str]:
    """Run the client for one case; returns (argv as recorded, client output tail)."""
    root = scratch / f"{case.client}-{case.case}"
    shutil.rmtree(root, ignore_errors=True)
    home, project = root / "home", root / "project"
    home.mkdir(parents=True)
    project.mkdir(parents=True)
    for rel, text in case.seed.items():
        (project / rel).write_text(text)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "TERM": "dumb", "NO_COLOR": "1"}
    if case.client == "claude-code":
        env.update({"ANTHROPIC_BASE_URL": proxy_url, "ANTHROPIC_API_KEY": FAKE_KEY,
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"})
        argv = ["claude", "-p", case.prompt, "--output-format", "json", *case.flags]
    elif case.client == codex_client.NAME:
        extra, args = codex_client.prepare(case, home, project, proxy_url, FAKE_KEY)
        env.update(extra)
        argv = ["codex", *args]
    else:
        env.update({"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
                    "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
                    "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local/state")})
        (project / "opencode.json").write_text(json.dumps(_opencode_config(case, proxy_url), indent=1))
        argv = ["opencode", "run", *case.flags, case.prompt]
    env.update(case.env)
    proc = subprocess.run([info["launcher"], *argv[1:]], cwd=project, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    tail = (proc.stdout + proc.stderr)[-600:]
    if proc.returncode != 0:
        raise RuntimeError(f"{case.client} exited {proc.returncode}: {tail}")
    return argv, tail


def _command_line(case: Case, argv: list[str]) -> str:
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in case.env.items())
    return (env + " " if env else "") + shlex.join(argv)


def capture_case(case: Case, info: dict[str, str], recorder: CaptureRecorder, proxy_url: str, out: Path,
                 scratch: Path, timeout: float, upstream_label: str) -> Path:
    path = out / case.client / info["version"] / f"{case.case}.json"
    tmp = path.with_name(path.name + ".partial")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    argv_preview = (["claude", "-p", case.prompt, "--output-format", "json", *case.flags]
                    if case.client == "claude-code" else codex_client.argv(case) if case.client == codex_client.NAME
                    else ["opencode", "run", *case.flags, case.prompt])
    meta = {"binary_sha256": info["binary_sha256"], "npm": info["npm"],
            "provider": "anthropic" if case.client == "claude-code" else case.provider,
            "captured_at": time.strftime("%Y-%m-%d", time.gmtime()), "upstream": upstream_label,
            "client_environment": {
            "claude-code": "HOME=<scratch> ANTHROPIC_BASE_URL=<proxy> ANTHROPIC_API_KEY=<fake> "
                           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1, stdin /dev/null",
            "opencode": "HOME and XDG_* dirs=<scratch> OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1, "
                        "./opencode.json with the provider (see each case's meta.opencode_config)",
            codex_client.NAME: codex_client.ENVIRONMENT,
        },
        "redaction": "secrets and ids redacted; vendor prose replaced by same-length filler"}
    if case.client == codex_client.NAME:
        meta.update(codex_client.meta(case))
    if case.client == "opencode":
        meta["opencode_config"] = _opencode_config(case, "http://127.0.0.1:PORT")
        meta["opencode_config"]["provider"]["local"]["options"]["apiKey"] = "<redacted:api-key>"
    config = RedactionConfig(extra_secrets=(FAKE_KEY,), prose_filler=True, keep_texts=(case.prompt,))
    recorder.begin_case(
        CaseInfo(case.case, client=case.client, client_version=info["version"], description=case.description,
                 command=_command_line(case, argv_preview), flags=list(case.flags), covers=list(case.covers),
                 meta=meta),
        tmp, config)
    try:
        run_case(case, info, proxy_url, scratch, timeout)
        time.sleep(0.3)  # a concurrent side request may still be finishing in the proxy
        cap = recorder.capture()
        n = len(cap.main_exchanges())
        if n < case.min_model_requests:
            raise RuntimeError(f"{case.client}/{case.case}: {n} model request(s), the case needs "
                               f"{case.min_model_requests}")
        recorder.save()
        os.replace(tmp, path)
        return path
    finally:
        recorder.begin_case(CaseInfo("idle"), None)
        tmp.unlink(missing_ok=True)


def write_manifest(out: Path, extra: dict[str, Any] | None = None) -> Path:
    """captured/manifest.json: one entry per capture file under `out`."""
    from conformance.capture.corpus import is_capture_file, iter_capture_files

    entries = []
    clients: dict[str, dict[str, Any]] = {}
    for p in iter_capture_files(out):
        if not is_capture_file(p):
            continue  # a client's own JSON (e.g. a scratch HOME kept under the output folder)
        cap = load_capture(p)
        entries.append({
            "file": p.relative_to(out).as_posix(),
            "id": cap.id,
            "client": cap.client,
            "version": cap.client_version,
            "binary_sha256": cap.meta.get("binary_sha256"),
            "npm": cap.meta.get("npm"),
            "provider": cap.meta.get("provider"),
            "command": cap.command,
            "flags": cap.flags,
            "description": cap.description,
            "covers": cap.covers,
            "exchanges": [f"{e.request.method} {e.request.url_path}" + (f" ({e.note})" if e.note else "")
                          for e in cap.exchanges],
            "captured_at": cap.meta.get("captured_at"),
            "upstream": cap.meta.get("upstream"),
        })
        clients.setdefault(f"{cap.client}@{cap.client_version}", {
            "npm": cap.meta.get("npm"), "binary_sha256": cap.meta.get("binary_sha256")})
    current: dict[str, str] = {}
    for key in clients:
        client, version = key.rsplit("@", 1)
        if PINS.get(client) == version:
            current[client] = version
        elif client not in current or (PINS.get(client) != current[client]
                                       and _version_key(version) > _version_key(current[client])):
            current[client] = version
    manifest = {
        "format": "conformance.capture-manifest",
        "version": 1,
        "rebuild": "scripts/recapture.sh (python -m conformance.capture.recapture)",
        "clients": clients,
        "current": dict(sorted(current.items())),
        "client_environment": {
            "claude-code": "HOME=<scratch> ANTHROPIC_BASE_URL=<proxy> ANTHROPIC_API_KEY=<fake> "
                           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1, stdin /dev/null",
            "opencode": "HOME and XDG_* dirs=<scratch> OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1, "
                        "./opencode.json with the provider (see each case's meta.opencode_config)",
            codex_client.NAME: codex_client.ENVIRONMENT,
        },
        "redaction": "secrets and identifiers redacted before writing (conformance.capture.redact); vendor prose "
                     "(system prompts, tool and schema descriptions, reminders) replaced by filler of the same "
                     "UTF-8 length; structure, field names, schemas and headers kept",
        **(extra or {}),
        "cases": entries,
    }
    path = out / "manifest.json"
    path.write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    return path


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in version.replace("-", ".").split("."))


def parse_versions(values: list[str], clients: list[str]) -> dict[str, str]:
    """`--version [CLIENT=]V` (repeatable) -> client -> release; a bare V needs one selected client."""
    out: dict[str, str] = {}
    for value in values:
        client, sep, version = value.rpartition("=")
        if not sep:
            if len(clients) != 1:
                raise SystemExit(f"--version {value}: say which client (CLIENT=V) or select one with --only; "
                                 f"selected: {', '.join(clients)}")
            client = clients[0]
        if client not in NPM_PACKAGES:
            raise SystemExit(f"--version {value}: unknown client {client!r} (one of {', '.join(NPM_PACKAGES)})")
        out[client] = version
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.capture.recapture", description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", default=os.environ.get("CONFORMANCE_CLIENTS_DIR", ".clients"),
                    help="npm prefix holding the pinned clients (default $CONFORMANCE_CLIENTS_DIR or .clients)")
    ap.add_argument("--out", default=None, help="corpus folder (default: the bundled captured/)")
    ap.add_argument("--install", action="store_true", help="npm install the pinned clients first")
    ap.add_argument("--upstream", default=None, help="forward to this target instead of the reference engine")
    ap.add_argument("--only", default=None, help="only cases whose client/case contains TEXT")
    ap.add_argument("--scratch", default="/tmp/conformance-recapture", help="scratch HOME/project root")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per client run")
    ap.add_argument("--version", action="append", default=[], metavar="[CLIENT=]V",
                    help="capture this release instead of the pin (its own npm prefix DIR/<client>@<V>); repeatable")
    args = ap.parse_args(argv)

    clients_dir = Path(args.clients).resolve()
    selected = [c for c in cases() if not args.only or args.only in f"{c.client}/{c.case}"]
    versions = parse_versions(args.version, sorted({c.client for c in selected}))
    if args.install:
        print(f"installed the clients in {install(clients_dir, versions):.1f}s", file=sys.stderr)
    if args.out is None:
        from conformance.core.paths import captured_dir

        out = captured_dir()
    else:
        out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    infos = {name: client_info(clients_dir, name, versions.get(name)) for name in sorted({c.client for c in selected})}
    for name, info in infos.items():
        want = versions.get(name, PINS[name])
        if info["version"] != want:
            print(f"warning: {name} is {info['version']}, {'asked for' if name in versions else 'the pin is'} {want}",
                  file=sys.stderr)

    failures = 0
    start = time.monotonic()
    with contextlib.ExitStack() as stack:
        upstream = args.upstream
        label = upstream or "reference engine (conformance.engine, in-process)"
        if upstream is None:
            from conformance.engine.launch import serve_engine_in_thread

            upstream = stack.enter_context(serve_engine_in_thread())
        recorder = CaptureRecorder(CaseInfo("idle"), None)
        proxy_url = stack.enter_context(serve_proxy_in_thread(upstream, recorder))
        for case in selected:
            t0 = time.monotonic()
            try:
                path = capture_case(case, infos[case.client], recorder, proxy_url, out, Path(args.scratch),
                                    args.timeout, label)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                failures += 1
                print(f"FAIL {case.client}/{case.case}: {exc}", file=sys.stderr)
                continue
            cap = load_capture(path)
            print(f"ok   {cap.id}: {len(cap.exchanges)} exchange(s) in {time.monotonic() - t0:.1f}s -> {path}",
                  file=sys.stderr)
    write_manifest(out)
    print(f"{len(selected) - failures}/{len(selected)} case(s) captured in {time.monotonic() - start:.0f}s",
          file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
