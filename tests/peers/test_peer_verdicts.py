"""Peer verdicts against expectations (marker `peers`): for every stack, the (test, check) pairs
that failed in the last peer run (reports/peers/<stack>/, written by .ci/peers/run-all) must be
exactly the known failures in fixtures/peers/<stack>.json — a new failure or a known failure that
no longer happens both fail, so a router or engine upgrade is gated. A known failure whose
violation fingerprint (conformance.peers.fingerprint) differs from the fixture's fails as "same
check, new reason".

This reads the results records only (conformance.core.results.read_results). Without a peer run the
tests skip, naming the command; `.ci/peers/run-all` sets CONFORMANCE_PEERS_REQUIRED=1, and then a
stack that the run attempted (reports/peers/run.json) but that left no results fails.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conformance.peers.fingerprint import changed_reasons, fixture_fingerprints, pair_fingerprints
from conformance.peers.matrix import stack_results
from conformance.peers.stacks import STACKS

pytestmark = pytest.mark.peers

ROOT = Path(__file__).resolve().parents[2]
REPORTS = Path(os.environ.get("CONFORMANCE_PEERS_REPORTS") or ROOT / "reports" / "peers")
FIXTURES = ROOT / "fixtures" / "peers"


def expectations(stack: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(required, allowed): the (test, check) pairs the fixture lists as known failures, and the
    summary checks derived from them, which may fail beside them (a derived finding fails only
    when a check it derives from fails, and not every test records every summary check)."""
    path = FIXTURES / f"{stack}.json"
    if not path.exists():
        return set(), set()
    doc = json.loads(path.read_text(encoding="utf-8"))
    required = {(e["test"], c) for e in doc.get("known_failures", []) for c in e["checks"]}
    derived = {c: set(f["derived_from"]) for c, f in doc.get("findings", {}).items() if "derived_from" in f}
    allowed: set[tuple[str, str]] = set()
    for test in {t for t, _ in required}:
        listed = {c for t, c in required if t == test}
        allowed |= {(test, d) for d, sources in derived.items() if sources & listed}
    return required, allowed


@pytest.mark.parametrize("stack", [s.name for s in STACKS])
def test_verdicts_match_expectations(stack):
    fixture = FIXTURES / f"{stack}.json"
    doc = json.loads(fixture.read_text(encoding="utf-8")) if fixture.exists() else None
    if doc is None or doc.get("gate", True) is False:
        pytest.skip(f"{stack}: no verified expectations yet (fixtures/peers/{stack}.json "
                    f"{'missing' if doc is None else 'says gate: false: ' + doc.get('gate_reason', '')}); "
                    "its verdicts are reported in reports/peers/matrix.md")
    results = stack_results(REPORTS, stack)
    if not results:
        run = REPORTS / "run.json"
        attempted, why = False, ""
        if run.exists():
            rec = next((r for r in json.loads(run.read_text())["stacks"] if r["stack"] == stack), None)
            attempted, why = rec is not None, (rec or {}).get("start_error", "")
        if attempted and os.environ.get("CONFORMANCE_PEERS_REQUIRED") == "1":
            pytest.fail(f"no results for peer stack {stack} under {REPORTS}" + (f": {why}" if why else ""))
        pytest.skip(f"no peer run for {stack} under {REPORTS}: run .ci/peers/run-all")
    ran = {r.test_id for r in results}
    failing = {(r.test_id, r.check_id) for r in results if r.outcome in ("failed", "error")}
    # The suite's own gate lists a test's error violations, which may name a wire check inside a
    # summary check's record (suite.stop_sequence.honoured failing on
    # anthropic.stream.stop_sequence_present): such a listed check still fails.
    violated = {(r.test_id, v.get("check_id")) for r in results if r.outcome in ("failed", "error")
                for v in r.violations if isinstance(v, dict) and v.get("severity", "error") == "error"}
    required, allowed = expectations(stack)
    required = {p for p in required if p[0] in ran}
    new = sorted(failing - required - allowed)
    fixed = sorted(required - failing - violated)
    lines = []
    if new:
        lines.append(f"{len(new)} new failure(s) of {stack} not in fixtures/peers/{stack}.json "
                     "(reproduce, check against the protocol docs, then add a finding with evidence):")
        lines += [f"  {t}  {c}" for t, c in new]
    if fixed:
        lines.append(f"{len(fixed)} known failure(s) of {stack} that no longer happen (the stack changed: "
                     "update the fixture):")
        lines += [f"  {t}  {c}" for t, c in fixed]
    reasons = changed_reasons(fixture_fingerprints(doc.get("known_failures", [])), pair_fingerprints(results))
    if reasons:
        lines.append(f"{len(reasons)} known failure(s) of {stack} now fail for another reason (reproduce, update "
                     f"the finding, then record the new reason: python -m conformance.peers.expect ... --results):")
        lines += reasons
    assert not lines, "\n".join(lines)
