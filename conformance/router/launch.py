"""Start the reference router in-process (a thread) or as a subprocess (the CLI).

Rules:
- `serve_router_in_thread(upstream, faults=(), ...)` is a context manager yielding the base URL
  (http://127.0.0.1:PORT) of a router on a free port, served by its own event loop in a daemon
  thread; leaving the block stops it. For fast tests.
- `spawn_router(*cli_args)` runs `conformance router ... --port 0` in a subprocess, waits for its
  `listening on URL` line under a deadline and returns a `RouterProcess` (context manager; `.url`,
  `.proc`, `.stop()`). The process is always killed on exit, even when a test fails.
- Same shape as `conformance.engine.launch` so tests treat both layers alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from aiohttp import web

from conformance.router.server import RouterConfig, make_app

LISTENING = "listening on "


async def _start_site(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    sockets = site._server.sockets if site._server else []  # noqa: SLF001 - aiohttp exposes no public getter
    return runner, sockets[0].getsockname()[1]


@contextlib.contextmanager
def serve_router_in_thread(
    upstream: str,
    faults: tuple[str, ...] | list[str] = (),
    *,
    upstream_api: str = "openai",
    model: str | None = None,
    fallback_model: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    startup_timeout: float = 10.0,
) -> Iterator[str]:
    config = RouterConfig(upstream=upstream, upstream_api=upstream_api, faults=tuple(faults), model=model,
                          fallback_model=fallback_model)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    state: dict = {}

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            runner, bound = loop.run_until_complete(_start_site(make_app(config), host, port))
            state["runner"], state["port"] = runner, bound
        except BaseException as exc:  # noqa: BLE001 - reported to the caller below
            state["error"] = exc
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.run_until_complete(state["runner"].cleanup())
        loop.close()

    thread = threading.Thread(target=run, name="reference-router", daemon=True)
    thread.start()
    if not ready.wait(startup_timeout):
        raise RuntimeError(f"reference router did not start within {startup_timeout:g}s")
    if "error" in state:
        raise RuntimeError(f"reference router failed to start: {state['error']}") from state["error"]
    try:
        yield f"http://{host}:{state['port']}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)


class RouterProcess:
    def __init__(self, proc: subprocess.Popen, url: str) -> None:
        self.proc = proc
        self.url = url

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def __enter__(self) -> RouterProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def spawn_router(*args: str, startup_timeout: float = 20.0) -> RouterProcess:
    """Run `conformance router ARGS --port 0` (unless a port is given) and wait until it listens."""
    argv = [sys.executable, "-m", "conformance.cli", "router", *args]
    if "--port" not in args:
        argv += ["--port", "0"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + startup_timeout
    seen: list[str] = []
    result: dict = {}

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            seen.append(line.rstrip())
            if LISTENING in line and "url" not in result:
                result["url"] = line.split(LISTENING, 1)[1].strip()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while time.monotonic() < deadline and "url" not in result and proc.poll() is None:
        time.sleep(0.05)
    if "url" not in result:
        proc.kill()
        proc.wait(timeout=5)
        raise RuntimeError(
            f"`{' '.join(argv[2:])}` did not print '{LISTENING}URL' within {startup_timeout:g}s; output: {seen[-20:]}"
        )
    return RouterProcess(proc, result["url"])
