"""A test whose code raises (the judge, a sandbox, the suite) is still a recorded failure: a results
record of suite.judge.no_exception with its failure folder, a row in summary.md and report.html,
and its junit entry."""

from __future__ import annotations

import json
import socket

from conformance.core.results import read_results

QUIET = ("-o", "asyncio_default_fixture_loop_scope=function")  # pytester dirs have no ini file

CRASHING = '''
import pytest

def _nest(n):
    return _nest(n + 1)

def test_judge_crashes(conformance_ctx):
    conformance_ctx.outcome("suite.target.reachable", "passed")
    _nest(0)  # a RecursionError, as deeply nested JSON once raised inside the judge

def test_fine(conformance_ctx):
    conformance_ctx.outcome("suite.target.reachable", "passed")
    conformance_ctx.finish()
'''


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_an_escaped_exception_is_a_recorded_failure_in_every_report(pytester):
    pytester.makepyfile(test_crash=CRASHING)
    run = pytester.runpytest_inprocess("test_crash.py", f"--target=http://127.0.0.1:{_closed_port()}",
                                       "--junitxml=junit.xml",
                                       "-p", "no:cacheprovider", *QUIET)
    run.assert_outcomes(passed=1, failed=1)
    reports = pytester.path / "reports"
    records = read_results(reports / "results")
    crashed = [r for r in records if r.check_id == "suite.judge.no_exception"]
    assert len(crashed) == 1, records
    record = crashed[0]
    assert record.test_id == "test_crash.py::test_judge_crashes"
    assert record.outcome == "error" and "RecursionError" in record.message
    # what the test decided before it crashed is kept beside the crash
    assert {(r.test_id, r.check_id) for r in records} >= {
        ("test_crash.py::test_judge_crashes", "suite.target.reachable"),
        ("test_crash.py::test_fine", "suite.target.reachable")}
    folder = pytester.path / record.artifacts
    assert folder == reports / "failures" / "test_crash.py" / "test_judge_crashes"
    failure = (folder / "failure.txt").read_text(encoding="utf-8")
    assert "suite.judge.no_exception" in failure and "RecursionError" in failure and "_nest" in failure
    assert json.loads((folder / "violations.json").read_text())[0]["check_id"] == "suite.judge.no_exception"
    assert "test_judge_crashes" in (reports / "summary.md").read_text(encoding="utf-8")
    assert "test_judge_crashes" in (reports / "report.html").read_text(encoding="utf-8")
    assert "test_judge_crashes" in (pytester.path / "junit.xml").read_text(encoding="utf-8")
    run.stdout.fnmatch_lines(["*failure folder: *test_judge_crashes*"])
