"""reports/peers/matrix.md: stack x check, from the results records (never from raw exchanges).

Rules:
- Input: `reports/peers/<stack>/results/` read with `conformance.core.results.read_results` (or the
  report folder itself when the records lie there); one column per stack, one row per check id.
- A cell counts records by outcome: `ok N` when every record passed, else the failing count first
  (`FAIL f/N`), with `warn`, `unverifiable`, `error`, `skipped` counts when present. A `*` marks a
  failing check the stack's fixture (fixtures/peers/<stack>.json) lists as known.
- The page also lists every component's version, each stack's chain and exit code, and the
  layer the attribution named for failing records.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from conformance.core.results import Result, read_results

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "peers"


def stack_results(reports: Path, stack: str) -> list[Result]:
    base = reports / stack
    for folder in (base / "results", base):
        if folder.is_dir() and any(folder.glob("results-*.jsonl")):
            return read_results(folder)
    return []


def known_checks(stack: str, fixtures: Path = FIXTURES) -> set[str]:
    path = fixtures / f"{stack}.json"
    if not path.exists():
        return set()
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {c for e in doc.get("known_failures", []) for c in e.get("checks", [])}


def cell(outcomes: Counter, known: bool) -> str:
    total = sum(outcomes.values())
    if not total:
        return ""
    failed = outcomes.get("failed", 0)
    parts = [f"FAIL {failed}/{total}" + ("*" if known else "")] if failed else []
    if not failed and outcomes.get("passed", 0) == total:
        return f"ok {total}"
    for name in ("error", "warning", "unverifiable", "skipped", "info"):
        if outcomes.get(name):
            parts.append(f"{name} {outcomes[name]}")
    if not failed and outcomes.get("passed"):
        parts.insert(0, f"ok {outcomes['passed']}")
    return ", ".join(parts)


def build_matrix(reports: Path, stacks: list, versions: dict[str, str], runs: list[dict] | None = None,
                 fixtures: Path = FIXTURES) -> str:
    names = [s.name for s in stacks]
    per: dict[str, dict[str, Counter]] = {}
    layers: dict[str, Counter] = {}
    for name in names:
        table: dict[str, Counter] = defaultdict(Counter)
        lay: Counter = Counter()
        for r in stack_results(reports, name):
            table[r.check_id][r.outcome] += 1
            if r.outcome == "failed" and r.layer:
                lay[f"{r.check_id} -> {r.layer}"] += 1
        per[name] = table
        layers[name] = lay
    checks = sorted({c for t in per.values() for c in t})
    runs_by = {r["stack"]: r for r in runs or []}
    out = ["# Peer matrix: stack x check", "",
           "Built from the results records under reports/peers/<stack>/ by conformance.peers.matrix.",
           "`ok N`: N records, all passed. `FAIL f/N`: f of N records failed; `*` = listed as a known "
           "failure in fixtures/peers/<stack>.json (with evidence).", "", "## Stacks", "",
           "| stack | chain | suite exit | time (s) |", "|---|---|---|---|"]
    for s in stacks:
        r = runs_by.get(s.name, {})
        ex = r.get("exit_code")
        ex_text = "start failed" if r.get("start_error") else ("timeout" if ex == -1 else ("" if ex is None else str(ex)))
        if r.get("gated") is False:
            ex_text += " (not gated)"
        out.append(f"| {s.name} | {s.title} | {ex_text} | {r.get('seconds', '')} |")
    out += ["", "## Versions", "", "| component | version |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in versions.items()]
    out += ["", "## Checks", "", "| check | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    known = {n: known_checks(n, fixtures) for n in names}
    for c in checks:
        row = [cell(per[n].get(c, Counter()), c in known[n]) for n in names]
        out.append(f"| {c} | " + " | ".join(row) + " |")
    attributed = [(n, layers[n]) for n in names if layers[n]]
    if attributed:
        out += ["", "## Layer named for failing records", ""]
        for n, lay in attributed:
            out.append(f"- **{n}**: " + "; ".join(f"{k} ({v})" for k, v in sorted(lay.items())))
    starts = [(n, runs_by[n]["start_error"]) for n in names if runs_by.get(n, {}).get("start_error")]
    if starts:
        out += ["", "## Failed starts", ""]
        for n, err in starts:
            out += [f"### {n}", "", "```", err, "```", ""]
    return "\n".join(out) + "\n"


def write_matrix(reports: Path, stacks: list, versions: dict[str, str], runs: list[dict] | None = None) -> Path:
    path = Path(reports) / "matrix.md"
    path.write_text(build_matrix(Path(reports), stacks, versions, runs), encoding="utf-8")
    return path
