"""No false positives, proven: the default suite passes against the reference engine with each
valid variation (conformance/engine/variations.py), and with the documented compatible set at
once; every catalogued engine fault is still caught under the `instant` and the `slow` variation.

One pytester run per (wire, variation): the captures of one client (claude-code: the Anthropic
wire; opencode: OpenAI chat; codex: the Responses API) replayed by the default selection of the bundled suite. Variations
that touch only other wires are left out of a wire's rows (they would repeat the plain run).
The variation x verdict table is printed at the end and kept in docs/engine.md. All slow (CI runs
them in the slow step): ~10 s a row. The `slow` variation adds ~4 s to every stream, so its rows
(the default suite on both wires, every fault) run at once, each suite in its own process
against its own engine: they mostly wait, and one after the other they would take half an hour.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.engine import variations as V
from conformance.plugin import SUITE_DIR

from .test_faults import ENGINE_ROWS, OWN_MODULES, SMALL, _judge

WIRES = {"claude-code": V.ANTHROPIC, "opencode": V.CHAT, "codex": V.RESPONSES}
ROWS = [*V.VARIATIONS, "compatible"]
MATRIX: dict[tuple[str, str], str] = {}
# Deselected in every run, as a default run leaves them out (they need real clients, load or
# long contexts); `-m` replaces the default expression, so it is spelled out.
SELECTION = "not live and not load and not context"
# The modules of the bundled suite a default run collects tests from (live, load and context are
# opt-in, translation needs an engine URL).
SUITE_MODULES = ("test_replay.py", "test_protocol.py", "test_loop.py", "test_reasoning.py")


def _names(row: str) -> tuple[str, ...]:
    return V.COMPATIBLE if row == "compatible" else (row,)


def _params():
    for client, wire in WIRES.items():
        for row in ROWS:
            if row != "compatible" and wire not in V.VARIATIONS[row].wires:
                continue
            if "slow" in _names(row):  # test_slow_rows_at_once
                continue
            yield pytest.param(client, row, id=f"{client}-{row}", marks=pytest.mark.slow)


def _run_default_suite(pytester, url, client: str):
    argv = [f"--target={url}", f"--conformance-client={client}", "-m", SELECTION, "-p", "no:cacheprovider",
            "-o", "asyncio_default_fixture_loop_scope=function"]
    from conformance.core.results import read_results

    outcome = pytester.runpytest_inprocess(*argv)
    results_dir = pytester.path / "reports" / "results"
    return outcome, (read_results(results_dir) if results_dir.is_dir() else [])


@pytest.mark.parametrize(("client", "row"), list(_params()))
def test_default_suite_passes_under_variation(pytester, client, row):
    from conformance.engine.launch import serve_engine_in_thread

    start = time.monotonic()
    with serve_engine_in_thread(variations=_names(row)) as url:
        outcome, results = _run_default_suite(pytester, url, client)
    elapsed = time.monotonic() - start
    counts = outcome.parseoutcomes()
    bad = sorted({f"{r.check_id} ({r.test_id.split('::', 1)[-1]})" for r in results
                  if r.outcome in ("failed", "error")})
    unverifiable = sum(1 for r in results if r.outcome == "unverifiable")
    MATRIX[(client, row)] = (f"{'green' if not bad and outcome.ret == 0 else 'RED'}: {counts.get('passed', 0)} passed, "
                             f"{counts.get('failed', 0)} failed, {unverifiable} unverifiable checks, {elapsed:.0f} s")
    assert not bad, f"{row}: false positives: {bad[:10]}\n" + outcome.stdout.str()[-3000:]
    assert outcome.ret == 0 and counts.get("passed", 0) >= 10 and not counts.get("error"), counts


@pytest.mark.slow
@pytest.mark.parametrize("client", list(WIRES))
def test_gzip_with_the_clients_accept_encoding(pytester, monkeypatch, client):
    """CONFORMANCE_ACCEPT_ENCODING=captured replays the client's `gzip, deflate, br, zstd`: the
    engine's gzip variation then compresses every answer, and the suite decodes and passes it."""
    from conformance.engine.launch import serve_engine_in_thread

    monkeypatch.setenv("CONFORMANCE_ACCEPT_ENCODING", "captured")
    with serve_engine_in_thread(variations=["gzip"]) as url:
        outcome, results = _run_default_suite(pytester, url, client)
        gzipped = httpx_received_gzip(url)
    bad = sorted({r.check_id for r in results if r.outcome in ("failed", "error")})
    MATRIX[(client, "gzip + captured accept-encoding")] = f"{'green' if not bad else 'RED'}: {outcome.parseoutcomes()}"
    assert gzipped, "no request asked for gzip: the captured accept-encoding was not sent"
    assert not bad and outcome.ret == 0, bad


def httpx_received_gzip(url: str) -> int:
    """How many requests the engine received that accept gzip (its received log)."""
    import httpx

    log = httpx.get(url + "/_conformance/received", timeout=10).json()["requests"]
    return sum("gzip" in (r["headers"].get("Accept-Encoding") or r["headers"].get("accept-encoding") or "") for r in log)


FAULT_PARAMS = [pytest.param(r, id=r["fault"], marks=pytest.mark.slow) for r in ENGINE_ROWS]


@pytest.mark.parametrize("row", FAULT_PARAMS)
def test_fault_still_caught_under_instant(pytester, suite, row):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=[row["fault"]], variations=["instant"]) as url:
        run = suite(pytester, url, *OWN_MODULES, captures=SMALL)
    caught, unrelated = _judge(run, row)
    MATRIX[("fault under instant", row["fault"])] = "CAUGHT" if caught and not unrelated else (
        f"MISSED (failed: {sorted(run.failed_checks)})")
    assert caught, f"{row['fault']} under instant not detected; failed checks: {run.failed_checks}"
    assert not unrelated, f"{row['fault']} under instant: unrelated checks failed: {unrelated}"


@dataclass
class _Failed:
    failed_checks: dict


def _suite_process(tmp: Path, url: str, *args: str) -> subprocess.Popen:
    tmp.mkdir(parents=True)
    argv = [sys.executable, "-m", "pytest", f"--target={url}", "-p", "no:cacheprovider", "-q",
            "-o", "asyncio_default_fixture_loop_scope=function", f"--conformance-report-dir={tmp / 'reports'}", *args]
    return subprocess.Popen(argv, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _failed(tmp: Path) -> dict[str, set[str]]:
    from conformance.core.results import read_results

    out: dict[str, set[str]] = {}
    results = tmp / "reports" / "results"
    for r in read_results(results) if results.is_dir() else []:
        if r.outcome in ("failed", "error"):
            out.setdefault(r.check_id, set()).add(r.test_id.split("::", 1)[-1].split("[", 1)[0])
    return out


@pytest.mark.slow
def test_slow_rows_at_once(tmp_path):
    """Under `slow`: the default suite passes on every wire and with the compatible set (which
    has `slow`), and every engine fault is still caught — all runs at once, one process each."""
    from conformance.engine.launch import serve_engine_in_thread

    runs = {}  # row name -> (kind, expectation, engine context, process, folder)
    with contextlib.ExitStack() as stack:
        start = time.monotonic()
        for client in WIRES:
            for row in ("slow", "compatible"):
                # the default suite, one process per module of it (the waits add up per stream)
                url = stack.enter_context(serve_engine_in_thread(variations=_names(row)))
                for module in SUITE_MODULES:
                    folder = tmp_path / f"{client}-{row}-{module}"
                    runs[(client, f"{row} ({module})")] = (
                        None, _suite_process(folder, url, str(SUITE_DIR / module), f"--conformance-client={client}",
                                             "-m", SELECTION), folder)
        for r in ENGINE_ROWS:
            url = stack.enter_context(serve_engine_in_thread(faults=[r["fault"]], variations=["slow"]))
            folder = tmp_path / f"fault-{r['fault']}"
            runs[("fault under slow", r["fault"])] = (r, _suite_process(folder, url, f"--conformance-captures={SMALL}",
                                                                        *OWN_MODULES), folder)
        problems = []
        for key, (row, proc, folder) in runs.items():
            out, _ = proc.communicate(timeout=1800)
            failed = _failed(folder)
            if row is None:
                ok = proc.returncode in (0, 5) and not failed  # 5: the module has no test for this wire
                MATRIX[key] = f"{'green' if ok else 'RED'} ({out.strip().splitlines()[-1] if out.strip() else ''})"
                if not ok:
                    problems.append(f"{key}: exit {proc.returncode}, failed {sorted(failed)}\n{out[-1500:]}")
            else:
                caught, unrelated = _judge(_Failed(failed), row)
                MATRIX[key] = "CAUGHT" if caught and not unrelated else f"MISSED (failed: {sorted(failed)})"
                if not caught or unrelated:
                    problems.append(f"{key}: caught {sorted(caught)}, unrelated {sorted(unrelated)}")
        MATRIX[("slow rows", "wall time")] = f"{time.monotonic() - start:.0f} s for {len(runs)} runs at once"
    assert not problems, "\n".join(problems)


def teardown_module(module):
    if MATRIX:
        print("\n\nvariation matrix (docs/engine.md, 'Valid variations'):")
        for (a, b), verdict in MATRIX.items():
            print(f"  {a:<22} {b:<34} {verdict}")
