"""Which binary a live test runs for a release (conformance/loop/live.py find_release_binary,
conformance/suite/test_live.py): the lookup order, and the message naming the env variable when a
selected release has none. Real files and processes: a scratch npm-style prefix whose
`node_modules/.bin/claude` is a script printing its version (no CLI needed)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conformance.loop.live import ClientNotFound, find_release_binary, release_env
from conformance.plugin import SUITE_DIR

LIVE_SUITE = str(SUITE_DIR / "test_live.py")
_ENV = ("CONFORMANCE_CLIENTS_DIR", "CONFORMANCE_CLAUDE_BIN", "CONFORMANCE_CLIENTS_DIR_2_1_197",
        "CONFORMANCE_CLIENTS_DIR_2_1_332")


def _prefix(root: Path, version: str) -> Path:
    """An npm prefix holding a `claude` that reports `version` the way Claude Code does."""
    exe = root / "node_modules" / ".bin" / "claude"
    exe.parent.mkdir(parents=True)
    exe.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return root


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `claude` on it
    return monkeypatch


def test_release_env_names_the_version_with_underscores():
    assert release_env("2.1.197") == "CONFORMANCE_CLIENTS_DIR_2_1_197"
    assert release_env("0.171.0-alpha.1") == "CONFORMANCE_CLIENTS_DIR_0_171_0_alpha_1"


def test_each_release_from_its_own_env_variable(clean_env, tmp_path):
    old, new = _prefix(tmp_path / "old", "2.1.197"), _prefix(tmp_path / "new", "2.1.332")
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR_2_1_197", str(old))
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR_2_1_332", str(new))
    assert find_release_binary("claude-code", "2.1.197") == old / "node_modules/.bin/claude"
    assert find_release_binary("claude-code", "2.1.332") == new / "node_modules/.bin/claude"


def test_fallback_to_the_shared_dir_and_its_release_prefixes(clean_env, tmp_path):
    shared = _prefix(tmp_path / "clients", "2.1.332")  # the current pins at the top, as .ci/run does
    _prefix(shared / "claude-code@2.1.197", "2.1.197")
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR", str(shared))
    assert find_release_binary("claude-code", "2.1.197") == shared / "claude-code@2.1.197/node_modules/.bin/claude"
    assert find_release_binary("claude-code", "2.1.332") == shared / "node_modules/.bin/claude"


def test_the_default_binary_only_when_it_is_that_release(clean_env, tmp_path):
    exe = _prefix(tmp_path / "one", "2.1.332") / "node_modules/.bin/claude"
    clean_env.setenv("CONFORMANCE_CLAUDE_BIN", str(exe))
    assert find_release_binary("claude-code", "2.1.332") == exe
    with pytest.raises(ClientNotFound) as e:
        find_release_binary("claude-code", "2.1.197")
    assert "CONFORMANCE_CLIENTS_DIR_2_1_197" in str(e.value) and f"{exe} is 2.1.332" in str(e.value)
    assert "npm install --prefix DIR @anthropic-ai/claude-code@2.1.197" in str(e.value)


def test_a_prefix_of_the_wrong_release_or_without_the_cli_is_refused(clean_env, tmp_path):
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR_2_1_197", str(_prefix(tmp_path / "p", "2.1.332")))
    with pytest.raises(ClientNotFound, match="is release 2.1.332, not 2.1.197"):
        find_release_binary("claude-code", "2.1.197")
    clean_env.setenv("CONFORMANCE_CLIENTS_DIR_2_1_197", str(tmp_path / "empty"))
    with pytest.raises(ClientNotFound, match=r"not an executable file \(from CONFORMANCE_CLIENTS_DIR_2_1_197="):
        find_release_binary("claude-code", "2.1.197")


def test_a_selected_release_without_its_binary_fails_naming_the_env_variable(pytester, suite, clean_env):
    """-m live with a release asked for: the test fails (it does not skip), and says what to set."""
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread() as url:
        run = suite(pytester, url, LIVE_SUITE, "-m", "live", "--conformance-client", "claude-code",
                    "--conformance-client-version", "2.1.197", "-k", "claude-code and write-file",
                    captures=Path(SUITE_DIR).parents[1] / "captured")
    out = run.outcome.stdout.str()
    assert run.outcome.parseoutcomes().get("failed") == 1, out[-2000:]
    assert "--conformance-client-version selects claude-code 2.1.197" in out
    assert "CONFORMANCE_CLIENTS_DIR_2_1_197" in out


def test_all_releases_without_their_binaries_fail_each_naming_its_variable(pytester, suite, clean_env):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread() as url:
        run = suite(pytester, url, LIVE_SUITE, "-m", "live", "--conformance-client", "claude-code",
                    "--conformance-client-version", "all", "-k", "claude-code-anthropic and write-file",
                    captures=Path(SUITE_DIR).parents[1] / "captured")
    out = run.outcome.stdout.str()
    assert run.outcome.parseoutcomes().get("failed") == 2, out[-2000:]
    assert "CONFORMANCE_CLIENTS_DIR_2_1_197" in out and "CONFORMANCE_CLIENTS_DIR_2_1_332" in out


def test_all_releases_make_one_test_per_release(pytester, clean_env):
    """Collection only: `all` over the bundled corpus gives Claude Code its two releases."""
    captured = Path(SUITE_DIR).parents[1] / "captured"
    result = pytester.runpytest_inprocess(LIVE_SUITE, "--collect-only", "-q", "-m", "live", "--target=http://127.0.0.1:9",
                                          f"--conformance-captures={captured}", "--conformance-client-version=all",
                                          "-p", "no:cacheprovider")
    ids = [line for line in result.stdout.lines if "::test_live_client[" in line]
    assert any("claude-code-anthropic-2.1.197" in i for i in ids) and any("claude-code-anthropic-2.1.332" in i
                                                                           for i in ids), ids
    assert any(i.endswith("[codex-responses-write-file]") for i in ids), ids  # one release: the id as before
    assert os.environ.get("CONFORMANCE_CLIENTS_DIR") is None


@pytest.mark.live
def test_the_suite_runs_each_selected_release_with_its_own_binary(pytester, suite):
    """The real Claude Code releases the corpus keeps (2.1.332 current, 2.1.197 previous), each in
    its own npm prefix named by CONFORMANCE_CLIENTS_DIR_<version> (as .ci/run exports them):
    `--conformance-client-version all` runs the live test once per release, each with its binary."""
    from conformance.engine.launch import serve_engine_in_thread

    for version in ("2.1.332", "2.1.197"):
        if not os.environ.get(release_env(version)) and not os.environ.get("CONFORMANCE_CLIENTS_DIR"):
            pytest.fail(f"Claude Code {version} is not installed: `npm install --prefix DIR "
                        f"@anthropic-ai/claude-code@{version}` and set {release_env(version)}=DIR", pytrace=False)
    with serve_engine_in_thread() as url:
        run = suite(pytester, url, LIVE_SUITE, "-m", "live", "--conformance-client", "claude-code",
                    "--conformance-client-version", "all", "-k", "claude-code-anthropic and write-file",
                    captures=Path(SUITE_DIR).parents[1] / "captured")
    assert run.outcome.parseoutcomes().get("passed") == 2, run.outcome.stdout.str()[-3000:]
    ran = {r.details.get("client") for r in run.results if r.check_id == "loop.completed"}
    assert ran == {"claude-code 2.1.332", "claude-code 2.1.197"}, ran
