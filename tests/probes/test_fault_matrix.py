"""The fault x probe detection matrix (slow): every probe against the conformant engine and each
fault this area owns or must survive; printed as the table in docs/probes.md.

Each cell lists the error check ids the probe raised. The conformant row must be empty, and each
fault must be caught by its own check (fixtures/faults.json) with a clear verdict.
"""

from __future__ import annotations

import time

import pytest

from conformance.checks.context import ADVERTISED_MATCHES, NEEDLE_DEPTH0, OVER_LIMIT_REFUSED
from conformance.checks.load import CONCURRENCY_ACCEPTANCE, SOAK_STABLE
from conformance.checks.reasoning import ANSWER_BEFORE_CAP, OUTPUT_CAP
from conformance.engine.launch import serve_engine_in_thread, spawn_engine
from conformance.net.transport import Deadlines
from conformance.probes import context as context_probe
from conformance.probes.common import Target, run_sync
from conformance.probes.interference import interference_probe
from conformance.probes.limit import discover_limit
from conformance.probes.load import concurrency_probe
from conformance.probes.reasoning import default_cases, reasoning_probe
from conformance.probes.sizing import ContextProbe
from conformance.probes.soak import soak_probe
from conformance.probes.workload import capture_items, loop_items
from conformance.wire import ANTHROPIC

FAULTS = ["(conformant)", "crash-under-concurrency", "context-truncated", "over-limit-not-refused",
          "advertised-context-wrong", "unbounded-reasoning", "output-cap", "hang", "hang-with-pings",
          "dies-under-sustained-load"]
EXPECTED = {
    "crash-under-concurrency": ("load", CONCURRENCY_ACCEPTANCE),
    "context-truncated": ("context", NEEDLE_DEPTH0),
    "over-limit-not-refused": ("context", OVER_LIMIT_REFUSED),
    "advertised-context-wrong": ("context", ADVERTISED_MATCHES),
    "unbounded-reasoning": ("reasoning", ANSWER_BEFORE_CAP),
    "output-cap": ("reasoning", OUTPUT_CAP),
    "hang": ("load", CONCURRENCY_ACCEPTANCE),
    "hang-with-pings": ("load", CONCURRENCY_ACCEPTANCE),
    "dies-under-sustained-load": ("soak", SOAK_STABLE),
}
SPAWN = {"crash-under-concurrency", "hang", "hang-with-pings"}  # the process must exit / be killed
# The crash needs requests that overlap: unpaced, the engine can finish each request before the
# probe's next one arrives (measured in CI: 4 sent at concurrency 4, never more than 3 in flight),
# so that cell's engine is paced like a real one (prefill and decode take time).
PACED = {"crash-under-concurrency": ("--prefill-rate", "20000", "--decode-rate", "200")}
# The sustained-load death arms after seconds here (30 s by default), on a paced engine so the
# sessions' requests overlap. The soak runs only on the rows it is for: the conformant engine
# (no false positive) and the fault only it catches; the other faults fail their own probes first.
IN_THREAD = {"dies-under-sustained-load": {"die_after_s": 3.0, "prefill_tokens_per_s": 20000,
                                           "decode_tokens_per_s": 200}}
SOAKED = {"(conformant)", "dies-under-sustained-load"}
SOAK_SECONDS = 8.0


async def _load(t):
    rep = await concurrency_probe(t, 4, items=capture_items(t)[:2] + loop_items(t.wire)[:2])
    return [rep.acceptance()]


async def _context(t):
    info = await discover_limit(t)
    probe = ContextProbe(t, info, refuse_within=2.0)
    out = context_probe.needle_outcomes(await probe.needle_sweep((0.99,), (0.0, 0.5)), info)
    out.append(await context_probe.over_limit_outcome(probe))
    out.append(await context_probe.advertised_outcome(probe))
    return out


async def _reasoning(t):
    cases = default_cases(ANTHROPIC, max_tokens=2048, budget_tokens=1024)
    return await reasoning_probe(t, [cases[2], cases[5], cases[6]])


async def _interference(t):
    return await interference_probe(t, short_count=2, parallel_long=4)


async def _soak(t):
    return [(await soak_probe(t, SOAK_SECONDS, 4)).outcome()]


PROBES = {"load": _load, "context": _context, "reasoning": _reasoning, "interference": _interference,
          "soak": _soak}


def _cell(fault, probe):
    if probe == "soak" and fault not in SOAKED:
        return None  # not run: shown as "-"
    faults = () if fault == "(conformant)" else (fault,)
    hang = fault.startswith("hang")
    dl = Deadlines(connect=3, first_content=30 if fault == "hang-with-pings" else 1.5, total=2.5) if hang \
        else Deadlines(connect=3, first_content=20, total=30)
    max_context = 131072 if probe in ("load", "soak") else 4096
    if fault in SPAWN:
        ep = spawn_engine(*[a for f in faults for a in ("--fault", f)], "--max-context", str(max_context),
                          *PACED.get(fault, ()))
        try:
            return run_sync(PROBES[probe](Target(ep.url, process=ep, deadlines=dl)))
        finally:
            ep.stop()
    with serve_engine_in_thread(faults=faults, max_context=max_context, **IN_THREAD.get(fault, {})) as url:
        return run_sync(PROBES[probe](Target(url, deadlines=dl)))


@pytest.mark.slow
def test_fault_probe_matrix():
    t0 = time.monotonic()
    table: dict[str, dict[str, list]] = {}
    for fault in FAULTS:
        table[fault] = {p: _cell(fault, p) for p in PROBES}
    lines = ["| fault | " + " | ".join(PROBES) + " |", "|---" * (len(PROBES) + 1) + "|"]
    for fault, row in table.items():
        cells = []
        for outs in row.values():
            if outs is None:
                cells.append("-")
                continue
            failed = sorted({o.check_id for o in outs if o.failed})
            cells.append(", ".join(failed) or "pass")
        lines.append(f"| {fault} | " + " | ".join(cells) + " |")
    print("\n" + "\n".join(lines) + f"\n({time.monotonic() - t0:.0f} s)")
    for fault, row in table.items():
        failed = {p: {o.check_id for o in outs if o.failed} for p, outs in row.items() if outs is not None}
        if fault == "(conformant)":
            assert not any(failed.values()), failed
            continue
        probe, check = EXPECTED[fault]
        assert check in failed[probe], (fault, failed)
        if fault not in ("hang", "hang-with-pings", "crash-under-concurrency"):
            # a fault changes only what it names: no other probe fails on it, except the load probe
            # failing at its first level (a single request: the loops cannot complete on a capped
            # output either), which the load verdict says is not a load problem
            others = {c for p, ids in failed.items() for c in ids} - {check}
            single = [o for o in row["load"] if o.failed and "single request" in o.message]
            if single:
                others.discard(CONCURRENCY_ACCEPTANCE)
            assert not others, (fault, others)
