"""Expectations as data: fixtures/peers/<stack>.json, a suite baseline plus hand-written findings.

    python -m conformance.peers.expect WRITTEN_BASELINE fixtures/peers/<stack>.json [--results DIR]

Rules:
- A fixture is a `conformance.baseline` file (the suite's own gate reads it with
  `--conformance-baseline`: any verdict change either way fails the run) with one more key,
  `findings`: check id -> {"wrong": what the stack does wrong, "evidence": the event or response
  that shows it, "spec": the protocol rule it breaks, "layer": router | engine | both,
  "repro": one command} — or {"derived_from": [check ids], "wrong": ...} for a summary check
  that fails only because another listed check failed (suite.stream.wellformed, loop.completed).
  Derived findings are only for summary checks that carry no violation of their own
  (suite.*.wellformed, suite.error.envelope beside anthropic.error.envelope, loop.completed):
  they stay out of `known_failures` because the suite's gate compares violations; tests/peers/test_peer_verdicts.py accepts a failing derived check
  when a check it derives from is a known failure of the same test.
- Findings are written by hand after reproducing the deviation by hand and reading the protocol
  docs; this module never writes a finding. It only rebuilds `known_failures` (which tests fail
  with which checks) from a baseline that a run wrote (`run.py --write-baselines DIR`), giving
  each entry the reason of its findings, and refuses when a failing check has no finding yet.
- With `--results` (the run's results folder, reports/peers/<stack>/) each entry also records the
  fingerprint of each of its checks' violations (conformance.peers.fingerprint): the gate fails
  when a check still fails for another reason, and re-running this records the new reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conformance.core.results import read_results
from conformance.peers.fingerprint import pair_fingerprints

REQUIRED = ("wrong", "evidence", "spec", "layer", "repro")
LAYERS = ("router", "engine", "both", "stack", "model")


class ExpectationError(ValueError):
    pass


def validate_findings(findings: dict, where: str = "") -> list[str]:
    """Problems with a findings table (empty list = fine)."""
    problems = []
    for check, f in findings.items():
        if not isinstance(f, dict):
            problems.append(f"{where}{check}: a finding is an object")
            continue
        if "derived_from" in f:
            missing = [c for c in f["derived_from"] if c not in findings]
            if missing:
                problems.append(f"{where}{check}: derived_from names checks without a finding: {missing}")
            if not f.get("wrong"):
                problems.append(f"{where}{check}: a derived finding still says what is wrong ('wrong')")
            continue
        for key in REQUIRED:
            if not str(f.get(key, "")).strip():
                problems.append(f"{where}{check}: finding lacks {key!r}")
        if f.get("layer") and f["layer"] not in LAYERS:
            problems.append(f"{where}{check}: layer {f['layer']!r} is not one of {LAYERS}")
    return problems


def reason(checks: list[str], findings: dict) -> str:
    parts = []
    for c in checks:
        f = findings[c]
        if "derived_from" in f:
            continue
        parts.append(f"{c} [{f['layer']}]: {f['wrong']}")
    if not parts:  # only derived checks: name what they derive from
        parts = [f"{c}: {findings[c]['wrong']}" for c in checks]
    return " | ".join(parts)


def merge(written: dict, fixture: dict, fingerprints: dict[tuple[str, str], str] | None = None) -> dict:
    findings = fixture.get("findings") or {}
    problems = validate_findings(findings)
    entries = []
    for e in written.get("known_failures", []):
        missing = [c for c in e["checks"] if c not in findings]
        if missing:
            problems.append(f"{e['test']} fails with {missing}: write a finding (with evidence) first")
            continue
        checks = sorted(e["checks"])
        # The suite's gate compares a test's *violations*; summary checks (derived findings) are
        # recorded as failed but carry no violation of their own, so the gate must not list them.
        gate = [c for c in checks if "derived_from" not in findings[c]] or checks
        entry = {"test": e["test"], "checks": gate, "reason": reason(checks, findings)}
        prints = {c: fingerprints[(e["test"], c)] for c in gate if (e["test"], c) in (fingerprints or {})}
        if prints:
            entry["fingerprints"] = prints
        entries.append(entry)
    if problems:
        raise ExpectationError("\n".join(problems))
    out = {k: v for k, v in fixture.items() if k not in ("known_failures",)}
    out.setdefault("format", "conformance.baseline")
    out.setdefault("version", 1)
    out["known_failures"] = sorted(entries, key=lambda e: e["test"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.peers.expect", description=__doc__.split("\n\n")[0])
    ap.add_argument("written", type=Path, help="baseline written by a run (--conformance-baseline-write)")
    ap.add_argument("fixture", type=Path, help="fixtures/peers/<stack>.json holding the findings")
    ap.add_argument("--results", type=Path, default=None,
                    help="the run's results folder (reports/peers/<stack>/): record each violation's fingerprint")
    args = ap.parse_args(argv)
    written = json.loads(args.written.read_text(encoding="utf-8"))
    fixture = json.loads(args.fixture.read_text(encoding="utf-8"))
    prints = None
    if args.results is not None:
        prints = pair_fingerprints(read_results(args.results))
    try:
        merged = merge(written, fixture, prints)
    except ExpectationError as exc:
        print(f"{args.fixture}: not updated:\n{exc}", file=sys.stderr)
        return 1
    args.fixture.write_text(json.dumps(merged, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.fixture}: {len(merged['known_failures'])} known failing tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
