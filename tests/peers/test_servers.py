"""ManagedServer: a dead process is a clear, immediate error with its log tail; a server that
never gets healthy is killed and reported; a healthy one is stopped with its whole group."""

from __future__ import annotations

import sys
import time

import pytest

from conformance.peers.servers import ManagedServer, ServerStartError, free_port


def test_dead_process_fails_at_once_with_exit_code_and_log_tail(tmp_path):
    port = free_port()
    server = ManagedServer(
        name="broken server",
        argv=[sys.executable, "-c", "import sys; print('loading model...'); print('FATAL: no such model file', file=sys.stderr); sys.exit(3)"],
        health_url=f"http://127.0.0.1:{port}/health", log_path=tmp_path / "broken.log", ready_timeout=60)
    t0 = time.monotonic()
    with pytest.raises(ServerStartError) as err:
        with server:
            pass
    assert time.monotonic() - t0 < 20, "a dead process must not wait for the health timeout"
    text = str(err.value)
    assert "broken server exited with code 3" in text
    assert "FATAL: no such model file" in text and str(tmp_path / "broken.log") in text


def test_never_healthy_is_killed_and_reported(tmp_path):
    port = free_port()
    server = ManagedServer(
        name="silent server", argv=[sys.executable, "-c", "import time; print('warming up', flush=True); time.sleep(60)"],
        health_url=f"http://127.0.0.1:{port}/health", log_path=tmp_path / "silent.log", ready_timeout=2)
    with pytest.raises(ServerStartError) as err:
        with server:
            pass
    assert "did not become healthy within 2 s" in str(err.value)
    assert "warming up" in str(err.value)
    assert server.proc is not None and server.proc.poll() is not None, "the hung server was not stopped"


def test_healthy_server_is_ready_then_stopped(tmp_path):
    port = free_port()
    server = ManagedServer(
        name="http.server", argv=[sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        health_url=f"http://127.0.0.1:{port}/", log_path=tmp_path / "http.log", ready_timeout=30, cwd=tmp_path)
    with server:
        assert server.ready_after is not None and server.alive()
        assert server.base_url == f"http://127.0.0.1:{port}"
    assert not server.alive()
