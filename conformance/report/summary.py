"""reports/summary.md: a matrix of captures (rows) x checks (columns), versions on top.

Rules:
- Built only from the results record (conformance.core.results); never re-derives a verdict.
- One table per check area (anthropic, suite, tools, ...), its header row the check names (the
  id without the area); the full ids and their titles are listed under the tables.
- A row is a capture (client/version/case) or, for tests not tied to a capture, the test id;
  a cell is the worst outcome recorded for that row and check, in the order
  failed > error > warning > unverifiable > passed > info > skipped.
- The root causes (`conformance.report.causes`) lead, at most ten lines, before the matrix; the
  failures are listed under their cause, each with its layer. "answered by" names only models
  that answered (`causes.answered_models`), `none` when nothing did.
- `normalize(text)` removes what changes between identical runs (timestamps, the target's port,
  durations) so the self-tests can snapshot the matrix.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

from conformance.core.registry import lookup
from conformance.core.results import Result, read_results
from conformance.core.secrets import scrub_text
from conformance.core.verdict import RANK
from conformance.report.causes import answered_models, from_results, headline_lines

SYMBOL = {"failed": "FAIL", "error": "ERROR", "warning": "warn", "unverifiable": "?", "passed": "ok",
          "info": "info", "skipped": "-"}


def _name(check_id: str) -> str:
    return check_id.split(".", 1)[1] if "." in check_id else check_id


def row_of(r: Result) -> str:
    if r.client and r.client_version and r.case:
        return f"{r.client}/{r.client_version}/{r.case}"
    return r.case or r.test_id


def matrix(results: list[Result]) -> tuple[list[str], list[str], dict[tuple[str, str], str]]:
    cells: dict[tuple[str, str], str] = {}
    for r in results:
        key = (row_of(r), r.check_id)
        if key not in cells or RANK[r.outcome] > RANK[cells[key]]:
            cells[key] = r.outcome
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})
    return rows, cols, cells


def render(results: list[Result], meta: dict[str, str]) -> str:
    rows, cols, cells = matrix(results)
    counts = Counter(cells.values())
    failed = [r for r in results if r.outcome in ("failed", "error")]
    out = ["# Conformance summary", ""]
    for key, value in meta.items():
        out.append(f"- **{key}**: {value or '(unknown)'}")
    if results:  # only models that answered: a run where nothing answered says so
        out.append(f"- **answered by**: {', '.join(answered_models(results)) or 'none'}")
    out.append("")
    causes = from_results(results)
    if causes:
        out.append(f"## Root causes ({len(causes)}), the most tests first")
        out.append("")
        out += headline_lines(causes)
        out.append("")
    total = sum(counts.values())
    out.append(f"{total} verdicts: " + ", ".join(f"{counts[o]} {o}" for o in RANK if counts.get(o)))
    out.append("")
    if not rows:
        out.append("No results were recorded.")
        return "\n".join(out) + "\n"
    # Header rows name the checks (the id without its area); one table per area, so a wide run
    # splits into tables a person can read, and a table only has the rows that area judged.
    by_area: dict[str, list[str]] = {}
    for c in cols:
        by_area.setdefault(c.split(".", 1)[0], []).append(c)
    for area, checks in by_area.items():
        area_rows = [row for row in rows if any((row, c) in cells for c in checks)]
        out.append(f"### {area}")
        out.append("")
        out.append("| capture / test | " + " | ".join(_name(c) for c in checks) + " |")
        out.append("|---|" + "---|" * len(checks))
        for row in area_rows:
            out.append(f"| {row} | " + " | ".join(SYMBOL.get(cells.get((row, c), ""), "") for c in checks) + " |")
        out.append("")
    out.append("Checks:")
    for c in cols:
        spec = lookup(c)
        out.append(f"- `{c}`" + (f": {spec.title}" if spec is not None else ""))
    out.append("")
    out.append("Legend: ok passed, FAIL failed, ? unverifiable (the target does not reveal it), "
               "warn warning, - skipped. Failure folders: `failures/<test id>/`; the same matrix with the "
               "failures and figures: `report.html`.")
    if causes:
        out.append("")
        out.append("## Failures, by cause")
        for n, cause in enumerate(causes, 1):
            out += ["", f"**{n}. {cause.what}** — fix: {cause.fix}", ""]
            out.append("| test | check | layer | message | failure folder |")
            out.append("|---|---|---|---|---|")
            seen: set[tuple[str, str]] = set()
            tests = set(cause.tests)
            for r in sorted((r for r in failed if r.test_id in tests), key=lambda r: (row_of(r), r.check_id)):
                if (r.test_id, r.check_id) in seen or (cause.check_id and cause.kind == "check"
                                                       and r.check_id != cause.check_id):
                    continue
                seen.add((r.test_id, r.check_id))
                cells = [f"`{r.test_id}`", f"`{r.check_id}`", r.layer or "unattributed", r.message,
                         f"`{r.artifacts}`" if r.artifacts else ""]
                out.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(out) + "\n"


def write_summary(report_dir: Path, meta: dict[str, str]) -> Path | None:
    report_dir = Path(report_dir)
    results_dir = report_dir / "results"
    if not results_dir.is_dir():
        return None
    results = read_results(results_dir)
    meta = {"generated": time.strftime("%Y-%m-%d %H:%M:%S"), **meta}
    path = report_dir / "summary.md"
    path.write_text(scrub_text(render(results, meta)), encoding="utf-8")
    return path


_VOLATILE = [
    (re.compile(r"^- \*\*generated\*\*: .*$", re.M), "- **generated**: <time>"),
    (re.compile(r"https?://127\.0\.0\.1:\d+"), "http://127.0.0.1:<port>"),
    (re.compile(r"https?://localhost:\d+"), "http://localhost:<port>"),
    (re.compile(r"\b\d+(\.\d+)?s\b"), "<n>s"),
    (re.compile(r"conformance-run [0-9a-f]{12}"), "conformance-run <token>"),
]


def normalize(text: str) -> str:
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text
