"""Benchmark: the time to render report.html for a 1,000-test run, against summary.md of the same records.

Measured in one run over one synthetic results record (1,000 tests x 8 checks, 2% failing with
violations, plus load / needle / interference / context / phase figures), read from disk as the
controller reads it:
  summary   conformance.report.summary.render (the Markdown matrix), the baseline;
  html      conformance.report.html.render (matrix, failures, inline SVG plots).
Prints both, and the last line `html_over_summary=<ratio>`. Usage:
    python benchmarks/bench_report.py [--tests N] [--repeat K]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

CHECKS = ("suite.request.accepted", "suite.stream.wellformed", "anthropic.stream.stop_sequence_present",
          "tools.call.offered", "tools.arguments.schema", "identity.model_matches", "suite.stream.incremental",
          "loop.completed")


def records(n_tests: int):
    from conformance.core.results import Result

    out = []
    for t in range(n_tests):
        client, version = ("claude-code", "2.1.197") if t % 2 else ("opencode", "1.18.33")
        for c, check in enumerate(CHECKS):
            failing = (t * 7 + c) % 50 == 0
            out.append(Result(
                test_id=f"test_replay.py::test_replay[{client}/{version}/case-{t}]", check_id=check,
                outcome="failed" if failing else ("unverifiable" if c == 6 else "passed"), api="anthropic",
                client=client, client_version=version, case=f"case-{t}", message="stop_sequence missing" if failing else "",
                violations=[{"check_id": check, "message": "stop_sequence missing", "expected": "present",
                             "seen": "keys ['stop_reason']", "where": {"event_index": 61}, "severity": "error"}]
                if failing else []))
    levels = [{"level": lv, "output_tokens_per_s": 100.0 * lv ** 0.5, "ttft_p50_s": 0.1 * lv, "ttft_p95_s": 0.2 * lv}
              for lv in (1, 2, 4, 8, 16)]
    out.append(Result(test_id="test_load.py::test_concurrency_ramp", check_id="load.throughput", outcome="info",
                      details={"levels": levels}))
    out.append(Result(test_id="test_context.py::test_needle", check_id="context.needle_recall", outcome="info",
                      details={"points": [{"fraction": f, "depth": d, "counted_tokens": int(f * 1000),
                                           "outcome": "hit" if d < 1 else "miss"}
                                          for f in (0.25, 0.5, 0.9, 0.99) for d in (0, 0.25, 0.5, 0.75, 1.0)]}))
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    from conformance.core.registry import registered as load_all
    from conformance.core.results import ResultsWriter, read_results
    from conformance.report import html, summary

    load_all()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "results"
        ResultsWriter(folder).write_all(records(args.tests))
        results = read_results(folder)
        meta = {"target": "http://127.0.0.1:4000", "api": "anthropic"}
        t_read = best(lambda: read_results(folder), args.repeat)
        t_summary = best(lambda: summary.render(results, meta), args.repeat)
        t_html = best(lambda: html.render(results, meta, report_dir=Path(tmp)), args.repeat)
        size = len(html.render(results, meta, report_dir=Path(tmp)).encode())
    print(f"{args.tests} tests, {len(results)} records; best of {args.repeat}")
    print(f"  read the record   {t_read * 1000:8.1f} ms")
    print(f"  summary.md        {t_summary * 1000:8.1f} ms")
    print(f"  report.html       {t_html * 1000:8.1f} ms  ({size / 1e6:.2f} MB)")
    print(f"html_over_summary={t_html / t_summary:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
