"""`conformance checks`: list every registered check: its id, scope, what it judges, and title.

Rules:
- One line per check, sorted by id, under a header: the id, the scope (which runner runs it:
  wire, exchange, hop, loop, probe, suite, live, capture), what it judges (`stack`: the wire and
  the protocol, may fail the gate; `model`: the model's behaviour), then the one-line title, with
  the severity after it when it is not `error`.
- `--json` prints the same facts, one object per check (its data, not its code).
- `--markdown` prints them as the table of docs/checks.md (`markdown`), which
  tests/commands/test_checks.py holds equal to the registry.
"""

from __future__ import annotations

import json
from dataclasses import fields

from conformance.core.registry import CheckSpec, registered

NAME = "checks"
HELP = "list every check id with its scope, what it judges, and its one-line description"
HEADER = ("id", "scope", "judges", "title")


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print as JSON")
    parser.add_argument("--area", help="only checks whose id starts with AREA (e.g. anthropic)")
    parser.add_argument("--markdown", action="store_true", help="print as the Markdown table of docs/checks.md")


def as_data(spec: CheckSpec) -> dict:
    """A check's facts for `--json`: every field but its code (`run`, `applies`)."""
    return {f.name: getattr(spec, f.name) for f in fields(spec) if f.name not in ("run", "applies")}


def lines(specs: list[CheckSpec]) -> list[str]:
    """The table: a header, then one line per check, columns aligned."""
    rows = [HEADER] + [(s.id, s.scope, s.judges, s.title + ("" if s.severity == "error" else f" [{s.severity}]"))
                       for s in specs]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
            for row in rows]


def markdown(specs: list[CheckSpec]) -> list[str]:
    """The table of docs/checks.md: id, what it judges (stack or model), runner scope, title."""
    rows = ["| id | judges | runner | title |", "|---|---|---|---|"]
    for s in specs:
        title = (s.title + ("" if s.severity == "error" else f" [{s.severity}]")).replace("|", "\\|")
        rows.append(f"| `{s.id}` | {s.judges} | {s.scope} | {title} |")
    return rows


def run(args) -> int:
    specs = [s for s in registered() if not args.area or s.id.startswith(args.area)]
    if getattr(args, "markdown", False):
        print("\n".join(markdown(specs)))
        return 0
    if args.json:
        print(json.dumps([as_data(s) for s in specs], indent=1))
        return 0
    print("\n".join(lines(specs)))
    return 0
