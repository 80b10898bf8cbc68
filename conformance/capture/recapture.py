"""Rebuild the captured/ corpus from the pinned real clients, in one command, offline.

    python -m conformance.capture.recapture [--clients DIR] [--out captured] [--install] [--only TEXT]
                                            [--version [CLIENT=]V]

Rules:
- The clients are the real CLIs from npm at their profiles' pins (`ClientProfile.pin`, the current
  release), installed into `--clients DIR` (`--install` runs `npm install --prefix DIR ...`
  first). `--version [CLIENT=]V` captures another release (`ClientProfile.releases` lists the ones
  the corpus keeps): each release lives in its own npm prefix, `DIR/<client>@<V>`
  (`conformance.clients.launch.release_prefix`), and DIR itself is used when it holds that
  release; `--install` installs it there.
- Each case (a profile's `recapture`, made runnable by `conformance.capture.cases`) runs the
  client through the one launcher (`conformance.clients.launch`, the live tests' too) in a fresh
  scratch HOME and project folder,
  with the offline settings and the client's defaults (the shell kept: `forbid_shell` False),
  pointed at the recording proxy (`conformance.capture.proxy`), which forwards to the reference
  engine (in-process) or `--upstream URL`.
- Every capture is redacted before it is written (the fake key, session and device ids) and its
  vendor prose is replaced by same-length filler (`conformance.capture.redact.fill_prose`): the case's
  own prompt is kept (`keep_texts`), so the engine still finds the `[task:...]` tag.
- A case fails loudly (exit 1) when the client exits non-zero, outlives `--timeout` (its process
  group is killed) or sends fewer model requests than the case needs (e.g. a tool loop that stops
  after one turn); a failed case writes no file.
- `captured/manifest.json` is rebuilt from every capture file under `--out`: client, version,
  binary sha256, npm package, command, flags, what it covers. Captures of other client versions
  already in the folder stay listed. Its `current` names each client's current release: the pin
  when the corpus holds it, else the newest release in the corpus (`conformance.core.versions`).
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
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conformance.capture.cases import Case, cases
from conformance.capture.corpus import is_capture_file, iter_capture_files
from conformance.capture.format import load_capture
from conformance.capture.proxy import CaptureRecorder, CaseInfo, serve_proxy_in_thread
from conformance.capture.redact import RedactionConfig
from conformance.clients.config import config_preview
from conformance.clients.launch import (
    Prepared,
    binary_in_prefix,
    client_version,
    describe_environment,
    prepare,
    release_prefix,
    run,
)
from conformance.clients.profile import ClientProfile, launchable, profile
from conformance.core.paths import captured_dir
from conformance.core.versions import version_key
from conformance.engine.launch import serve_engine_in_thread
from conformance.wire.dialect import Dialect

FAKE_KEY = "sk-conformance-capture-0000000000"  # never a real key; redacted anyway
REDACTION = "secrets and ids redacted; vendor prose replaced by same-length filler"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _npm_install(prefix: Path, specs: list[str]) -> None:
    cmd = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *specs]
    print("$ " + shlex.join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True)


def install(clients_dir: Path, versions: dict[str, str] | None = None) -> float:
    """npm install the pinned clients (or `versions`, each into its own release prefix); returns seconds."""
    start = time.monotonic()
    if not versions:
        _npm_install(clients_dir, [f"{p.npm_package}@{p.pin}" for p in launchable()])
    for name, version in (versions or {}).items():
        client = profile(name)
        _npm_install(release_prefix(clients_dir, client, version), [f"{client.npm_package}@{version}"])
    return time.monotonic() - start


def client_dir(clients_dir: Path, client: ClientProfile, version: str | None) -> Path:
    """Where a release is installed: its own prefix if it holds the CLI, else DIR itself."""
    if version:
        own = release_prefix(clients_dir, client, version)
        if binary_in_prefix(own, client).exists():
            return own
    return clients_dir


def client_info(clients_dir: Path, client: ClientProfile, version: str | None = None) -> dict[str, str]:
    """The installed CLI of `client` (`version`, else the pin): its launcher, the version it
    reports, the sha256 of its native binary and its npm package; FileNotFoundError saying what to
    install when it is missing."""
    prefix = client_dir(clients_dir, client, version)
    launcher = binary_in_prefix(prefix, client)
    native = prefix / client.native_binary
    if not launcher.exists():
        want = f"{client.npm_package}@{version or client.pin}"
        where = release_prefix(clients_dir, client, version) if version else clients_dir
        raise FileNotFoundError(f"{launcher} not found: install the client with `npm install --prefix {where} "
                                f"{want}` or pass --install")
    seen = client_version(launcher)
    return {"version": seen, "launcher": str(launcher),
            # a client with no native binary (its npm package is the program) hashes its launcher
            "binary_sha256": sha256_file(native if native.is_file() else launcher.resolve()),
            "npm": f"{client.npm_package}@{seen}"}


def _provider(client: ClientProfile, wire: Dialect) -> str:
    """What a capture's meta names as the provider: the package that speaks the wire, else the wire."""
    return client.launch.providers.get(wire.name, wire.name)


def _environments() -> dict[str, str]:
    return {p.name: describe_environment(p) for p in launchable()}


def _command_line(case: Case, shown: list[str]) -> str:
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in case.spec.env.items())
    return (env + " " if env else "") + shlex.join(shown)


def _prepare(case: Case, info: dict[str, str], proxy_url: str, scratch: Path) -> Prepared:
    root = scratch / f"{case.client.name}-{case.spec.name}"
    shutil.rmtree(root, ignore_errors=True)
    prepared = prepare(case.client, Path(info["launcher"]), wire=case.wire, prompt=case.prompt, base_url=proxy_url,
                       api_key=FAKE_KEY, root=root, settings=case.settings())
    for rel, text in case.spec.seed.items():
        (prepared.project / rel).write_text(text)
    return prepared


def capture_case(case: Case, info: dict[str, str], recorder: CaptureRecorder, proxy_url: str, out: Path,
                 scratch: Path, timeout: float, upstream_label: str) -> Path:
    path = out / case.client.name / info["version"] / f"{case.spec.name}.json"
    tmp = path.with_name(path.name + ".partial")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    prepared = _prepare(case, info, proxy_url, scratch)
    meta = {"binary_sha256": info["binary_sha256"], "npm": info["npm"], "provider": _provider(case.client, case.wire),
            "captured_at": time.strftime("%Y-%m-%d", time.gmtime()), "upstream": upstream_label,
            "client_environment": _environments(), "redaction": REDACTION,
            **config_preview(case.client, case.wire, case.shown_settings())}
    config = RedactionConfig(extra_secrets=(FAKE_KEY,), prose_filler=True, keep_texts=(case.prompt,),
                             home_folders=(*RedactionConfig().home_folders, str(prepared.home)))
    recorder.begin_case(
        CaseInfo(case.spec.name, client=case.client.name, client_version=info["version"],
                 description=case.spec.description, command=_command_line(case, prepared.shown),
                 flags=list(case.spec.flags), covers=list(case.spec.covers), meta=meta),
        tmp, config)
    try:
        finished = run(prepared, timeout)
        tail = (finished.stdout + finished.stderr)[-600:]
        if finished.timed_out:
            raise RuntimeError(f"{case.id} still running after {timeout:g}s (killed): {tail}")
        if finished.returncode != 0:
            raise RuntimeError(f"{case.client.name} exited {finished.returncode}: {tail}")
        time.sleep(0.3)  # a concurrent side request may still be finishing in the proxy
        cap = recorder.capture()
        n = len(cap.main_exchanges())
        if n < case.spec.min_model_requests:
            raise RuntimeError(f"{case.id}: {n} model request(s), the case needs {case.spec.min_model_requests}")
        recorder.save()
        os.replace(tmp, path)
        return path
    finally:
        recorder.begin_case(CaseInfo("idle"), None)
        tmp.unlink(missing_ok=True)


def current_of(releases: list[tuple[str, str]]) -> dict[str, str]:
    """client -> its current release among (client, version) pairs: the pin when there, else the newest."""
    current: dict[str, str] = {}
    for client, version in releases:
        pin = profile(client).pin
        if pin == version:
            current[client] = version
        elif client not in current or (pin != current[client] and version_key(version) > version_key(current[client])):
            current[client] = version
    return dict(sorted(current.items()))


def write_manifest(out: Path, extra: dict[str, Any] | None = None) -> Path:
    """captured/manifest.json: one entry per capture file under `out`."""
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
    manifest = {
        "format": "conformance.capture-manifest",
        "version": 1,
        "rebuild": "scripts/recapture.sh (python -m conformance.capture.recapture)",
        "clients": clients,
        "current": current_of([tuple(key.rsplit("@", 1)) for key in clients]),
        "client_environment": _environments(),
        "redaction": "secrets and identifiers redacted before writing (conformance.capture.redact); vendor prose "
                     "(system prompts, tool and schema descriptions, reminders) replaced by filler of the same "
                     "UTF-8 length; structure, field names, schemas and headers kept",
        **(extra or {}),
        "cases": entries,
    }
    path = out / "manifest.json"
    path.write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    return path


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
        runnable = [p.name for p in launchable()]
        if client not in runnable:
            raise SystemExit(f"--version {value}: unknown client {client!r} (one of {', '.join(runnable)})")
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
    selected = [c for c in cases() if not args.only or args.only in c.id]
    names = sorted({c.client.name for c in selected})
    versions = parse_versions(args.version, names)
    if args.install:
        print(f"installed the clients in {install(clients_dir, versions):.1f}s", file=sys.stderr)
    out = captured_dir() if args.out is None else Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    infos = {name: client_info(clients_dir, profile(name), versions.get(name)) for name in names}
    for name, info in infos.items():
        want = versions.get(name, profile(name).pin)
        if info["version"] != want:
            print(f"warning: {name} is {info['version']}, {'asked for' if name in versions else 'the pin is'} {want}",
                  file=sys.stderr)

    failures = 0
    start = time.monotonic()
    with contextlib.ExitStack() as stack:
        upstream = args.upstream
        label = upstream or "reference engine (conformance.engine, in-process)"
        if upstream is None:
            upstream = stack.enter_context(serve_engine_in_thread())
        recorder = CaptureRecorder(CaseInfo("idle"), None)
        proxy_url = stack.enter_context(serve_proxy_in_thread(upstream, recorder))
        for case in selected:
            t0 = time.monotonic()
            try:
                path = capture_case(case, infos[case.client.name], recorder, proxy_url, out, Path(args.scratch),
                                    args.timeout, label)
            except RuntimeError as exc:
                failures += 1
                print(f"FAIL {case.id}: {exc}", file=sys.stderr)
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
