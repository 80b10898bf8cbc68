"""Start, health-check and tear down one peer server process (router or engine) on loopback.

Rules:
- Every server binds 127.0.0.1 on a port picked free by `free_port()`.
- Output goes to a log file; waiting for health watches the process at the same time, so a server
  that dies while starting is a clear, immediate `ServerStartError` carrying the exit code and the
  tail of its log, never a long wait for a timeout.
- A server that is alive but never answers its health URL within `ready_timeout` is killed and
  reported the same way.
- Each server runs in its own session (process group); `stop()` sends SIGTERM to the group, then
  SIGKILL after a grace period, so worker processes (vLLM's engine core, node children) go too.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx


class ServerStartError(RuntimeError):
    """A peer server did not become healthy: what, why (exit code or timeout) and its log tail."""


def free_port() -> int:
    """A port that is free on 127.0.0.1 now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class ManagedServer:
    """One server process. Use as a context manager or call start()/stop()."""

    name: str
    argv: Sequence[str]
    health_url: str
    log_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    ready_timeout: float = 120.0
    healthy_statuses: tuple[int, ...] = (200,)
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    ready_after: float | None = None

    def start(self) -> ManagedServer:
        self.log_path = Path(self.log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env}
        log = self.log_path.open("wb")
        self.started_at = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                list(self.argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, cwd=self.cwd, start_new_session=True,
            )
        except OSError as exc:
            raise ServerStartError(f"{self.name}: cannot run {self.argv[0]}: {exc}") from exc
        finally:
            log.close()
        return self

    def wait_ready(self) -> float:
        """Wait for the health URL while watching the process; returns seconds to ready."""
        assert self.proc is not None, "start() first"
        deadline = self.started_at + self.ready_timeout
        last = "no answer yet"
        with httpx.Client(timeout=httpx.Timeout(3.0), trust_env=False) as client:
            while True:
                rc = self.proc.poll()
                if rc is not None:
                    raise ServerStartError(
                        f"{self.name} exited with code {rc} before it became healthy "
                        f"(health URL {self.health_url}). Last lines of {self.log_path}:\n"
                        f"{log_tail(self.log_path)}"
                    )
                try:
                    r = client.get(self.health_url)
                    if r.status_code in self.healthy_statuses:
                        self.ready_after = time.monotonic() - self.started_at
                        return self.ready_after
                    last = f"HTTP {r.status_code}"
                except httpx.HTTPError as exc:
                    last = type(exc).__name__
                if time.monotonic() > deadline:
                    self.stop()
                    raise ServerStartError(
                        f"{self.name} did not become healthy within {self.ready_timeout:.0f} s "
                        f"({self.health_url}: {last}); it was stopped. Last lines of {self.log_path}:\n"
                        f"{log_tail(self.log_path)}"
                    )
                time.sleep(0.5)

    @property
    def base_url(self) -> str:
        """scheme://host:port of the server (its health URL without the path)."""
        u = urlsplit(self.health_url)
        return f"{u.scheme}://{u.netloc}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = 15.0) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> ManagedServer:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
