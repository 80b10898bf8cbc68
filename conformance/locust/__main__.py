"""`python -m conformance.locust merge REPORT_DIR`: every worker's results record into the usual reports.

Prints the count of clean captured exchanges and of agent-loop runs, the failing check ids with
their counts; folds the agent-loop runs' soak session records into one `load.soak_stable` result
(the soak's own record, `conformance.probes.soak.merged_report`, written as the merge's own
results file, replaced on every merge); writes REPORT_DIR/summary.md
(conformance.report.summary) and exits 1 when any exchange failed, 2 on bad input.
`python -m conformance.locust locustfile` prints the locustfile's path (for `locust -f`).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from conformance.core.results import Result, ResultsWriter, read_results
from conformance.locust.judge import PASS_CHECK, SOAK_SESSION_TEST
from conformance.probes.soak import merged_report, session_of_record
from conformance.report.summary import write_summary

MERGE_WORKER = "merged-soak"


def _soak_verdict(results: list[Result]) -> Result | None:
    """The agent-loop runs' session records folded into the soak's verdict (None without any)."""
    sessions = [session_of_record(r.details["soak_session"]) for r in results
                if r.test_id == SOAK_SESSION_TEST and isinstance(r.details.get("soak_session"), dict)]
    if not sessions:
        return None
    users = len({s.session for s in sessions})
    outcome = merged_report(sessions, sessions_in_flight=users).outcome()
    return Result(SOAK_SESSION_TEST, outcome.check_id, outcome.outcome, client="locust", message=outcome.message,
                  violations=[v.to_dict() for v in outcome.violations], details=outcome.details)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["locustfile"]:
        print(Path(__file__).with_name("locustfile.py"))
        return 0
    if len(args) != 2 or args[0] != "merge":
        print("usage: python -m conformance.locust merge REPORT_DIR | locustfile", file=sys.stderr)
        return 2
    report_dir = Path(args[1])
    results_dir = report_dir / "results"
    merged_file = results_dir / f"results-{MERGE_WORKER}.jsonl"
    merged_file.unlink(missing_ok=True)  # one soak verdict per merge
    files = sorted(results_dir.glob("results-*.jsonl")) if results_dir.is_dir() else []
    if not files:
        print(f"no results-*.jsonl under {results_dir}: run locust with --conformance-report-dir {report_dir}",
              file=sys.stderr)
        return 2
    results = read_results(results_dir)
    soak = _soak_verdict(results)
    if soak is not None:
        ResultsWriter(results_dir, worker=MERGE_WORKER).write(soak)
        results.append(soak)
        print(f"{soak.check_id}: {soak.outcome.upper()}: {soak.message}")
    clean = sum(1 for r in results if r.check_id == PASS_CHECK and r.outcome == "passed")
    loops = [r for r in results if r.check_id == "loop.completed"]  # one per agent-loop run
    failed = Counter(r.check_id for r in results if r.outcome == "failed")
    summary = write_summary(report_dir, {"source": f"locust, {len(files)} worker record(s)"})
    print(f"merged {len(files)} worker record(s): {clean} clean exchange(s), {len(loops)} agent-loop run(s) "
          f"({sum(r.outcome == 'failed' for r in loops)} failed), {sum(failed.values())} failing check(s) "
          f"in {len({r.case for r in results})} case(s); {summary}")
    for cid, n in failed.most_common():
        print(f"  {cid}: {n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
