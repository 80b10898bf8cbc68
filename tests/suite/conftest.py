"""Fixtures of the suite's own tests: running the suite in-process (tests/plugin/conftest.py's
`run_suite`) and a launcher environment with no client CLI in it (tests/clients/fake_cli.py)."""

from __future__ import annotations

import pytest

from tests.clients.fake_cli import clean_env  # noqa: F401 - a fixture
from tests.plugin.conftest import run_suite


@pytest.fixture
def suite():
    """`suite(pytester, url, *args, captures=...)` runs the conformance suite; returns a SuiteRun."""
    return run_suite
