"""Versions are inputs: a version set in the environment wins over .ci/peers/versions.env, in the
shell scripts and in the Python launcher alike; each router version has its own prefix, and a
cache stamped before versioned prefixes existed is still found."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conformance.peers import components

LIB = Path(__file__).resolve().parents[2] / ".ci" / "peers" / "lib.sh"


def _shell(script: str, env: dict) -> str:
    out = subprocess.run(["bash", "-c", f"source {LIB}; {script}"], env=env, capture_output=True, text=True,
                         timeout=30, check=True)
    return out.stdout.strip()


def test_the_environment_wins_over_versions_env(tmp_path, monkeypatch):
    file = components.versions_file()
    base = {"PATH": "/usr/bin:/bin", "PEERS_DIR": str(tmp_path)}
    assert _shell("echo $CCR_NEXT_VERSION $LITELLM_VERSION", base) == f"{file['CCR_NEXT_VERSION']} {file['LITELLM_VERSION']}"
    assert _shell("echo $CCR_NEXT_VERSION", {**base, "CCR_NEXT_VERSION": "9.9.9"}) == "9.9.9"
    monkeypatch.setenv("CCR_NEXT_VERSION", "9.9.9")
    assert components.wanted_version("ccr", "next") == "9.9.9"
    monkeypatch.delenv("CCR_NEXT_VERSION")
    assert components.wanted_version("ccr", "next") == file["CCR_NEXT_VERSION"]


def test_each_version_has_its_prefix_and_a_stamped_old_cache_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("PEERS_DIR", str(tmp_path))
    (tmp_path / "litellm").mkdir()
    (tmp_path / "litellm" / ".installed-1.108.7").write_text("1.108.7\n")
    env = {"PATH": "/usr/bin:/bin", "PEERS_DIR": str(tmp_path)}
    for version, where in (("1.108.7", tmp_path / "litellm"), ("1.110.2", tmp_path / "litellm-1.110.2")):
        assert components.install_prefix("litellm", version) == where
        assert _shell(f"prefix_for litellm {version}", env) == str(where)


def test_claude_code_router_cli_moved_in_3x(tmp_path, monkeypatch):
    monkeypatch.setenv("PEERS_DIR", str(tmp_path))
    assert components.ccr_cli("2.0.0").as_posix().endswith("ccr-2.0.0/node_modules/@musistudio/claude-code-router/dist/cli.js")
    assert components.ccr_cli("3.1.1").as_posix().endswith("ccr-3.1.1/node_modules/@musistudio/claude-code-router/dist/main/cli.js")
    server = components.claude_code_router("http://127.0.0.1:1", "m", version="3.1.1", log_name="t")
    assert server.argv[2:4] == ["serve", "--no-open"]
    config = next((tmp_path / "run").glob("t-*-home")) / ".claude-code-router" / "config.json"
    assert '"APIKEY"' in config.read_text()
