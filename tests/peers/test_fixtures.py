"""fixtures/peers/<stack>.json: valid suite baselines, one per stack, every known failing check
explained by a finding with evidence, every check id registered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.core import registry
from conformance.peers.expect import ExpectationError, merge, validate_findings
from conformance.peers.stacks import STACKS
from conformance.report.baseline import load

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "peers"
FILES = sorted(FIXTURES.glob("*.json"))


def test_every_fixture_names_a_stack():
    names = {s.name for s in STACKS}
    assert FILES, "no fixtures/peers/*.json"
    assert {f.stem for f in FILES} <= names


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_fixture_is_a_baseline_with_findings_for_every_known_check(path):
    baseline = load(path)  # the suite's own loader: the gate will accept this file
    doc = json.loads(path.read_text(encoding="utf-8"))
    findings = doc["findings"]
    assert validate_findings(findings) == []
    registry.registered()
    for check in findings:
        assert registry.lookup(check) is not None, f"{path.name}: {check} is not a registered check id"
    for test, checks in baseline.known.items():
        for check in checks:
            assert check in findings, f"{path.name}: {test} lists {check} without a finding"
    for check, f in findings.items():
        if "derived_from" not in f:
            assert len(f["evidence"]) > 40 and len(f["wrong"]) > 20, f"{path.name}: {check}: say what and show it"


def test_merge_refuses_a_failure_without_a_finding():
    written = {"known_failures": [{"test": "test_replay.py::test_replay[x]", "checks": ["anthropic.stream.grammar"]}]}
    with pytest.raises(ExpectationError, match="write a finding"):
        merge(written, {"findings": {}})


def test_merge_gives_each_entry_the_findings_reason():
    finding = {"wrong": "drops the stop sequence", "evidence": "e" * 50, "spec": "s", "layer": "router", "repro": "r"}
    written = {"known_failures": [{"test": "t.py::a", "checks": ["suite.stop_sequence.honoured"]}]}
    out = merge(written, {"findings": {"suite.stop_sequence.honoured": finding}})
    assert out["format"] == "conformance.baseline"
    assert out["known_failures"] == [{"test": "t.py::a", "checks": ["suite.stop_sequence.honoured"],
                                      "reason": "suite.stop_sequence.honoured [router]: drops the stop sequence"}]


def test_every_stack_has_a_gating_fixture():
    """Each peer stack's verdicts are gated: a fixture exists and does not opt out with
    "gate": false (that is only for a stack being added, until a complete run is verified)."""
    from conformance.peers.run import fixture_gates

    ungated = [s.name for s in STACKS if not fixture_gates(FIXTURES / f"{s.name}.json")]
    assert not ungated, f"stacks without a gating fixtures/peers/<stack>.json: {ungated}"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_every_finding_explains_a_known_failure(path):
    """A finding that no known failure uses any more is a stale claim about the stack: remove it
    when the verdict changes (python -m conformance.peers.expect rebuilds known_failures)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    used = {c for e in doc["known_failures"] for c in e["checks"]}
    derived = {c: f["derived_from"] for c, f in doc["findings"].items() if "derived_from" in f}
    stale = [c for c in doc["findings"] if c not in used and c not in derived]
    stale += [c for c, src in derived.items() if not set(src) & used]
    assert not stale, f"{path.name}: findings no known failure uses: {stale}"
