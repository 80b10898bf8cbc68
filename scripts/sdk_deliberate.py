"""pytest plugin for the SDKs' own API tests (loaded by sdk_api_tests.py with `-p sdk_deliberate`).

Rule: a test that fails with a documented, deliberate difference (sdk_api_tests.DELIBERATE,
matched on the test's module, name and failure text) is reported as an expected failure with the
reason, so the run's output and JUnit report say `xfailed` for it and FAILED only for a real
failure. Nothing else changes: a deliberate test that starts passing is reported as passed, and
the summary table counts it so (a difference that went away shows up as a changed count).
"""

from __future__ import annotations

import pytest
from sdk_api_tests import deliberate_reason


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    why = deliberate_reason(item.nodeid.replace("/", ".").replace("::", "."), item.name, str(report.longrepr))
    if why is not None:
        report.outcome = "skipped"
        report.wasxfail = f"deliberate difference: {why}"
