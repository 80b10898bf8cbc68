"""`--conformance-report-dir` through pytest: a folder that is not the suite's is refused in one
line before anything is removed, even when no test is selected; a new one is made and marked."""

from __future__ import annotations

from conformance.report.artifacts import MARKER

QUIET = ("-o", "asyncio_default_fixture_loop_scope=function")  # pytester dirs have no ini file
PASSING = "def test_fine(conformance_ctx):\n    conformance_ctx.outcome('suite.target.reachable', 'passed')\n"


def _run(pytester, *args):
    return pytester.runpytest_inprocess("test_mine.py", "--target=http://127.0.0.1:1", "-p", "no:cacheprovider",
                                         *QUIET, *args)


def test_a_users_folder_is_refused_and_kept(pytester):
    pytester.makepyfile(test_mine=PASSING)
    mine = pytester.path / "mine"
    (mine / "results").mkdir(parents=True)
    for name in ("summary.md", "report.html", "results/results-1.jsonl"):
        (mine / name).write_text("the user's\n")
    run = _run(pytester, "--conformance-report-dir=mine", "-k", "nothing_matches")
    assert run.ret != 0
    run.stderr.fnmatch_lines([f"ERROR: conformance: report folder mine holds files the suite did not write*{MARKER}*"])
    assert all((mine / n).read_text() == "the user's\n" for n in ("summary.md", "report.html", "results/results-1.jsonl"))


def test_a_folder_under_a_file_is_one_line(pytester):
    pytester.makepyfile(test_mine=PASSING)
    (pytester.path / "file").write_text("x")
    run = _run(pytester, "--conformance-report-dir=file/reports")
    assert run.ret != 0 and "Traceback" not in run.stderr.str()
    run.stderr.fnmatch_lines(["ERROR: conformance: report folder file/reports is under file, which is a file*"])


def test_a_new_folder_is_marked_and_reused(pytester):
    pytester.makepyfile(test_mine=PASSING)
    for _ in range(2):
        run = _run(pytester, "--conformance-report-dir=out/reports")
        run.assert_outcomes(passed=1)
    reports = pytester.path / "out" / "reports"
    assert (reports / MARKER).is_file() and (reports / "summary.md").is_file()
