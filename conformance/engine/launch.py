"""Starting the reference engine: as a subprocess (the real CLI) or in a background thread.

Rules:
- `spawn_engine(*cli_args, env=None)` runs `python -m conformance.cli engine --port 0 ARGS` and
  waits (SPAWN_DEADLINE) for its one `listening on http://HOST:PORT` line while watching the
  process; if it exits or the deadline passes, it raises EngineStartError with its stderr.
  It is a context manager; `.stop()` sends SIGTERM, then SIGKILL after a grace period.
- `serve_engine_in_thread(...)` (faults, variations, pacing rates as EngineConfig has them) runs a real server on a free port in a daemon thread with its own
  event loop and yields the base URL; leaving the context stops it and joins the thread.
  Faults that exit the process (crash-under-concurrency) are simulated in-thread (see server.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time

from aiohttp import web

from conformance.engine import faults as fault_modes
from conformance.engine import variations as variation_modes
from conformance.engine.server import build_app
from conformance.engine.state import DEFAULT_MAX_CONTEXT, DEFAULT_MODEL, EngineConfig

SPAWN_DEADLINE = 30.0
STOP_GRACE = 5.0


class EngineStartError(RuntimeError):
    pass


class EngineProcess:
    def __init__(self, proc: subprocess.Popen, url: str):
        self.proc = proc
        self.url = url
        self._stderr_thread = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_GRACE)
        for s in (self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(Exception):
                s.close()
        return self.proc.returncode

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def spawn_engine(*cli_args: str, env: dict | None = None, deadline: float = SPAWN_DEADLINE) -> EngineProcess:
    args = [str(a) for a in cli_args]
    if "--port" not in args:
        args = ["--port", "0", *args]
    cmd = [sys.executable, "-m", "conformance.cli", "engine", *args]
    full_env = dict(os.environ)
    full_env["PYTHONUNBUFFERED"] = "1"
    if env:
        full_env.update(env)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env, text=True)
    lines: list[str] = []
    found: list[str] = []
    done = threading.Event()

    def read_stdout():
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("listening on ") and not found:
                found.append(line.split("listening on ", 1)[1].strip())
                done.set()
        done.set()

    threading.Thread(target=read_stdout, daemon=True).start()
    end = time.monotonic() + deadline
    while time.monotonic() < end and not found:
        if done.wait(0.05) and not found:
            break
        if proc.poll() is not None and not found:
            done.wait(0.5)
            break
    if not found:
        with contextlib.suppress(Exception):
            proc.kill()
        err = ""
        with contextlib.suppress(Exception):
            err = proc.stderr.read()[-4000:]
        why = f"exited with code {proc.returncode}" if proc.poll() is not None else f"no line within {deadline:.0f} s"
        raise EngineStartError(
            f"reference engine did not start ({why}): {' '.join(cmd)}\nstdout: {''.join(lines)[-2000:]}\n"
            f"stderr: {err}\nCheck the arguments (`conformance engine --help`) and fault names (`conformance faults`).")
    # Drain stderr so a chatty engine never blocks on a full pipe.
    ep = EngineProcess(proc, found[0])

    def drain():
        with contextlib.suppress(Exception):
            for _ in proc.stderr:
                pass

    ep._stderr_thread = threading.Thread(target=drain, daemon=True)
    ep._stderr_thread.start()
    return ep


@contextlib.contextmanager
def serve_engine_in_thread(faults=(), model: str = DEFAULT_MODEL, max_context: int = DEFAULT_MAX_CONTEXT,
                           scenarios=None, host: str = "127.0.0.1", variations=(),
                           prefill_tokens_per_s: float | None = None, decode_tokens_per_s: float | None = None,
                           metrics: bool = False, die_after_s: float = 30.0, die_at_inflight: int = 4):
    config = EngineConfig(model=model, faults=fault_modes.validate(faults), max_context=int(max_context),
                          scenarios_dir=str(scenarios) if scenarios else None, exit_on_crash=False,
                          variations=variation_modes.validate(variations),
                          prefill_tokens_per_s=prefill_tokens_per_s, decode_tokens_per_s=decode_tokens_per_s,
                          metrics=metrics, die_after_s=die_after_s, die_at_inflight=die_at_inflight)
    app = build_app(config)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict = {}

    async def start():
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, host, 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        holder["runner"] = runner
        holder["url"] = f"http://{host}:{port}"

    def run():
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(start())
        except BaseException as e:  # surfaced to the caller below
            holder["error"] = e
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.run_until_complete(holder["runner"].cleanup())
        loop.close()

    t = threading.Thread(target=run, name="reference-engine", daemon=True)
    t.start()
    if not ready.wait(SPAWN_DEADLINE):
        raise EngineStartError(f"in-thread reference engine did not start within {SPAWN_DEADLINE:.0f} s")
    if "error" in holder:
        raise EngineStartError(f"in-thread reference engine failed to start: {holder['error']!r}")
    try:
        yield holder["url"]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        t.join(15)
