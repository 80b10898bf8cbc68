"""The plugin as pytest sees it: inert without a target, option names that do not clash, runs
beside pytest-timeout / pytest-xdist / pytest-replay / pytest-rerunfailures (and under -n 2),
the configuration order, and fail-fast on a dead target."""

from __future__ import annotations

import socket
import time
from pathlib import Path

SMALL = Path(__file__).resolve().parents[1] / "suite" / "small"
QUIET = ("-o", "asyncio_default_fixture_loop_scope=function")  # pytester dirs have no ini file


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_inert_without_a_target(pytester):
    pytester.makepyfile(test_mine="def test_ok():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *QUIET)
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "reports").exists()
    assert "run token" not in result.stdout.str()  # no conformance section in the summary


def test_option_names_are_prefixed(pytester):
    config = pytester.parseconfig()
    group = next(g for g in config._parser._groups if g.name == "conformance")
    names = [n for opt in group.options for n in opt.names()]
    assert "--target" in names
    others = [n for n in names if n != "--target"]
    assert others and all(n.startswith("--conformance-") for n in others), others


def test_help_beside_common_plugins(pytester):
    result = pytester.runpytest_subprocess("--help")
    out = result.stdout.str()
    assert result.ret == 0
    for option in ("--target", "--conformance-api", "--conformance-baseline", "--timeout", "--replay-record-dir",
                   "--reruns", "--numprocesses"):
        assert option in out, option


def test_run_under_xdist_with_the_other_plugins(pytester, engine_url, suite):
    from conformance.plugin import SUITE_DIR

    own = [str(SUITE_DIR / "test_replay.py"), str(SUITE_DIR / "test_protocol.py")]
    run = suite(pytester, engine_url, *own, "-n", "2", "--timeout=120", "--reruns=0",
                "--replay-record-dir=replay", "--junitxml=junit.xml", captures=SMALL, subprocess=True)
    assert run.outcome.ret == 0, run.outcome.stdout.str()[-3000:]
    files = sorted(p.name for p in (run.report_dir / "results").glob("results-*.jsonl"))
    assert files == ["results-gw0.jsonl", "results-gw1.jsonl"], files
    assert (run.report_dir / "summary.md").is_file()
    assert any((pytester.path / "replay").iterdir())
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert 'name="target"' in junit and 'name="check_id"' in junit


def test_configuration_order(pytester):
    pytester.makeconftest('''
import pytest

@pytest.fixture
def conformance_overrides():
    return {"model": "from-fixture", "deadline_total": 11, "client": "opencode"}
''')
    pytester.makepyfile(test_order='''
import pytest

def test_cli_over_fixture_over_default(conformance_settings):
    assert conformance_settings.model == "from-cli"            # command line beats the fixture
    assert conformance_settings.deadline_total == 11.0         # fixture beats the default
    assert conformance_settings.client == "opencode"
    assert conformance_settings.deadline_first_content == 60.0  # default

@pytest.mark.conformance(model="from-marker", deadline_total=3)
def test_marker_over_everything(conformance_settings):
    assert conformance_settings.model == "from-marker"
    assert conformance_settings.deadline_total == 3.0
''')
    result = pytester.runpytest_inprocess(f"--target=http://127.0.0.1:{_closed_port()}", "--conformance-model=from-cli",
                                          "--conformance-deadline-connect=1", "test_order.py", "-p", "no:cacheprovider",
                                          *QUIET)
    result.assert_outcomes(passed=2)


def test_bad_option_value_is_a_usage_error(pytester):
    result = pytester.runpytest_inprocess("--target=ftp://nowhere", "-p", "no:cacheprovider")
    assert result.ret == 4
    assert "is not an http(s) URL" in result.stderr.str() + result.stdout.str()


def test_unknown_client_is_a_usage_error_listing_the_known_clients(pytester):
    """The client names are the profiles', checked where the run is resolved (no option choices
    repeat them in the plugin)."""
    result = pytester.runpytest_inprocess(f"--target=http://127.0.0.1:{_closed_port()}",
                                          "--conformance-client=qwen", "-p", "no:cacheprovider", *QUIET)
    assert result.ret == 4
    out = result.stderr.str() + result.stdout.str()
    assert "client 'qwen' (--conformance-client) is not a known client" in out, out
    assert "known clients: all, claude-code, codex, opencode" in out, out


def test_a_client_named_on_the_command_line_is_kept(pytester):
    pytester.makepyfile(test_client="def test_client(conformance_settings):\n"
                                    "    assert conformance_settings.client == 'codex'\n")
    result = pytester.runpytest_inprocess(f"--target=http://127.0.0.1:{_closed_port()}", "--conformance-client",
                                          "codex", "--conformance-deadline-connect=1", "test_client.py",
                                          "-p", "no:cacheprovider", *QUIET)
    result.assert_outcomes(passed=1)


def test_dead_target_fails_fast_naming_the_first_failure(pytester, suite):
    start = time.monotonic()
    run = suite(pytester, f"http://127.0.0.1:{_closed_port()}", captures=SMALL)
    elapsed = time.monotonic() - start
    # down before the first test: one line naming the cause, exit 2, no test run (a target that
    # goes down mid-run still fails the remaining tests fast: SuiteSession.mark_down)
    assert run.outcome.ret == 2
    text = run.outcome.stdout.str() + run.outcome.stderr.str()
    assert "the target is down" in text and "--target" in text, text
    assert not run.results
    assert elapsed < 30, f"{elapsed:.1f}s for a dead target"


def test_suite_collected_without_target_fails_clearly(pytester):
    from conformance.plugin import SUITE_DIR

    result = pytester.runpytest_inprocess(str(SUITE_DIR / "test_protocol.py"), "-p", "no:cacheprovider",
                                          f"--conformance-captures={SMALL}")
    assert result.ret == 1
    assert "needs a target" in result.stdout.str()


def test_salt_puts_the_run_token_first_and_stays_green(pytester, suite):
    import httpx

    from conformance.engine.launch import serve_engine_in_thread
    from conformance.plugin import SUITE_DIR

    with serve_engine_in_thread() as url:
        run = suite(pytester, url, str(SUITE_DIR / "test_replay.py") + "::test_replay", "--conformance-salt",
                    captures=SMALL)
        received = httpx.get(f"{url}/_conformance/received", timeout=10).json()["requests"]
    assert run.outcome.ret == 0, run.outcome.stdout.str()[-2000:]
    token = next(line for line in run.outcome.stdout.lines if "run token" in line).split("run token ")[1].split()[0]
    bodies = [e["body"] for e in received if e["path"].startswith(("/v1/messages", "/v1/chat/completions"))
              and isinstance(e.get("body"), dict) and isinstance(e["body"].get("messages"), list)]
    assert bodies
    for body in bodies:
        if "system" in body:  # Anthropic: the first system block
            first = body["system"][0]["text"] if isinstance(body["system"], list) else body["system"]
        else:  # OpenAI: the first system message
            first = next(m["content"] for m in body["messages"] if m.get("role") == "system")
        assert first.startswith(f"[conformance-run {token}] "), first[:80]


def test_an_unrelated_marker_expression_does_not_switch_opt_in_areas_on():
    # a project's own addopts (`-m 'not slow'`) once disabled the opt-in deselection: load,
    # context and translation tests then ran (or skipped) in a plain `conformance run`
    import types

    from conformance.suite.hooks import deselect_opt_in

    class Item:
        def __init__(self, marker, path):
            self.marker, self.path = marker, path

        def get_closest_marker(self, name):
            return name if name == self.marker else None

    suite = Path(__file__).resolve().parents[2] / "conformance" / "suite"
    for expr, kept in (("not slow and not live", {"loop"}), ("", {"loop"}), ("load or loop", {"load", "loop"})):
        items = [Item(m, suite / "test_x.py") for m in ("loop", "load", "context", "translation")]
        deselected: list = []
        config = types.SimpleNamespace(getoption=lambda name, default=None, e=expr: e,
                                       hook=types.SimpleNamespace(pytest_deselected=lambda items, d=deselected: d.extend(items)))
        deselect_opt_in(config, items, suite, ("live", "load", "context", "translation"))
        assert {i.marker for i in items} == kept, expr
        assert {i.marker for i in deselected} == {"loop", "load", "context", "translation"} - kept, expr
