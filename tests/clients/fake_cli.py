"""A stand-in for an installed client CLI: an npm-style prefix whose `node_modules/.bin/claude`
is a script printing its version the way Claude Code does, and the fixture that clears every
variable the launcher reads (so only what a test sets is seen)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

LAUNCH_ENV = ("CONFORMANCE_CLIENTS_DIR", "CONFORMANCE_CLAUDE_BIN", "CONFORMANCE_CLIENTS_DIR_2_1_197",
              "CONFORMANCE_CLIENTS_DIR_2_1_332")


def fake_prefix(root: Path, version: str) -> Path:
    """An npm prefix holding a `claude` that reports `version` the way Claude Code does."""
    exe = root / "node_modules" / ".bin" / "claude"
    exe.parent.mkdir(parents=True)
    exe.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return root


@pytest.fixture
def clean_env(monkeypatch):
    for name in LAUNCH_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `claude` on it
    return monkeypatch
