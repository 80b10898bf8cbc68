"""Running the bundled suite in the self-tests: an in-thread reference engine (`engine_url`), and
the suite run in-process (pytester) against it, its verdicts read back from the results record
(`suite`). A conftest that wants the fixtures imports them from here (tests/suite, tests/plugin)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpcore  # noqa: F401,E402
import httpx  # noqa: F401,E402
import pytest

# Imported here, in the outer process, so pytester's in-process runs (which drop the modules an
# inner run imported) never leave two generations of httpx / httpcore classes side by side: the
# transport would then fail to recognise a ConnectError raised by the newer copy.
import conformance.checks.exchange  # noqa: F401,E402
import conformance.engine.launch  # noqa: F401,E402
import conformance.net.transport  # noqa: F401,E402
import conformance.suite.check_context  # noqa: F401,E402
import conformance.suite.session  # noqa: F401,E402
import conformance.wire.anthropic  # noqa: F401,E402
import conformance.wire.chat  # noqa: F401,E402
from conformance.core.results import Result, read_results

# pytester is enabled in tests/conftest.py (pytest_plugins only works in the top-level conftest)

DATA = Path(__file__).resolve().parent / "suite" / "data"
# Trimmed copies (four tools, short system text) of a Claude Code tool loop (Anthropic stream,
# tool_use then a text answer; count_tokens) and an opencode tool call (OpenAI chunks): between
# them they exercise every check, and keep the fault matrix fast. Quirks kept: adaptive thinking
# with effort, context_management, a role "system" entry inside messages.
SMALL = Path(__file__).resolve().parent / "suite" / "small"


@dataclass
class SuiteRun:
    outcome: object  # pytester.RunResult
    results: list[Result]
    report_dir: Path

    @property
    def failed_checks(self) -> dict[str, set[str]]:
        """check id -> names of the tests that recorded it failed."""
        out: dict[str, set[str]] = {}
        for r in self.results:
            if r.outcome in ("failed", "error"):
                out.setdefault(r.check_id, set()).add(r.test_id.split("::", 1)[-1].split("[", 1)[0])
        return out

    def outcomes(self) -> dict[str, int]:
        return self.outcome.parseoutcomes()


def run_suite(pytester: pytest.Pytester, url: str, *args: str, captures: Path | str | None = None,
              subprocess: bool = False) -> SuiteRun:
    argv = [f"--target={url}", f"--conformance-captures={captures or DATA}", "-p", "no:cacheprovider",
            "-o", "asyncio_default_fixture_loop_scope=function", *args]
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest_inprocess
    outcome = run(*argv)
    report_dir = pytester.path / "reports"
    for a in args:
        if a.startswith("--conformance-report-dir="):
            report_dir = pytester.path / a.split("=", 1)[1]
    results_dir = report_dir / "results"
    results = read_results(results_dir) if results_dir.is_dir() else []
    return SuiteRun(outcome, results, report_dir)


@pytest.fixture(scope="module")
def engine_url():
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread() as url:
        yield url


@pytest.fixture
def suite():
    """`suite(pytester, url, *args, captures=...)` runs the conformance suite; returns a SuiteRun."""
    return run_suite
