"""Detection power: the suite is green against the conformant engine and, against each engine
fault of the catalog (docs/faults.md) owned by issues 2 and 4, fails with the expected check id
and nothing else.

The suite runs in-process (pytester) against the reference engine in a thread, over two hand-made
captures that exercise every check between them. The detection matrix is printed at the end.
Router-only rows of issue 4 (routing-unstable-across-wire-variants) run behind the reference
router. hang / hang-with-pings have their own deadline tests below. The table's `found` rows
(failures seen on real stacks that the catalog does not list) have a test each below.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conformance.core.paths import fixtures_dir
from conformance.plugin import SUITE_DIR

HERE = Path(__file__).resolve().parent
SMALL = HERE / "small"
TABLE = json.loads((fixtures_dir() / "faults.json").read_text(encoding="utf-8"))
ROWS, FOUND = TABLE["rows"], TABLE.get("found", [])
DEADLINE_ROWS = ("hang", "hang-with-pings")
ENGINE_ROWS = [r for r in ROWS if r["issue"] in (2, 4) and "engine" in r["modes"] and r["fault"] not in DEADLINE_ROWS]
# Summary ids recorded beside a specific wire rule (suite.stream.wellformed fails whenever an
# anthropic.* / openai.* stream rule fails): part of the same finding, not an unrelated failure.
UMBRELLA = {"suite.stream.wellformed", "suite.response.wellformed", "suite.error.envelope"}

MATRIX: dict[str, str] = {}
# The modules whose checks issues 2 and 4 own (the loop, translation and probe areas prove their
# own detection power in their self-tests; a broken stream also fails their loops, as it should).
OWN_MODULES = (str(SUITE_DIR / "test_replay.py"), str(SUITE_DIR / "test_protocol.py"))
REPLAY_ONLY = str(SUITE_DIR / "test_replay.py") + "::test_replay"


def _judge(run, row) -> tuple[set[str], set[str]]:
    failed = set(run.failed_checks)
    expected = set(row["checks"])
    # The same rule on the other shape of the API (stream vs non-stream response) is the same finding.
    rules = {c.rsplit(".", 1)[-1] for c in expected}
    same_rule = {c for c in failed if c.split(".")[0] in ("anthropic", "openai") and c.rsplit(".", 1)[-1] in rules}
    related = expected | same_rule | (UMBRELLA if any(c.split(".")[0] in ("anthropic", "openai") for c in failed) else set())
    return failed & (expected | same_rule), failed - related


def test_conformant_engine_passes(pytester, engine_url, suite):
    run = suite(pytester, engine_url)
    assert run.failed_checks == {}, run.outcome.stdout.str()[-3000:]
    assert run.outcome.ret == 0
    counts = run.outcomes()
    assert counts.get("passed", 0) >= 15 and "failed" not in counts
    MATRIX["(conformant)"] = f"green: {counts.get('passed')} passed"


# Rows of issue 4 (the suite's own checks) run by default; rows of issue 2 (stream rules, also
# proven at the byte level by tests/wire) run end to end here too, marked slow (~4 s each).
PARAMS = [pytest.param(r, id=r["fault"], marks=[pytest.mark.slow] if r["issue"] == 2 else [])
          for r in ENGINE_ROWS]


@pytest.mark.parametrize("row", PARAMS)
def test_engine_fault_detected(pytester, row, suite):
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=[row["fault"]]) as url:
        run = suite(pytester, url, *OWN_MODULES, captures=SMALL)
    caught, unrelated = _judge(run, row)
    MATRIX[row["fault"]] = (f"{'CAUGHT' if caught else 'MISSED'} by {', '.join(sorted(caught)) or '-'}"
                            + (f"; unrelated: {', '.join(sorted(unrelated))}" if unrelated else ""))
    assert caught, f"{row['fault']} not detected; failed checks: {run.failed_checks}"
    assert not unrelated, f"{row['fault']}: unrelated checks failed: {unrelated}"
    assert run.outcome.ret == 1


def test_router_fault_routing_unstable_across_wire_variants(pytester, suite):
    """Router-only row of issue 4: the reference router routes the quoted prompt to another tier."""
    from conformance.engine.launch import serve_engine_in_thread
    from conformance.router.launch import serve_router_in_thread

    row = next(r for r in ROWS if r["fault"] == "routing-unstable-across-wire-variants")
    with serve_engine_in_thread() as engine, \
            serve_router_in_thread(engine, ["routing-unstable-across-wire-variants"], upstream_api="anthropic") as url:
        run = suite(pytester, url, str(SUITE_DIR / "test_replay.py") + "::test_quoted_variant",
                        captures=SMALL / "claude-code" / "2.1.197" / "tool-loop-small.json")
    caught, unrelated = _judge(run, row)
    MATRIX[row["fault"] + " (router)"] = f"{'CAUGHT' if caught else 'MISSED'} by {', '.join(sorted(caught)) or '-'}"
    assert caught and not unrelated, run.failed_checks


@pytest.mark.parametrize("fault", DEADLINE_ROWS)
def test_hung_target_fails_within_total_deadline(pytester, fault, suite):
    """A target that accepts and never finishes (with or without pings) fails on the total
    deadline (first-content deadline set above it so only the total one can fire)."""
    from conformance.engine.launch import serve_engine_in_thread

    total = 1.5
    with serve_engine_in_thread(faults=[fault]) as url:
        start = time.monotonic()
        run = suite(pytester, url, REPLAY_ONLY, f"--conformance-deadline-total={total}",
                        "--conformance-deadline-first-content=30",
                        captures=SMALL / "claude-code" / "2.1.197" / "tool-loop-small.json")
        elapsed = time.monotonic() - start
    assert set(run.failed_checks) == {"suite.deadline.total"}, run.failed_checks
    # each request is cut at its deadline: the test (the API probe and two exchanges, each capped
    # by the total deadline) takes about 3 x total
    durations = [r.duration_s for r in run.results if r.check_id == "suite.deadline.total"]
    assert durations and max(durations) < 3 * total + 2, durations
    assert elapsed < 30, f"the run took {elapsed:.1f}s"
    MATRIX[fault] = (f"CAUGHT by suite.deadline.total (each request cut at {total}s; test {max(durations):.1f}s, "
                     f"whole run {elapsed:.1f}s)")


def test_pinging_target_fails_first_content_deadline(pytester, suite):
    """Pings are not content: with a first-content deadline shorter than the total one, a target
    that only pings fails on first content."""
    from conformance.engine.launch import serve_engine_in_thread

    with serve_engine_in_thread(faults=["hang-with-pings"]) as url:
        start = time.monotonic()
        run = suite(pytester, url, REPLAY_ONLY, "--conformance-deadline-total=20",
                        "--conformance-deadline-first-content=1",
                        captures=SMALL / "claude-code" / "2.1.197" / "tool-loop-small.json")
        elapsed = time.monotonic() - start
    assert set(run.failed_checks) == {"suite.deadline.first_content"}, run.failed_checks
    durations = [r.duration_s for r in run.results if r.check_id == "suite.deadline.first_content"]
    assert durations and max(durations) < 3 + 2 * 1 + 2, durations  # API probe (3 s cap) + 2 exchanges
    assert elapsed < 30, f"the run took {elapsed:.1f}s"


def test_found_fault_tool_choice_ignored_caught_by_the_forcing_loop(pytester, suite):
    """No captured request forces a tool call, so the replay cannot show an engine that ignores a
    forced tool_choice; the agent loop that forces its first call (write-static) does, at turn 1,
    in every dialect (Codex's freeform apply_patch included), naming tools.choice_honoured and
    nothing else."""
    from conformance.engine.launch import serve_engine_in_thread

    row = next(r for r in FOUND if r["fault"] == "tool-choice-ignored")
    with serve_engine_in_thread(faults=[row["fault"]]) as url:
        run = suite(pytester, url, str(SUITE_DIR / "test_loop.py"), "-k", "write-static", captures=SMALL)
    caught, unrelated = _judge(run, row)
    unrelated.discard("loop.completed")  # the loop's own verdict restates the turn's failure
    MATRIX[row["fault"] + " (found)"] = (f"{'CAUGHT' if caught else 'MISSED'} by {', '.join(sorted(caught)) or '-'}"
                                         " (agent loop write-static)")
    assert caught and not unrelated, run.failed_checks
    assert set(run.failed_checks) == {"tools.choice_honoured", "loop.completed"}, run.failed_checks
    assert run.outcomes().get("failed") == 3 and run.outcome.ret == 1  # Anthropic, OpenAI chat, Responses


def test_print_detection_matrix(capsys):
    rows = [r["fault"] for r in ENGINE_ROWS] + ["routing-unstable-across-wire-variants (router)", *DEADLINE_ROWS,
                                                "tool-choice-ignored (found)"]
    lines = ["", "detection matrix (engine faults of issues 2 and 4; conformant run over tests/suite/data, "
             "fault runs over tests/suite/small):"]
    width = max(len(r) for r in rows) + 2
    lines.append(f"  {'(conformant)':<{width}} {MATRIX.get('(conformant)', 'not run')}")
    for fault in rows:
        lines.append(f"  {fault:<{width}} {MATRIX.get(fault, 'not run in this session')}")
    with capsys.disabled():
        print("\n".join(lines))
    ran = [f for f in rows if f in MATRIX]
    assert all(MATRIX[f].startswith("CAUGHT") for f in ran)
