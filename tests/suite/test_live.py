"""The live tests of the suite (conformance/suite/test_live.py): which releases a run selects, and
the failure naming the env variable when a selected release has no binary (the lookup order itself:
tests/clients/test_launch.py). Real files and processes: a scratch npm-style prefix whose
`node_modules/.bin/claude` is a script printing its version (no CLI needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.clients.launch import release_env
from conformance.plugin import SUITE_DIR

LIVE_SUITE = str(SUITE_DIR / "test_live.py")


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
