"""reports/peers/matrix.html: the version matrix, stack x version x check, one static page built
from reports/peers/ (wpt.fyi-style: a row per check, a column per stack and release, a cell per
result, coloured by outcome).

Rules:
- Input: each stack's results record (conformance.peers.matrix.stack_results); the release a
  column shows is the router (or engine) version the records carry, never assumed. A router's
  two generations stand side by side, so an upgrade reads left to right.
- A cell counts records by outcome (conformance.peers.matrix.cell, the same words as matrix.md);
  its colour is the worst outcome: failed red, error dark red, warning/unverifiable amber, passed
  green, only skipped grey. A known failure (listed in the stack's fixture) is marked `*`.
- Static: no script, no external resource; every text from a record is escaped.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from html import escape
from pathlib import Path

from conformance.peers.matrix import cell, known_checks, stack_results
from conformance.peers.stacks import STACKS, Stack, twin

_COLOUR = (("error", "#8b1a1a", "#fff"), ("failed", "#e06666", "#000"), ("warning", "#f6c26b", "#000"),
           ("unverifiable", "#f6c26b", "#000"), ("passed", "#93c47d", "#000"), ("skipped", "#ddd", "#000"))


def column_order(stacks: tuple[Stack, ...] = STACKS) -> list[Stack]:
    """Every stack once, each pinned router stack followed by its next-generation twin."""
    out: list[Stack] = []
    for s in stacks:
        if s in out:
            continue
        out.append(s)
        other = twin(s)
        if other is not None and other not in out and other in stacks:
            out.append(other)
    return out


def _release(results) -> str:
    for r in results:
        v = r.versions.get("router") or ""
        if v and not v.startswith("none"):
            return v
    return next((r.versions.get("engine", "") for r in results if r.versions.get("engine")), "")


def build_version_matrix(reports: Path, stacks: tuple[Stack, ...] = STACKS) -> str:
    columns = []
    counts: dict[str, dict[str, Counter]] = defaultdict(dict)
    for s in column_order(stacks):
        results = stack_results(reports, s.name)
        if not results:
            continue
        columns.append((s, _release(results), known_checks(s.name)))
        for r in results:
            counts[r.check_id].setdefault(s.name, Counter())[r.outcome] += 1
    head = "".join(f"<th><div>{escape(s.name)}</div><small>{escape(release or '?')}</small></th>"
                   for s, release, _ in columns)
    rows = []
    for check in sorted(counts):
        cells = []
        for s, _, known in columns:
            outcomes = counts[check].get(s.name, Counter())
            text = cell(outcomes, check in known)
            worst = next((c for c in _COLOUR if outcomes.get(c[0])), None)
            style = f' style="background:{worst[1]};color:{worst[2]}"' if worst else ""
            cells.append(f"<td{style}>{escape(text)}</td>")
        rows.append(f"<tr><th class=check>{escape(check)}</th>{''.join(cells)}</tr>")
    legend = " ".join(f'<span style="background:{bg};color:{fg};padding:0 .4em">{name}</span>' for name, bg, fg in _COLOUR)
    empty = "" if columns else f"<p>No peer results under {escape(str(reports))}: run .ci/peers/run-all.</p>"
    return ("<!doctype html><html><head><meta charset=utf-8><title>Peer stacks: stack x version x check</title>"
            "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;font-size:12px}"
            "td,th{border:1px solid #999;padding:2px 5px;white-space:nowrap}th.check{text-align:left;"
            "font-family:monospace}thead th{vertical-align:bottom}</style></head><body>"
            "<h1>Peer stacks: stack &times; version &times; check</h1>"
            f"<p>Each cell counts the check's results on that stack; * marks a known failure of the stack's "
            f"fixture. A router's pinned release is followed by its newest one. Legend: {legend}</p>{empty}"
            f"<table><thead><tr><th>check</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            "</body></html>\n")


def write_version_matrix(reports: Path) -> Path:
    path = Path(reports) / "matrix.html"
    path.write_text(build_version_matrix(Path(reports)), encoding="utf-8")
    return path
