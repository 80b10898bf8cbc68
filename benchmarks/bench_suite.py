"""Benchmark: the suite's wall time against a bare httpx replay of the same requests, same engine.

Measured in one run, against one reference engine subprocess, over the same captured requests:
  bare      httpx.Client posts every captured model request and reads the whole response;
  judged    the suite's path for the same requests (session send with deadlines and arrival
            times, then check_exchange: SSE decode, state machine, schemas, tools, identity);
  pytest    `pytest --target=URL .../test_replay.py::test_replay` in a subprocess (plugin,
            collection, results record, summary), i.e. what a user runs for the same requests.
Prints each figure and its ratio to `bare`; the last line is `judged_vs_bare=… pytest_vs_bare=…`.
Target: judged within 1.10x of bare (the pytest figure, with its start-up, is reported only). Usage:
    python benchmarks/bench_suite.py [--captures DIR] [--rounds N] [--no-pytest]

Where `judged` spends beyond `bare` (cProfile over the bundled corpus, 93 requests, ~45,700 HTTP
chunks a round, three quarters of them on the 14 Codex streams, whose engine writes 1 to 97 bytes
at a time): the async stack under the transport (event-loop wake-ups, httpx's async generators,
httpcore's default anyio backend: conformance.net.backend replaces the last for plain HTTP), then
the suite's own per-chunk work, kept to what a chunk can change (net/transport.py ByteCaps and
ContentWatch, wire/sse.py iter_chunks: most chunks carry no line end and so end no line, no event),
then the judge. On a shared machine the ratio moves with the load: the client's CPU competes
with the engine's, so a loaded machine shows the CPU ratio more than the idle one's wall ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def corpus(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    from conformance.capture.corpus import load_captures
    from conformance.core.paths import captured_dir

    try:
        bundled = captured_dir()
        if any(c.main_exchanges() for c in load_captures(bundled)):
            return bundled
    except FileNotFoundError:
        pass
    return ROOT / "tests" / "suite" / "data"


def requests_of(root: Path):
    from conformance.capture.corpus import load_captures

    for cap in load_captures(root):
        for ex in cap.main_exchanges():
            yield cap, ex


def bare(url: str, root: Path, rounds: int) -> tuple[float, int]:
    from conformance.net.client import headers_for
    from conformance.wire import dialect_for_path

    n = 0
    start = time.perf_counter()
    with httpx.Client(timeout=120) as client:
        for _ in range(rounds):
            for _, ex in requests_of(root):
                headers = headers_for(dialect_for_path(ex.request.path), None, ex.request.headers)
                with client.stream("POST", url + ex.request.url_path, headers=headers,
                                   content=ex.request.body_bytes()) as resp:
                    for _ in resp.iter_raw():
                        pass
                n += 1
    return time.perf_counter() - start, n


def judged(url: str, root: Path, rounds: int) -> tuple[float, int]:
    from conformance.checks.exchange import check_exchange
    from conformance.suite.config import SuiteConfig
    from conformance.suite.session import SuiteSession
    from conformance.wire import dialect_for_path

    session = SuiteSession(SuiteConfig(target=url, report_dir=Path(tempfile.mkdtemp())))
    n = bad = 0
    start = time.perf_counter()
    for _ in range(rounds):
        for _, ex in requests_of(root):
            raw = session.send(dialect_for_path(ex.request.path), ex.request.path, ex.request.body_bytes(),
                               captured_headers=ex.request.headers, query=ex.request.query)
            verdict = check_exchange(raw, ex.request.body or {}, wire=ex.request.api)
            bad += not verdict.ok
            n += 1
    elapsed = time.perf_counter() - start
    if bad:
        print(f"warning: {bad} exchange(s) did not pass against the reference engine", file=sys.stderr)
    return elapsed, n


def under_pytest(url: str, root: Path) -> float:
    from conformance.plugin import SUITE_DIR

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", f"--target={url}", f"--conformance-captures={root}",
             str(SUITE_DIR / "test_replay.py") + "::test_replay", "-q", "-p", "no:cacheprovider"],
            cwd=tmp, capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--captures", help="captures folder (default: bundled captured/, else tests/suite/data)")
    ap.add_argument("--rounds", type=int, default=3, help="replays of the corpus per measurement")
    ap.add_argument("--no-pytest", action="store_true", help="leave out the pytest subprocess figure")
    args = ap.parse_args()
    root = corpus(args.captures)
    from conformance.engine.launch import spawn_engine

    # bare and judged alternate round by round, so a machine whose load drifts (shared CI cores)
    # tilts neither figure; each figure is the sum over its rounds
    t_bare = t_judged = 0.0
    n = 0
    with spawn_engine() as engine:
        url = engine.url
        bare(url, root, 1)  # warm-up: first connections, engine caches
        judged(url, root, 1)
        for _ in range(args.rounds):
            secs, k = bare(url, root, 1)
            t_bare, n = t_bare + secs, n + k
            t_judged += judged(url, root, 1)[0]
        t_pytest = None if args.no_pytest else under_pytest(url, root)
    per_bare = t_bare / n
    print(f"corpus: {root} ({n // args.rounds} model requests x {args.rounds} rounds, bare and judged alternating)")
    print(f"bare httpx replay        {t_bare:8.2f} s   {per_bare * 1000:7.1f} ms/request   1.00x")
    print(f"suite send + judge       {t_judged:8.2f} s   {t_judged / n * 1000:7.1f} ms/request   "
          f"{t_judged / t_bare:.2f}x")
    ratios = {"judged_vs_bare": f"{t_judged / t_bare:.2f}"}
    if t_pytest is not None:
        once = t_pytest / (n // args.rounds)
        print(f"pytest test_replay (1 round, incl. startup) {t_pytest:6.2f} s   {once * 1000:7.1f} ms/request   "
              f"{once / per_bare:.2f}x")
        ratios["pytest_vs_bare"] = f"{once / per_bare:.2f}"
    print(" ".join(f"{k}={v}" for k, v in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
